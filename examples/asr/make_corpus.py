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
Writes OUT/wav/<split>/<n>.wav and OUT/manifest.tsv (header: path, transcript,
voice, split, settings; paths relative to OUT), listing the files present.
The plan is deterministic for a seed and sizes: --keep-existing resumes an
interrupted run, --only synthesises just some splits.
"""

import argparse
import hashlib
import multiprocessing
import os
import random
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


def espeak_raw(voice, text, speed=175, pitch=50, gap=0):
    # -w /dev/stdout: --stdout's bytes for espeak-ng's own voices, and
    # MBROLA voices write nothing to --stdout.
    cmd = ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-g", str(gap), "-w", "/dev/stdout", text]
    return subprocess.run(cmd, capture_output=True, check=True).stdout


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
        except subprocess.CalledProcessError:
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
    so that an interrupted run leaves no partial file for --keep-existing."""
    path, words, spec = job
    base, extension = os.path.splitext(path)
    final, path = path, base + ".partial" + extension
    if spec["engine"] == "espeak-ng":
        wav = espeak_raw(spec["voice"], words, spec["speed"], spec["pitch"], spec["gap"])
        subprocess.run([*SOX, "-t", "wav", "-", *SOX_OUT, path], input=wav, check=True, capture_output=True)
    elif spec["engine"] == "festival":
        raw = path + ".festival.wav"
        cmd = ["text2wave", "-eval", f"(voice_{spec['voice']})",
               "-eval", f"(Parameter.set 'Duration_Stretch {spec['stretch']})", "-o", raw]
        subprocess.run(cmd, input=words.encode(), check=True, capture_output=True)
        subprocess.run([*SOX, raw, *SOX_OUT, path], check=True, capture_output=True)
        os.remove(raw)
    else:
        cmd = ["flite", "-voice", spec["voice"], "--setf", f"duration_stretch={spec['stretch']}"]
        if spec["f0"]:
            cmd += ["--setf", f"int_f0_target_mean={spec['f0']}"]
        raw = path + ".flite.wav"
        subprocess.run(cmd + ["-t", words, "-o", raw], check=True, capture_output=True)
        effects = ["pitch", str(spec["cents"])] if spec["cents"] else []
        subprocess.run([*SOX, raw, *SOX_OUT, path, *effects], check=True, capture_output=True)
        os.remove(raw)
    os.replace(path, final)
    return final


def read_manifest(path):
    """manifest.tsv as main() writes it: {split: [row dicts]}, in file order."""
    rows = {}
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            rows.setdefault(row["split"], []).append(row)
    return rows


def settings_text(spec):
    return " ".join(f"{k}={v}" for k, v in spec.items() if k not in ("engine", "voice"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "data"), help="where the corpus goes (default: examples/asr/data, ignored by git)")
    parser.add_argument("--train", type=int, default=12000)
    parser.add_argument("--dev", type=int, default=200)
    parser.add_argument("--eval-espeak", type=int, default=400)
    parser.add_argument("--eval-slt", type=int, default=150)
    parser.add_argument("--wide-flite", type=int, default=4000,
                        help="extra training utterances of flite voices with a wider pitch and formant range")
    parser.add_argument("--extra-flite", type=int, default=0,
                        help="extra training utterances of flite's other voice (kal, 8 kHz); the recipe uses 1000")
    parser.add_argument("--festival", type=int, default=0,
                        help="utterances of Festival voices, split eval_festival (evaluation only)")
    parser.add_argument("--mbrola", type=int, default=0,
                        help="extra training utterances of espeak-ng's MBROLA voices; the recipe uses 6000")
    parser.add_argument("--eval-mbrola", type=int, default=0,
                        help="utterances of the held-out MBROLA voices, split eval_mbrola; the recipe uses 200")
    parser.add_argument("--only", nargs="+", metavar="SPLIT",
                        help="synthesise only these splits (the manifest lists the files present)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep-existing", action="store_true",
                        help="leave files already in OUT (same seed and sizes: the plan is deterministic)")
    args = parser.parse_args()

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

    items = plan(args.train, args.dev, args.eval_espeak, args.eval_slt, args.seed, train_variants, args.wide_flite,
                 args.extra_flite, args.festival, args.mbrola, args.eval_mbrola)
    splits = sorted({split for split, _, _ in items})
    jobs, rows = [], []
    for split in splits:
        os.makedirs(os.path.join(args.out, "wav", split), exist_ok=True)
    for n, (split, words, spec) in enumerate(items):
        relative = os.path.join("wav", split, f"{n:06d}.wav")
        jobs.append((os.path.join(args.out, relative), words, spec))
        rows.append((relative, words, f"{spec['engine']}/{spec['voice']}", split, settings_text(spec)))

    if args.only:
        jobs = [job for job, item in zip(jobs, items) if item[0] in args.only]
    if args.keep_existing:
        jobs = [job for job in jobs if not os.path.exists(job[0])]
    start = time.time()
    with multiprocessing.Pool(args.jobs) as pool:
        for i, _ in enumerate(pool.imap_unordered(synthesise, jobs, chunksize=16)):
            if (i + 1) % 1000 == 0:
                print(f"{i + 1}/{len(jobs)} utterances, {time.time() - start:.0f} s", flush=True)
    rows = [row for row in rows if os.path.exists(os.path.join(args.out, row[0]))]
    with open(os.path.join(args.out, "manifest.tsv"), "w") as f:
        f.write("path\ttranscript\tvoice\tsplit\tsettings\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    counts = {s: sum(1 for r in rows if r[3] == s) for s in splits}
    print(f"wrote {len(rows)} utterances {counts} to {args.out} in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
