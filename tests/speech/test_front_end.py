"""The C++ front end against examples/asr/features.py, the recipe's one Python
definition: same audio, same recipe, features equal within 1e-4 (max abs),
whatever the chunk sizes the audio arrives in. Run by ctest
(speech_front_end_vs_python), which passes the fixtures make_fixtures.py
wrote and the C++ front end (features_tool.cc) in the environment
(conftest.py). Audio: espeak-ng speech, a
synthetic signal (digital silence, 1-LSB noise, full-scale noise, a sweep),
and the ASR example's sample WAVs when present. Recipes: the ASR example's
(Hamming) with statistics; tests.goldens' (Povey window); a Hann window
with a 1024-point FFT, no DC removal, no pre-emphasis and no statistics; and,
when examples/asr/model holds asr.pt and its conversion asr.tarn, the trained
model's recipe (with its statistics, as asr.pt stores them). The recipes
with statistics run again at two vocal tract warps (0.85, 1.17), against
features.py's warped filterbank.
features.py defines the Hamming window only: for the others the test swaps
its window function (Kaldi's definitions) and runs the rest unchanged.
Prints the measured maximum difference for every case.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "asr"))
import features  # noqa: E402

TOLERANCE = 1e-4
CHUNKINGS = ["1", "7", "160", "1000", "all", "random:1", "random:2"]


def window_function(name):
    def symmetric(n):
        return 0.5 - 0.5 * np.cos(2.0 * math.pi * np.arange(n) / (n - 1))

    return {
        "hamming": features.hamming,
        "hann": symmetric,
        "povey": lambda n: symmetric(n) ** 0.85,
    }[name]


def python_features(samples, recipe, warp=1.0):
    original = features.hamming
    features.hamming = window_function(recipe["window"])
    try:
        plain = dict(recipe, window="hamming")
        if recipe.get("feature_mean") is not None:
            return features.features(samples, plain, warp=warp)
        return features.log_mel(samples, plain).astype(np.float32)
    finally:
        features.hamming = original


def synthetic(path):
    rng = np.random.default_rng(7)
    t = np.arange(16000) / 16000.0
    sweep = 0.5 * np.sin(2 * math.pi * (50 + 3950 * t) * t) * 32767
    parts = [
        np.zeros(4000),
        rng.integers(-1, 2, 6000),  # 1-LSB noise: energies near the log floor
        rng.integers(-32768, 32768, 8000),  # full-scale white noise
        sweep,
        np.zeros(1234),
        rng.normal(0, 300, 5000).round(),
    ]
    features.write_wav(path, np.clip(np.concatenate(parts), -32768, 32767))


def test_front_end_matches_python(fixtures, features_tool, tmp_path):
    tool, work = features_tool, tmp_path
    synthetic(work / "synthetic.wav")
    audio = [fixtures / "speech.wav", fixtures / "two.wav", work / "synthetic.wav"]
    audio += sorted((ROOT / "examples" / "asr" / "samples").glob("*.wav"))[:3]
    failures, worst = [], 0.0
    cases = [(name, fixtures / f"{name}.tarn", json.loads((fixtures / f"{name}.json").read_text()))
             for name in ("hamming", "povey", "hann")]
    trained = ROOT / "examples" / "asr" / "model"
    if (trained / "asr.pt").exists() and (trained / "asr.tarn").exists():
        import torch

        recipe = torch.load(trained / "asr.pt", map_location="cpu", weights_only=False)["recipe"]
        cases.append(("asr.tarn", trained / "asr.tarn", recipe))
    # A speaker's vocal tract warp (AudioFrontEndConfig::warp): features.py's
    # warped filterbank, at the float the front end holds.
    runs = [(name, path, recipe, None, CHUNKINGS) for name, path, recipe in cases]
    runs += [(name, path, recipe, warp, ["1", "all", "random:1"])
             for name, path, recipe in cases if recipe.get("feature_mean") is not None
             for warp in ("0.85", "1.17")]
    for model, model_path, recipe, warp, chunkings in runs:
        if warp is not None:
            model = f"{model} warp {warp}"
        for wav in audio:
            expected = python_features(features.read_wav(str(wav)), recipe,
                                       warp=1.0 if warp is None else float(np.float32(warp)))
            for chunks in chunkings:
                out = work / "out.npy"
                subprocess.run([tool, model_path, wav, out, chunks] + ([warp] if warp else []), check=True)
                got = np.load(out)
                if got.shape != expected.shape:
                    failures.append(f"{model} {wav.name} chunks {chunks}: shape {got.shape}, expected {expected.shape}")
                    continue
                diff = float(np.abs(got.astype(np.float64) - expected).max()) if got.size else 0.0
                worst = max(worst, diff)
                if chunks in ("1", "random:1"):
                    print(f"{model:22} {wav.name:36} {got.shape[0]:5} frames  chunks {chunks:9} max |C++ - Python| = {diff:.2e}")
                if not diff <= TOLERANCE:
                    failures.append(f"{model} {wav.name} chunks {chunks}: max abs difference {diff:.3g} > {TOLERANCE}")
    print(f"worst max abs difference over all cases: {worst:.2e} (tolerance {TOLERANCE})")
    assert not failures, "\n".join(failures)
