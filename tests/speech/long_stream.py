#!/usr/bin/python3
"""A long stream through `tarn transcribe - --utterances`: memory stays flat
and the transcript stays right to the end.

    /usr/bin/python3 tests/speech/long_stream.py --tarn TARN --model MODEL.tarn \\
        [--minutes 60] [--manifest examples/asr/data/manifest.tsv --split eval_espeak] \\
        [--wav FILE ...] [--expect-text a]

Raw 16-bit PCM goes to tarn's stdin as fast as it takes it: utterances
(drawn at random from the manifest's split, or the given WAVs), each
followed by 0.7-1.5 s of silence. Each utterance tarn prints (one JSON object
per line, with times) is matched to the references by time. Every 0.1 s of wall
time the script samples tarn's resident memory (VmRSS) against the audio
position. It prints RSS at minute 1 and its maximum after, and WER in the
first and last 5 minutes of audio; it fails when RSS grows by more than
--rss-slack-kb after minute 1, or, with --max-wer, when the last window's
WER exceeds it. --expect-text: every utterance must read exactly this (for
the tests' energy model, "a"). ctest runs it through test_long_stream.py.
"""

import argparse
import csv
import json
import random
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "asr"))
from eval import edit_distance  # noqa: E402  (the recipe's scoring)

RATE = 16000


def read_pcm(path):
    with wave.open(str(path)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, 1, 2):
            raise SystemExit(f"{path}: need 16 kHz mono 16-bit")
        return w.readframes(w.getnframes())


def rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tarn", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--manifest")
    parser.add_argument("--split", default="eval_espeak")
    parser.add_argument("--wav", nargs="*", default=[], help="utterances: WAV files, transcript from --expect-text")
    parser.add_argument("--expect-text", help="the transcript of every --wav utterance")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rss-slack-kb", type=int, default=512)
    parser.add_argument("--max-wer", type=float)
    parser.add_argument("--words", help="word list for the beam search")
    args = parser.parse_args(argv)

    pool = []  # (pcm bytes, transcript)
    if args.manifest:
        base = Path(args.manifest).parent
        with open(args.manifest, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                if row["split"] == args.split:
                    pool.append((read_pcm(base / row["path"]), " ".join(row["transcript"].split())))
    for path in args.wav:
        pool.append((read_pcm(path), args.expect_text or ""))
    if not pool:
        raise SystemExit("no utterances: give --manifest or --wav")

    rng = random.Random(args.seed)
    total_samples = int(args.minutes * 60 * RATE)
    references = []  # (start seconds, transcript)
    command = [args.tarn, "transcribe", args.model, "-", "--utterances", "--json", "-q"]
    if args.words:
        command += ["--words", args.words]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)
    fed = [0]  # samples written so far

    def feed():
        try:
            while fed[0] < total_samples:
                pcm, text = rng.choice(pool)
                references.append((fed[0] / RATE, text))
                gap = int(rng.uniform(0.7, 1.5) * RATE)
                chunk = pcm + bytes(2 * gap)
                process.stdin.write(chunk)
                fed[0] += len(chunk) // 2
        finally:
            process.stdin.close()

    hypotheses = []

    def read():
        for line in process.stdout:
            hypotheses.append(json.loads(line))

    writer, reader = threading.Thread(target=feed), threading.Thread(target=read)
    writer.start()
    reader.start()
    samples = []  # (audio minutes fed, RSS kB)
    start = time.time()
    while process.poll() is None:
        kb = rss_kb(process.pid)
        if kb is not None:
            samples.append((fed[0] / RATE / 60, kb))
        time.sleep(0.01)
    writer.join()
    reader.join()
    wall = time.time() - start
    if process.returncode != 0:
        print(f"FAIL: tarn exited with {process.returncode}")
        return 1

    audio_minutes = fed[0] / RATE / 60
    print(f"{audio_minutes:.1f} min of audio, {len(references)} utterances, {len(hypotheses)} recognised, "
          f"{wall:.0f} s wall ({wall / (audio_minutes * 60):.4f} x real time, feeding included)")
    ok = True
    # The baseline is the first sample taken once a minute of audio was fed,
    # never one from before: on an idle machine a minute streams in well
    # under one sampling period, and the last sample before it may show tarn
    # still starting up.
    after = [(minute, kb) for minute, kb in samples if minute >= 1.0]
    if after:
        first_minute, first = after[0]
        peak = max(kb for _, kb in after)
        growth = peak - first
        print(f"RSS: {first} kB at minute {first_minute:.1f}, max {peak} kB after it, last {after[-1][1]} kB "
              f"({len(samples)} samples); growth {growth} kB (allowed {args.rss_slack_kb})")
        ok &= growth <= args.rss_slack_kb
    else:
        # No sample means no check: a failure, not a pass.
        print(f"FAIL: no RSS sample after minute 1 ({len(samples)} samples in all), so no growth to bound")
        ok = False

    if args.expect_text is not None and not args.manifest:
        wrong = [h for h in hypotheses if h["text"] != args.expect_text]
        print(f"utterances reading other than {args.expect_text!r}: {len(wrong)}; "
              f"recognised {len(hypotheses)} of {len(references)}")
        ok &= not wrong and len(hypotheses) == len(references)

    window = 5 * 60
    end = fed[0] / RATE

    def wer_between(t0, t1):
        ref = " ".join(text for start_time, text in references if t0 <= start_time < t1).split()
        hyp = " ".join(h["text"] for h in hypotheses if t0 <= h["words"][0]["start"] + 0.3 < t1).split()
        return edit_distance(hyp, ref) / max(1, len(ref)), len(ref)

    for name, (t0, t1) in (("first", (0, min(window, end))), ("last", (max(0, end - window), end + 60))):
        wer, words = wer_between(t0, t1)
        print(f"WER, {name} {min(window, end) / 60:.0f} min ({words} words): {wer:.2%}")
        if name == "last" and args.max_wer is not None:
            ok &= wer <= args.max_wer
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
