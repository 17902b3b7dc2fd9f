"""Name mappings and the shape check: tarn's own names and fast-transformers'."""

import json

import numpy as np
import pytest
import torch

from converter import ConversionError, convert_file, convert_state_dict, read_tarn, write_tarn
from converter.architectures import fast_transformers
from converter.checkpoints import Checkpoint
from converter.reference import LinearTransformer, ModelConfig
from converter.shapes import check_tensors

from converter_testing import CONFIGS, FAST_TRANSFORMERS_DATA, make_model

# -- the shape check -----------------------------------------------------------


def test_wrong_shape_names_the_tensor_and_both_shapes(tmp_path, small_config, small_state_dict):
    small_state_dict["layers.1.linear1.weight"] = torch.zeros(48, 31)
    with pytest.raises(ConversionError) as error:
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")
    assert str(error.value) == "tensor layers.1.linear1.weight: expected shape [48, 32], got [48, 31]"


def test_missing_tensors_are_listed(tmp_path, small_config, small_state_dict):
    del small_state_dict["head.bias"]
    del small_state_dict["layers.0.attention.feature_map.omega"]
    with pytest.raises(ConversionError, match=r"^missing tensors: layers\.0\.attention\.feature_map\.omega, head\.bias$"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")


def test_unknown_tensors_are_listed(tmp_path, small_config, small_state_dict):
    small_state_dict["layers.2.linear1.weight"] = torch.zeros(1)
    small_state_dict["encoder.extra"] = torch.zeros(1)
    with pytest.raises(ConversionError, match=r"unknown tensors \(not used by this config\): encoder\.extra, layers\.2\.linear1\.weight"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")


def test_several_problems_are_reported_together(tmp_path, small_config, small_state_dict):
    del small_state_dict["head.bias"]
    small_state_dict["norm.weight"] = torch.zeros(32)
    small_state_dict["head.weight"] = torch.zeros(40, 33)
    with pytest.raises(ConversionError) as error:
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")
    lines = str(error.value).split("\n")
    assert lines[0] == "tensors do not match the config:"
    assert any("missing tensors: head.bias" in line for line in lines)
    assert any("unknown tensors (not used by this config): norm.weight" in line for line in lines)
    assert any("tensor head.weight: expected shape [40, 32], got [40, 33]" in line for line in lines)


def test_integer_tensor_is_an_error(tmp_path, small_config, small_state_dict):
    small_state_dict["head.bias"] = torch.zeros(40, dtype=torch.int64)
    with pytest.raises(ConversionError, match="tensor head.bias: expected a floating-point tensor, got int64"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")


def _with_list_value(state_dict):
    return {**state_dict, "head.bias": state_dict["head.bias"].tolist()}


def _with_int_key(state_dict):
    state_dict = dict(state_dict)
    state_dict[3] = state_dict.pop("head.bias")
    return state_dict


def _with_sparse_value(state_dict):
    return {**state_dict, "head.bias": state_dict["head.bias"].to_sparse()}


@pytest.mark.parametrize(
    "change, message",
    [
        (_with_list_value, r"^state dict entries that are not tensors: head\.bias \(expected torch\.Tensor or numpy\.ndarray values, got list\)$"),
        (_with_int_key, r"^state dict keys that are not names: 3 \(int\); expected str keys such as 'head\.weight'$"),
        (_with_sparse_value, r"^tensor head\.bias: cannot be read as an array of numbers \(.*\)$"),
        (lambda state_dict: make_model(CONFIGS["tokens_favor_conv"]), r"^expected a state dict \(a mapping of tensor names to tensors\), got LinearTransformer$"),
    ],
    ids=["list_value", "int_key", "sparse_value", "a_model"],
)
def test_library_calls_with_what_is_not_a_state_dict_raise_conversion_errors(tmp_path, small_config, small_state_dict, change, message):
    """convert_state_dict, given a value that is not a tensor or a key that
    is not a name, says which instead of an AttributeError or TypeError."""
    with pytest.raises(ConversionError, match=message):
        convert_state_dict(change(small_state_dict), small_config, tmp_path / "m.tarn")
    assert not (tmp_path / "m.tarn").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        (_with_list_value, r"^tensor head\.bias: expected a numpy array, got list$"),
        (_with_int_key, r"^tensor key 3 \(int\) is not a name; expected str keys such as 'head\.weight'$"),
        (lambda tensors: {**tensors, "head.bias": torch.from_numpy(tensors["head.bias"])}, r"^tensor head\.bias: expected a numpy array, got Tensor$"),
        (lambda tensors: list(tensors.items()), r"^expected the tensors as a mapping of names to numpy arrays, got list$"),
    ],
    ids=["list_value", "int_key", "torch_value", "a_list_of_pairs"],
)
def test_write_tarn_with_what_is_not_arrays_by_name_raises_conversion_errors(tmp_path, small_config, small_state_dict, change, message):
    tensors = {name: t.numpy() for name, t in small_state_dict.items()}
    with pytest.raises(ConversionError, match=message):
        write_tarn(tmp_path / "m.tarn", small_config, change(tensors))
    assert not (tmp_path / "m.tarn").exists()


@pytest.mark.parametrize(
    "argument, value, message",
    [
        ("metadata", [("note", "x")], r"^the metadata must be a dict, got list$"),
        ("audio", [16000], r"^the audio front end must be a dict, got list$"),
        ("out_path", None, r"^the output must be a path \(str or os\.PathLike\), got NoneType$"),
    ],
)
def test_library_arguments_of_another_kind_raise_conversion_errors(tmp_path, small_config, small_state_dict, argument, value, message):
    arguments = dict(state_dict=small_state_dict, config=small_config, out_path=tmp_path / "m.tarn")
    with pytest.raises(ConversionError, match=message):
        convert_state_dict(**{**arguments, argument: value})
    assert not (tmp_path / "m.tarn").exists()


def test_invalid_config_is_a_conversion_error(tmp_path, small_config, small_state_dict):
    with pytest.raises(ConversionError, match="invalid model config: .*feature_map must be one of"):
        convert_state_dict(small_state_dict, {**small_config.to_dict(), "feature_map": "softmax"}, tmp_path / "m.tarn")
    with pytest.raises(ConversionError, match="unknown model config keys"):
        convert_state_dict(small_state_dict, {**small_config.to_dict(), "heads": 2}, tmp_path / "m.tarn")


# -- tarn's own checkpoints ----------------------------------------------------


def test_tarn_checkpoint_carrying_its_config(tmp_path, small_config, small_state_dict):
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    result = convert_file(checkpoint, tmp_path / "m.tarn")
    assert result.config == small_config
    f = read_tarn(tmp_path / "m.tarn")
    assert f.metadata["source"] == str(checkpoint) and f.metadata["arch"] == "tarn"


def test_tarn_checkpoint_without_config_needs_one(tmp_path, small_config, small_state_dict):
    checkpoint = tmp_path / "model.pt"
    torch.save(small_state_dict, checkpoint)
    with pytest.raises(ConversionError, match="carries no `config`; pass --config"):
        convert_file(checkpoint, tmp_path / "m.tarn")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(small_config.to_dict()))
    assert convert_file(checkpoint, tmp_path / "m.tarn", config=config).config == small_config


@pytest.mark.parametrize(
    "given",
    [
        {"d_model": 16, "num_layers": 2, "vocab_size": 20},  # the shapes only: the rest is the checkpoint's
        {"norm_eps": np.float32(1e-3).item(), "feature_dim": 0},  # as stored (float32), d_key's default
        None,
    ],
    ids=["shapes", "equivalent", "none"],
)
def test_a_config_beside_the_carried_one_may_only_agree_with_it(tmp_path, given):
    """The carried config converts. A --config replaced it, and fields no
    tensor records (activation, norm_placement, norm_eps, embedding_scale)
    took ModelConfig's defaults where the user's left them out: the file
    computed another function (1.37 off on its reference outputs)."""
    carried = ModelConfig(
        d_model=16, num_layers=2, num_heads=2, d_key=8, d_value=8, d_ff=32, vocab_size=20, output_dim=20,
        norm_placement="pre", activation="gelu", feature_map="relu", norm_eps=1e-3, final_norm=True, embedding_scale=3.0,
    )
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": make_model(carried).state_dict(), "config": carried.to_dict()}, checkpoint)
    assert convert_file(checkpoint, tmp_path / "m.tarn", config=given).config == carried
    assert read_tarn(tmp_path / "m.tarn").config == carried


@pytest.mark.parametrize(
    "given, message",
    [
        ({"activation": "relu", "norm_eps": 1e-5, "d_model": 16},
         "activation 'relu' (the checkpoint's: 'gelu'), norm_eps 1e-05 (the checkpoint's: 0.001)"),
        ({"d_key": 4}, "d_key 4 (the checkpoint's: 8)"),
        ({"embedding_scale": 1.0}, "embedding_scale 1.0 (the checkpoint's: 3.0)"),
    ],
)
def test_a_config_that_differs_from_the_carried_one_is_refused(tmp_path, given, message):
    carried = ModelConfig(
        d_model=16, num_layers=1, num_heads=2, d_key=8, d_value=8, d_ff=32, vocab_size=20,
        activation="gelu", norm_eps=1e-3, embedding_scale=3.0,
    )
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": make_model(carried).state_dict(), "config": carried.to_dict()}, checkpoint)
    with pytest.raises(ConversionError) as error:
        convert_file(checkpoint, tmp_path / "m.tarn", config=given)
    assert str(error.value) == (
        f"the config given differs from the one the checkpoint carries, which is what converts: {message}; "
        "leave --config out, or give only values that agree"
    )
    with pytest.raises(ConversionError, match=r"^invalid model config: unknown model config keys: \['heads'\]$"):
        convert_file(checkpoint, tmp_path / "m.tarn", config={"heads": 2})
    assert not (tmp_path / "m.tarn").exists()


# -- fast-transformers ---------------------------------------------------------

FT_CASES = ["causal_linear", "causal_relu", "causal_favor", "causal_favor_stabilize", "linear"]


def _fast_transformers_names(state_dict: dict) -> dict:
    return {k.replace(".attention.feature_map.", ".attention.inner_attention.feature_map."): v for k, v in state_dict.items()}


def test_fast_transformers_mapping_without_fixtures(tmp_path):
    """A fast-transformers-named state dict made from a reference model with
    fast-transformers' shape (frames of d_model, no projection, no head)."""
    config = ModelConfig(
        d_model=32, num_layers=2, num_heads=4, d_key=6, d_value=8, d_ff=40, input_kind="frames", input_dim=32,
        input_projection=False, feature_map="favor+", feature_dim=12, favor_softmax_temp=0.3, final_norm=True,
    )
    model = make_model(config)
    checkpoint = tmp_path / "ft.pt"
    torch.save(_fast_transformers_names(model.state_dict()), checkpoint)
    ft_config = {"n_heads": 4, "attention_type": "causal-linear", "feature_map": {"name": "favor", "softmax_temp": 0.3}}
    result = convert_file(checkpoint, tmp_path / "m.tarn", arch="fast-transformers", config=ft_config)
    assert result.config == config  # everything else read from the tensors
    f = read_tarn(tmp_path / "m.tarn")
    assert f.config == config and f.config.favor_softmax_temp == 0.3  # not favor's default, 1/sqrt(6)
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(f.tensors[name], tensor.numpy())


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n_heads": None}, "needs n_heads"),
        ({"attention_type": "full"}, "attention_type must be one of"),
        ({"causal": False}, "contradicts attention_type"),
        ({"d_model": 30}, "d_model = 30, but n_heads \\* value_dimensions = 64"),
        ({"feature_map": {"name": "elu+1", "stabilize": True}}, "apply to the favor feature map only"),
        ({"activaton": "gelu"}, "unknown fast-transformers config keys \\['activaton'\\]"),
        ({"n_heads": 3}, "64 rows do not split into n_heads = 3 heads"),
        ({"n_layers": 3}, "missing tensors: layers.2.attention"),
    ],
)
def test_fast_transformers_config_errors(change, message):
    config = {"n_heads": 4, "attention_type": "causal-linear", "feature_map": {"name": "elu+1"}, "d_model": 64}
    config.update(change)
    config = {k: v for k, v in config.items() if v is not None}
    model = make_model(
        ModelConfig(
            d_model=64, num_layers=2, num_heads=4, d_key=16, d_value=16, d_ff=128, input_kind="frames",
            input_dim=64, input_projection=False, final_norm=True,
        )
    )
    checkpoint = Checkpoint({k: v.numpy() for k, v in model.state_dict().items()})
    with pytest.raises(ConversionError, match=message):
        model_config, tensors = fast_transformers.map_checkpoint(checkpoint, config)
        check_tensors(tensors, model_config)


@pytest.mark.parametrize("feature_map, refused", [("elu", False), ("favor", True)])
def test_a_wrong_head_count_of_the_same_width_is_caught_only_where_a_tensor_records_d_key(feature_map, refused):
    """docs/decisions.md, Converter: 2 heads of 32 for a 4-head checkpoint of
    16 each has the projections' shapes exactly; favor's omega, [d_key,
    n_dims / 2], records d_key."""
    extra = {"feature_map": "favor+", "feature_dim": 12} if feature_map == "favor" else {}
    model = make_model(
        ModelConfig(
            d_model=64, num_layers=1, num_heads=4, d_key=16, d_value=16, d_ff=32, input_kind="frames",
            input_dim=64, input_projection=False, **extra,
        )
    )
    checkpoint = Checkpoint({k: v.numpy() for k, v in model.state_dict().items()})
    config = {"n_heads": 2, "attention_type": "causal-linear", "feature_map": feature_map}
    model_config, tensors = fast_transformers.map_checkpoint(checkpoint, config)
    assert (model_config.num_heads, model_config.d_key, model_config.d_value) == (2, 32, 32)
    if refused:
        with pytest.raises(ConversionError, match=r"omega: expected shape \[32, 6\], got \[16, 6\]"):
            check_tensors(tensors, model_config)
    else:
        check_tensors(tensors, model_config)  # the limit: nothing in the shapes tells


def _fixture(case):
    directory = FAST_TRANSFORMERS_DATA / case
    if not (directory / "model.pt").is_file():
        pytest.skip(f"fast-transformers fixture {directory} not present yet")
    return directory


@pytest.mark.parametrize("case", FT_CASES)
def test_fast_transformers_fixtures(tmp_path, case):
    """The converted fixture, run by the reference model, reproduces what
    fast-transformers itself computed: outputs and final states."""
    directory = _fixture(case)
    ft = json.loads((directory / "config.json").read_text())
    out = tmp_path / "m.tarn"
    convert_file(directory / "model.pt", out, arch="fast-transformers", config=directory / "config.json")
    f = read_tarn(out)
    c = f.config
    assert (c.num_layers, c.num_heads, c.d_key, c.d_value, c.d_ff) == (
        ft["n_layers"], ft["n_heads"], ft["query_dimensions"], ft["value_dimensions"], ft["feed_forward_dimensions"]
    )
    assert (c.input_kind, c.input_dim, c.input_projection, c.position, c.output_dim) == ("frames", ft["d_model"], False, "none", 0)
    assert c.feature_dim == ft["feature_map"]["feature_dim"]
    assert_reproduces_fast_transformers(f, directory)


def assert_reproduces_fast_transformers(f, directory):
    """The file's model, run by the reference model, gives the outputs and
    final states fast-transformers computed for the fixture."""
    c = f.config
    model = LinearTransformer(c).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    inputs = torch.from_numpy(np.load(directory / "input.npy"))
    expected = np.load(directory / "output.npy")
    if c.attention == "causal":
        output, state = model.run_recurrent(inputs)
        np.testing.assert_allclose(state["S"][:, 0].numpy(), np.load(directory / "state_S.npy"), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state["z"][:, 0].numpy(), np.load(directory / "state_z.npy"), rtol=1e-5, atol=1e-5)
    else:
        with torch.no_grad():
            output = model(inputs[None])[0]
    np.testing.assert_allclose(output.numpy(), expected, rtol=0, atol=1e-5)


# -- what fast-transformers' builder does with a config's keys -----------------

FT_BASE = {"n_heads": 4, "attention_type": "causal-linear"}


@pytest.mark.parametrize("feature_map", ["favor", {"name": "favor", "n_dims": 32}], ids=["name", "dict"])
def test_the_builders_softmax_temp_does_not_reach_favor(tmp_path, feature_map):
    """fast-transformers' builder passes softmax_temp to its softmax
    attentions only: causal-linear is registered with query_dimensions,
    feature_map and event_dispatcher alone. A softmax_temp of 0.125 beside
    favor (whose own is 1/sqrt(16) = 0.25 in the fixture) changes nothing:
    the file is the one converted without it, and reproduces fast-
    transformers' outputs. It became favor's temperature: 0.177 off."""
    directory = _fixture("causal_favor")
    config = {**FT_BASE, "feature_map": feature_map}
    plain, flat = tmp_path / "plain.tarn", tmp_path / "flat.tarn"
    convert_file(directory / "model.pt", plain, arch="fast-transformers", config=config)
    convert_file(directory / "model.pt", flat, arch="fast-transformers", config={**config, "softmax_temp": 0.125})
    f = read_tarn(flat)
    assert f.config == read_tarn(plain).config and f.config.favor_softmax_temp == 0.25
    assert_reproduces_fast_transformers(f, directory)


@pytest.mark.parametrize(
    "case, config",
    [
        ("causal_linear", {**FT_BASE, "feature_map": "elu", "softmax_temp": None}),
        ("causal_linear", {**FT_BASE, "feature_map": None}),  # the builder's default, elu
        ("causal_favor", {**FT_BASE, "feature_map": {"name": "favor", "n_dims": None}}),  # Favor's default
        ("causal_favor", {**FT_BASE, "feature_map": {"name": "favor", "n_dims": None, "feature_dim": None,
                                                     "softmax_temp": None, "stabilize": None}}),
        ("causal_favor", {**FT_BASE, "feature_map": "favor", "n_dims": None, "stabilize": None}),
    ],
    ids=["elu_null_softmax_temp", "null_feature_map", "favor_null_n_dims", "favor_all_null", "flat_nulls"],
)
def test_null_parameters_are_the_builders_defaults(tmp_path, case, config):
    """A null is what a config written from the builder's or Favor's
    arguments holds for a default; each was refused or a TypeError."""
    directory = _fixture(case)
    convert_file(directory / "model.pt", tmp_path / "m.tarn", arch="fast-transformers", config=config)
    assert_reproduces_fast_transformers(read_tarn(tmp_path / "m.tarn"), directory)


@pytest.mark.parametrize(
    "key, value",
    [("n_dims", "32"), ("n_dims", 0), ("n_dims", -12), ("n_dims", 12.0), ("n_dims", True), ("feature_dim", "12"), ("feature_dim", [12])],
)
def test_favor_sizes_must_be_positive_integers(key, value):
    model = make_model(
        ModelConfig(
            d_model=64, num_layers=1, num_heads=4, d_key=16, d_value=16, d_ff=32, input_kind="frames",
            input_dim=64, input_projection=False, feature_map="favor+", feature_dim=12,
        )
    )
    checkpoint = Checkpoint({k: v.numpy() for k, v in _fast_transformers_names(model.state_dict()).items()})
    with pytest.raises(ConversionError) as error:
        fast_transformers.map_checkpoint(checkpoint, {**FT_BASE, "feature_map": {"name": "favor", key: value}})
    assert str(error.value) == f"feature_map {key} must be a positive integer, got {value!r}"


@pytest.mark.parametrize("where", ["feature_map", "flat"])
def test_bidirectional_favor_with_stabilize_is_refused(tmp_path, where):
    """fast-transformers' LinearAttention hands Favor (N, L, H, D): its
    stabiliser's max is over the sequence, the runtime's over the heads at
    each step. Such a model converted into another function (0.183 off the
    fast-transformers computation on the causal_favor fixture's weights)."""
    directory = _fixture("causal_favor")
    config = {**FT_BASE, "attention_type": "linear", "feature_map": {"name": "favor"}}
    if where == "flat":
        config["stabilize"] = True
    else:
        config["feature_map"]["stabilize"] = True
    with pytest.raises(ConversionError) as error:
        convert_file(directory / "model.pt", tmp_path / "m.tarn", arch="fast-transformers", config=config)
    assert str(error.value) == (
        "favor's stabilize with attention_type 'linear' does not convert: fast-transformers' LinearAttention takes "
        "the stabiliser's max squared norm over the whole sequence, tarn's runtime over the heads at each step "
        "(as fast-transformers' recurrent form), a different function"
    )
    assert not (tmp_path / "m.tarn").exists()
    config = {**FT_BASE, "attention_type": "linear", "feature_map": {"name": "favor", "stabilize": False}}
    convert_file(directory / "model.pt", tmp_path / "m.tarn", arch="fast-transformers", config=config)
    assert read_tarn(tmp_path / "m.tarn").config.attention == "bidirectional"


def _favor_checkpoint():
    model = make_model(
        ModelConfig(
            d_model=64, num_layers=1, num_heads=4, d_key=16, d_value=16, d_ff=32, input_kind="frames",
            input_dim=64, input_projection=False, feature_map="favor+", feature_dim=12,
        )
    )
    return Checkpoint({k: v.numpy() for k, v in _fast_transformers_names(model.state_dict()).items()})


@pytest.mark.parametrize(
    "key, value",
    [
        ("value_dimensions", None), ("value_dimensions", {}), ("query_dimensions", None), ("query_dimensions", "16"),
        ("query_dimensions", 16.0), ("n_heads", True), ("n_heads", 0), ("n_layers", "1"), ("n_layers", -1),
        ("d_model", "64"), ("feed_forward_dimensions", None),
    ],
)
def test_config_sizes_must_be_positive_integers(key, value):
    """A null value_dimensions was a TypeError (n_heads * None), and a null
    or "16" query_dimensions one in math.sqrt (favor's default temperature)."""
    with pytest.raises(ConversionError) as error:
        fast_transformers.map_checkpoint(_favor_checkpoint(), {**FT_BASE, "feature_map": "favor", key: value})
    assert str(error.value) == f"{key} must be a positive integer, got {value!r}"


@pytest.mark.parametrize(
    "config, message",
    [
        ({"feature_map": {"name": "favor", "n_dims": 12}, "n_dims": 16}, "n_dims = 16 contradicts feature_map n_dims = 12"),
        ({"feature_map": {"name": "favor", "stabilize": False}, "stabilize": True},
         "stabilize = True contradicts feature_map stabilize = False"),
        ({"feature_map": {"name": "favor", "n_dims": 12}, "n_dims": "x"}, "n_dims = 'x' contradicts feature_map n_dims = 12"),
        ({"feature_map": "favor", "n_dims": "x"}, "feature_map n_dims must be a positive integer, got 'x'"),
        ({"feature_map": "favor", "stabilize": 1}, "feature_map stabilize must be true or false, got 1"),
        ({"feature_map": {"name": "favor", "stabilize": "x"}}, "feature_map stabilize must be true or false, got 'x'"),
        # Favor would use 0 (every feature alike); a .tarn file's 0 is 1/sqrt(d_key).
        ({"feature_map": {"name": "favor", "softmax_temp": 0}}, "feature_map softmax_temp must be a positive number, got 0"),
        ({"feature_map": {"name": "favor", "softmax_temp": -0.25}}, "feature_map softmax_temp must be a positive number, got -0.25"),
        ({"feature_map": {"name": "favor", "softmax_temp": "0.25"}}, "feature_map softmax_temp must be a positive number, got '0.25'"),
        ({"feature_map": {"name": "favor", "softmax_temp": True}}, "feature_map softmax_temp must be a positive number, got True"),
    ],
)
def test_favor_parameters_are_checked_and_may_not_contradict(config, message):
    """The flat n_dims and stabilize were set only where feature_map left
    them out, so a contradicting one was ignored unsaid, as was any value
    there ("x"); a softmax_temp of 0 was written as the default."""
    with pytest.raises(ConversionError) as error:
        fast_transformers.map_checkpoint(_favor_checkpoint(), {**FT_BASE, **config})
    assert str(error.value) == message


def test_agreeing_flat_favor_parameters_convert():
    config, _ = fast_transformers.map_checkpoint(
        _favor_checkpoint(), {**FT_BASE, "feature_map": {"name": "favor", "n_dims": 12}, "n_dims": 12, "stabilize": True}
    )
    assert (config.feature_dim, config.favor_stabilize) == (12, True)
