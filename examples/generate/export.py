#!/usr/bin/python3
"""Converts the trained Fashion-MNIST checkpoint into the bundled .tarn, with
the image layout `tarn generate` reads from its metadata (image_height,
image_width, image_start_token).

    /usr/bin/python3 examples/generate/export.py [model/fashion.pt] [model/fashion.tarn]
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from converter import convert_state_dict  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402


def main() -> int:
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "model", "fashion.pt")
    target = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "model", "fashion.tarn")
    # Our own checkpoint, holding plain Python values besides the tensors.
    checkpoint = torch.load(source, map_location="cpu", weights_only=False)
    image = checkpoint["image"]
    training = checkpoint["training"]
    convert_state_dict(
        checkpoint["state_dict"],
        ModelConfig.from_dict(checkpoint["config"]),
        target,
        metadata={
            "source": "examples/generate (Fashion-MNIST, pixel by pixel, logistic mixture over 256 levels)",
            "image_height": str(image["height"]),
            "image_width": str(image["width"]),
            "image_start_token": str(image["start_token"]),
            "test_bits_per_dim": f"{training['test_bits_per_dim']:.4f} "
                                 f"(first {training['test_images']} test images)",
        },
    )
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
