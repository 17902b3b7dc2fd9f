#!/usr/bin/python3
"""Converts the trained Fashion-MNIST checkpoint into the bundled .tarn, with
the image layout `tarn generate` reads from its metadata (image_height,
image_width, image_start_token).

    /usr/bin/python3 examples/generate/export.py [model/fashion.pt] [model/fashion.tarn] [--dtype f32|f16|bf16|i8]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=os.path.join(HERE, "model", "fashion.pt"))
    parser.add_argument("target", nargs="?", default=os.path.join(HERE, "model", "fashion.tarn"))
    parser.add_argument("--dtype", choices=DTYPES, default="f32", help="how the file stores its matrices (default f32)")
    args = parser.parse_args()
    source, target = args.source, args.target
    # Our own checkpoint, holding plain Python values besides the tensors.
    checkpoint = torch.load(source, map_location="cpu", weights_only=False)
    image = checkpoint["image"]
    training = checkpoint["training"]
    convert_state_dict(
        checkpoint["state_dict"],
        ModelConfig.from_dict(checkpoint["config"]),
        target,
        dtype=args.dtype,
        metadata={
            "source": "examples/generate (Fashion-MNIST, pixel by pixel, logistic mixture over 256 levels)",
            "image_height": str(image["height"]),
            "image_width": str(image["width"]),
            "image_start_token": str(image["start_token"]),
            "test_bits_per_dim": f"{training['test_bits_per_dim']:.4f} "
                                 f"(first {training['test_images']} test images, f32 weights)",
        },
    )
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
