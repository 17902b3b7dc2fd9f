#!/usr/bin/python3
"""Hotwords (soft biasing) through `tarn transcribe`: word error rates of the
same beam search with and without --hotwords, on utterances that contain a
boosted phrase and on utterances that contain none.

    /usr/bin/python3 examples/asr/hotwords_eval.py [--out DIR] \\
        [--hotwords examples/asr/hotwords.txt] [--voices held-out|dev] \\
        [--count 150] [--beam 8] [--boost 2.0] [--tarn build/runtime/tarn] \\
        [--manifest examples/asr/data/manifest.tsv]

Utterances are synthesised as make_corpus.py does, into OUT/<voices>/: with
`--voices held-out`, by the held-out espeak-ng variants (m3 m8 f2 f5 klatt2
klatt4 john belinda) and flite slt, alternately; with `--voices dev`, by
training voices (tune --boost there, never on held-out voices). Set `with`:
one phrase of the hotword file, with 0-3 random words before and after it.
Set `without`: 2-8 random words in which no phrase of the file occurs.
Neither holds a transcript of a training utterance: an utterance whose
words are one of the corpus's `train` split (--manifest, as make_corpus.py
wrote it) is drawn again (train.py's joined pairs are not checked). Each file is named by a hash of its
words and settings, so files of another --count, --seed or --hotwords in the
same --out are never read as this run's.
WER = word edits / reference words, summed over a set.
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval as asr_eval  # noqa: E402
import make_corpus as corpus  # noqa: E402


def read_phrases(path):
    """The file's phrases (blank lines skipped); SystemExit when it has none or cannot be read."""
    try:
        content = Path(path).read_text()
    except OSError as error:
        raise SystemExit(f"{path}: {error.strerror}") from None
    phrases = []
    for line in content.splitlines():
        text = line.split(":")[0].strip() if ":" in line else line.strip()
        if text:
            phrases.append(" ".join(text.split()))
    if not phrases:
        raise SystemExit(f"{path}: no phrases, only blank lines")
    return phrases


def contains(words, phrase):
    return f" {phrase} " in f" {words} "


def training_transcripts(manifest):
    """The word sequences of the corpus's train split."""
    try:
        trained = {row["transcript"] for row in corpus.read_manifest(manifest).get("train", [])}
    except corpus.ManifestError as error:
        raise SystemExit(str(error)) from None
    if not trained:
        raise SystemExit(f"{manifest} lists no train split: make the whole corpus (run_recipe.sh's make_corpus.py)")
    return trained


def plan(phrases, count, voices, seed, trained):
    """[(set, words, spec)]: `count` utterances with a phrase, then `count`
    without; no words are a transcript in `trained`."""
    rng = random.Random(seed)
    if voices == "held-out":
        speakers = [("espeak", v) for v in corpus.ESPEAK_HELD_OUT] + [("flite", "slt")] * 4
    else:
        train = [v for v in ("m1", "m2", "m4", "f1", "f3", "f4", "klatt", "klatt3")]
        speakers = [("espeak", v) for v in train] + [("flite", v) for v in corpus.FLITE_TRAIN] * 2
    items = []
    for n in range(2 * count):
        if n < count:
            phrase = phrases[n % len(phrases)]
            words = None
            while words is None or words in trained:
                before = [rng.choice(corpus.VOCABULARY) for _ in range(rng.randint(0, 3))]
                after = [rng.choice(corpus.VOCABULARY) for _ in range(rng.randint(0, 3))]
                words = " ".join(before + [phrase] + after)
            split = "with"
        else:
            words = corpus.random_words(rng, min_words=2)
            while words in trained or any(contains(words, p) for p in phrases):
                words = corpus.random_words(rng, min_words=2)
            split = "without"
        engine, voice = speakers[n % len(speakers)]
        if engine == "espeak":
            spec = corpus.espeak_spec(rng, [voice])
        else:
            spec = corpus.flite_spec(rng, [voice], shift=False)
            spec["stretch"] = round(rng.uniform(0.9, 1.15), 3)
        items.append((split, words, spec))
    return items


def file_name(words, spec):
    return hashlib.sha256(json.dumps([words, spec], sort_keys=True).encode()).hexdigest()[:20]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "tarn_hotwords"))
    parser.add_argument("--hotwords", default=str(HERE / "hotwords.txt"))
    parser.add_argument("--voices", choices=("held-out", "dev"), default="held-out")
    parser.add_argument("--count", type=corpus.positive_int, default=150, help="utterances per set")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--model", default=str(HERE / "model" / "asr.tarn"))
    parser.add_argument("--tarn", default=None)
    parser.add_argument("--beam", type=corpus.positive_int, default=8)
    parser.add_argument("--boost", type=corpus.positive_float, nargs="+", default=[None],
                        help="--hotword-boost values to try")
    parser.add_argument("--words", action="store_true", help="also constrain to the word list")
    parser.add_argument("--jobs", type=corpus.positive_int, default=2)
    parser.add_argument("--manifest", default=str(HERE / "data" / "manifest.tsv"),
                        help="the corpus's manifest.tsv: its train transcripts are kept out of both sets")
    args = parser.parse_args(argv)
    tarn = args.tarn or asr_eval.find_tarn()
    phrases = read_phrases(args.hotwords)
    trained = training_transcripts(args.manifest)
    out = Path(args.out) / args.voices
    out.mkdir(parents=True, exist_ok=True)
    items = plan(phrases, args.count, args.voices, args.seed, trained)
    jobs = [(str(out / f"{file_name(words, spec)}.wav"), words, spec) for _, words, spec in items]
    asr_eval.run_jobs(corpus.synthesise, [(j,) for j in jobs if not os.path.exists(j[0])], args.jobs)

    base = ["--beam", str(args.beam)]
    if args.words:
        base += ["--words", str(HERE / "words.txt")]
    runs = [("without hotwords", base)]
    for boost in args.boost:
        extra = base + ["--hotwords", args.hotwords]
        if boost is not None:
            extra += ["--hotword-boost", str(boost)]
        runs.append((f"hotwords, boost {boost if boost is not None else 'default'}", extra))
    print(f"{args.voices} voices, beam {args.beam}{' + word list' if args.words else ''}, {len(phrases)} phrases")
    for name, extra in runs:
        hyps = asr_eval.run_jobs(asr_eval.transcribe, [(tarn, args.model, j[0], extra) for j in jobs], args.jobs)
        line = f"  {name:28s}"
        for split in ("with", "without"):
            tally = asr_eval.Tally()
            for (s, words, _), hyp in zip(items, hyps):
                if s == split:
                    tally.add(hyp, words)
            line += f"  {split}: WER {100 * tally.wer():5.2f} % ({tally.word_errors}/{tally.words})"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except asr_eval.ToolError as error:
        sys.exit(f"hotwords_eval.py: {error}")
    except subprocess.CalledProcessError as error:
        sys.exit(f"hotwords_eval.py: synthesis failed: {error}")
