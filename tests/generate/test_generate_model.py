"""The bundled Fashion-MNIST model's per-step distributions in tarn match the
PyTorch reference's: for a few test images, every step's outputs (stepped,
and with the top half prefilled as `tarn generate --complete` does), the
probabilities of the 256 grey levels they give, and each image's bits/dim. The goldens are computed here by
converter/reference.py's parallel (masked) forward from the checkpoint.
Run by ctest (generate_model_vs_pytorch), which passes `tarn` and the
Fashion-MNIST test images in the environment (conftest.py).
"""

import gzip
import os
import struct
import subprocess

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.goldens import scaled_error
from converter.reference import LinearTransformer, ModelConfig, logistic_mixture_levels

MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "generate", "model")
IMAGES = [0, 1, 2, 42]  # test-split indices
PREFILL = 392  # the start token and the top half but its last pixel
# As tests/golden: max |tarn - reference| relative to max |reference| (where
# that exceeds 1).
TOLERANCE = 1e-4


def level_probabilities(outputs, config):
    """Per-step outputs [T, output_dim] -> P(grey level) [T, 256], float64: a
    softmax of 256 logits, or the logistic mixture the outputs parameterise."""
    if config.output_distribution == "logistic-mixture":
        return logistic_mixture_levels(outputs, config.output_levels)
    return F.softmax(torch.from_numpy(outputs).double(), -1).numpy()


def bits_per_dim(probabilities, target):
    return float(-np.log2(probabilities[np.arange(len(target)), target]).mean())


@pytest.fixture(scope="module")
def reference(fashion_test):
    """The bundled model as PyTorch (fashion.pt), its config, the start token
    and the test images."""
    model_dir, idx = MODEL_DIR, fashion_test
    checkpoint = torch.load(os.path.join(model_dir, "fashion.pt"), map_location="cpu")
    config = ModelConfig.from_dict(checkpoint["config"])
    model = LinearTransformer(config)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    start = checkpoint["image"]["start_token"]
    with gzip.open(idx, "rb") as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = np.frombuffer(f.read(), dtype=np.uint8).reshape(count, rows * cols)
    return model, config, start, pixels


@pytest.mark.parametrize("prefill", [False, True], ids=["stepped", "prefilled"])
@pytest.mark.parametrize("i", IMAGES)
def test_image_distributions_match_pytorch(i, prefill, reference, tarn, tmp_path):
    model, config, start, pixels = reference
    target = pixels[i].astype(np.int64)
    tokens = np.concatenate([[start], target[:-1]]).astype(np.int64)
    with torch.no_grad():
        expected = model(torch.from_numpy(tokens)[None])[0].numpy()
    expected_p = level_probabilities(expected, config)
    expected_bpd = bits_per_dim(expected_p, target)
    np.save(tmp_path / "tokens.npy", tokens)
    out = tmp_path / "logits.npy"
    extra = ["--prefill", str(PREFILL)] if prefill else []
    r = subprocess.run([tarn, "run", os.path.join(MODEL_DIR, "fashion.tarn"), "--input",
                        str(tmp_path / "tokens.npy"), "--output", str(out), *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    actual = np.load(out)
    logits_error = scaled_error(actual, expected)
    actual_p = level_probabilities(actual, config)
    probability_error = float(np.abs(actual_p - expected_p).max())
    actual_bpd = bits_per_dim(actual_p, target)
    print(f"image {i} {' '.join(extra) or 'stepped'}: outputs error {logits_error:.2e}, probability error "
          f"{probability_error:.2e}, bits/dim tarn {actual_bpd:.5f} PyTorch {expected_bpd:.5f} (bound {TOLERANCE:g})")
    assert logits_error <= TOLERANCE
    assert probability_error <= TOLERANCE
    assert abs(actual_bpd - expected_bpd) <= TOLERANCE
