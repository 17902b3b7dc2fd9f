#!/usr/bin/python3
"""The bundled speech model in tarn against the PyTorch reference it was
trained as: for each bundled sample WAV, features from examples/asr/features.py
(the recipe's one Python definition) go through `tarn run` and through
converter/reference.py's LinearTransformer loaded from asr.pt; every step's
29 logits must agree within 1e-4, relative to max |logit| where that exceeds 1
(as tests/golden). The front end is tested on its own by test_front_end.py.

    /usr/bin/python3 tests/speech/test_model.py TARN_BIN
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
ASR = ROOT / "examples" / "asr"
sys.path.insert(0, str(ASR))

import features  # noqa: E402
from tests.goldens import scaled_error  # noqa: E402
from converter.reference import LinearTransformer, ModelConfig  # noqa: E402

TOLERANCE = 1e-4


def main():
    tarn = sys.argv[1]
    checkpoint = torch.load(ASR / "model" / "asr.pt", map_location="cpu", weights_only=False)
    model = LinearTransformer(ModelConfig.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    wavs = sorted((ASR / "samples").glob("*.wav"))
    if not wavs:
        print("FAIL: no sample WAVs in examples/asr/samples")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        frames_path, logits_path = Path(tmp) / "frames.npy", Path(tmp) / "logits.npy"
        for wav in wavs:
            frames = features.features(features.read_wav(str(wav)), checkpoint["recipe"]).astype(np.float32)
            np.save(frames_path, frames)
            r = subprocess.run([tarn, "run", str(ASR / "model" / "asr.tarn"), "--input", str(frames_path),
                                "--output", str(logits_path)], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {wav.name}: {r.stderr.strip()}")
                failures += 1
                continue
            with torch.no_grad():
                expected = model(torch.from_numpy(frames)[None])[0].numpy()
            actual = np.load(logits_path)
            error = scaled_error(actual, expected) if actual.shape == expected.shape else float("inf")
            ok = error <= TOLERANCE
            print(f"{'ok  ' if ok else 'FAIL'} {wav.name}: {len(expected)} steps, max |logit| "
                  f"{np.abs(expected).max():.1f}, scaled error {error:.2e} (bound {TOLERANCE:g})")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
