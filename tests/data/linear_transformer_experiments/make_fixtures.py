#!/usr/bin/env python3
"""Make golden fixtures from the paper authors' own image-generation code.

idiap/linear-transformer-experiments, folder image-generation/: the model
of the paper's MNIST/CIFAR-10 experiments (main.py: ImageGenerator, trained
in parallel form; prediction.py: RecurrentGenerator, the same weights
stepped as an RNN to sample; utils.py: the mixture-of-logistics loss and
sampler). That code is not part of this repository: check it out yourself
and pass its image-generation folder as --source.

Writes, under <out>/:

  model.pt      torch.save({"model_state": ImageGenerator.state_dict(),
                "iteration": 0}), the format of their utils.save_model (less
                the optimizer state), random weights
  config.json   the hyper-parameters (their command-line names) and the
                checks below
  input.npy     int32 [T] grey levels 0..255, seeded
  output.npy    float32 [T, 3 * mixtures]: RecurrentGenerator's predictor
                outputs, stepped one pixel at a time (batch 1) exactly as
                their predict_with_recurrent does (forward(x, i, memory))

Checks made while generating (printed; a failure raises):
  * the parallel ImageGenerator (TriangularCausalMask, causal_product CPU
    extension) agrees with the recurrent outputs;
  * their sampler utils.sample_mol, drawn many times from a few steps'
    outputs, gives level frequencies that match the probability table of
    converter/reference.py's logistic_mixture_levels (the distribution tarn
    implements): Pearson's chi-square over the 256 levels below 390 (mean +
    6 standard deviations of chi-square with 255 degrees of freedom).

Their modules import torchvision (datasets) and imageio (saving pictures),
neither used by the model classes; where those are not installed, empty
stand-ins are registered so that the imports succeed.

Usage (from the repository root; FAST_TRANSFORMERS: a checkout of
fast-transformers built with its CPU extensions; EXPERIMENTS: a checkout of
linear-transformer-experiments):
  PYTHONPATH=".:$FAST_TRANSFORMERS" OMP_WAIT_POLICY=PASSIVE \\
      python3 tests/data/linear_transformer_experiments/make_fixtures.py \\
      --source "$EXPERIMENTS/image-generation"
"""

import argparse
import importlib.util
import json
import os
import sys
import types

import numpy as np
import torch

T = 784  # 28 x 28 pixels
N_LAYERS = 2
N_HEADS = 4
D_QUERY = 8
D_MODEL = N_HEADS * D_QUERY  # their main.py: args.d_query * args.n_heads
MIXTURES = 10
LEVELS = 256
SEED = 6
SAMPLED_STEPS = (0, 100, 400, 783)
DRAWS = 400_000
CHI2_LIMIT = 255 + 6 * (2 * 255) ** 0.5  # mean + 6 standard deviations


def stand_in(name, **attributes):
    if importlib.util.find_spec(name) is None:
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules[name] = module


def import_their_code(source):
    stand_in("torchvision", datasets=types.SimpleNamespace(MNIST=None, CIFAR10=None))
    stand_in("imageio", imwrite=None)
    sys.path.insert(0, os.path.abspath(source))
    import main
    import prediction
    import utils
    return main, prediction, utils


def their_kwargs():
    # As their main.py and prediction.py build the model from the defaults
    # of utils.add_transformer_arguments, with dropout off for inference.
    return dict(
        attention_type="causal-linear",
        n_layers=N_LAYERS,
        n_heads=N_HEADS,
        d_query=D_QUERY,
        dropout=0.0,
        softmax_temp=None,
        attention_dropout=0.0,
        bits=32,
        rounds=4,
        chunk_size=32,
        masked=True,
    )


def main_():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="their image-generation folder")
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    torch.set_num_threads(1)
    their_main, their_prediction, their_utils = import_their_code(args.source)
    from converter.reference import logistic_mixture_levels

    torch.manual_seed(SEED)
    model = their_main.ImageGenerator(D_MODEL, T, MIXTURES, **their_kwargs())
    # LayerNorms start at weight 1, bias 0: randomise them so that a swapped
    # or dropped norm shows up.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p) if name.endswith("weight") else 0.2 * torch.randn_like(p))
    model.eval()
    recurrent = their_prediction.RecurrentGenerator(D_MODEL, T, MIXTURES, **their_kwargs())
    recurrent.load_state_dict(model.state_dict(), strict=True)
    recurrent.eval()

    rng = np.random.default_rng(SEED)
    pixels = rng.integers(0, LEVELS, size=T).astype(np.int32)
    images = torch.from_numpy(pixels.astype(np.int64))[None]  # [1, T]

    # Their predict_with_recurrent, less the sampling: every step is fed
    # the given pixel.
    memory = None
    outputs = []
    with torch.no_grad():
        for i in range(T):
            y, memory = recurrent(images[:, i : i + 1], i=i, memory=memory)
            outputs.append(y)
        output = torch.cat(outputs).numpy()  # [T, 3 * mixtures]
        parallel = model(images)[0].numpy()
    parallel_diff = float(np.abs(parallel - output).max())
    print(f"parallel ImageGenerator vs recurrent: max |diff| = {parallel_diff:.3g}")
    assert parallel_diff < 1e-4, parallel_diff

    # Their sampler against the probability table tarn implements.
    sampler = {}
    torch.manual_seed(SEED)
    for step in SAMPLED_STEPS:
        params = torch.from_numpy(output[step]).repeat(DRAWS, 1)
        draws = their_utils.sample_mol(params, LEVELS).view(-1).numpy()
        frequency = np.bincount(draws, minlength=LEVELS) / DRAWS
        table = logistic_mixture_levels(output[step].astype(np.float64), LEVELS)
        # Pearson's chi-square over the levels: LEVELS - 1 degrees of
        # freedom, mean 255 and standard deviation 22.6 if the table is right.
        chi2 = float(DRAWS * ((frequency - table) ** 2 / table).sum())
        worst = float(np.abs(frequency - table).max())
        print(f"step {step}: sample_mol x {DRAWS} vs table: max |freq - p| = {worst:.2e}, chi2 = {chi2:.0f} (255 dof)")
        assert chi2 < CHI2_LIMIT, (step, chi2)
        sampler[str(step)] = {"max_abs": worst, "chi2": chi2}

    out = args.out
    os.makedirs(out, exist_ok=True)
    torch.save({"model_state": model.state_dict(), "iteration": 0}, os.path.join(out, "model.pt"))
    np.save(os.path.join(out, "input.npy"), pixels)
    np.save(os.path.join(out, "output.npy"), output.astype(np.float32))
    config = {
        "source": "idiap/linear-transformer-experiments image-generation (main.py, prediction.py, utils.py)",
        "torch_version": torch.__version__,
        "attention_type": "causal-linear",
        "n_layers": N_LAYERS,
        "n_heads": N_HEADS,
        "d_query": D_QUERY,
        "mixtures": MIXTURES,
        "sequence_length": T,
        "seed": SEED,
        "state_dict": {k: list(v.shape) for k, v in model.state_dict().items()},
        "crosscheck_parallel_max_abs": parallel_diff,
        "crosscheck_sample_mol": {"draws": DRAWS, "steps": sampler},
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
        f.write("\n")
    for name in ("model.pt", "input.npy", "output.npy", "config.json"):
        print(f"{name}: {os.path.getsize(os.path.join(out, name))} bytes")


if __name__ == "__main__":
    main_()
