#!/usr/bin/python3
"""The bundled Fashion-MNIST model's per-step distributions in tarn match the
PyTorch reference's: for a few test images, every step's 256 logits (stepped,
and with the top half prefilled as `tarn generate --complete` does), the
probabilities, and each image's bits/dim. The goldens are computed here by
converter/reference.py's parallel (masked) forward from the checkpoint.

    test_generate_model.py TARN_BIN MODEL_DIR FASHION_TEST_IDX
"""

import gzip
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from converter.reference import LinearTransformer, ModelConfig

IMAGES = [0, 1, 2, 42]  # test-split indices
PREFILL = 392  # the start token and the top half but its last pixel
# As tests/golden: max |tarn - reference| relative to max |reference| (where
# that exceeds 1).
TOLERANCE = 1e-4


def scaled_error(actual, expected):
    return float(np.abs(actual - expected).max() / max(1.0, np.abs(expected).max()))


def main():
    tarn, model_dir, idx = sys.argv[1:4]
    checkpoint = torch.load(os.path.join(model_dir, "fashion.pt"), map_location="cpu")
    model = LinearTransformer(ModelConfig.from_dict(checkpoint["config"]))
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
            expected_bpd = F.cross_entropy(torch.from_numpy(expected), torch.from_numpy(target)).item() / math.log(2)
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
                probability_error = float(np.abs(
                    F.softmax(torch.from_numpy(actual), -1) - F.softmax(torch.from_numpy(expected), -1)).max())
                actual_bpd = F.cross_entropy(torch.from_numpy(actual), torch.from_numpy(target)).item() / math.log(2)
                ok = (actual.shape == expected.shape and logits_error <= TOLERANCE
                      and probability_error <= TOLERANCE and abs(actual_bpd - expected_bpd) <= TOLERANCE)
                print(f"{'ok  ' if ok else 'FAIL'} image {i} {' '.join(extra) or 'stepped'}: "
                      f"logits error {logits_error:.2e}, probability error {probability_error:.2e}, "
                      f"bits/dim tarn {actual_bpd:.5f} PyTorch {expected_bpd:.5f} (bound {TOLERANCE:g})")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
