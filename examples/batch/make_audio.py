"""Synthesises a folder of test audio for the batch example: N utterances of
the speech example's 40-word task (espeak-ng and flite voices the model did
not train on, 16 kHz mono 16-bit WAV, as examples/asr/make_corpus.py makes
them), plus files that must become error rows: a WAV cut inside its header,
random bytes named .wav, and an 8 kHz file.

    python examples/batch/make_audio.py OUT_DIR [--count 200] [--jobs 2]

Writes OUT_DIR/NNNN.wav, OUT_DIR/bad_*.wav and OUT_DIR/manifest.tsv (path,
the words spoken; the bad files included).
"""

import argparse
import multiprocessing
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "asr"))
import make_corpus  # noqa: E402


def make_bad_files(out_dir: str, source_wav: str, seed: int = 0):
    """The files a run must survive; returns their paths."""
    with open(source_wav, "rb") as f:
        data = f.read()
    cut = os.path.join(out_dir, "bad_cut_header.wav")
    with open(cut, "wb") as f:
        f.write(data[:30])  # inside the fmt chunk
    noise = os.path.join(out_dir, "bad_random_bytes.wav")
    with open(noise, "wb") as f:
        f.write(random.Random(seed).randbytes(4000))
    rate = os.path.join(out_dir, "bad_8khz.wav")
    subprocess.run(["sox", source_wav, "-r", "8000", rate], check=True, capture_output=True)
    return [cut, noise, rate]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()

    os.makedirs(args.out_dir, exist_ok=True)
    rng = random.Random(args.seed)
    jobs = []
    for n in range(args.count):
        words = make_corpus.random_words(rng)
        if rng.random() < 0.75:
            spec = make_corpus.espeak_spec(rng, list(make_corpus.ESPEAK_HELD_OUT))
        else:
            spec = make_corpus.flite_spec(rng, make_corpus.FLITE_HELD_OUT, shift=False)
        jobs.append((os.path.join(args.out_dir, f"{n:04d}.wav"), words, spec))
    with multiprocessing.Pool(args.jobs) as pool:
        pool.map(make_corpus.synthesise, jobs, chunksize=8)
    bad = make_bad_files(args.out_dir, jobs[0][0])
    with open(os.path.join(args.out_dir, "manifest.tsv"), "w") as f:
        f.write("path\twords\n")
        for path, words, _ in jobs:
            f.write(f"{os.path.basename(path)}\t{words}\n")
        for path in bad:
            f.write(f"{os.path.basename(path)}\t\n")
    print(f"{len(jobs)} utterances and {len(bad)} bad files in {args.out_dir}")


if __name__ == "__main__":
    main()
