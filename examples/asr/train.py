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
rounding to 16 bits, then features (features.py) and a light SpecAugment.
The learning rate follows the clock: linear warm-up over the
first 5 % of the time budget, cosine decay to the end; training stops when the
budget is spent, so the recipe fits the machine it runs on (or, with --steps,
over a fixed number of optimiser steps, the same work however busy it is).

Writes OUT (default examples/asr/model/asr.pt): a dict with state_dict, config
(ModelConfig.to_dict()), labels, recipe (features.RECIPE with the training-set
statistics) and training (what was done and the Python-side greedy error rates).

Usage: train.py [--data examples/asr/data] [--minutes 32] [--out model/asr.pt]
"""

import argparse
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
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repo root, for converter
sys.path.insert(0, HERE)

import features  # noqa: E402

try:
    from converter.reference import LinearTransformer, ModelConfig
except ImportError:  # the converter package needs more than torch; its reference model does not
    import importlib.util

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
    activation="gelu", d_model=144, num_layers=4, num_heads=4, d_key=36,
    d_value=36, d_ff=512, conv_kernel=7, final_norm=True, output_dim=len(LABELS),
)


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


# -- data ---------------------------------------------------------------------------


def read_manifest(data):
    rows = {}
    with open(os.path.join(data, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            rows.setdefault(row["split"], []).append(row)
    return rows


def load_split(data, rows):
    return [(features.read_wav(os.path.join(data, r["path"])), r["transcript"]) for r in rows]


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


def augment(pieces, rng, speed_perturbed):
    """[samples, ...] of one training example -> augmented waveform (float64,
    16-bit grid); a fraction speed_perturbed of the pieces change speed."""
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
    gain = 10 ** (rng.uniform(-30, 0) / 20) / (np.abs(x).max() + 1e-9)
    x *= gain
    roll = rng.random()
    if roll < 0.65:
        signal_rms = gain * math.sqrt(np.mean(np.concatenate(spoken) ** 2))
        noise = rng.standard_normal(len(x)) if roll < 0.3 else pink_noise(len(x), rng)
        x += noise * signal_rms * 10 ** (-rng.uniform(5, 40) / 20)
    elif roll < 0.75:  # a faint noise floor, like a quiet recording
        x += rng.standard_normal(len(x)) * 10 ** (-rng.uniform(60, 80) / 20)
    return np.round(np.clip(x, -1.0, 32767 / 32768) * 32768) / 32768


def spec_augment(feats, rng):
    t, d = feats.shape
    for _ in range(2):
        w = rng.integers(0, 6)
        f0 = rng.integers(0, d - w + 1)
        feats[:, f0 : f0 + w] = 0.0
    for _ in range(max(1, t // 150)):
        w = rng.integers(0, 11)
        t0 = rng.integers(0, max(1, t - w + 1))
        feats[t0 : t0 + w, :] = 0.0
    return feats


class Batches(torch.utils.data.Dataset):
    """One item = one padded batch; augmentation and features run in the DataLoader worker."""

    def __init__(self, data, batches, recipe, train, seed, speed_perturbed=0.0):
        self.data, self.batches, self.recipe, self.train, self.seed = data, batches, recipe, train, seed
        self.speed_perturbed = speed_perturbed

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rng = np.random.default_rng([self.seed, index])
        feats, texts = [], []
        for example in self.batches[index]:
            pieces = [self.data[i][0] for i in example]
            texts.append(" ".join(self.data[i][1] for i in example))
            if self.train:
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


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def evaluate(model, data, recipe, frames_per_batch=20000):
    batches = make_batches(data, frames_per_batch, random.Random(0))
    loader = torch.utils.data.DataLoader(Batches(data, batches, recipe, False, 0), batch_size=None)
    char_errors = chars = word_errors = words = 0
    model.eval()
    with torch.no_grad():
        for frames, steps, _, _, texts in loader:
            for hyp, ref in zip(greedy(model(frames), steps), texts):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.path.join(HERE, "data"), help="the corpus (default: examples/asr/data)")
    parser.add_argument("--out", default=os.path.join(HERE, "model", "asr.pt"))
    parser.add_argument("--minutes", type=float, default=32.0, help="training time budget (wall clock)")
    parser.add_argument("--steps", type=int, default=0,
                        help="budget in optimiser steps instead of minutes (the same work however busy the machine)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--frames-per-batch", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed-perturb", type=float, default=0.5,
                        help="fraction of training utterances played 0.9-1.2 times as fast (0: none)")
    parser.add_argument("--init", help="asr.pt to start from (its weights and feature statistics)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    start = time.time()

    rows = read_manifest(args.data)
    data = {split: load_split(args.data, rows[split]) for split in ("train", "dev", "eval_espeak", "eval_slt")}
    log(f"loaded {', '.join(f'{k} {len(v)}' for k, v in data.items())} utterances "
        f"({sum(len(s) for s, _ in data['train']) / 16000 / 3600:.1f} h of training audio)")

    model = LinearTransformer(CONFIG)
    if args.init:
        initial = torch.load(args.init, map_location="cpu")
        model.load_state_dict(initial["state_dict"])
        recipe = initial["recipe"]
        log(f"started from {args.init} and its feature statistics")
    else:
        mean, std, count = feature_statistics([s for s, _ in data["train"]], args.threads)
        recipe = dict(features.RECIPE, feature_mean=mean.astype(np.float32).tolist(),
                      feature_std=std.astype(np.float32).tolist())
        log(f"feature statistics over {count} frames: mean {mean.min():.2f}..{mean.max():.2f}, "
            f"std {std.min():.2f}..{std.max():.2f}")
    log(f"model: {sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    ctc = torch.nn.CTCLoss(blank=0, zero_infinity=True)

    budget = args.minutes * 60
    train_start = time.time()
    epoch = step = 0
    done = False
    while not done:
        epoch += 1
        batches = make_batches(data["train"], args.frames_per_batch, rng, join_fraction=0.15)
        loader = torch.utils.data.DataLoader(
            Batches(data["train"], batches, recipe, True, args.seed * 1000 + epoch, args.speed_perturb),
            batch_size=None, shuffle=False, num_workers=1, prefetch_factor=4, persistent_workers=False,
        )
        losses = []
        for frames, steps, targets, target_lengths, _ in loader:
            fraction = step / args.steps if args.steps else (time.time() - train_start) / budget
            if fraction >= 1.0:
                done = True
                break
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(fraction, args.lr)
            log_probs = F.log_softmax(model(frames), dim=-1).transpose(0, 1)  # [S, B, labels]
            loss = ctc(log_probs, targets, steps, target_lengths)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if step % 50 == 0:
                log(f"epoch {epoch} step {step} loss {np.mean(losses[-50:]):.3f} "
                    f"lr {optimizer.param_groups[0]['lr']:.2e} ({time.time() - train_start:.0f} s, "
                    f"{cpu_seconds():.0f} CPU s)")
        del loader
        cer, wer = evaluate(model, data["dev"], recipe)
        log(f"epoch {epoch} done: {step} steps, dev CER {cer:.2%} WER {wer:.2%} ({time.time() - train_start:.0f} s)")
    train_seconds = time.time() - train_start

    results = {}
    for split in ("dev", "eval_espeak", "eval_slt"):
        cer, wer = evaluate(model, data[split], recipe)
        results[split] = {"utterances": len(data[split]), "cer": cer, "wer": wer}
        log(f"{split}: {len(data[split])} utterances, greedy CER {cer:.2%}, WER {wer:.2%}")

    # The recurrent form (what tarn runs) must give the parallel form's logits.
    samples, _ = data["eval_slt"][0]
    frames = torch.from_numpy(features.features(samples, recipe))
    model.eval()
    with torch.no_grad():
        parallel = model(frames.unsqueeze(0))[0]
    recurrent, _ = model.run_recurrent(frames)
    log(f"recurrent vs parallel logits: max |diff| {(recurrent - parallel).abs().max().item():.2e}")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({
        "state_dict": model.state_dict(),
        "config": CONFIG.to_dict(),
        "labels": LABELS,
        "recipe": recipe,
        "training": {
            "epochs": epoch, "steps": step, "train_seconds": round(train_seconds),
            "total_seconds": round(time.time() - start), "cpu_seconds": round(cpu_seconds()),
            "threads": args.threads, "init": args.init,
            "train_utterances": len(data["train"]), "peak_lr": args.lr,
            "speed_perturb": args.speed_perturb, "greedy": results,
        },
    }, args.out)
    log(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB); total {time.time() - start:.0f} s, "
        f"{cpu_seconds():.0f} CPU s")


if __name__ == "__main__":
    main()
