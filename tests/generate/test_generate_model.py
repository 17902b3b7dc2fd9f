#!/usr/bin/python3
"""The bundled Fashion-MNIST model's per-step distributions in tarn match the
PyTorch reference's: for a few test images, every step's outputs (stepped,
and with the top half prefilled as `tarn generate --complete` does), the
probabilities of the 256 grey levels they give, and each image's bits/dim. The goldens are computed here by
converter/reference.py's parallel (masked) forward from the checkpoint.

    test_generate_model.py TARN_BIN MODEL_DIR FASHION_TEST_IDX
"""

import gzip
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from tests.goldens import scaled_error
from converter.reference import LinearTransformer, ModelConfig, logistic_mixture_levels

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


def main():
    tarn, model_dir, idx = sys.argv[1:4]
    checkpoint = torch.load(os.path.join(model_dir, "fashion.pt"), map_location="cpu")
    config = ModelConfig.from_dict(checkpoint["config"])
    model = LinearTransformer(config)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    start = checkpoint["image"]["start_token"]
    with gzip.open(idx, "rb") as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = np.frombuffer(f.read(), dtype=np.uint8).reshape(count, rows * cols)

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in IMAGES:
            target = pixels[i].astype(np.int64)
            tokens = np.concatenate([[start], target[:-1]]).astype(np.int64)
            with torch.no_grad():
                expected = model(torch.from_numpy(tokens)[None])[0].numpy()
            expected_p = level_probabilities(expected, config)
            expected_bpd = bits_per_dim(expected_p, target)
            np.save(os.path.join(tmp, "tokens.npy"), tokens)
            for extra in ([], ["--prefill", str(PREFILL)]):
                out = os.path.join(tmp, "logits.npy")
                r = subprocess.run([tarn, "run", os.path.join(model_dir, "fashion.tarn"), "--input",
                                    os.path.join(tmp, "tokens.npy"), "--output", out, *extra],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL image {i} {' '.join(extra)}: {r.stderr.strip()}")
                    failures += 1
                    continue
                actual = np.load(out)
                logits_error = scaled_error(actual, expected)
                actual_p = level_probabilities(actual, config)
                probability_error = float(np.abs(actual_p - expected_p).max())
                actual_bpd = bits_per_dim(actual_p, target)
                ok = (actual.shape == expected.shape and logits_error <= TOLERANCE
                      and probability_error <= TOLERANCE and abs(actual_bpd - expected_bpd) <= TOLERANCE)
                print(f"{'ok  ' if ok else 'FAIL'} image {i} {' '.join(extra) or 'stepped'}: "
                      f"outputs error {logits_error:.2e}, probability error {probability_error:.2e}, "
                      f"bits/dim tarn {actual_bpd:.5f} PyTorch {expected_bpd:.5f} (bound {TOLERANCE:g})")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
