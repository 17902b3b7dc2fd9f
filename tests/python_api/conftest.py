"""Fixtures of the Python package's tests: small models converted here with
tarn.convert (so the installed converter is exercised too), the bundled
speech model, and the `tarn` CLI to compare with ($TARN_BIN)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

try:
    import tarn
except ImportError:  # a Python without the package (`pip install .`)
    collect_ignore_glob = ["test_*.py"]

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # tests.goldens, the tests' model builder
SPEECH_MODEL = REPO / "examples" / "asr" / "model" / "asr.tarn"
SAMPLES = sorted((REPO / "examples" / "asr" / "samples").glob("*.wav"))


def _random_model(path: Path, seed: int, dtype: str = "f32", **config) -> Path:
    """The tests' one random-model builder (tests/goldens.py), converted with
    the installed package's converter."""
    from converter.reference import ModelConfig
    from tests.goldens import build_model

    tarn.convert(build_model(ModelConfig(**config), seed).state_dict(), path, config=config, dtype=dtype)
    return path


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Paths of a causal token model, a causal frame model with frame
    stacking, and a bidirectional token model."""
    d = tmp_path_factory.mktemp("models")
    common = dict(d_model=32, num_layers=2, num_heads=2, d_key=16, d_value=16, d_ff=64)
    return {
        "tokens": _random_model(d / "tokens.tarn", 1, vocab_size=50, output_dim=50, position="sinusoidal", **common),
        "frames": _random_model(
            d / "frames.tarn", 2, input_kind="frames", input_dim=6, stack_window=3, stack_hop=2, output_dim=10, **common
        ),
        "bidirectional": _random_model(
            d / "bidirectional.tarn", 3, vocab_size=30, output_dim=7, attention="bidirectional", **common
        ),
    }


@pytest.fixture(scope="session")
def tarn_bin():
    """The CLI: $TARN_BIN (ctest sets it), else `tarn` on PATH."""
    path = os.environ.get("TARN_BIN") or shutil.which("tarn")
    if not path:
        pytest.skip("no tarn CLI to compare with: set TARN_BIN")
    return path


def run_cli(tarn_bin, *args) -> str:
    result = subprocess.run([tarn_bin, *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def cli_outputs(tarn_bin, model, inputs: np.ndarray, tmp_path, *extra) -> np.ndarray:
    """`tarn run` (or `tarn encode` with extra=("encode",)) over `inputs`."""
    command = extra[0] if extra and extra[0] == "encode" else "run"
    extra = extra[1:] if command == "encode" else extra
    np.save(tmp_path / "in.npy", inputs)
    run_cli(tarn_bin, command, model, "--input", tmp_path / "in.npy", "--output", tmp_path / "out.npy", *extra)
    return np.load(tmp_path / "out.npy")
