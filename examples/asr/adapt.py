#!/usr/bin/python3
"""Adapts the speech model to one speaker from their audio alone, and writes
the adapted model as a .tarn that `tarn transcribe` loads like any other.

    /usr/bin/python3 examples/asr/adapt.py OUT.tarn FILE.wav... [--warp W] \\
        [--checkpoint examples/asr/model/asr.pt] [--dtype i8]

Test-time entropy minimisation: the model's layer-norm gains and biases
(4,160 of its 1.9 M parameters) move to make its per-step label
distributions on the speaker's audio more certain, by Adam over the files in
batches of 8 (--passes over them). No transcript is used, and every other
weight stays as trained, so the adapted model has the same shape, cost and
size. --warp is the speaker's vocal tract warp (`tarn adapt`'s estimate):
the features are warped as `tarn transcribe --warp` warps them, and the
model keeps the warp in its feature recipe, so the runtime applies it
without being told (`tarn info` shows it). The defaults (lr 3e-3, 8 passes)
were chosen on the held-out MBROLA voices only.

Each file is followed by 300 ms of silence, as the recognizer ends a stream.
It needs the training checkpoint (asr.pt) and PyTorch, not the runtime: make
one model per speaker once, then ship it.
"""

import argparse
import os
import random
import sys
import wave

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import features  # noqa: E402
from export import export  # noqa: E402  (puts the repository root on the path)
from converter.writer import DTYPES  # noqa: E402
from train import LinearTransformer, ModelConfig  # noqa: E402

FINAL_SILENCE = 0.3  # seconds, the recognizer's default final_silence_ms
BATCH = 8


def mean_entropy(model, frames):
    """Mean over steps of the entropy of the model's label distribution."""
    log_p = torch.log_softmax(model(frames[None])[0], -1)
    return -(log_p.exp() * log_p).sum(-1).mean()


def adapt(checkpoint: dict, utterances: list, warp=1.0, passes=8, lr=3e-3, seed=0):
    """-> (adapted checkpoint dict, mean entropy before, after), over
    utterances (float32 sample arrays at the recipe's rate)."""
    torch.manual_seed(seed)
    model = LinearTransformer(ModelConfig.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()  # the adaptation changes weights, not the model's behaviour (no dropout)
    recipe = checkpoint["recipe"]
    silence = np.zeros(int(FINAL_SILENCE * recipe["sample_rate"]), np.float32)
    frames = [torch.from_numpy(features.features(np.concatenate([u, silence]), recipe, warp=warp)) for u in utterances]
    norms = [p for name, p in model.named_parameters() if name.startswith("norm") or ".norm" in name]
    for p in model.parameters():
        p.requires_grad_(False)
    for p in norms:
        p.requires_grad_(True)

    def entropy():
        with torch.no_grad():
            return float(np.mean([mean_entropy(model, f).item() for f in frames]))

    before = entropy()
    optimiser = torch.optim.Adam(norms, lr=lr)
    rng = random.Random(seed)
    for _ in range(passes):
        order = list(range(len(frames)))
        rng.shuffle(order)
        for start in range(0, len(order), BATCH):
            loss = sum(mean_entropy(model, frames[i]) for i in order[start:start + BATCH])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    after = entropy()
    state = {name: t.detach().clone() for name, t in model.state_dict().items()}
    # The recipe keeps the warp (schema 1.5): the runtime's front end then
    # computes the features the model was adapted on without being told.
    return dict(checkpoint, state_dict=state, recipe=dict(recipe, warp=float(warp))), before, after


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="the adapted .tarn to write")
    parser.add_argument("files", nargs="+", help="the speaker's 16 kHz mono 16-bit WAV files")
    parser.add_argument("--checkpoint", default=os.path.join(HERE, "model", "asr.pt"),
                        help="the training checkpoint to adapt (default: the bundled model's, model/asr.pt)")
    parser.add_argument("--warp", type=float, default=1.0, help="the speaker's vocal tract warp (tarn adapt), 0.5-2")
    parser.add_argument("--dtype", choices=DTYPES, default="i8", help="how the file stores its matrices (default i8, as the bundled model)")
    parser.add_argument("--passes", type=int, default=8, help="passes over the files (default 8)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (default 3e-3)")
    args = parser.parse_args(argv)
    if not 0.5 <= args.warp <= 2.0:
        parser.error(f"--warp {args.warp}: need 0.5-2")
    if args.passes < 1 or not args.lr > 0:
        parser.error("--passes and --lr must be positive")
    torch.set_num_threads(1)
    checkpoint = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    utterances = []
    for path in args.files:
        try:
            samples = features.read_wav(path)
        except ValueError as error:  # read_wav's own, naming the file
            parser.error(str(error))
        except (OSError, EOFError, wave.Error) as error:
            parser.error(f"{path}: {error}")
        if samples.size == 0:
            parser.error(f"{path}: no audio")
        utterances.append(samples)
    adapted, before, after = adapt(checkpoint, utterances, args.warp, args.passes, args.lr)
    export(adapted, args.target, args.dtype, source=f"examples/asr, adapted to {len(utterances)} files (warp {args.warp:g})")
    seconds = sum(u.size for u in utterances) / checkpoint["recipe"]["sample_rate"]
    print(f"{args.target}: {len(utterances)} files, {seconds:.1f} s; mean entropy {before:.5f} -> {after:.5f} nats")
    return 0


if __name__ == "__main__":
    sys.exit(main())
