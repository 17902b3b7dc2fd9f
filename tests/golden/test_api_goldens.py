"""The runtime's prefill and encode paths (through the `tarn` CLI) against
independent references: the PyTorch reference model (goldens made by
`tests.goldens` at test time) and fast-transformers itself (fixtures
committed under tests/data).

Run by ctest, which sets TARN_BIN (the CLI) and TARN_GOLDENS (the goldens).
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.goldens import scaled_error

ROOT = Path(__file__).resolve().parents[2]
TARN = os.environ.get("TARN_BIN")
GOLDENS = Path(os.environ["TARN_GOLDENS"]) if "TARN_GOLDENS" in os.environ else None
FAST_TRANSFORMERS = ROOT / "tests" / "data" / "fast_transformers"

pytestmark = pytest.mark.skipif(
    not TARN or GOLDENS is None, reason="TARN_BIN or TARN_GOLDENS is not set: run through ctest"
)

# max |tarn - reference| relative to max(1, max |reference|), as the step goldens.
TOLERANCE = 1e-4


def tarn(*args: str) -> None:
    result = subprocess.run([TARN, *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr




@pytest.mark.parametrize("case", ["bidirectional", "bidirectional_speech"])
def test_encode_matches_pytorch_reference(case, tmp_path):
    golden = GOLDENS / case
    tarn("encode", golden / "model.tarn", "--input", golden / "input.npy", "--output", tmp_path / "output.npy")
    error = scaled_error(np.load(tmp_path / "output.npy"), np.load(golden / "output.npy"))
    print(f"encode {case}: max scaled |tarn - pytorch| = {error:.2e}")
    assert error <= TOLERANCE


def test_encode_matches_fast_transformers_linear(converted, tmp_path):
    fixture = FAST_TRANSFORMERS / "linear"
    model = converted("fast-transformers", fixture)
    tarn("encode", model, "--input", fixture / "input.npy", "--output", tmp_path / "output.npy")
    expected = np.load(fixture / "output.npy")
    actual = np.load(tmp_path / "output.npy")
    error = scaled_error(actual, expected)
    print(f"encode fast-transformers linear: max |tarn - fast-transformers| = "
          f"{np.abs(actual - expected).max():.2e}, scaled {error:.2e}")
    assert error <= TOLERANCE


# Chunks of 7 and 64 cover every row tile and tail of the prefill kernels;
# 1 (a step at a time) and 1000 run once, with the kernels this CPU picks.
@pytest.mark.parametrize("prefill", [pytest.param(1, marks=pytest.mark.any_kernels), 7, 64,
                                     pytest.param(1000, marks=pytest.mark.any_kernels)])
@pytest.mark.parametrize("case", ["tokens", "frames", "speech"])
def test_prefill_then_steps_match_pytorch_reference(case, prefill, tmp_path):
    golden = GOLDENS / case
    tarn("run", golden / "model.tarn", "--input", golden / "input.npy", "--output", tmp_path / "output.npy",
         "--state-dir", tmp_path, "--prefill", prefill)
    error = scaled_error(np.load(tmp_path / "output.npy"), np.load(golden / "output.npy"))
    print(f"prefill {prefill} of {case}: max scaled |tarn - pytorch| = {error:.2e}")
    assert error <= TOLERANCE
    for state in ("state_S", "state_z"):
        assert scaled_error(np.load(tmp_path / f"{state}.npy"), np.load(golden / f"{state}.npy")) <= TOLERANCE


@pytest.mark.parametrize("case", ["causal_linear", "causal_relu", "causal_favor", "causal_favor_stabilize"])
def test_prefill_matches_fast_transformers_recurrent_model(case, converted, tmp_path):
    fixture = FAST_TRANSFORMERS / case
    model = converted("fast-transformers", fixture)
    tarn("run", model, "--input", fixture / "input.npy", "--output", tmp_path / "output.npy",
         "--state-dir", tmp_path, "--prefill", 200)
    error = scaled_error(np.load(tmp_path / "output.npy"), np.load(fixture / "output.npy"))
    print(f"prefill 200 of fast-transformers {case}: max scaled |tarn - fast-transformers| = {error:.2e}")
    assert error <= TOLERANCE
    for state in ("state_S", "state_z"):
        assert scaled_error(np.load(tmp_path / f"{state}.npy"), np.load(fixture / f"{state}.npy")) <= TOLERANCE


@pytest.mark.any_kernels
def test_run_refuses_a_bidirectional_model_and_encode_a_causal_one(tmp_path):
    bidirectional, causal = GOLDENS / "bidirectional", GOLDENS / "tokens"
    result = subprocess.run([TARN, "run", str(bidirectional / "model.tarn"), "--input", str(bidirectional / "input.npy"),
                             "--output", str(tmp_path / "o.npy"), "--prefill", "5"], capture_output=True, text=True)
    assert result.returncode == 1 and "cannot be stepped" in result.stderr
    result = subprocess.run([TARN, "encode", str(causal / "model.tarn"), "--input", str(causal / "input.npy"),
                             "--output", str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert result.returncode == 1 and "causal: step or prefill it" in result.stderr
