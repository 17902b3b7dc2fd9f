#!/usr/bin/python3
"""Synthesises the speech corpus of the ASR example (no corpus can be downloaded).

Utterances are 1-8 words drawn from a 40-word vocabulary, spoken by espeak-ng
(English accents x voice variants, speed, pitch, word gap; and, with --mbrola,
its MBROLA voices: diphones of recorded speakers) and flite (voices kal16,
awb, rms, with speed, pitch and a sox pitch shift for variety), written
as 16 kHz mono 16-bit WAV. Gain and noise augmentation happen at training time
(train.py), so every file here is the clean synthesiser output.

Splits (column `split` of manifest.tsv):
  train         training voices only;
  dev           training voices, word sequences not in train (progress check);
  eval_espeak   held-out espeak-ng variants m3 m8 f2 f5 klatt2 klatt4 john
                belinda, word sequences not in train;
  eval_slt      held-out flite voice slt, word sequences not in train;
  eval_festival (--festival N) voices of Festival, a synthesiser never used
                for training (ked_diphone, cmu_us_slt_arctic_hts), word
                sequences not in train: evaluation only, never tuned on.
  eval_mbrola   (--eval-mbrola N) held-out MBROLA voices mb-us1 (a US woman)
                and mb-en1 (a British man), word sequences not in train.
No held-out voice is used for train or dev. Every variant name is checked
against espeak-ng's voice files and by synthesis (espeak-ng silently falls back
to its default voice on an unknown variant), every flite voice against
`flite -lv`, every MBROLA voice by synthesis.

Usage: make_corpus.py [--out examples/asr/data] [--train 12000] [--jobs 2]
                      [--keep-existing] [--only SPLIT ...]
Writes OUT/wav/<split>/<n>.wav (the plan's n-th utterance), OUT/manifest.tsv
(header: path, transcript, voice, split, settings; paths relative to OUT),
listing the files present, and OUT/plan.json: the settings that decide the
plan (seed, sizes, the espeak-ng training variants found). The plan is
deterministic: --keep-existing resumes an interrupted run, --only synthesises
just some splits (its manifest keeps the rest of the corpus in OUT). Both
refuse settings that would keep OUT's files under other utterances: a plan
grows only at its end (its sets come in the order --train, --dev,
--eval-espeak, --eval-slt, --wide-flite, --extra-flite, --festival,
--eval-mbrola, --mbrola: a set is added after every set OUT has), and a
shorter plan must be the start of OUT's. A run with neither remakes every
file, first removing those of another plan.
"""

import argparse
import collections
import hashlib
import json
import math
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

VOCABULARY = (
    "zero one two three four five six seven eight nine yes no up down left right "
    "on off stop go hello world open close play pause next back call home light "
    "music turn the please what time is it's don't"
).split()
assert len(VOCABULARY) == 40

ESPEAK_LANGUAGES = (
    "en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan",
    "en-gb-x-gbcwmd", "en-029", "en-us-nyc",
)
ESPEAK_HELD_OUT = ("m3", "m8", "f2", "f5", "klatt2", "klatt4", "john", "belinda")
# Every other variant except those that are not ordinary speech (whispering,
# the "demonic" effect, the speed test) and one whose name holds a space.
ESPEAK_EXCLUDED = ("whisper", "whisperf", "Demonic", "fast", "Mr serious")
FLITE_TRAIN = ("kal16", "awb", "rms")
FLITE_HELD_OUT = ("slt",)
FLITE_PITCH_VOICES = ("kal16", "awb")  # rms ignores int_f0_target_mean
# flite's 8 kHz kal diphone voice (the kal16 speaker, band-limited); awb_time
# speaks only times of day.
FLITE_EXTRA = ("kal",)
# Festival (Debian festival, festvox-kdlpc16k, festvox-us-slt-hts): never
# used for training. cmu_us_slt_arctic_hts is the speaker of the held-out
# flite slt through another synthesiser (HTS); ked_diphone is a US male.
FESTIVAL_VOICES = ("ked_diphone", "cmu_us_slt_arctic_hts")
# espeak-ng's MBROLA voices (Debian contrib mbrola, non-free mbrola-xx): the
# diphones of recorded speakers, US and British English and English with
# other languages' diphones, women among them. espeak-ng's own voices are
# formant synthesis and flite's training voices are all men. Two are held
# out: a US woman and a British man, recorded speakers never heard.
MBROLA_TRAIN = (
    "mb-us2", "mb-us3", "mb-af1-en", "mb-de1-en", "mb-de2-en", "mb-de3-en", "mb-de4-en", "mb-de5-en",
    "mb-de6-en", "mb-fr1-en", "mb-fr4-en", "mb-gr2-en", "mb-hu1-en", "mb-nl2-en", "mb-pl1-en", "mb-ro1-en",
    "mb-sw1-en", "mb-sw2-en",
)
MBROLA_HELD_OUT = ("mb-us1", "mb-en1")

SAMPLE_RATE = 16000
CHECK_TEXT = "hello world"


def espeak_data_dir():
    out = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout
    # "eSpeak NG text-to-speech: 1.51  Data at: /usr/lib/.../espeak-ng-data"
    return out.split("Data at:")[1].strip()


# The programs that every plan runs, each in the Debian package of its name.
SYNTHESISERS = ("espeak-ng", "flite", "sox")


def check_synthesisers():
    missing = [program for program in SYNTHESISERS if shutil.which(program) is None]
    if missing:
        sys.exit(f"{', '.join(missing)} not found on PATH: apt-get install {' '.join(missing)} "
                 "(scripts/install-deps.sh recipe)")


class SynthesisError(Exception):
    """A synthesiser or sox failed: its command and what it wrote on stderr."""


def run_tool(cmd, **options):
    """subprocess.run(cmd) with its output captured; a failure is a
    SynthesisError carrying the tool's own message."""
    try:
        return subprocess.run(cmd, capture_output=True, check=True, **options)
    except subprocess.CalledProcessError as error:
        stderr = (error.stderr or b"").decode(errors="replace").strip()
        raise SynthesisError(f"{' '.join(cmd)}: exit status {error.returncode}: "
                             f"{stderr[-500:] or 'nothing on stderr'}") from None


def espeak_raw(voice, text, speed=175, pitch=50, gap=0):
    # -w /dev/stdout: --stdout's bytes for espeak-ng's own voices, and
    # MBROLA voices write nothing to --stdout.
    cmd = ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-g", str(gap), "-w", "/dev/stdout", text]
    return run_tool(cmd).stdout


def espeak_variants():
    """All variant names (file names under voices/!v), each verified to load."""
    directory = os.path.join(espeak_data_dir(), "voices", "!v")
    names = sorted(os.listdir(directory))
    listed = subprocess.run(["espeak-ng", "--voices=variant"], capture_output=True, text=True).stdout
    listed_files = {token for line in listed.splitlines() for token in line.split() if token.startswith("!v/")}
    fallback = {
        hashlib.sha1(espeak_raw("en-us", CHECK_TEXT)).hexdigest(),
        hashlib.sha1(espeak_raw("en-us+no_such_variant_xyz", CHECK_TEXT)).hexdigest(),
    }
    verified = []
    for name in names:
        if " " in name:
            continue
        digest = hashlib.sha1(espeak_raw("en-us+" + name, CHECK_TEXT)).hexdigest()
        if "!v/" + name not in listed_files or digest in fallback:
            print(f"variant {name!r}: not listed or sounds like the default voice; skipped", file=sys.stderr)
            continue
        verified.append(name)
    missing = [v for v in ESPEAK_HELD_OUT if v not in verified]
    if missing:
        sys.exit(f"held-out espeak-ng variants missing or falling back to the default: {missing}")
    return verified


def check_espeak_languages():
    listed = subprocess.run(["espeak-ng", "--voices=en"], capture_output=True, text=True).stdout
    languages = {line.split()[1] for line in listed.splitlines()[1:] if line.strip()}
    missing = [lang for lang in ESPEAK_LANGUAGES if lang not in languages]
    if missing:
        sys.exit(f"espeak-ng languages missing: {missing}")


def check_festival_voices():
    """Each voice must load: text2wave stops on an unknown one."""
    for voice in FESTIVAL_VOICES:
        try:
            result = subprocess.run(["text2wave", "-eval", f"(voice_{voice})", "-o", "/dev/null"],
                                    input=CHECK_TEXT.encode(), capture_output=True)
        except FileNotFoundError:
            sys.exit("--festival needs Festival: apt-get install festival festvox-kdlpc16k festvox-us-slt-hts "
                     "(scripts/install-deps.sh recipe)")
        if result.returncode != 0:
            sys.exit(f"Festival voice {voice} does not load: {result.stderr.decode().strip()[-300:]}")


def check_mbrola_voices():
    """espeak-ng names a missing MBROLA voice (or the missing mbrola program)
    on stderr, and either writes no samples or fails, by version."""
    header_only = 44  # bytes of a WAV file with no samples

    def speaks(voice):
        try:
            return len(espeak_raw(voice, CHECK_TEXT)) > header_only
        except SynthesisError:
            return False

    missing = [v for v in MBROLA_TRAIN + MBROLA_HELD_OUT if not speaks(v)]
    if missing:
        sys.exit(f"MBROLA voices missing: {missing}: apt-get install mbrola mbrola-us1 ... from Debian's "
                 "contrib and non-free (scripts/install-deps.sh recipe)")


def check_flite_voices():
    listed = subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout
    voices = listed.split(":", 1)[1].split()
    missing = [v for v in FLITE_TRAIN + FLITE_HELD_OUT + FLITE_EXTRA if v not in voices]
    if missing:
        sys.exit(f"flite voices missing: {missing} (flite -lv: {voices})")


# -- utterance specifications ---------------------------------------------------


def random_words(rng, min_words=1):
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(min_words, 8)))


def words_outside(rng, excluded, min_words=1):
    """random_words(rng, min_words), drawn again until not in excluded."""
    while True:
        words = random_words(rng, min_words)
        if words not in excluded:
            return words


def espeak_spec(rng, variants):
    return espeak_settings(rng, f"{rng.choice(ESPEAK_LANGUAGES)}+{rng.choice(variants)}")


def mbrola_spec(rng, voices):
    return espeak_settings(rng, rng.choice(voices))


def espeak_settings(rng, voice):
    return {
        "engine": "espeak-ng",
        "voice": voice,
        "speed": rng.randint(130, 200),
        "pitch": rng.randint(20, 80),
        "gap": rng.choice((0, 0, 1, 2, 3, 5, 8)),
    }


def flite_spec(rng, voices, shift=True):
    voice = rng.choice(voices)
    spec = {"engine": "flite", "voice": voice, "stretch": round(rng.uniform(0.8, 1.25), 3), "f0": 0, "cents": 0}
    if voice in FLITE_PITCH_VOICES:
        spec["f0"] = rng.randint(90, 180)
    if shift and rng.random() < 0.4:  # raise pitch and formants: a higher, smaller voice
        spec["cents"] = rng.randint(150, 500)
    return spec


def wide_flite_spec(rng):
    """A training flite voice pushed towards a higher, smaller speaker than
    flite_spec's: mean F0 up to 260 Hz (F0 alone) and a sox pitch shift of up
    to 900 cents (F0 and formants together: a shorter vocal tract)."""
    voice = rng.choice(FLITE_TRAIN)
    spec = {"engine": "flite", "voice": voice, "stretch": round(rng.uniform(0.8, 1.25), 3), "f0": 0, "cents": 0}
    if voice in FLITE_PITCH_VOICES:
        spec["f0"] = rng.randint(90, 260)
        if rng.random() < 0.7:
            spec["cents"] = rng.randint(100, 450)
    elif rng.random() < 0.85:
        spec["cents"] = rng.randint(200, 900)
    return spec


def extra_flite_spec(rng):
    """flite voices that flite_spec never draws (kal: 8 kHz)."""
    spec = {"engine": "flite", "voice": rng.choice(FLITE_EXTRA), "stretch": round(rng.uniform(0.8, 1.25), 3),
            "f0": rng.randint(90, 220), "cents": 0}
    if rng.random() < 0.5:
        spec["cents"] = rng.randint(100, 700)
    return spec


def festival_spec(rng):
    return {"engine": "festival", "voice": rng.choice(FESTIVAL_VOICES),
            "stretch": round(rng.uniform(0.9, 1.15), 3)}


def plan(n_train, n_dev, n_eval_espeak, n_eval_slt, seed, train_variants, n_wide_flite=0, n_extra_flite=0,
         n_festival=0, n_mbrola=0, n_eval_mbrola=0):
    rng = random.Random(seed)
    items = []
    seen = set()
    for _ in range(n_train):
        words = random_words(rng)
        seen.add(words)
        spec = espeak_spec(rng, train_variants) if rng.random() < 0.75 else flite_spec(rng, FLITE_TRAIN)
        items.append(("train", words, spec))

    def unseen_words():
        words = words_outside(rng, seen, min_words=2)
        seen.add(words)  # also unique across the held-out sets
        return words

    for _ in range(n_dev):
        spec = espeak_spec(rng, train_variants) if rng.random() < 0.75 else flite_spec(rng, FLITE_TRAIN)
        items.append(("dev", unseen_words(), spec))
    for i in range(n_eval_espeak):
        spec = espeak_spec(rng, [ESPEAK_HELD_OUT[i % len(ESPEAK_HELD_OUT)]])
        items.append(("eval_espeak", unseen_words(), spec))
    for _ in range(n_eval_slt):
        spec = flite_spec(rng, FLITE_HELD_OUT, shift=False)
        spec["stretch"] = round(rng.uniform(0.9, 1.15), 3)
        items.append(("eval_slt", unseen_words(), spec))
    # Drawn last, from their own generator, so that adding them changes none of
    # the utterances above; word sequences of dev and the held-out sets stay out.
    held_out = {words for split, words, _ in items if split != "train"}
    wide_rng = random.Random(seed + 1000)
    for _ in range(n_wide_flite):
        items.append(("train", words_outside(wide_rng, held_out), wide_flite_spec(wide_rng)))
    # The same for the extra flite voices and Festival: each from its own
    # generator, after everything above, so that none of them changes another.
    extra_rng = random.Random(seed + 2000)
    for _ in range(n_extra_flite):
        items.append(("train", words_outside(extra_rng, held_out), extra_flite_spec(extra_rng)))
    trained = {words for split, words, _ in items if split == "train"}
    festival_rng = random.Random(seed + 3000)
    for _ in range(n_festival):
        words = words_outside(festival_rng, trained, min_words=2)
        items.append(("eval_festival", words, festival_spec(festival_rng)))
    # MBROLA: the held-out voices' words outside training so far, then the
    # training voices' outside every evaluation set.
    eval_mbrola_rng = random.Random(seed + 4000)
    for i in range(n_eval_mbrola):
        words = words_outside(eval_mbrola_rng, trained, min_words=2)
        spec = mbrola_spec(eval_mbrola_rng, [MBROLA_HELD_OUT[i % len(MBROLA_HELD_OUT)]])
        items.append(("eval_mbrola", words, spec))
    evaluated = {words for split, words, _ in items if split != "train"}
    mbrola_rng = random.Random(seed + 5000)
    for _ in range(n_mbrola):
        items.append(("train", words_outside(mbrola_rng, evaluated), mbrola_spec(mbrola_rng, MBROLA_TRAIN)))
    return items


# -- synthesis ----------------------------------------------------------------------

# sox -R: repeatable, its dither seeded, so a rerun writes the same bytes
# (without it every file that sox resamples or requantises differs by a
# least significant bit or two from run to run).
SOX = ["sox", "-R"]
SOX_OUT = ["-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", "-e", "signed-integer"]


def synthesise(job):
    """Writes the file under a temporary name and renames it when complete,
    so that an interrupted run leaves no partial file for --keep-existing;
    a failed one removes what it wrote."""
    path, words, spec = job
    base, extension = os.path.splitext(path)
    final, path = path, base + ".partial" + extension
    try:
        if spec["engine"] == "espeak-ng":
            wav = espeak_raw(spec["voice"], words, spec["speed"], spec["pitch"], spec["gap"])
            run_tool([*SOX, "-t", "wav", "-", *SOX_OUT, path], input=wav)
        elif spec["engine"] == "festival":
            raw = path + ".festival.wav"
            cmd = ["text2wave", "-eval", f"(voice_{spec['voice']})",
                   "-eval", f"(Parameter.set 'Duration_Stretch {spec['stretch']})", "-o", raw]
            run_tool(cmd, input=words.encode())
            run_tool([*SOX, raw, *SOX_OUT, path])
            os.remove(raw)
        else:
            cmd = ["flite", "-voice", spec["voice"], "--setf", f"duration_stretch={spec['stretch']}"]
            if spec["f0"]:
                cmd += ["--setf", f"int_f0_target_mean={spec['f0']}"]
            raw = path + ".flite.wav"
            run_tool(cmd + ["-t", words, "-o", raw])
            effects = ["pitch", str(spec["cents"])] if spec["cents"] else []
            run_tool([*SOX, raw, *SOX_OUT, path, *effects])
            os.remove(raw)
    except BaseException:  # a failed or interrupted synthesis leaves no file behind
        for leftover in (path, path + ".festival.wav", path + ".flite.wav"):
            if os.path.exists(leftover):
                os.remove(leftover)
        raise
    os.replace(path, final)
    return final


# -- the manifest and argument types, shared by the example's scripts -------------

MANIFEST_COLUMNS = ("path", "transcript", "voice", "split", "settings")


class ManifestError(Exception):
    """A manifest that cannot be read, or a line of it that is not a row."""


def read_manifest_rows(path):
    """manifest.tsv as main() writes it: a dict per row, in file order. Blank
    lines (a trailing one) are skipped; a line with another number of columns
    than the header is refused, naming its line."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError as error:
        raise ManifestError(f"{path}: {error.strerror} (make_corpus.py writes the corpus's manifest.tsv)") from None
    header = lines[0].split("\t")
    missing = [column for column in MANIFEST_COLUMNS[:4] if column not in header]
    if missing:
        raise ManifestError(f"{path}: line 1 is not a manifest header (no column {', '.join(missing)})")
    rows = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ManifestError(f"{path}, line {number}: {len(fields)} columns, not the header's {len(header)}")
        rows.append(dict(zip(header, fields)))
    return rows


def read_manifest(path):
    """manifest.tsv as main() writes it: {split: [row dicts]}, in file order."""
    rows = {}
    for row in read_manifest_rows(path):
        rows.setdefault(row["split"], []).append(row)
    return rows


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def count(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a count (0 or more)")
    return value


def positive_float(text):
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def non_negative_float(text):
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} is not a number of 0 or more")
    return value


def fraction(text):
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1]")
    return value


# -- the plan a corpus folder holds ---------------------------------------------------

PLAN_FILE = "plan.json"
# The arguments that decide the plan (with --seed and the espeak-ng training
# variants found), as plan.json names them.
PLAN_SIZES = ("train", "dev", "eval_espeak", "eval_slt", "wide_flite", "extra_flite", "festival", "mbrola",
              "eval_mbrola")


class PlanError(Exception):
    """OUT holds files of another plan than this run's."""


def settings_text(spec):
    return " ".join(f"{k}={v}" for k, v in spec.items() if k not in ("engine", "voice"))


def plan_settings(args, train_variants):
    return {"seed": args.seed, **{size: getattr(args, size) for size in PLAN_SIZES},
            "espeak_train_variants": list(train_variants)}


def plan_of(settings):
    s = settings
    return plan(s["train"], s["dev"], s["eval_espeak"], s["eval_slt"], s["seed"], s["espeak_train_variants"],
                s["wide_flite"], s["extra_flite"], s["festival"], s["mbrola"], s["eval_mbrola"])


def planned_splits(args):
    """The splits that these sizes plan, without the voices."""
    sizes = {"train": args.train + args.wide_flite + args.extra_flite + args.mbrola, "dev": args.dev,
             "eval_espeak": args.eval_espeak, "eval_slt": args.eval_slt, "eval_festival": args.festival,
             "eval_mbrola": args.eval_mbrola}
    return sorted(split for split, size in sizes.items() if size)


def manifest_rows(items):
    """(path relative to OUT, transcript, voice, split, settings) of each planned utterance, in the plan's order:
    the n-th is wav/<split>/<n>.wav."""
    return [(os.path.join("wav", split, f"{n:06d}.wav"), words, f"{spec['engine']}/{spec['voice']}", split,
             settings_text(spec)) for n, (split, words, spec) in enumerate(items)]


def rows_digest(rows):
    return hashlib.sha256("\n".join("\t".join(row) for row in rows).encode()).hexdigest()


def file_index(path):
    """wav/<split>/000123.wav -> 123: the utterance's place in its plan."""
    return int(os.path.basename(path).split(".")[0])


# The splits make_corpus.py writes: only their folders hold its files.
CORPUS_SPLITS = ("train", "dev", "eval_espeak", "eval_slt", "eval_festival", "eval_mbrola")


def corpus_files(out):
    """The utterance files under OUT/wav/<split>, relative to OUT, for the
    splits make_corpus.py writes: <digits>.wav, not the temporaries of a
    synthesis cut short (000123.partial.wav, ...), which are no utterance."""
    found = []
    wav = os.path.join(out, "wav")
    for split in CORPUS_SPLITS:
        if os.path.isdir(os.path.join(wav, split)):
            found += [os.path.join("wav", split, name) for name in sorted(os.listdir(os.path.join(wav, split)))
                      if name.endswith(".wav") and name[: -len(".wav")].isdigit()]
    return found


def describe_changes(old, new):
    changes = []
    for key in ("seed", *PLAN_SIZES):
        if old.get(key) != new[key]:
            changes.append(f"--{key.replace('_', '-')} {old.get(key)} (now {new[key]})")
    if old.get("espeak_train_variants") != new["espeak_train_variants"]:
        before, now = set(old.get("espeak_train_variants") or ()), set(new["espeak_train_variants"])
        changes.append("espeak-ng training variants" + "".join(
            f" {label} {' '.join(sorted(names))}" for label, names in (("gone:", before - now), ("new:", now - before))
            if names))
    return ", ".join(changes)


def read_record(out):
    """What OUT records of the utterances in its files: ("plan", settings,
    rows) from plan.json; ("manifest", None, rows) from the manifest of a
    corpus made before plan.json (of the files it lists); ("unknown", None,
    {}) for files with neither, or a plan.json that make_corpus.py now plans
    otherwise; None for an OUT without files. rows: {index in the plan: row}.
    A plan.json it cannot read is PlanError: the files are not removed on a
    guess."""
    path = os.path.join(out, PLAN_FILE)
    if os.path.exists(path):
        try:
            with open(path) as f:
                record = json.load(f)
            rows = manifest_rows(plan_of(record["settings"]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise PlanError(f"{path}: cannot read it ({type(e).__name__}: {e}); move it away, with the wav "
                            "folder, to make the corpus anew") from None
        if rows_digest(rows) != record.get("sha256"):
            return "unknown", None, {}
        return "plan", record["settings"], dict(enumerate(rows))
    manifest = os.path.join(out, "manifest.tsv")
    if os.path.exists(manifest):
        listed = read_manifest_rows(manifest)
        columns = [c for c in MANIFEST_COLUMNS if not listed or c in listed[0]]
        try:
            return "manifest", columns, {file_index(r["path"]): tuple(r.get(c, "") for c in MANIFEST_COLUMNS)
                                         for r in listed}
        except ValueError:
            raise ManifestError(f"{manifest}: a path that make_corpus.py does not write") from None
    return ("unknown", None, {}) if corpus_files(out) else None


def reconcile(out, settings, rows, resume, only):
    """Checks OUT's files against this plan (settings, its manifest rows) and
    says what to do. resume: --keep-existing or --only, which keep files, so
    every file kept must hold this plan's utterance: the plan of OUT's files
    and this one must be the same up to the shorter's end (sets added at the
    end of a plan change none before them), else PlanError. A run that
    remakes every file (neither) removes first the files that this plan does
    not have as they are. Returns (the settings plan.json records after the
    run, or None to leave the manifest the record (a corpus from before
    plan.json, its rows kept by --only); the recorded rows past this plan,
    {index: row}; the files to remove first, relative to OUT)."""
    record = read_record(out)
    if record is None:
        return settings, {}, []
    kind, recorded, old = record
    if kind == "unknown":
        if resume:
            raise PlanError(f"{out} holds utterance files but no {PLAN_FILE} (or one that make_corpus.py now plans "
                            "otherwise) nor manifest.tsv to tell which: make the corpus anew, without "
                            "--keep-existing and --only")
        if not os.path.exists(os.path.join(out, PLAN_FILE)):
            # Files of no record at all may be someone's own: not removed.
            raise PlanError(f"{out}/wav holds .wav files that no {PLAN_FILE} or manifest.tsv of make_corpus.py "
                            "lists: move them away or choose another --out")
        return settings, {}, corpus_files(out)
    # A manifest from before the settings column is compared without it.
    compared = [MANIFEST_COLUMNS.index(c) for c in (recorded if kind == "manifest" else MANIFEST_COLUMNS)]
    differing = [n for n, row in sorted(old.items())
                 if n < len(rows) and [rows[n][i] for i in compared] != [row[i] for i in compared]]
    beyond = {n: row for n, row in old.items() if n >= len(rows)}
    if kind == "plan":
        if not differing:
            return (recorded if beyond else settings), beyond, []
        if resume:
            raise PlanError(f"{out}/{PLAN_FILE}: its files were planned with {describe_changes(recorded, settings)}; "
                            "these settings would keep them under other utterances. Rerun with its settings, or "
                            "without --keep-existing and --only to make the corpus anew")
    elif resume and differing:
        n = differing[0]
        raise PlanError(f"{out}/manifest.tsv (from before make_corpus.py kept {PLAN_FILE}) lists as utterance {n} "
                        f"{old[n][0]} '{old[n][1]}' ({old[n][2]}), these settings plan {rows[n][0]} '{rows[n][1]}' "
                        f"({rows[n][2]}): they would keep its files under other utterances. Rerun with the settings "
                        "that made it (run_recipe.sh's, for its corpus), or without --keep-existing and --only to "
                        "make the corpus anew")
    elif resume and beyond and not only:
        raise PlanError(f"{out}/manifest.tsv (from before make_corpus.py kept {PLAN_FILE}) lists {len(beyond)} "
                        f"utterances past this plan's {len(rows)}: rerun once with the settings that made it "
                        f"(run_recipe.sh's, for its corpus), which {PLAN_FILE} then records")
    elif resume:
        return (None if beyond else settings), beyond, []
    return settings, {}, [old[n][0] for n in differing + sorted(beyond)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "data"), help="where the corpus goes (default: examples/asr/data, ignored by git)")
    parser.add_argument("--train", type=count, default=12000)
    parser.add_argument("--dev", type=count, default=200)
    parser.add_argument("--eval-espeak", type=count, default=400)
    parser.add_argument("--eval-slt", type=count, default=150)
    parser.add_argument("--wide-flite", type=count, default=4000,
                        help="extra training utterances of flite voices with a wider pitch and formant range")
    parser.add_argument("--extra-flite", type=count, default=0,
                        help="extra training utterances of flite's other voice (kal, 8 kHz); the recipe uses 1000")
    parser.add_argument("--festival", type=count, default=0,
                        help="utterances of Festival voices, split eval_festival (evaluation only)")
    parser.add_argument("--mbrola", type=count, default=0,
                        help="extra training utterances of espeak-ng's MBROLA voices; the recipe uses 6000")
    parser.add_argument("--eval-mbrola", type=count, default=0,
                        help="utterances of the held-out MBROLA voices, split eval_mbrola; the recipe uses 200")
    parser.add_argument("--only", nargs="+", metavar="SPLIT",
                        help="synthesise only these splits (the manifest lists every file of the corpus in OUT)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=positive_int, default=2)
    parser.add_argument("--keep-existing", action="store_true",
                        help=f"leave files already in OUT (the plan is deterministic: OUT/{PLAN_FILE} records "
                        "its settings, and other settings that would renumber them are refused)")
    args = parser.parse_args(argv)
    splits = planned_splits(args)
    unknown = [split for split in args.only or () if split not in splits]
    if unknown:
        parser.error(f"--only {' '.join(unknown)}: not a split of this plan ({' '.join(splits) or 'none'})")

    check_synthesisers()
    check_espeak_languages()
    check_flite_voices()
    if args.festival:
        check_festival_voices()
    if args.mbrola or args.eval_mbrola:
        check_mbrola_voices()
    variants = espeak_variants()
    train_variants = [v for v in variants if v not in ESPEAK_HELD_OUT and v not in ESPEAK_EXCLUDED]
    print(f"espeak-ng: {len(ESPEAK_LANGUAGES)} languages; {len(train_variants)} training variants: "
          f"{' '.join(train_variants)}")
    print(f"espeak-ng held out: {' '.join(ESPEAK_HELD_OUT)}; flite train: {' '.join(FLITE_TRAIN)}; "
          f"flite held out: {' '.join(FLITE_HELD_OUT)}")

    settings = plan_settings(args, train_variants)
    items = plan_of(settings)
    rows = manifest_rows(items)
    try:
        recorded, beyond, stale = reconcile(args.out, settings, rows, args.keep_existing or bool(args.only),
                                            bool(args.only))
    except (PlanError, ManifestError) as error:
        sys.exit(str(error))
    for relative in stale:
        if os.path.exists(os.path.join(args.out, relative)):
            os.remove(os.path.join(args.out, relative))
    if stale:
        print(f"removed {len(stale)} files of {args.out}'s earlier plan that this one does not have as they are")
    if beyond:
        print(f"{args.out} holds {len(beyond)} planned utterances past this plan's {len(rows)}: "
              + ("listed in its manifest, as they were" if args.only else "left out of its manifest"))
    for split in splits:
        os.makedirs(os.path.join(args.out, "wav", split), exist_ok=True)
    if recorded is not None:
        recorded_rows = rows if recorded is settings else manifest_rows(plan_of(recorded))
        write_atomically(os.path.join(args.out, PLAN_FILE), json.dumps(
            {"settings": recorded, "utterances": len(recorded_rows), "sha256": rows_digest(recorded_rows)},
            indent=1) + "\n")

    jobs = [(os.path.join(args.out, row[0]), words, spec) for row, (_, words, spec) in zip(rows, items)]
    if args.only:
        jobs = [job for job, row in zip(jobs, rows) if row[3] in args.only]
    if args.keep_existing:
        jobs = [job for job in jobs if not os.path.exists(job[0])]
    start = time.time()
    if jobs:
        try:
            with multiprocessing.Pool(args.jobs) as pool:
                for i, _ in enumerate(pool.imap_unordered(synthesise, jobs, chunksize=16)):
                    if (i + 1) % 1000 == 0:
                        print(f"{i + 1}/{len(jobs)} utterances, {time.time() - start:.0f} s", flush=True)
        except SynthesisError as error:
            sys.exit(f"synthesis failed: {error}")
    # --only adds to the corpus in OUT: its manifest keeps the files past this plan.
    listed = rows + ([beyond[n] for n in sorted(beyond)] if args.only else [])
    listed = [row for row in listed if os.path.exists(os.path.join(args.out, row[0]))]
    write_atomically(os.path.join(args.out, "manifest.tsv"), "".join(
        "\t".join(row) + "\n" for row in [MANIFEST_COLUMNS, *listed]))
    counts = {s: sum(1 for r in listed if r[3] == s) for s in sorted({r[3] for r in listed} | set(splits))}
    print(f"wrote {len(listed)} utterances {counts} to {args.out} in {time.time() - start:.0f} s")
    # --only after an interrupted run lists the other splits as far as they
    # got: said, so that nobody trains or scores on part of a split unaware.
    unmade = collections.Counter(r[3] for r in rows if not os.path.exists(os.path.join(args.out, r[0])))
    if unmade:
        print(f"warning: {args.out}/manifest.tsv lacks utterances this plan has, whose files were never made: "
              f"{', '.join(f'{s} {n}' for s, n in unmade.items())}; make them with --keep-existing", file=sys.stderr)


def write_atomically(path, text):
    with open(path + ".partial", "w") as f:
        f.write(text)
    os.replace(path + ".partial", path)


if __name__ == "__main__":
    main()
