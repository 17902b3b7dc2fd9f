"""Helpers shared by the converter's tests (fixtures are in conftest.py).

A module name of its own, not `conftest`: the test run that ctest makes
collects tests/python and tests/golden together."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # so that plain `pytest` finds the package too
    sys.path.insert(0, str(REPO_ROOT))

from converter.reference import LinearTransformer, ModelConfig  # noqa: E402
from tests.goldens import build_model  # noqa: E402

FAST_TRANSFORMERS_DATA = REPO_ROOT / "tests" / "data" / "fast_transformers"

# Small configs that between them use every optional part of a model.
CONFIGS = {
    "tokens_favor_conv": ModelConfig(
        d_model=32,
        num_layers=2,
        num_heads=2,
        d_key=16,
        d_value=8,
        d_ff=48,
        vocab_size=40,
        output_dim=40,
        position="sinusoidal",
        feature_map="favor+",
        feature_dim=24,
        favor_softmax_temp=0.3,  # not its default, 1/sqrt(d_key) = 0.25: a file that lost it would differ
        favor_stabilize=True,
        conv_kernel=3,
    ),
    "frames_stacked_prenorm": ModelConfig(
        d_model=24,
        num_layers=2,
        num_heads=3,
        d_key=8,
        d_value=8,
        d_ff=32,
        input_kind="frames",
        input_dim=10,
        stack_window=3,
        stack_hop=2,
        input_activation="gelu",
        norm_placement="pre",
        activation="gelu",
        final_norm=True,
        output_dim=7,
        norm_eps=1e-6,
    ),
    "tokens_learned_relu_bidirectional": ModelConfig(
        d_model=16,
        num_layers=1,
        num_heads=2,
        d_key=8,
        d_value=8,
        d_ff=16,
        vocab_size=20,
        embedding_scale=4.0,
        position="learned",
        max_positions=50,
        feature_map="relu",
        attention="bidirectional",
    ),
    "tokens_concat_position_mixture": ModelConfig(
        d_model=24,
        num_layers=1,
        num_heads=2,
        d_key=12,
        d_value=12,
        d_ff=32,
        vocab_size=256,
        position="sinusoidal",
        position_concat_dim=8,
        output_dim=15,
        output_distribution="logistic-mixture",
        output_levels=256,
    ),
    "frames_no_projection": ModelConfig(
        d_model=16,
        num_layers=1,
        num_heads=2,
        d_key=8,
        d_value=8,
        d_ff=16,
        input_kind="frames",
        input_dim=16,
        input_projection=False,
        attention_eps=1e-5,
    ),
}


def make_model(config: ModelConfig, seed: int = 0) -> LinearTransformer:
    """A reference model with every parameter random (LayerNorm's included,
    so that a swapped tensor cannot go unnoticed)."""
    return build_model(config, seed, weights="random")


def write_safetensors(path, tensors: dict, metadata: dict = None, dtypes: dict = None):
    """The test's own .safetensors writer (numpy + json, no library): u64
    header length, JSON header, raw little-endian bytes. dtypes[name] may be
    "BF16" to store a float32 array truncated to bfloat16."""
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, array in tensors.items():
        code = (dtypes or {}).get(name) or {"float32": "F32", "float16": "F16"}[array.dtype.name]
        if code == "BF16":
            raw = (np.ascontiguousarray(array, dtype="<f4").view("<u4") >> 16).astype("<u2").tobytes()
        else:
            raw = np.ascontiguousarray(array, dtype="<" + array.dtype.str[1:]).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(len(text).to_bytes(8, "little") + text + b"".join(chunks))


def run_cli(*args, env=None, module="converter"):
    """Runs `python3 -m converter ARGS` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
