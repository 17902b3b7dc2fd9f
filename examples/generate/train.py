#!/usr/bin/python3
"""Trains the pixel-by-pixel Fashion-MNIST model of the image generation example.

Model: tarn's reference LinearTransformer (converter/reference.py), causal
linear attention (elu+1), pre-norm, GELU, learned positions, generating
images pixel by pixel as the paper's image experiments do: an image is the 784 grey levels of its rows,
top to bottom, one token per step. The head gives the next pixel's
distribution as a discretised mixture of MIXTURES logistics over the 256
levels (output_distribution "logistic-mixture", the paper authors' image
head; converter/reference.py's logistic_mixture_levels defines it): nearby
grey levels share probability, which a 256-way softmax must learn level by
level, so the short training here gives smooth garments instead of
salt-and-pepper noise. The learned positions start as a sinusoidal code of
the pixel's row (first half of d_model) and column (second half), so the
model knows where it is in the image from the first step.

Tokens and targets: a start token (START = 256, so vocab_size 257) comes
first, and the output at step t is the distribution of pixel t given pixels
0..t-1:
    input   START  x0  x1  ...  x782
    target  x0     x1  x2  ...  x783
so sampling an image starts from START alone, and every one of the 784 pixels
(the first included) is drawn from the model.

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, the
idx files gzipped); nothing is downloaded. Trained with the parallel forward on
the 60 000 training images, its causal attention computed chunk by chunk
(chunked_causal_attention: the reference's function, checked against its
masked [784, 784] form at start, at a fraction of the cost); the learning rate follows the clock (warm-up over
the first 5 % of --minutes, cosine decay to the end), so the recipe fits the
machine it runs on. Bits/dim (mean -log2 p over the 784 pixels) is measured on
the first --test-images images of the test split (1 000 by default: the
whole split, 10 000, takes over 10 minutes more on two cores).

Writes OUT (default examples/generate/model/fashion.pt): state_dict, config
(ModelConfig.to_dict()), image (height, width, start_token: what export.py
stores for `tarn generate`) and training (what was done, and the test
bits/dim).

Usage: train.py [--minutes 60] [--out model/fashion.pt] [--test-images 1000]
"""

import argparse
import functools
import gzip
import math
import os
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repo root, for converter

from converter.reference import (  # noqa: E402
    LinearTransformer, ModelConfig, logistic_mixture_levels, sinusoid)

DATA = "/usr/share/datasets/fashion-mnist"
PIXELS = 28 * 28
LEVELS = 256
START = LEVELS  # the token before the first pixel
MIXTURES = 10

CONFIG = ModelConfig(
    input_kind="tokens", vocab_size=LEVELS + 1, position="learned", max_positions=PIXELS,
    norm_placement="pre", activation="gelu", d_model=64, num_layers=4, num_heads=4,
    d_key=16, d_value=16, d_ff=128, final_norm=True, output_dim=3 * MIXTURES,
    output_distribution="logistic-mixture", output_levels=LEVELS,
)


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def chunked_causal_attention(attention, x, chunk=28):
    """The reference's causal Attention.forward, computed chunk by chunk: masked
    (quadratic) within a chunk of `chunk` steps, the running sums
    S = sum phi(k) v^T, z = sum phi(k) across chunks. The same function as the
    reference's [T, T] masked form (main() checks it), many times cheaper at
    T = 784; training only, the model and its state dict are unchanged."""
    b, t, _ = x.shape
    if t % chunk:
        raise ValueError(f"sequence length {t} is not a multiple of the chunk {chunk}")
    n = t // chunk
    q = attention.feature_map(attention._heads(attention.query_projection(x)))
    k = attention.feature_map(attention._heads(attention.key_projection(x)))
    v = attention._heads(attention.value_projection(x))
    q, k, v = (a.reshape(b, n, chunk, *a.shape[2:]) for a in (q, k, v))  # [B, N, L, H, d]
    scores = torch.einsum("bnihc,bnjhc->bnhij", q, k) * torch.tril(torch.ones(chunk, chunk))
    numerator = torch.einsum("bnhij,bnjhd->bnihd", scores, v)
    denominator = scores.sum(-1).permute(0, 1, 3, 2)  # [B, N, L, H]
    kv = torch.einsum("bnjhc,bnjhd->bnhcd", k, v)
    kv_before = kv.cumsum(1) - kv  # sums over the chunks before each chunk
    k_sum = k.sum(2)  # [B, N, H, C]
    k_before = k_sum.cumsum(1) - k_sum
    numerator = numerator + torch.einsum("bnihc,bnhcd->bnihd", q, kv_before)
    denominator = denominator + torch.einsum("bnihc,bnhc->bnih", q, k_before)
    y = numerator / (denominator.unsqueeze(-1) + attention.eps)
    return attention.out_projection(y.reshape(b, t, -1))


def level_log_probs(params, levels):
    """log P(levels) under the discretised logistic mixture of params
    [..., 3M] = [mixture logits | means | scale parameters]: the torch form of
    converter.reference.logistic_mixture_levels (main() checks them against
    each other), for the target levels [...] only. Level k holds
    [c_k - h, c_k + h), c_k = 2k/255 - 1, h = 1/255; level 0 reaches down to
    -inf, level 255 up to +inf."""
    m = params.shape[-1] // 3
    log_weights = F.log_softmax(params[..., :m], dim=-1)
    means = params[..., m : 2 * m]
    scales = F.elu(params[..., 2 * m :]) + 1.0001
    centre = (2 * levels.unsqueeze(-1).to(params.dtype) / (LEVELS - 1) - 1 - means) / scales
    half = 1 / (LEVELS - 1) / scales
    upper, lower = centre + half, centre - half
    log_cdf_upper = -F.softplus(-upper)  # log sigmoid
    log_survival_lower = -F.softplus(lower)  # log(1 - sigmoid)
    mass = torch.sigmoid(upper) - torch.sigmoid(lower)
    # Where the bin's mass is too small for float32 to difference, the density
    # at its centre times its width (PixelCNN++'s fallback) keeps a gradient.
    log_density = centre - torch.log(scales) - 2 * F.softplus(centre) + math.log(2 / (LEVELS - 1))
    inner = torch.where(mass > 1e-5, torch.log(mass.clamp(min=1e-12)), log_density)
    first, last = levels.unsqueeze(-1) == 0, levels.unsqueeze(-1) == LEVELS - 1
    log_mass = torch.where(first, log_cdf_upper, torch.where(last, log_survival_lower, inner))
    return torch.logsumexp(log_weights + log_mass, dim=-1)


def check_level_log_probs():
    """level_log_probs against the reference's float64 distribution, which
    tarn's sampler implements."""
    params = torch.randn(64, 3 * MIXTURES, dtype=torch.float64) * 2
    levels = torch.randint(0, LEVELS, (64,))
    levels[:3] = torch.tensor([0, LEVELS - 1, 128])
    expected = np.log(logistic_mixture_levels(params.numpy(), LEVELS)[np.arange(64), levels.numpy()])
    got = level_log_probs(params, levels).numpy()
    close = np.abs(got - expected) < 1e-5  # the density fallback is within 1e-5 relative
    if not close.all():
        raise AssertionError(f"level_log_probs differs from logistic_mixture_levels by "
                             f"{np.abs(got - expected).max():.2e}")
    return float(np.abs(got - expected).max())


def grid_positions(d_model):
    """[784, d_model]: sinusoids of each pixel's row, then of its column."""
    pixels = torch.arange(PIXELS)
    half = d_model // 2
    return torch.cat([sinusoid(pixels // 28, half), sinusoid(pixels % 28, d_model - half)], 1)


def use_chunked_attention(model):
    for layer in model.layers:
        layer.attention.forward = functools.partial(chunked_causal_attention, layer.attention)


def read_idx_images(path):
    """An idx3-ubyte file (gzipped or not) -> uint8 [N, 784]."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 0x00000803 or rows * cols != PIXELS:
            raise ValueError(f"{path}: not an idx3-ubyte file of 28x28 images")
        return np.frombuffer(f.read(count * PIXELS), dtype=np.uint8).reshape(count, PIXELS)


def inputs_of(images):
    """uint8 [B, 784] -> tokens [B, 784]: START then pixels 0..782."""
    pixels = torch.from_numpy(images.astype(np.int64))
    return torch.cat([torch.full((len(pixels), 1), START, dtype=torch.int64), pixels[:, :-1]], dim=1)


def bits_per_dim(model, images, batch=50):
    """Mean -log2 p(pixel | previous pixels) over every pixel of images."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            chunk = images[i : i + batch]
            params = model(inputs_of(chunk))
            targets = torch.from_numpy(chunk.astype(np.int64))
            total -= level_log_probs(params, targets).sum().item()
    model.train()
    return total / (len(images) * PIXELS) / math.log(2)


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def learning_rate(fraction, peak, warmup=0.05, final=0.02):
    if fraction < warmup:
        return peak * fraction / warmup
    progress = min(1.0, (fraction - warmup) / (1 - warmup))
    return peak * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))


def positive_float(text):
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--out", default=os.path.join(HERE, "model", "fashion.pt"))
    parser.add_argument("--minutes", type=positive_float, default=60.0, help="training time budget (wall clock)")
    parser.add_argument("--lr", type=positive_float, default=3e-3)
    parser.add_argument("--batch", type=positive_int, default=8, help="images a step (at most the training set)")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--init", help="fashion.pt to continue from (its weights; a fresh schedule)")
    parser.add_argument("--test-images", type=positive_int, default=1000, help="bits/dim on the first N test images")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    start = time.time()

    train = read_idx_images(os.path.join(args.data, "train-images-idx3-ubyte.gz"))
    if args.batch > len(train):
        parser.error(f"argument --batch: {args.batch} is more than the {len(train)} training images")
    test = read_idx_images(os.path.join(args.data, "t10k-images-idx3-ubyte.gz"))[: args.test_images]
    probe = test[:100]  # a quick held-out figure while training
    log(f"loaded {len(train)} training and {len(test)} test images")

    model = LinearTransformer(CONFIG)
    log(f"model: {sum(p.numel() for p in model.parameters())} parameters")
    earlier = []
    if args.init:
        initial = torch.load(args.init, map_location="cpu")
        model.load_state_dict(initial["state_dict"])
        earlier = initial["training"].get("runs", [initial["training"]])
        log(f"continuing from {args.init}")
    else:
        with torch.no_grad():
            model.position_embedding.weight.copy_(grid_positions(CONFIG.d_model))
    log(f"level_log_probs vs logistic_mixture_levels: max |diff| {check_level_log_probs():.2e}")
    with torch.no_grad():
        masked = model(inputs_of(test[:2]))
        use_chunked_attention(model)
        chunked = model(inputs_of(test[:2]))
    log(f"chunked vs masked causal attention: max |diff| {(chunked - masked).abs().max().item():.2e}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)

    budget = args.minutes * 60
    train_start = time.time()
    epoch = step = seen = 0
    losses = []
    done = False
    while not done:
        epoch += 1
        order = rng.permutation(len(train))
        for i in range(0, len(order) - args.batch + 1, args.batch):
            fraction = (time.time() - train_start) / budget
            if fraction >= 1.0:
                done = True
                break
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(fraction, args.lr)
            images = train[order[i : i + args.batch]]
            params = model(inputs_of(images))
            targets = torch.from_numpy(images.astype(np.int64))
            loss = -level_log_probs(params, targets).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item() / math.log(2))
            step += 1
            seen += len(images)
            if step % 100 == 0:
                log(f"epoch {epoch} step {step} train bits/dim {np.mean(losses[-100:]):.3f} "
                    f"lr {optimizer.param_groups[0]['lr']:.2e} ({time.time() - train_start:.0f} s, "
                    f"{cpu_seconds():.0f} CPU s)")
            if step % 250 == 0:
                log(f"step {step}: bits/dim on {len(probe)} test images {bits_per_dim(model, probe):.3f}")
    train_seconds = time.time() - train_start
    log(f"trained {step} steps, {seen} images ({seen / len(train):.2f} epochs) in {train_seconds:.0f} s")

    eval_start = time.time()
    test_bpd = bits_per_dim(model, test)
    log(f"test bits/dim {test_bpd:.4f} on the first {len(test)} test images ({time.time() - eval_start:.0f} s)")

    # The recurrent form (what tarn runs) must give the parallel form's logits.
    model.eval()
    with torch.no_grad():
        parallel = model(inputs_of(test[:1]))[0]
    recurrent, _ = model.run_recurrent(inputs_of(test[:1])[0])
    log(f"recurrent vs parallel logits: max |diff| {(recurrent - parallel).abs().max().item():.2e}")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({
        "state_dict": model.state_dict(),
        "config": CONFIG.to_dict(),
        "image": {"height": 28, "width": 28, "start_token": START},
        "training": {
            "steps": step, "images_seen": seen, "epochs": seen / len(train), "batch": args.batch,
            "train_seconds": round(train_seconds), "total_seconds": round(time.time() - start),
            "cpu_seconds": round(cpu_seconds()), "threads": args.threads, "peak_lr": args.lr,
            "test_images": len(test), "test_bits_per_dim": test_bpd,
            "init": args.init,
            "runs": earlier + [{"minutes": args.minutes, "steps": step, "images_seen": seen,
                                "train_seconds": round(train_seconds), "peak_lr": args.lr}],
        },
    }, args.out)
    log(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB); total {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
