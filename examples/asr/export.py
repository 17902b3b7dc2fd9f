#!/usr/bin/python3
"""Converts the trained speech checkpoint into the bundled .tarn: weights,
CTC labels and the exact feature recipe (with its normalisation statistics).

    /usr/bin/python3 examples/asr/export.py [model/asr.pt] [model/asr.tarn] [--dtype i8|f32|f16|bf16]

SOURCE may also be train.py's checkpoint of a run in progress (asr.ckpt).
The default dtype is the bundled model's (and run_recipe.sh's): i8, so a bare
run rewrites the bundled model/asr.tarn as it is.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from converter import convert_state_dict  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402
from converter.writer import DTYPES  # noqa: E402


def export(checkpoint: dict, target: str, dtype: str, source: str = "examples/asr (synthetic espeak-ng/flite corpus, CTC)") -> None:
    """Writes a checkpoint dict (state_dict, config, labels, recipe) as a .tarn."""
    audio = dict(checkpoint["recipe"])
    for key in ("feature_mean", "feature_std"):
        audio[key] = [float(v) for v in audio[key]]
    convert_state_dict(
        checkpoint["state_dict"],
        ModelConfig.from_dict(checkpoint["config"]),
        target,
        labels=checkpoint["labels"],
        audio=audio,
        dtype=dtype,
        metadata={"source": source},
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=os.path.join(HERE, "model", "asr.pt"))
    parser.add_argument("target", nargs="?", default=os.path.join(HERE, "model", "asr.tarn"))
    parser.add_argument("--dtype", choices=DTYPES, default="i8",
                        help="how the file stores its matrices (default i8, the bundled model's)")
    args = parser.parse_args(argv)
    source, target = args.source, args.target
    # Our own checkpoint, holding plain Python values besides the tensors.
    checkpoint = torch.load(source, map_location="cpu", weights_only=False)
    if "state_dict" not in checkpoint and "plan" in checkpoint:
        # train.py's resumable checkpoint (asr.ckpt): a run in progress, with
        # train.py's model configuration and labels.
        sys.path.insert(0, HERE)
        import train

        print(f"{source}: training checkpoint at step {checkpoint['step']}")
        checkpoint = {"state_dict": checkpoint["model"], "config": train.CONFIG.to_dict(),
                      "labels": train.LABELS, "recipe": checkpoint["recipe"]}
    export(checkpoint, target, args.dtype)
    print(f"wrote {target} ({args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
