"""The golden-data generator the C++ tests call at build time."""

import json

import numpy as np
import pytest
import torch

from converter import read_tarn
from tests import goldens

from converter_testing import run_cli


@pytest.mark.parametrize("case", sorted(goldens.CASES))
def test_every_case_at_a_short_length(tmp_path, case):
    length = 24
    goldens.generate(tmp_path, case, length=length, seed=3)
    f = read_tarn(tmp_path / "model.tarn")
    c = f.config
    assert f.checksum_ok
    inputs, output = np.load(tmp_path / "input.npy"), np.load(tmp_path / "output.npy")
    if c.input_kind == "tokens":
        assert inputs.dtype == np.int32 and inputs.shape == (length,)
        steps = length
    else:
        assert inputs.dtype == np.float32 and inputs.shape == (length, c.input_dim)
        steps = (length - c.stack_window) // c.stack_hop + 1
    assert output.dtype == np.float32 and output.shape == (steps, c.output_dim or c.d_model)
    if c.attention == "causal":
        assert np.load(tmp_path / "state_S.npy").shape == (c.num_layers, c.num_heads, c.feature_dim, c.d_value)
        assert np.load(tmp_path / "state_z.npy").shape == (c.num_layers, c.num_heads, c.feature_dim)
    assert (tmp_path / "state_conv.npy").exists() == (bool(c.conv_kernel) and c.attention == "causal")
    spec = goldens.CASES[case](np.random.default_rng(3))
    assert json.loads((tmp_path / "case.json").read_text())["config"] == spec.config.to_dict()

    # The outputs are the reference's, parallel form included: the file's
    # weights reproduce them.
    model = goldens.LinearTransformer(c).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    as_torch = torch.from_numpy(inputs).long() if c.input_kind == "tokens" else torch.from_numpy(inputs)
    with torch.no_grad():
        parallel = model(as_torch[None])[0].numpy()
    np.testing.assert_allclose(parallel, output, rtol=1e-4, atol=1e-4)


def test_spec_sizes_of_the_main_cases():
    rng = np.random.default_rng(0)
    tokens = goldens.CASES["tokens"](rng)
    c = tokens.config
    assert (c.num_layers, c.num_heads, c.d_key, c.d_value, c.d_model, c.d_ff, c.vocab_size, c.output_dim) == (4, 4, 32, 32, 128, 512, 256, 256)
    assert (c.position, c.norm_placement, c.activation, tokens.length) == ("sinusoidal", "post", "relu", 2000)
    frames = goldens.CASES["frames"](rng)
    assert (frames.config.input_kind, frames.config.input_dim, frames.config.output_dim, frames.length) == ("frames", 40, 32, 2000)
    speech = goldens.CASES["speech"](rng)
    c = speech.config
    assert (c.input_dim, c.stack_window, c.stack_hop, c.input_activation, c.norm_placement, c.activation) == (40, 9, 3, "gelu", "pre", "gelu")
    assert (c.conv_kernel, c.d_model, c.num_heads, c.d_key, c.d_ff, c.num_layers, c.final_norm, c.output_dim, speech.length) == (7, 144, 4, 36, 512, 4, True, 29, 600)
    assert len(speech.labels) == 29 and speech.audio["num_mel_bins"] == 40


def test_same_seed_same_files(tmp_path):
    for run in ("a", "b"):
        goldens.generate(tmp_path / run, "favor", length=10, seed=7)
    for name in ("input.npy", "output.npy", "state_S.npy", "state_z.npy"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    a, b = read_tarn(tmp_path / "a" / "model.tarn"), read_tarn(tmp_path / "b" / "model.tarn")
    assert a.weight_checksum == b.weight_checksum


def test_cli(tmp_path):
    result = run_cli(tmp_path / "out", "--case", "relu", "--length", "16", "--dtype", "f16", module="tests.goldens")
    assert result.returncode == 0, result.stderr
    f = read_tarn(tmp_path / "out" / "model.tarn")
    assert f.tensors["token_embedding.weight"].dtype == np.float16
    assert np.load(tmp_path / "out" / "output.npy").shape == (16, 64)
    result = run_cli(tmp_path / "x", "--case", "learned", "--length", "5000", module="tests.goldens")
    assert result.returncode == 1 and "learned positions for 512 steps" in result.stderr
