#!/usr/bin/python3
"""The feature recipe of the ASR example: its one definition in Python.

40-dim log-mel filterbank, Kaldi-style, then global mean/variance
normalisation. tarn's C++ front end reproduces this exactly from the
parameters recorded in the model (schema table AudioFrontEnd); every parameter
is in RECIPE, and every step below says what it computes.

Input: mono samples at 16 kHz as floats in [-1, 1) (16-bit PCM divided by
32768). No dither (not in training, not at inference).

For frame t = 0, 1, ... covering samples [hop*t, hop*t + window) -- full frames
only, so N samples give max(0, 1 + (N - window) // hop) frames and a stream
emits frame t once sample hop*t + window - 1 has arrived:
  1. DC removal:    x -= mean(x)                              (remove_dc_offset)
  2. pre-emphasis:  x[i] -= 0.97 * x[i-1] for i = window-1 down to 1,
                    then x[0] -= 0.97 * x[0]                  (Kaldi's order)
  3. window:        x[i] *= 0.54 - 0.46 cos(2 pi i / (window - 1))
                    (symmetric Hamming, as Kaldi)
  4. power:         zero-pad to fft_size, P[k] = |FFT(x)[k]|^2 for
                    k = 0 .. fft_size/2 (257 bins; no scaling by 1/N)
  5. mel energies:  E[m] = sum_k W[m, k] P[k] with HTK triangles (below)
  6. log:           L[m] = ln(max(E[m], log_floor))
  7. normalise:     F[m] = (L[m] - feature_mean[m]) / feature_std[m]
The mel filterbank (HTK mel scale, mel(f) = 1127 ln(1 + f / 700), as Kaldi):
num_mel_bins + 2 points equally spaced in mel from mel(low_frequency) to
mel(high_frequency); filter m has left, centre, right = points m, m+1, m+2;
FFT bin k (frequency k * sample_rate / fft_size, mel value u) weighs
(u - left) / (centre - left) on the rising side, (right - u) / (right - centre)
on the falling side, 0 outside (left, right) -- triangles in the mel domain.
feature_mean / feature_std: mean and standard deviation of each L[m] over all
frames of the clean training set (train.py computes them; std is population
std, i.e. divided by the frame count).
Arithmetic here is float64; features are returned as float32.
"""

import functools
import math
import wave

import numpy as np

RECIPE = {
    "sample_rate": 16000,  # Hz; samples are floats in [-1, 1)
    "window_length": 400,  # samples (25 ms)
    "hop_length": 160,  # samples (10 ms)
    "fft_size": 512,
    "num_mel_bins": 40,
    "low_frequency": 20.0,  # Hz
    "high_frequency": 8000.0,  # Hz
    "preemphasis": 0.97,
    "remove_dc_offset": True,
    "window": "hamming",  # symmetric: 0.54 - 0.46 cos(2 pi i / (N - 1))
    # ln(max(E, 1e-7)): about the mel energy of 16-bit quantisation noise, so
    # digital silence (espeak-ng's pauses are exact zeros) and the quietest
    # real signal look alike instead of sitting 20 nats apart.
    "log_floor": 1e-7,
    "feature_mean": None,  # [num_mel_bins], set from the training set
    "feature_std": None,  # [num_mel_bins]
}


@functools.lru_cache(maxsize=4)
def hamming(n: int) -> np.ndarray:
    return 0.54 - 0.46 * np.cos(2.0 * math.pi * np.arange(n) / (n - 1))


def mel(f):
    return 1127.0 * np.log(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_filterbank(recipe: dict = RECIPE) -> np.ndarray:
    """W [num_mel_bins, fft_size // 2 + 1], HTK triangles in the mel domain."""
    keys = ("sample_rate", "fft_size", "num_mel_bins", "low_frequency", "high_frequency")
    return _mel_filterbank(*(recipe[k] for k in keys))


@functools.lru_cache(maxsize=4)
def _mel_filterbank(sample_rate, fft_size, num_mel_bins, low_frequency, high_frequency):
    recipe = dict(sample_rate=sample_rate, fft_size=fft_size, num_mel_bins=num_mel_bins,
                  low_frequency=low_frequency, high_frequency=high_frequency)
    weights = mel_triangles(np.arange(fft_size // 2 + 1) * sample_rate / fft_size, recipe)
    weights.flags.writeable = False
    return weights


def mel_triangles(frequencies, recipe: dict) -> np.ndarray:
    """The filterbank's HTK triangles read at `frequencies` (Hz, one per FFT
    bin): W [num_mel_bins, len(frequencies)]. At the bins' own frequencies
    this is mel_filterbank(); training reads them at warped ones (VTLP)."""
    points = np.linspace(mel(recipe["low_frequency"]), mel(recipe["high_frequency"]), recipe["num_mel_bins"] + 2)
    u = mel(frequencies)
    left, centre, right = points[:-2, None], points[1:-1, None], points[2:, None]
    rising = (u - left) / (centre - left)
    falling = (right - u) / (right - centre)
    return np.maximum(0.0, np.minimum(rising, falling))


def frame_count(num_samples: int, recipe: dict = RECIPE) -> int:
    if num_samples < recipe["window_length"]:
        return 0
    return 1 + (num_samples - recipe["window_length"]) // recipe["hop_length"]


def log_mel(samples: np.ndarray, recipe: dict = RECIPE, filterbank: np.ndarray = None) -> np.ndarray:
    """Samples [N] (floats in [-1, 1)) -> unnormalised log-mel L [frames, num_mel_bins], float64.
    filterbank: in place of mel_filterbank(recipe) (training's warped ones)."""
    n, hop = recipe["window_length"], recipe["hop_length"]
    x = np.asarray(samples, dtype=np.float64)
    t = frame_count(len(x), recipe)
    if t == 0:
        return np.zeros((0, recipe["num_mel_bins"]))
    frames = np.lib.stride_tricks.sliding_window_view(x, n)[::hop][:t].copy()  # [T, window]
    if recipe["remove_dc_offset"]:
        frames -= frames.mean(axis=1, keepdims=True)
    c = recipe["preemphasis"]
    if c:
        frames[:, 1:] -= c * frames[:, :-1].copy()
        frames[:, 0] -= c * frames[:, 0]
    if recipe["window"] != "hamming":
        raise ValueError(f"window {recipe['window']!r}: only hamming is defined here")
    frames *= hamming(n)
    spectrum = np.fft.rfft(frames, n=recipe["fft_size"], axis=1)  # [T, fft/2 + 1]
    power = spectrum.real**2 + spectrum.imag**2
    if filterbank is None:
        filterbank = mel_filterbank(recipe)
    energies = power @ filterbank.T  # [T, num_mel_bins]
    return np.log(np.maximum(energies, recipe["log_floor"]))


def normalise(log_mel_features: np.ndarray, recipe: dict) -> np.ndarray:
    mean = np.asarray(recipe["feature_mean"], dtype=np.float64)
    std = np.asarray(recipe["feature_std"], dtype=np.float64)
    return ((log_mel_features - mean) / std).astype(np.float32)


# Vocal tract length: a warp factor alpha reads FFT bin f at vtlp_warp(f),
# so that a formant at f lands where one at alpha f would. Training draws
# alpha from train.VTLP_RANGE (VTLP, Jaitly and Hinton 2013); the runtime's
# front end applies a speaker's (AudioFrontEndConfig::warp).
VTLP_BOUNDARY_HZ = 4800.0  # frequencies above it are warped less, so that the band edge stays put


def vtlp_warp(f, alpha, nyquist):
    """Jaitly and Hinton's piecewise-linear warp: f -> alpha f up to a
    boundary, then a straight line to the Nyquist frequency (which stays)."""
    boundary = VTLP_BOUNDARY_HZ * min(alpha, 1.0) / alpha
    upper = nyquist - (nyquist - VTLP_BOUNDARY_HZ * min(alpha, 1.0)) / (nyquist - boundary) * (nyquist - f)
    return np.where(f <= boundary, alpha * f, upper)


def warped_filterbank(recipe: dict, alpha: float) -> np.ndarray:
    """mel_filterbank()'s triangles read at the warped FFT-bin frequencies."""
    sr, size = recipe["sample_rate"], recipe["fft_size"]
    return mel_triangles(vtlp_warp(np.arange(size // 2 + 1) * sr / size, alpha, sr / 2), recipe)


def features(samples: np.ndarray, recipe: dict, warp: float = 1.0) -> np.ndarray:
    """Samples [N] -> normalised features [frames, num_mel_bins], float32;
    warp != 1: through warped_filterbank(recipe, warp)."""
    if warp == 1.0:
        return normalise(log_mel(samples, recipe), recipe)
    return normalise(log_mel(samples, recipe, warped_filterbank(recipe, warp)), recipe)


def read_wav(path: str) -> np.ndarray:
    """16 kHz mono 16-bit WAV -> float32 samples in [-1, 1). A file that is
    not one, or holds fewer samples than its header declares (a synthesis
    cut short), is a ValueError naming path and what is wrong."""
    try:
        with wave.open(path) as w:
            if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RECIPE["sample_rate"], 1, 2):
                raise ValueError(f"{path}: need {RECIPE['sample_rate']} Hz mono 16-bit, got "
                                 f"{w.getframerate()} Hz, {w.getnchannels()} channels, {8 * w.getsampwidth()}-bit")
            declared = w.getnframes()
            data = w.readframes(declared)
    except EOFError:  # wave's word for a file that ends inside its header
        raise ValueError(f"{path}: not a WAV file: it ends before its header does") from None
    except wave.Error as error:
        raise ValueError(f"{path}: not a WAV file this reads ({error})") from None
    if len(data) != 2 * declared:
        raise ValueError(f"{path}: truncated: its header declares {declared} frames, {len(data) // 2} present")
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def write_wav(path, pcm: np.ndarray) -> None:
    """16-bit PCM samples [N] -> a mono WAV at the recipe's sample rate."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RECIPE["sample_rate"])
        w.writeframes(np.asarray(pcm).astype("<i2").tobytes())


def main():
    import argparse

    parser = argparse.ArgumentParser(description="Writes the features of a WAV file as .npy (float32).")
    parser.add_argument("wav")
    parser.add_argument("out", help=".npy: [frames, num_mel_bins]")
    parser.add_argument("--model", help="asr.pt whose recipe (with statistics) to use; without it, unnormalised")
    args = parser.parse_args()
    samples = read_wav(args.wav)
    if args.model:
        import torch

        recipe = torch.load(args.model, map_location="cpu", weights_only=False)["recipe"]
        np.save(args.out, features(samples, recipe))
    else:
        np.save(args.out, log_mel(samples).astype(np.float32))


if __name__ == "__main__":
    main()
