"""Writes the models tarn_drift measures: small seeded reference models with
the elu+1 feature map (the one whose z and S grow without bound).

    /usr/bin/python3 tools/drift/make_models.py OUT_DIR

    OUT_DIR/tokens.tarn   d_model 32, 2 layers, 2 heads x 16, sinusoidal
                          position, post-norm, relu, vocabulary 64 (the
                          goldens' small token model, with elu+1)
    OUT_DIR/frames.tarn   40 mel bins stacked 3 every 3, gelu projection,
                          pre-norm, gelu, depthwise conv 3, final norm, 29
                          CTC outputs: the speech model, at a fifth the width

Run from the repository root with PYTHONPATH=. (and TARN_FLATC_PYTHON_OUT
as for the converter)."""

import sys
from pathlib import Path

import torch

from converter.convert import convert_state_dict
from tests.goldens import build_model
from converter.reference import ModelConfig

SMALL = dict(d_model=32, num_layers=2, num_heads=2, d_key=16, d_value=16, d_ff=64)

MODELS = {
    "tokens": ModelConfig(**SMALL, vocab_size=64, output_dim=64, position="sinusoidal"),
    "frames": ModelConfig(
        **SMALL,
        input_kind="frames",
        input_dim=40,
        stack_window=3,
        stack_hop=3,
        input_activation="gelu",
        norm_placement="pre",
        activation="gelu",
        conv_kernel=3,
        final_norm=True,
        output_dim=29,
    ),
}


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    for seed, (name, config) in enumerate(MODELS.items()):
        model = build_model(config, seed)
        convert_state_dict(model.state_dict(), config, out / f"{name}.tarn", metadata={"source": f"tools/drift/make_models.py {name}"})
    print(f"wrote {', '.join(MODELS)} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
