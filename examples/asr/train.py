#!/usr/bin/python3
"""Trains the streaming CTC speech model of the ASR example on the synthetic corpus.

Model: tarn's reference LinearTransformer (converter/reference.py), causal
linear attention, 9-frame windows every 3 frames (30 ms steps), pre-norm, GELU,
a causal depthwise convolution (kernel 7) per layer; CTC over 29 labels
(LABELS: blank = 0, space, apostrophe, a-z). Trained with its parallel forward
(causal, so the padding after an utterance changes none of its outputs).

Every epoch sees freshly augmented audio: half the utterances (--speed-perturb)
played 0.9-1.2 times as fast (every frequency scaled with the speed, see
change_speed), silence before and after, some utterances joined in pairs,
random gain (peak -30..0 dBFS), white or pink noise (SNR 5-40 dB) on most,
rounding to 16 bits, then features (features.py) and a light SpecAugment
(--augment basic: what the bundled model's runs used). --augment robust
(the recipe's) adds, per utterance: reverberation (a synthetic room impulse
response), a channel (telephone band, a lower sample rate's band limit,
mu-law or A-law 8-bit coding), vocal-tract length perturbation (the mel
filterbank of the training features warped by 0.85-1.18, formants moved
without the pitch or the tempo) and wider SpecAugment masks. Only training
features are augmented: features.py's recipe, which the C++ front end
reproduces, is what dev, evaluation and inference see.

The learning rate warms up linearly over the first 5 % of the budget and
decays along a cosine to the end. The budget is a number of optimiser steps
(--steps: the same work and the same weights however busy the machine) or,
without it, wall-clock minutes (--minutes).

Checkpoints (--checkpoint, default OUT with .ckpt) hold the model, the
optimiser, the step, the position in the epoch and the random generators'
states; one is written every --checkpoint-minutes and at the end. Rerun with
the same arguments after an interruption and training resumes from it: with
--steps the final weights are those of an uninterrupted run. A log (--log,
default OUT with .train.log; a resumed run appends to it, a run from scratch
starts it anew) gets every line printed: loss every 50 steps,
dev greedy error rates after each epoch (or every --eval-every steps), wall
and CPU time. --device cuda trains on a GPU when one is present.

Usage: train.py [--data examples/asr/data] [--steps N | --minutes 32] [--out model/asr.pt]
                [--augment robust|basic] [--device auto|cpu|cuda]
"""

import argparse
import hashlib
import math
import multiprocessing
import os
import random
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def shown(path):
    """path as the log shows it: relative to the repository when inside it,
    so that a committed log names no machine's folders."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repo root, for converter
sys.path.insert(0, HERE)

import features  # noqa: E402
import make_corpus  # noqa: E402
from eval import edit_distance  # noqa: E402

try:
    from converter.reference import LinearTransformer, ModelConfig
except ImportError:  # the converter package needs more than torch; its reference model does not
    import importlib.util

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "converter"))  # its config.py
    _spec = importlib.util.spec_from_file_location(
        "tarn_reference", os.path.join(os.path.dirname(os.path.dirname(HERE)), "converter", "reference.py"))
    _reference = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_reference)
    LinearTransformer, ModelConfig = _reference.LinearTransformer, _reference.ModelConfig

LABELS = ["<blank>", " ", "'"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
LABEL_INDEX = {c: i for i, c in enumerate(LABELS)}

CONFIG = ModelConfig(
    input_kind="frames", input_dim=40, stack_window=9, stack_hop=3,
    input_projection=True, input_activation="gelu", norm_placement="pre",
    activation="gelu", d_model=160, num_layers=6, num_heads=4, d_key=40,
    d_value=40, d_ff=640, conv_kernel=7, final_norm=True, output_dim=len(LABELS),
)


LOG_FILE = None  # set by main(): every logged line is appended there too


def log(*args):
    line = " ".join([time.strftime("%H:%M:%S"), *map(str, args)])
    print(line, flush=True)
    if LOG_FILE:
        with open(LOG_FILE, "a") as f:
            f.write(line + "\n")


# -- data ---------------------------------------------------------------------------


def load_split(data, rows):
    """[(samples, transcript)] of the manifest's rows; a file that cannot be
    read exits naming it, before any training."""
    try:
        return [(features.read_wav(os.path.join(data, r["path"])), r["transcript"]) for r in rows]
    except ValueError as error:  # read_wav's, naming the file
        sys.exit(f"{error}; delete it and rerun make_corpus.py --keep-existing (run_recipe.sh does) to make it anew")
    except OSError as error:
        sys.exit(f"{error.filename}: {error.strerror}")


def _log_mel_sums(samples_list):
    total, total_sq, count = np.zeros(40), np.zeros(40), 0
    for samples in samples_list:
        lm = features.log_mel(samples)
        total += lm.sum(0)
        total_sq += (lm**2).sum(0)
        count += len(lm)
    return total, total_sq, count


def feature_statistics(samples_list, jobs):
    """Mean and population std of each log-mel bin over every frame of the clean training set."""
    parts = [samples_list[i::jobs] for i in range(jobs)]
    with multiprocessing.Pool(jobs) as pool:
        sums = pool.map(_log_mel_sums, parts)
    total = sum(s[0] for s in sums)
    total_sq = sum(s[1] for s in sums)
    count = sum(s[2] for s in sums)
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 0.0))
    return mean, std, count


def encode(text):
    return [LABEL_INDEX[c] for c in text]


SPEED_RANGE = (0.9, 1.2)  # mostly faster: the held-out voices include higher ones than the training voices


def pink_noise(n, rng):
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum[1:] /= np.sqrt(np.arange(1, len(spectrum)))
    spectrum[0] = 0
    noise = np.fft.irfft(spectrum, n)
    return noise / (noise.std() + 1e-12)


def change_speed(samples, factor):
    """Plays samples `factor` times faster: every frequency (F0 and formants) is
    scaled by factor and the duration by 1/factor, like a shorter or longer
    vocal tract speaking faster or slower. Linear interpolation; its slight
    low-pass is far below the noise added later."""
    positions = np.arange(0, len(samples) - 1, factor)
    return np.interp(positions, np.arange(len(samples)), samples)


def augment(pieces, rng, speed_perturbed, robust=False):
    """[samples, ...] of one training example -> augmented waveform (float64,
    16-bit grid); a fraction speed_perturbed of the pieces change speed.
    robust (--augment robust) adds a room (35 %) before the gain and a
    channel (25 %) after the noise; without it the random draws are those of
    --augment basic, so earlier runs replay."""
    sr = features.RECIPE["sample_rate"]
    parts = [np.zeros(rng.integers(0, int(0.3 * sr)))]
    spoken = []
    for i, samples in enumerate(pieces):
        if i:
            parts.append(np.zeros(rng.integers(int(0.1 * sr), int(0.6 * sr))))
        samples = samples.astype(np.float64)
        if speed_perturbed and rng.random() < speed_perturbed:
            samples = change_speed(samples, rng.uniform(*SPEED_RANGE))
        spoken.append(samples)
        parts.append(samples)
    parts.append(np.zeros(rng.integers(0, int(0.3 * sr))))
    x = np.concatenate(parts)
    if robust and rng.random() < 0.35:
        x = convolve(x, room_impulse_response(rng, sr))
    gain = 10 ** (rng.uniform(-30, 0) / 20) / (np.abs(x).max() + 1e-9)
    x *= gain
    roll = rng.random()
    if roll < 0.65:
        signal_rms = gain * math.sqrt(np.mean(np.concatenate(spoken) ** 2))
        noise = rng.standard_normal(len(x)) if roll < 0.3 else pink_noise(len(x), rng)
        x += noise * signal_rms * 10 ** (-rng.uniform(5, 40) / 20)
    elif roll < 0.75:  # a faint noise floor, like a quiet recording
        x += rng.standard_normal(len(x)) * 10 ** (-rng.uniform(60, 80) / 20)
    if robust and rng.random() < 0.25:
        x = channel(x, rng, sr)
    return np.round(np.clip(x, -1.0, 32767 / 32768) * 32768) / 32768


# -- --augment robust -------------------------------------------------------------

VTLP_RANGE = (0.85, 1.18)


def room_impulse_response(rng, sr):
    """A synthetic room: the direct path, then Gaussian noise decaying by 60 dB
    over RT60 = 0.15-0.8 s after a 1-10 ms pre-delay, at a direct-to-reverberant
    ratio of -3..12 dB."""
    rt60 = rng.uniform(0.15, 0.8)
    n = int(min(rt60, 0.5) * sr)
    delay = int(rng.uniform(0.001, 0.01) * sr)
    t = np.arange(n) / sr
    tail = rng.standard_normal(n) * np.exp(-6.908 * t / rt60)
    tail[:delay] = 0.0
    tail *= 10 ** (-rng.uniform(-3, 12) / 20) / math.sqrt(np.sum(tail**2) + 1e-12)
    tail[0] = 1.0
    return tail


def convolve(x, h):
    n = len(x) + len(h) - 1
    size = 1 << (n - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(h, size), size)[:n]


def band_limit(x, sr, low, high):
    spectrum = np.fft.rfft(x)
    f = np.fft.rfftfreq(len(x), 1.0 / sr)
    spectrum[(f < low) | (f > high)] = 0.0
    return np.fft.irfft(spectrum, len(x))


def mu_law(x, mu=255.0):
    """8-bit mu-law coding and decoding (G.711's curve, uniform 8-bit steps)."""
    y = np.sign(x) * np.log1p(mu * np.abs(x)) / math.log1p(mu)
    y = np.round(y * 127) / 127
    return np.sign(y) * np.expm1(np.abs(y) * math.log1p(mu)) / mu


def a_law(x, a=87.6):
    """8-bit A-law coding and decoding (G.711's curve, uniform 8-bit steps)."""
    ax = np.abs(x) * a
    k = 1 + math.log(a)
    y = np.where(ax < 1, ax / k, (1 + np.log(np.maximum(ax, 1.0))) / k)
    y = np.round(y * 127) / 127
    yk = y * k
    return np.sign(x) * np.where(yk < 1, yk / a, np.exp(yk - 1) / a)


def channel(x, rng, sr):
    """A telephone, a lower sample rate or a companding codec, one in four."""
    roll = rng.random()
    x = np.clip(x, -1.0, 1.0)
    if roll < 0.3:  # narrow-band telephone
        x = band_limit(x, sr, rng.uniform(200, 400), rng.uniform(3200, 3600))
        return mu_law(np.clip(x, -1, 1)) if rng.random() < 0.5 else a_law(np.clip(x, -1, 1))
    if roll < 0.7:  # recorded at 8, 11.025 or 12 kHz (and resampled)
        return band_limit(x, sr, 0, rng.choice((4000, 5512, 6000)) * rng.uniform(0.9, 1.0))
    return mu_law(x) if roll < 0.85 else a_law(x)


def spec_augment(feats, rng, freq_width=6, time_width=11, time_every=150):
    t, d = feats.shape
    for _ in range(2):
        w = rng.integers(0, freq_width)
        f0 = rng.integers(0, d - w + 1)
        feats[:, f0 : f0 + w] = 0.0
    for _ in range(max(1, t // time_every)):
        w = rng.integers(0, time_width)
        t0 = rng.integers(0, max(1, t - w + 1))
        feats[t0 : t0 + w, :] = 0.0
    return feats


class Batches(torch.utils.data.Dataset):
    """One item = one padded batch; augmentation and features run in the DataLoader worker."""

    def __init__(self, data, batches, recipe, train, seed, speed_perturbed=0.0, augment="basic", first=0):
        self.data, self.batches, self.recipe, self.train, self.seed = data, batches, recipe, train, seed
        self.speed_perturbed, self.augment, self.first = speed_perturbed, augment, first

    def __len__(self):
        return len(self.batches) - self.first

    def __getitem__(self, index):
        index += self.first  # resuming mid-epoch: the batch's randomness depends on its index alone
        rng = np.random.default_rng([self.seed, index])
        feats, texts = [], []
        for example in self.batches[index]:
            pieces = [self.data[i][0] for i in example]
            texts.append(" ".join(self.data[i][1] for i in example))
            if self.train and self.augment == "robust":
                x = augment(pieces, rng, self.speed_perturbed, robust=True)
                alpha = rng.uniform(*VTLP_RANGE) if rng.random() < 0.6 else 1.0
                f = features.features(x, self.recipe, warp=alpha)
                feats.append(spec_augment(f, rng, freq_width=8, time_width=13, time_every=100))
            elif self.train:
                f = features.features(augment(pieces, rng, self.speed_perturbed), self.recipe)
                feats.append(spec_augment(f, rng))
            else:
                feats.append(features.features(pieces[0], self.recipe))
        lengths = [len(f) for f in feats]
        frames = np.zeros((len(feats), max(max(lengths), CONFIG.stack_window), 40), dtype=np.float32)
        for i, f in enumerate(feats):
            frames[i, : len(f)] = f
        steps = [max(0, 1 + (n - CONFIG.stack_window) // CONFIG.stack_hop) for n in lengths]
        targets = [encode(t) for t in texts]
        return (
            torch.from_numpy(frames),
            torch.tensor(steps),
            torch.tensor([c for t in targets for c in t]),
            torch.tensor([len(t) for t in targets]),
            texts,
        )


def make_batches(data, frames_per_batch, rng, join_fraction=0.0):
    """Examples (tuples of utterance indices) grouped by length into batches of
    at most frames_per_batch padded frames, in random order."""
    order = list(range(len(data)))
    rng.shuffle(order)
    n_join = int(join_fraction * len(order)) // 2 * 2
    examples = [tuple(order[i : i + 2]) for i in range(0, n_join, 2)] + [(i,) for i in order[n_join:]]
    length = {e: sum(len(data[i][0]) for i in e) / 160 + 50 * len(e) for e in examples}
    examples.sort(key=length.get)
    batches, current = [], []
    for e in examples:
        if current and length[e] * (len(current) + 1) > frames_per_batch:
            batches.append(current)
            current = []
        current.append(e)
    batches.append(current)
    rng.shuffle(batches)
    return batches


# -- decoding and scoring -------------------------------------------------------------


def greedy(logits, steps):
    """[B, S, labels] -> texts: best label per step, repeats merged, blanks dropped."""
    best = logits.argmax(-1)
    texts = []
    for row, n in zip(best.tolist(), steps.tolist()):
        out, previous = [], 0
        for label in row[:n]:
            if label != previous and label != 0:
                out.append(LABELS[label])
            previous = label
        texts.append(" ".join("".join(out).split()))
    return texts


def evaluate(model, data, recipe, frames_per_batch=20000, device="cpu"):
    batches = make_batches(data, frames_per_batch, random.Random(0))
    loader = torch.utils.data.DataLoader(Batches(data, batches, recipe, False, 0), batch_size=None)
    char_errors = chars = word_errors = words = 0
    model.eval()
    with torch.no_grad():
        for frames, steps, _, _, texts in loader:
            for hyp, ref in zip(greedy(model(frames.to(device)).cpu(), steps), texts):
                char_errors += edit_distance(hyp, ref)
                chars += len(ref)
                word_errors += edit_distance(hyp.split(), ref.split())
                words += len(ref.split())
    model.train()
    return char_errors / chars, word_errors / words


# -- training -------------------------------------------------------------------------


def cpu_seconds():
    """CPU time of this process and its finished children (feature workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def learning_rate(fraction, peak, warmup=0.05, final=0.02):
    if fraction < warmup:
        return peak * fraction / warmup
    progress = min(1.0, (fraction - warmup) / (1 - warmup))
    return peak * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))


def save_whole(value, path):
    """torch.save by a temporary beside path renamed over it: a kill or a
    full disk mid-way leaves the file there before, never a truncated one."""
    temporary = path + ".partial"
    try:
        torch.save(value, temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def pick_device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        sys.exit(f"--device {name}: this torch sees no CUDA device")
    return torch.device(name)


def load_init(path: str) -> dict:
    """The asr.pt that --init names (its weights and feature recipe), or an
    exit naming what is wrong with it, as for a damaged checkpoint."""
    try:
        initial = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:  # missing, damaged: OSError, EOFError, the zip reader's RuntimeError ...
        sys.exit(f"--init {path}: not a readable model ({type(error).__name__}: {error})")
    if not isinstance(initial, dict) or not {"state_dict", "recipe"} <= initial.keys():
        checkpoint = ", but a train.py checkpoint, which resumes as --checkpoint" if isinstance(
            initial, dict) and "plan" in initial else ""
        sys.exit(f"--init {path}: not an asr.pt model (no 'state_dict' and 'recipe' in it{checkpoint})")
    return initial


def main(argv=None):
    global LOG_FILE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.path.join(HERE, "data"), help="the corpus (default: examples/asr/data)")
    parser.add_argument("--out", default=os.path.join(HERE, "model", "asr.pt"))
    parser.add_argument("--minutes", type=make_corpus.positive_float, default=32.0,
                        help="training time budget (wall clock), without --steps")
    # Left out, it is 0: the budget is --minutes.
    parser.add_argument("--steps", type=make_corpus.positive_int, default=0,
                        help="budget in optimiser steps instead of minutes (the same work however busy the machine)")
    parser.add_argument("--lr", type=make_corpus.positive_float, default=2e-3)
    parser.add_argument("--frames-per-batch", type=make_corpus.positive_int, default=8000)
    parser.add_argument("--threads", type=make_corpus.positive_int, default=2)
    parser.add_argument("--workers", type=make_corpus.count, default=1,
                        help="processes making training batches (0: in this one)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed-perturb", type=make_corpus.fraction, default=0.5,
                        help="fraction of training utterances played 0.9-1.2 times as fast (0: none)")
    parser.add_argument("--augment", choices=("basic", "robust"), default="robust",
                        help="robust (the recipe's) or basic (the bundled model's runs 1-8)")
    parser.add_argument("--init", help="asr.pt to start from (its weights and feature statistics)")
    parser.add_argument("--checkpoint", help="resumable state (default: OUT with .ckpt)")
    parser.add_argument("--checkpoint-minutes", type=make_corpus.non_negative_float, default=5.0,
                        help="wall-clock minutes between checkpoints (0: after every step)")
    parser.add_argument("--restart", action="store_true", help="ignore (and replace) an existing checkpoint")
    parser.add_argument("--log", help="training log (default: OUT with .train.log); "
                        "a resumed run appends to it, a run from scratch replaces it")
    parser.add_argument("--eval-every", type=make_corpus.count, default=0, help="dev error rates every N steps (0: each epoch)")
    parser.add_argument("--final-splits", nargs="*", default=["dev", "eval_espeak", "eval_slt"],
                        help="splits scored (greedy, in Python) at the end")
    parser.add_argument("--stop-after", type=int, default=0, help=argparse.SUPPRESS)  # tests: an interruption
    args = parser.parse_args(argv)

    stem = os.path.splitext(args.out)[0]
    checkpoint_path = args.checkpoint or stem + ".ckpt"
    LOG_FILE = args.log or stem + ".train.log"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    device = pick_device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    start = time.time()
    initial = load_init(args.init) if args.init else None  # before hours of loading

    try:
        rows = make_corpus.read_manifest(os.path.join(args.data, "manifest.tsv"))
    except make_corpus.ManifestError as error:
        sys.exit(str(error))
    splits = sorted({"train", "dev", *args.final_splits})
    missing = [split for split in splits if split not in rows]
    if missing:
        sys.exit(f"{args.data}/manifest.tsv has no utterances of split(s) {missing}")
    data = {split: load_split(args.data, rows[split]) for split in splits}
    # What a checkpoint must agree with to be resumed: the settings, the
    # training transcripts, and where it runs (a thread count or a device
    # of its own may add in another order: the same weights need the same).
    transcripts = hashlib.sha256("\n".join(r["path"] + "\t" + r["transcript"] for r in rows["train"]).encode())
    plan = {"steps": args.steps, "minutes": None if args.steps else args.minutes, "lr": args.lr,
            "frames_per_batch": args.frames_per_batch, "seed": args.seed, "speed_perturb": args.speed_perturb,
            "augment": args.augment, "init": shown(args.init) if args.init else None,
            "train_utterances": len(data["train"]), "train_transcripts": transcripts.hexdigest()[:16],
            "device": str(device), "threads": args.threads}

    model = LinearTransformer(CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    state = None
    if os.path.exists(checkpoint_path) and not args.restart:
        try:
            state = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
        except Exception as error:  # a damaged file: EOFError, the zip reader's RuntimeError, UnpicklingError ...
            sys.exit(f"{checkpoint_path}: not a readable train.py checkpoint ({type(error).__name__}: {error}); "
                     "delete it or pass --restart to train from scratch")
        if not isinstance(state, dict) or "plan" not in state:  # another file (a model?) that --restart would replace
            model_or_not = ", but a model" if isinstance(state, dict) and "state_dict" in state else ""
            sys.exit(f"{checkpoint_path}: not a train.py checkpoint (no 'plan' in it{model_or_not}); --checkpoint "
                     "names the resumable state, by default OUT with .ckpt")
        if state["plan"] != plan:
            changed = {k: (state["plan"].get(k), v) for k, v in plan.items() if state["plan"].get(k) != v}
            sys.exit(f"{checkpoint_path} was made with other settings (checkpoint, now: {changed}); "
                     "rerun with those, or delete it (train.py --restart replaces it) to train from scratch")
    if state is None:
        # A run from scratch writes its own log, not after another run's (the
        # bundled model's log sits where a fresh clone's rerun writes).
        open(LOG_FILE, "w").close()
    log(f"loaded {', '.join(f'{k} {len(v)}' for k, v in data.items())} utterances "
        f"({sum(len(s) for s, _ in data['train']) / 16000 / 3600:.1f} h of training audio); device {device}, "
        f"{args.threads} threads, augment {args.augment}")
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        recipe = state["recipe"]
        torch.set_rng_state(state["torch_rng"])
        rng.setstate(state["epoch_rng"])
        epoch, first_batch, step = state["epoch"], state["batch"], state["step"]
        history, done_before = state["history"], state["elapsed"]
        log(f"resumed from {shown(checkpoint_path)}: epoch {epoch}, batch {first_batch}, step {step}")
    else:
        if initial is not None:
            try:
                model.load_state_dict(initial["state_dict"])
            except RuntimeError as error:  # missing, unexpected or mis-shaped weights
                sys.exit(f"--init {args.init}: its weights do not fit this recipe's model ({error})")
            recipe = initial["recipe"]
            log(f"started from {shown(args.init)} and its feature statistics")
        else:
            mean, std, count = feature_statistics([s for s, _ in data["train"]], max(1, args.threads))
            recipe = dict(features.RECIPE, feature_mean=mean.astype(np.float32).tolist(),
                          feature_std=std.astype(np.float32).tolist())
            log(f"feature statistics over {count} frames: mean {mean.min():.2f}..{mean.max():.2f}, "
                f"std {std.min():.2f}..{std.max():.2f}")
        epoch, first_batch, step, history = 1, 0, 0, []
        done_before = {"train_seconds": 0.0, "cpu_seconds": 0.0, "total_seconds": 0.0}
    model.to(device)
    # The optimiser's moments follow the parameters onto the device.
    for moments in optimizer.state.values():
        for key, value in moments.items():
            if torch.is_tensor(value) and key != "step":
                moments[key] = value.to(device)
    log(f"model: {sum(p.numel() for p in model.parameters())} parameters")
    ctc = torch.nn.CTCLoss(blank=0, zero_infinity=True)

    budget = args.minutes * 60
    session_start = time.time()
    cpu_start = cpu_seconds()

    def elapsed():
        now = time.time()
        return {"train_seconds": done_before["train_seconds"] + now - session_start,
                "cpu_seconds": done_before["cpu_seconds"] + cpu_seconds() - cpu_start,
                "total_seconds": done_before["total_seconds"] + now - start}

    def save_checkpoint(epoch_rng, epoch, batch):
        save_whole({"plan": plan, "model": {k: v.cpu() for k, v in model.state_dict().items()},
                    "optimizer": optimizer.state_dict(), "recipe": recipe, "torch_rng": torch.get_rng_state(),
                    "epoch_rng": epoch_rng, "epoch": epoch, "batch": batch, "step": step,
                    "history": history, "losses": losses[-50:], "elapsed": elapsed()}, checkpoint_path)

    def dev_check(label):
        cer, wer = evaluate(model, data["dev"], recipe, device=device)
        e = elapsed()
        history.append({"epoch": epoch, "step": step, "dev_cer": cer, "dev_wer": wer,
                        "train_seconds": round(e["train_seconds"]), "cpu_seconds": round(e["cpu_seconds"])})
        log(f"{label}: {step} steps, dev CER {cer:.2%} WER {wer:.2%} "
            f"({e['train_seconds']:.0f} s, {e['cpu_seconds']:.0f} CPU s)")

    last_save = time.time()
    finished = args.steps > 0 and step >= args.steps
    losses = state["losses"] if state is not None else []  # the last 50, for the logged means
    epoch_rng, batch = rng.getstate(), first_batch
    while not finished:
        epoch_rng = rng.getstate()
        batches = make_batches(data["train"], args.frames_per_batch, rng, join_fraction=0.15)
        dataset = Batches(data["train"], batches, recipe, True, args.seed * 1000 + epoch, args.speed_perturb,
                          args.augment, first=first_batch)
        loader_options = dict(num_workers=args.workers, prefetch_factor=4) if args.workers else {}
        loader = torch.utils.data.DataLoader(dataset, batch_size=None, shuffle=False, **loader_options)
        batch = first_batch
        for frames, steps, targets, target_lengths, _ in loader:
            fraction = step / args.steps if args.steps else elapsed()["train_seconds"] / budget
            if fraction >= 1.0:
                finished = True
                break
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(fraction, args.lr)
            log_probs = F.log_softmax(model(frames.to(device)), dim=-1).transpose(0, 1)  # [S, B, labels]
            loss = ctc(log_probs, targets.to(device), steps.to(device), target_lengths.to(device))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            losses.append(loss.item())
            step += 1
            batch += 1
            if step % 50 == 0:
                e = elapsed()
                history.append({"epoch": epoch, "step": step, "loss": float(np.mean(losses[-50:])),
                                "lr": optimizer.param_groups[0]["lr"], "train_seconds": round(e["train_seconds"]),
                                "cpu_seconds": round(e["cpu_seconds"])})
                log(f"epoch {epoch} step {step} loss {np.mean(losses[-50:]):.3f} "
                    f"lr {optimizer.param_groups[0]['lr']:.2e} ({e['train_seconds']:.0f} s, "
                    f"{e['cpu_seconds']:.0f} CPU s)")
            if args.eval_every and step % args.eval_every == 0:
                dev_check(f"epoch {epoch} step {step}")
            if time.time() - last_save >= args.checkpoint_minutes * 60:
                save_checkpoint(epoch_rng, epoch, batch)
                last_save = time.time()
            if args.stop_after and step >= args.stop_after:
                save_checkpoint(epoch_rng, epoch, batch)
                del loader
                log(f"stopping after step {step} (--stop-after), as if interrupted")
                return 3
            if args.steps and step >= args.steps:
                finished = True
                break
        del loader
        if not finished:
            if not args.eval_every:
                dev_check(f"epoch {epoch} done")
            epoch, first_batch = epoch + 1, 0
            save_checkpoint(rng.getstate(), epoch, 0)
            last_save = time.time()
    if state is None or state["step"] < step:
        save_checkpoint(epoch_rng, epoch, batch)
    times = elapsed()

    model.cpu()
    results = {}
    for split in args.final_splits:
        cer, wer = evaluate(model, data[split], recipe)
        results[split] = {"utterances": len(data[split]), "cer": cer, "wer": wer}
        log(f"{split}: {len(data[split])} utterances, greedy CER {cer:.2%}, WER {wer:.2%}")

    # The recurrent form (what tarn runs) must give the parallel form's logits.
    samples, _ = data[args.final_splits[-1] if args.final_splits else "dev"][0]
    frames = torch.from_numpy(features.features(samples, recipe))
    model.eval()
    with torch.no_grad():
        parallel = model(frames.unsqueeze(0))[0]
    recurrent, _ = model.run_recurrent(frames)
    log(f"recurrent vs parallel logits: max |diff| {(recurrent - parallel).abs().max().item():.2e}")

    save_whole({
        "state_dict": model.state_dict(),
        "config": CONFIG.to_dict(),
        "labels": LABELS,
        "recipe": recipe,
        "training": {
            "epochs": epoch, "steps": step, "train_seconds": round(times["train_seconds"]),
            "total_seconds": round(times["total_seconds"]), "cpu_seconds": round(times["cpu_seconds"]),
            "threads": args.threads, "device": str(device), "init": plan["init"],
            "train_utterances": len(data["train"]), "peak_lr": args.lr, "augment": args.augment,
            "speed_perturb": args.speed_perturb, "greedy": results, "history": history,
        },
    }, args.out)
    log(f"wrote {shown(args.out)} ({os.path.getsize(args.out) / 1e6:.1f} MB); {times['total_seconds']:.0f} s, "
        f"{times['cpu_seconds']:.0f} CPU s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
