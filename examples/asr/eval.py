#!/usr/bin/python3
"""Word and character error rates of `tarn transcribe` (the C++ path: front
end, model and decoder all in tarn) over a corpus manifest, for greedy
decoding and for the beam search constrained to the word list, per voice.

    /usr/bin/python3 examples/asr/eval.py [--model examples/asr/model/asr.tarn] \\
        [--manifest examples/asr/data/manifest.tsv] [--splits eval_espeak eval_slt] \\
        [--tarn build/runtime/tarn] [--beam 8] [--words FILE] [--int8 dot] [--jobs 2] \\
        [--warp W | --adapt [warp|norms]]

The manifest is make_corpus.py's TSV (path, transcript, voice, split, ...;
paths relative to the manifest's directory). Every utterance is transcribed
once per decoder, by its own `tarn transcribe` process, and the transcript is
the last line of its stdout. Error rates are summed over a group, as
train.py computes them: CER = character edits / reference characters (spaces
count), WER = word edits / reference words. Groups: each voice (espeak-ng
variant across accents, or flite voice) within each split, then each split.
--json writes every hypothesis and the tables for later comparison.
--adapt adapts to each voice (the manifest's voice column) from the audio of
all its files in the splits, no transcripts: its vocal tract warp from
`tarn adapt`, and with --adapt norms also a model of its own from adapt.py.
"""

import argparse
import atexit
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402  (the manifest's reader and argument types)

VOCABULARY = (
    "zero one two three four five six seven eight nine yes no up down left right on off stop go hello world "
    "open close play pause next back call home light music turn the please what time is it's don't"
).split()


def edit_distance(a, b):
    """Levenshtein distance between two sequences (characters or words);
    train.py and the tests score with this one."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def find_tarn():
    root = HERE.parents[1]
    for candidate in sorted(root.glob("build*/runtime/tarn")):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return "tarn"


def voice_group(voice: str) -> str:
    """espeak-ng/en-gb-x-rp+belinda -> espeak-ng +belinda; flite/slt stays."""
    if voice.startswith("espeak-ng/") and "+" in voice:
        return "espeak-ng +" + voice.split("+", 1)[1]
    return voice


class ToolError(RuntimeError):
    """A program this script runs failed: its command and what it wrote to stderr, on one line."""


def failure(what, result):
    return ToolError(f"{what} failed (exit status {result.returncode}): {' '.join(result.stderr.split()) or 'no message'}")


def transcribe(tarn, model, wav, extra):
    command = [tarn, "transcribe", model, wav, "-q", *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise failure(" ".join(command), result)
    lines = result.stdout.rstrip("\n").split("\n")
    return " ".join(lines[-1].split())


def adaptation_sets(rows, folds, root):
    """Sets each row's "key", (voice, fold: its index within its voice modulo
    folds), and returns {key: the files its adaptation hears}: the voice's
    files outside that fold, or all of them when folds is 1."""
    seen = collections.Counter()
    for row in rows:
        row["key"] = (row["voice"], seen[row["voice"]] % folds)
        seen[row["voice"]] += 1
    return {key: [str(root / row["path"]) for row in rows
                  if row["voice"] == key[0] and (folds == 1 or row["key"] != key)]
            for key in {row["key"] for row in rows}}


def adapt_norms(checkpoint, target, wavs, warp):
    command = [sys.executable, str(HERE / "adapt.py"), target, *wavs, "--checkpoint", checkpoint, "--warp", warp]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise failure(f"adapt.py ({target})", result)


class _Skipped(Exception):
    """A call not started because another had failed."""


def run_jobs(function, arguments, jobs):
    """[function(*a) for a in arguments], run by `jobs` threads. The first
    failure stops the calls not yet started and is raised once the running
    ones end (not after every call has run)."""
    failed_once = threading.Event()

    def call(*a):
        # Checked by the worker itself: the main thread's cancelling comes
        # after it wakes, while the workers take the next calls at once.
        if failed_once.is_set():
            raise _Skipped()
        try:
            return function(*a)
        except BaseException:
            failed_once.set()
            raise

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(call, *a) for a in arguments]
        concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        failed = [f for f in futures if f.done() and not f.cancelled() and f.exception() is not None
                  and not isinstance(f.exception(), _Skipped)]
        if failed:
            for f in futures:
                f.cancel()
            raise failed[0].exception()
        return [f.result() for f in futures]


class Tally:
    def __init__(self):
        self.utterances = self.char_errors = self.chars = self.word_errors = self.words = 0

    def add(self, hypothesis, reference):
        self.utterances += 1
        self.char_errors += edit_distance(hypothesis, reference)
        self.chars += len(reference)
        self.word_errors += edit_distance(hypothesis.split(), reference.split())
        self.words += len(reference.split())

    def cer(self):
        return self.char_errors / max(1, self.chars)

    def wer(self):
        return self.word_errors / max(1, self.words)


def voice_column(groups):
    """Width of the table's voice column: its longest name, and 22 at least."""
    return max([22, *map(len, groups)])


def format_table(tallies, splits, names):
    """The printed table's lines (header first) and its rows for --json, from
    tallies {(split, voice group or "all", decoder name): Tally}."""
    width = voice_column(group for _, group, _ in tallies)
    lines = [f"{'split':13} {'voice':{width}} {'utts':>5}" + "".join(f" {n + ' WER':>18} {n + ' CER':>18}" for n in names)]
    table = []
    for split in splits:
        groups = sorted({g for (s, g, _) in tallies if s == split and g != "all"}) + ["all"]
        for group in groups:
            if (split, group, names[0]) not in tallies:
                continue
            line = f"{split:13} {group:{width}} {tallies[(split, group, names[0])].utterances:5}"
            entry = {"split": split, "voice": group, "utterances": tallies[(split, group, names[0])].utterances}
            for n in names:
                t = tallies[(split, group, n)]
                line += f" {t.wer():18.2%} {t.cer():18.2%}"
                entry[n] = {"wer": t.wer(), "cer": t.cer()}
            lines.append(line)
            table.append(entry)
    return lines, table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(HERE / "model" / "asr.tarn"), help="the speech .tarn model (default: the bundled one)")
    parser.add_argument("--manifest", default=str(HERE / "data" / "manifest.tsv"), help="the corpus manifest (default: examples/asr/data/, where make_corpus.py writes)")
    parser.add_argument("--splits", nargs="+", default=["eval_espeak", "eval_slt"])
    parser.add_argument("--tarn", default=None, help="the tarn binary (default: build*/runtime/tarn, else PATH)")
    parser.add_argument("--beam", type=make_corpus.positive_int, default=8, help="beam width of the word-list decoder")
    parser.add_argument("--words", help="word list, one per line (default: words.txt beside this script, the corpus's 40 words)")
    parser.add_argument("--int8", choices=("exact", "dot"), help="tarn transcribe --int8 (int8 models)")
    parser.add_argument("--warp", type=float, help="tarn transcribe --warp: one vocal tract warp for every voice")
    parser.add_argument("--adapt", nargs="?", const="warp", choices=("warp", "norms"),
                        help="speaker adaptation from each voice's audio alone (all its files in the splits): warp "
                        "(the default): its warp from `tarn adapt`, then tarn transcribe --warp with it; norms: that "
                        "warp, and a model of its own from adapt.py (its layer norms adapted, made from --checkpoint whatever --model is)")
    parser.add_argument("--adapt-folds", type=int, default=1,
                        help="K > 1: each voice's files in K folds (every K-th file), each transcribed as adapted on "
                        "the other folds' audio, as an app adapts on what it heard before (default 1: on all files)")
    parser.add_argument("--checkpoint", default=str(HERE / "model" / "asr.pt"),
                        help="the training checkpoint adapt.py adapts (--adapt norms; default: the bundled one)")
    parser.add_argument("--jobs", type=make_corpus.positive_int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=make_corpus.count, default=0, help="at most this many utterances per split (0: all)")
    parser.add_argument("--json", help="write hypotheses and tables here")
    args = parser.parse_args(argv)

    tarn = args.tarn or find_tarn()
    manifest = Path(args.manifest)
    try:
        listed = make_corpus.read_manifest_rows(manifest)
    except make_corpus.ManifestError as error:
        print(error, file=sys.stderr)
        return 1
    present = {r["split"] for r in listed}
    missing = [split for split in args.splits if split not in present]
    if missing:
        print(f"{manifest} has no utterances of split(s) {' '.join(missing)} (it has {' '.join(sorted(present)) or 'none'})",
              file=sys.stderr)
        return 1
    rows = [r for r in listed if r["split"] in args.splits]
    if args.limit:
        per_split = collections.Counter()
        kept = []
        for r in rows:
            per_split[r["split"]] += 1
            if per_split[r["split"]] <= args.limit:
                kept.append(r)
        rows = kept

    words_file = args.words
    if words_file is None and (HERE / "words.txt").exists():
        words_file = args.words = str(HERE / "words.txt")
    if words_file is None:
        handle = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        handle.write("\n".join(VOCABULARY) + "\n")
        handle.close()
        words_file = handle.name
        atexit.register(os.unlink, words_file)  # however main() ends
    decoders = {"greedy": [], f"words, beam {args.beam}": ["--words", words_file, "--beam", str(args.beam)]}
    if args.int8:
        decoders = {name: extra + ["--int8", args.int8] for name, extra in decoders.items()}
    if args.warp is not None and args.adapt:
        parser.error("--warp or --adapt, not both")
    if args.adapt_folds < 1 or (args.adapt_folds > 1 and not args.adapt):
        parser.error("--adapt-folds: at least 1, and more only with --adapt")
    adaptation = adaptation_sets(rows, args.adapt_folds, manifest.parent)
    lone = sorted(key for key, paths in adaptation.items() if not paths)
    if args.adapt and lone:
        print(f"{len(lone)} folds of voices with no other files: transcribed without adaptation", file=sys.stderr)
    warps = {}
    if args.adapt:
        for key, paths in adaptation.items():
            if not paths:
                warps[key] = "1"
                continue
            command = [tarn, "adapt", args.model, *paths] + (["--int8", args.int8] if args.int8 else [])
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise failure(f"tarn adapt ({key[0]})", result)
            warps[key] = result.stdout.strip()
        print("warps (tarn adapt): " + ", ".join(f"{v} {w}" if args.adapt_folds == 1 else f"{v} (fold {f}) {w}"
                                                 for (v, f), w in sorted(warps.items())), file=sys.stderr)
    elif args.warp is not None:
        warps = {key: str(args.warp) for key in adaptation}
    models = collections.defaultdict(lambda: args.model)
    if args.adapt == "norms":
        models_dir = tempfile.TemporaryDirectory()
        start = time.time()
        for i, key in enumerate(sorted(adaptation)):
            if adaptation[key]:
                models[key] = str(Path(models_dir.name) / f"{i}.tarn")
        run_jobs(adapt_norms, [(args.checkpoint, models[k], adaptation[k], warps[k]) for k in adaptation if adaptation[k]],
                 args.jobs)
        print(f"adapt.py: {len(adaptation) - len(lone)} models in {time.time() - start:.0f} s", file=sys.stderr)

    print(f"{len(rows)} utterances ({', '.join(args.splits)}), {tarn}, model {args.model}, {args.jobs} jobs", file=sys.stderr)
    start = time.time()
    # A model of adapt.py's keeps its warp; the bundled one is told it.
    jobs = [(row, name, extra + (["--warp", warps[row["key"]]] if warps and args.adapt != "norms" else []))
            for row in rows for name, extra in decoders.items()]
    hypotheses = run_jobs(transcribe, [(tarn, models[row["key"]], str(manifest.parent / row["path"]), extra)
                                       for row, _, extra in jobs], args.jobs)
    print(f"transcribed in {time.time() - start:.0f} s", file=sys.stderr)

    tallies = collections.defaultdict(Tally)  # (split, group, decoder)
    records = []
    for (row, name, _), hypothesis in zip(jobs, hypotheses):
        reference = " ".join(row["transcript"].split())
        for group in (voice_group(row["voice"]), "all"):
            tallies[(row["split"], group, name)].add(hypothesis, reference)
        records.append({"path": row["path"], "split": row["split"], "voice": row["voice"], "decoder": name, "reference": reference, "hypothesis": hypothesis})

    lines, table = format_table(tallies, args.splits, list(decoders))
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"model": args.model, "adapt": args.adapt, "adapt_folds": args.adapt_folds,
                                              "warps": {f"{v} {f}": w for (v, f), w in warps.items()}, "table": table, "utterances": records}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ToolError as error:
        sys.exit(f"eval.py: {error}")
