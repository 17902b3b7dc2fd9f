"""The paper authors' image model (--arch linear-transformer-experiments) and
the logistic-mixture distribution of tarn's reference."""

import json
import math
import re

import numpy as np
import pytest
import torch

from converter import ConversionError, convert_file, read_tarn
from converter.reference import ModelConfig, logistic_mixture_levels

from converter_testing import REPO_ROOT, make_model

AUTHORS = REPO_ROOT / "tests" / "data" / "linear_transformer_experiments"
ARCH = "linear-transformer-experiments"


def their_checkpoint(tmp_path, edit=None):
    """The fixture checkpoint, optionally with its model_state edited."""
    data = torch.load(AUTHORS / "model.pt", weights_only=True)
    if edit is not None:
        edit(data["model_state"])
    path = tmp_path / "their.pt"
    torch.save(data, path)
    return path


def test_converts_with_concatenated_position_and_mixture_head(tmp_path):
    config = json.loads((AUTHORS / "config.json").read_text())
    convert_file(AUTHORS / "model.pt", tmp_path / "m.tarn", ARCH, config)
    f = read_tarn(tmp_path / "m.tarn")
    c = f.config
    assert (c.input_kind, c.vocab_size, c.position, c.position_concat_dim) == ("tokens", 256, "sinusoidal", 16)
    assert (c.d_model, c.num_layers, c.num_heads, c.d_key, c.d_value, c.d_ff) == (32, 2, 4, 8, 8, 128)
    assert (c.output_dim, c.output_distribution, c.output_levels) == (30, "logistic-mixture", 256)
    assert (c.norm_placement, c.final_norm, c.feature_map, c.activation) == ("post", True, "elu+1", "relu")
    state = torch.load(AUTHORS / "model.pt", weights_only=True)["model_state"]
    assert np.array_equal(f.tensors["token_embedding.weight"], state["value_embedding.weight"].numpy())
    assert np.array_equal(f.tensors["head.weight"], state["predictor.weight"].numpy())
    assert np.array_equal(f.tensors["layers.1.linear2.bias"], state["transformer.layers.1.linear2.bias"].numpy())
    assert np.array_equal(f.tensors["norm.weight"], state["transformer.norm.weight"].numpy())


@pytest.mark.parametrize(
    "config, message",
    [
        ({}, "do not record n_heads"),
        ({"n_heads": 4, "attention_type": "full"}, "'full' is not a linear transformer"),
        ({"n_heads": 4, "mixtures": 7}, "30 rows, expected 3 x mixtures = 21"),
        ({"n_heads": 4, "d_query": 16}, "d_query = 16, but the projections give 8 per head"),
        ({"n_heads": 4, "learning_rate": 1}, "unknown linear-transformer-experiments config keys ['learning_rate']"),
    ],
)
def test_config_errors(tmp_path, config, message):
    with pytest.raises(ConversionError) as error:
        convert_file(AUTHORS / "model.pt", tmp_path / "m.tarn", ARCH, config)
    assert message in str(error.value)


@pytest.mark.parametrize("shift", [0.01, 5e-5])
def test_a_position_table_that_is_not_their_sinusoid_is_refused(tmp_path, shift):
    """Also a table off by 5e-5 in one entry: within the 1e-4 that the
    comparison with the exact sinusoid had to allow, far beyond float32's
    rounding of their own."""

    def shifted(state):
        state["pos_embedding.pe"][0, 5, 3] += shift

    with pytest.raises(ConversionError) as error:
        convert_file(their_checkpoint(tmp_path, shifted), tmp_path / "m.tarn", ARCH, {"n_heads": 4})
    found = re.fullmatch(
        r"pos_embedding\.pe differs from the sinusoidal encoding \(computed in float32, as their PositionalEncoding "
        r"computes it\) by (\S+) \(> 1e-06\): not their PositionalEncoding",
        str(error.value),
    )
    assert found, str(error.value)
    assert float(found.group(1)) == pytest.approx(shift, rel=0.01)  # the shift, less float32's rounding of the sum


def their_position_table(d_model: int, max_len: int) -> torch.Tensor:
    """PositionalEncoding's `pe` buffer, [1, max_len, d_model], computed as
    their image-generation/main.py computes it (torch, float32)."""
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.unsqueeze(0)


@pytest.mark.parametrize("pixels", [3072, 12288], ids=["cifar10", "imagenet64"])
def test_their_float32_position_table_of_large_images_converts(tmp_path, pixels):
    """Their CIFAR-10 and ImageNet64 models (README: 8 heads of 32, a table
    of d_model / 2 = 128): past position ~2048 their float32 table is off
    the exact sinusoid by more than 1e-4 (float32 rounds position x
    div_term), and such checkpoints were refused as not their encoding."""
    config = ModelConfig(
        d_model=256, num_layers=1, num_heads=8, d_key=32, d_value=32, d_ff=1024, vocab_size=256, position="sinusoidal",
        position_concat_dim=128, final_norm=True, output_dim=30, output_distribution="logistic-mixture", output_levels=256,
    )
    names = {"token_embedding": "value_embedding", "head": "predictor"}
    state = {}
    for name, tensor in make_model(config).state_dict().items():
        first, _, rest = name.partition(".")
        state[f"{names[first]}.{rest}" if first in names else f"transformer.{name}"] = tensor
    state["pos_embedding.pe"] = their_position_table(128, pixels)
    position = np.arange(pixels, dtype=np.float64)[:, None]
    exact = np.sin(position / 10000.0 ** (np.arange(0, 128, 2) / 128))
    assert np.abs(state["pos_embedding.pe"][0, :, 0::2].numpy() - exact).max() > 2e-4
    checkpoint = tmp_path / "their.pt"
    torch.save({"model_state": state, "iteration": 1}, checkpoint)
    convert_file(checkpoint, tmp_path / "m.tarn", ARCH, {"n_heads": 8})
    assert read_tarn(tmp_path / "m.tarn").config == config


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    def drop(state):
        del state["predictor.bias"]

    with pytest.raises(ConversionError, match="not their ImageGenerator: the checkpoint has no predictor.bias"):
        convert_file(their_checkpoint(tmp_path, drop), tmp_path / "m.tarn", ARCH, {"n_heads": 4})


@pytest.mark.parametrize("name", ["predictor.scale", "value_embedding.extra", "pos_embedding.dropout_mask"])
def test_tensors_beside_their_encoder_are_exactly_theirs(tmp_path, name):
    """Any tensor under value_embedding., pos_embedding. or predictor. was
    accepted and dropped unconverted (a predictor.scale of 100 too)."""

    def add(state):
        state[name] = torch.ones(3)

    with pytest.raises(ConversionError) as error:
        convert_file(their_checkpoint(tmp_path, add), tmp_path / "m.tarn", ARCH, {"n_heads": 4})
    assert str(error.value) == f"unknown tensors (not in their ImageGenerator): {name}"


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(position="none", position_concat_dim=8), "needs token input and sinusoidal position"),
        (dict(position="sinusoidal", position_concat_dim=32), "must be in (0, d_model)"),
        (dict(output_dim=31, output_distribution="logistic-mixture", output_levels=256), "3 x mixtures"),
        (dict(output_dim=30, output_distribution="logistic-mixture"), "output_levels >= 2"),
        (dict(output_dim=30, output_levels=256), "logistic-mixture output only"),
    ],
)
def test_model_config_checks(fields, message):
    base = dict(d_model=32, num_layers=1, num_heads=2, d_key=16, d_value=16, d_ff=32, vocab_size=256)
    with pytest.raises(ValueError) as error:
        ModelConfig(**base, **fields)
    assert message in str(error.value)


# -- the reference's level distribution ------------------------------------------


def test_levels_sum_to_one_and_follow_one_sharp_component():
    """A component with a tiny scale puts its weight on the level nearest its
    mean; elu(p) + 1.0001 with p = -30 is a scale of 1e-4."""
    mixtures = 3
    params = np.zeros(3 * mixtures)
    params[:mixtures] = np.log([0.5, 0.3, 0.2])
    params[mixtures : 2 * mixtures] = [2 * 10 / 255 - 1, 2 * 200 / 255 - 1, 5.0]  # levels 10, 200, above 255
    params[2 * mixtures :] = -30
    p = logistic_mixture_levels(params, 256)
    assert p.shape == (256,)
    assert p.sum() == pytest.approx(1, abs=1e-12)
    assert p[10] == pytest.approx(0.5) and p[200] == pytest.approx(0.3) and p[255] == pytest.approx(0.2)


def test_levels_of_one_wide_component_are_its_cdf_differences():
    mean, raw = 0.1, 0.5  # scale = 0.5 + 1.0001
    scale = raw + 1.0001
    p = logistic_mixture_levels(np.array([0.0, mean, raw]), 256)
    cdf = lambda x: 1 / (1 + np.exp(-(x - mean) / scale))  # noqa: E731
    centre = 2 * 100 / 255 - 1
    assert p[100] == pytest.approx(cdf(centre + 1 / 255) - cdf(centre - 1 / 255), rel=1e-12)
    assert p[0] == pytest.approx(cdf(-1 + 1 / 255), rel=1e-12)
    assert p[255] == pytest.approx(1 - cdf(1 - 1 / 255), rel=1e-12)


def test_levels_far_in_the_upper_tail_keep_their_digits():
    """P of a level many scales above the mean (1e-14 and 1e-18 here): exact
    to 1e-10 relative against 60-digit decimal arithmetic (a difference of
    two CDFs near 1 keeps none of these digits); an infinite mean puts all
    of P on the end level."""
    import decimal

    decimal.getcontext().prec = 60
    mean, raw = -0.9, -3.0  # scale = expm1(raw) + 1.0001 = 0.0499...
    scale = decimal.Decimal(float(np.expm1(raw) + 1.0001))
    p = logistic_mixture_levels(np.array([0.0, mean, raw]), 256)

    def sigmoid(x):
        return 1 / (1 + (-x).exp())

    for k in (200, 254):
        lower = (decimal.Decimal(2 * k - 1) / 255 - 1 - decimal.Decimal(mean)) / scale
        upper = (decimal.Decimal(2 * k + 1) / 255 - 1 - decimal.Decimal(mean)) / scale
        exact = float(sigmoid(upper) - sigmoid(lower))
        assert p[k] == pytest.approx(exact, rel=1e-10, abs=0), k
    for mean, end in ((np.inf, -1), (-np.inf, 0)):
        p = logistic_mixture_levels(np.array([0.0, mean, raw]), 4)
        assert p[end] == 1 and np.count_nonzero(p) == 1, p
