#!/usr/bin/python3
"""examples/embed/transcribe.c (the recognizer's C API) against `tarn
transcribe` (the C++ Recognizer) on the bundled samples and model: the same
final transcript, greedy and with the word-list beam search (how often that
is what was said is examples/asr/eval.py's business); and a clear refusal of
a file at another sample rate.

    test_transcribe_c.py TRANSCRIBE_C TARN_CLI EXAMPLES_ASR_DIR
"""

import subprocess
import sys
import tempfile
import wave
from pathlib import Path


def last_line(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    lines = done.stdout.splitlines()
    return lines[-1] if lines else ""


def main():
    transcribe_c, tarn, asr = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    model, words = str(asr / "model" / "asr.tarn"), str(asr / "words.txt")
    samples = asr / "samples"
    rows = [line.split("\t") for line in (samples / "transcripts.tsv").read_text().splitlines()[1:]]
    failures = []
    for name, reference in rows:
        wav = str(samples / name)
        greedy_c = last_line([transcribe_c, model, wav])
        greedy_cpp = last_line([tarn, "transcribe", model, wav, "--quiet"])
        beam_c = last_line([transcribe_c, model, wav, words])
        beam_cpp = last_line([tarn, "transcribe", model, wav, "--words", words, "--quiet"])
        print(f"{name}: reference {reference!r}; greedy C {greedy_c!r} C++ {greedy_cpp!r}; "
              f"word-list beam C {beam_c!r} C++ {beam_cpp!r}")
        if greedy_c != greedy_cpp:
            failures.append(f"{name}: greedy, C API {greedy_c!r} != C++ {greedy_cpp!r}")
        if beam_c != beam_cpp:
            failures.append(f"{name}: word-list beam, C API {beam_c!r} != C++ {beam_cpp!r}")

    with tempfile.TemporaryDirectory() as tmp:  # 8 kHz audio: refused, naming both rates
        slow = Path(tmp) / "8k.wav"
        with wave.open(str(slow), "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(8000)
            f.writeframes(b"\0\0" * 8000)
        done = subprocess.run([transcribe_c, model, str(slow)], capture_output=True, text=True, timeout=60)
        print(f"8 kHz file: exit {done.returncode}, stderr {done.stderr.strip()!r}")
        if done.returncode == 0 or "8000 Hz" not in done.stderr or "16000 Hz" not in done.stderr:
            failures.append(f"8 kHz file not refused with both rates named: {done.returncode} {done.stderr!r}")

    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
