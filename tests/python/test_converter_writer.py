"""The .tarn writer and reader: round trip, alignment, checksum, f16, i8, audio."""

import dataclasses

from pathlib import Path

import numpy as np
import pytest
import torch
import xxhash

import converter.writer
from converter import ConversionError, convert_state_dict, read_tarn
from converter.fields import model_fields
from converter.reference import LinearTransformer, ModelConfig
from converter.shapes import expected_shapes

from converter_testing import CONFIGS, make_model
from tests.goldens import quantize_per_row

AUDIO = dict(
    sample_rate=16000,
    window_length=400,
    hop_length=160,
    fft_size=512,
    num_mel_bins=3,
    low_frequency=20.0,
    high_frequency=7600.0,
    preemphasis=0.95,
    remove_dc_offset=False,
    window="hann",
    log_floor=1e-10,
    feature_mean=[-8.5, -7.25, 1.0],
    feature_std=[2.5, 3.0, 0.125],
    warp=0.875,  # a speaker's model's (schema 1.5)
)


def audio_for(config):
    """AUDIO made to fit a frame model's frames; a token model takes none."""
    if config.input_kind != "frames":
        return None
    n = config.input_dim
    return {
        **AUDIO,
        "num_mel_bins": n,
        "feature_mean": [-8.5 + 0.25 * i for i in range(n)],
        "feature_std": [2.5 + 0.125 * i for i in range(n)],
    }


def assert_same_config(a, b):
    """Equal, floats compared as the float32 the file stores."""
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, float):
            assert np.float32(x) == np.float32(y), field.name
        else:
            assert x == y, field.name


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_expected_shapes_match_the_reference_model(name):
    """The converter's one shape table agrees with reference.py's state_dict."""
    config = CONFIGS[name]
    reference = {k: tuple(v.shape) for k, v in LinearTransformer(config).state_dict().items()}
    assert expected_shapes(config) == reference


def test_round_trip(config, tmp_path):
    model = make_model(config)
    labels = [f"label {i}" for i in range(config.output_dim)] if config.output_dim else None
    path = tmp_path / "model.tarn"
    audio = audio_for(config)
    convert_state_dict(model.state_dict(), config, path, labels=labels, audio=audio, metadata={"note": "x"})

    f = read_tarn(path)
    assert f.schema_version == (2, 1)
    assert f.file_checksum_ok
    assert_same_config(f.config, config)
    if config.feature_map == "favor+":
        assert f.config.favor_softmax_temp == 0.3  # tokens_favor_conv's, not the 1/sqrt(d_key) of a lost field
    assert list(f.tensors) == list(expected_shapes(config))
    for name, tensor in model.state_dict().items():
        assert f.tensors[name].dtype == np.float32
        np.testing.assert_array_equal(f.tensors[name], tensor.numpy(), err_msg=name)
    assert f.labels == labels
    assert f.audio == audio
    assert f.metadata["note"] == "x"
    assert f.metadata["arch"] == "tarn"
    assert {"converter_version", "date"} <= set(f.metadata)
    assert f.checksum_ok


def round_trip_differences(config, path):
    """The fields whose value reads back from the file otherwise than written
    (floats compared as the float32 the file stores)."""
    convert_state_dict(make_model(config).state_dict(), config, path)
    back = read_tarn(path).config
    return [
        f.name
        for f in dataclasses.fields(config)
        if not (np.float32(getattr(back, f.name)) == np.float32(getattr(config, f.name)) if isinstance(getattr(config, f.name), float)
                else getattr(back, f.name) == getattr(config, f.name))
    ]


def test_every_hyper_parameter_is_in_the_file(tmp_path):
    """Every field of every round-trip config reads back as written; between
    them the configs give each field a value a lost field would not read
    back as (checked by the test below)."""
    for name, config in CONFIGS.items():
        assert round_trip_differences(config, tmp_path / f"{name}.tarn") == [], name


def test_a_file_that_loses_any_field_fails_the_round_trip(tmp_path, monkeypatch):
    """The claim above, checked: with the writer and reader both skipping one
    field (as if the schema lost it), some round-trip config reads back
    otherwise, its default or what the default implies (favor_softmax_temp 0
    is 1/sqrt(d_key)). favor_softmax_temp, at that value in every config,
    was lost unseen."""
    import converter.reader

    every = model_fields()
    for field, _ in every:
        if ModelConfig.__dataclass_fields__[field].default is dataclasses.MISSING:
            continue  # the reader cannot make a config without it
        without = [item for item in every if item[0] != field]
        monkeypatch.setattr(converter.writer, "model_fields", lambda: without)
        monkeypatch.setattr(converter.reader, "model_fields", lambda: without)
        noticed = False
        for name, config in CONFIGS.items():
            try:
                noticed = round_trip_differences(config, tmp_path / f"{name}.tarn") != []
            except ConversionError:  # read back inconsistent: also noticed
                noticed = True
            if noticed:
                break
        assert noticed, field


def test_floats_read_back_as_written(tmp_path, small_config, small_state_dict):
    path = tmp_path / "m.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    config = read_tarn(path).config
    assert config.norm_eps == 1e-5 and config.attention_eps == 1e-6


def test_buffers_are_64_byte_aligned_in_the_file(config, tmp_path):
    model = make_model(config)
    path = tmp_path / "model.tarn"
    convert_state_dict(model.state_dict(), config, path)
    blob = path.read_bytes()
    assert len(blob) % 64 == 0
    f = read_tarn(path)
    for name, tensor in model.state_dict().items():
        # Found in the raw bytes, independently of the reader...
        raw = stored_bytes(name, tensor.numpy())
        offset = blob.find(raw)
        assert offset >= 0 and offset % 64 == 0, (name, offset)
        # ...and where the reader says it is.
        assert f.tensor_offsets[name] == offset, name


def test_checksum_is_xxh64_of_the_buffers_in_order(tmp_path, small_config, small_state_dict):
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    f = read_tarn(path)
    expected = xxhash.xxh64(seed=0)
    for name in expected_shapes(small_config):  # buffer i holds tensor i
        expected.update(stored_bytes(name, small_state_dict[name].numpy()))
    assert f.weight_checksum == expected.intdigest()
    assert f.checksum_ok


def pack_blocked16(w):
    """The schema's DenseBlocked16, element by element as the schema states
    it (independently of the writer's numpy reshapes)."""
    outputs, inputs = w.shape
    blocks = -(-outputs // 16)
    packed = np.zeros(blocks * 16 * inputs, dtype=w.dtype)
    for o in range(outputs):
        for i in range(inputs):
            packed[((o // 16) * inputs + i) * 16 + o % 16] = w[o, i]
    return packed


def stored_bytes(name, array):
    """A tensor's f32 bytes as a file stores them: dense weights blocked."""
    array = array.astype("<f4")
    if converter.writer.is_dense_weight(name, array):
        array = pack_blocked16(array)
    return array.tobytes()


def expected_stored(state_dict, dtype):
    """The tensors a file of `dtype` holds, as the format documents them,
    computed here: f16 rounds matrices and embeddings; i8 quantises the dense
    layers' weights with the tests' own quantiser and keeps embeddings in f16."""
    out = {}
    for name, tensor in state_dict.items():
        array = tensor.numpy()
        matrix = name.endswith(".weight") and array.ndim == 2 and ".conv." not in name
        if dtype == "i8" and matrix and "embedding" not in name:
            out[name], out[name + ".scale"] = quantize_per_row(array)
        elif dtype in ("f16", "i8") and matrix:
            out[name] = array.astype(np.float16)
        else:
            out[name] = array.astype(np.float32)
    return out


@pytest.mark.parametrize("dtype", ["f32", "f16", "i8"])
@pytest.mark.parametrize("dense_layout", ["blocked", "row-major"])
def test_dense_weights_round_trip_in_either_layout(tmp_path, small_config, small_state_dict, dtype, dense_layout):
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path, dtype=dtype, dense_layout=dense_layout)
    f = read_tarn(path)
    expected = expected_stored(small_state_dict, dtype)
    assert f.checksum_ok
    assert sorted(f.tensors) == sorted(expected)
    for name, values in expected.items():
        assert f.tensors[name].dtype == values.dtype, name
        assert np.array_equal(f.tensors[name], values), name
        blocked = dense_layout == "blocked" and converter.writer.is_dense_weight(name, values)
        assert f.layouts[name] == ("blocked" if blocked else "row-major"), name
    assert any(layout == "blocked" for layout in f.layouts.values()) == (dense_layout == "blocked")


@pytest.mark.parametrize("outputs", [1, 15, 16, 17, 33])
def test_blocked_layout_pads_rows_with_zeros(outputs):
    w = np.arange(outputs * 3, dtype=np.float32).reshape(outputs, 3) + 1
    packed = converter.writer.pack_dense(w)
    assert np.array_equal(packed, pack_blocked16(w))
    assert np.array_equal(converter.writer.unpack_dense(packed, outputs, 3), w)


def test_damaged_weights_fail_the_checksum(tmp_path, small_config, small_state_dict):
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    f = read_tarn(path)
    blob = bytearray(path.read_bytes())
    blob[f.tensor_offsets["head.bias"]] ^= 0x01
    path.write_bytes(bytes(blob))
    assert not read_tarn(path).checksum_ok


def test_file_checksum_is_xxh64_of_the_file_with_its_own_bytes_zeroed(tmp_path, small_config, small_state_dict):
    """Schema 2.1: the whole file is covered, found here independently of
    the reader (the stored value's 8 bytes, zeroed where they lie)."""
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    f = read_tarn(path)
    assert f.schema_version == (2, 1)
    assert f.file_checksum is not None and f.file_checksum_ok
    blob = path.read_bytes()
    stored = f.file_checksum.to_bytes(8, "little")
    assert blob.count(stored) == 1
    at = blob.index(stored)
    assert at % 8 == 0
    assert xxhash.xxh64(blob[:at] + bytes(8) + blob[at + 8 :], seed=0).intdigest() == f.file_checksum


@pytest.mark.parametrize("where", ["config", "metadata", "tensor record"])
def test_damage_outside_the_weights_fails_the_file_checksum(tmp_path, small_config, small_state_dict, where):
    path = tmp_path / "model.tarn"
    config = dataclasses.replace(small_config, norm_eps=3.25e-6)  # stored: not the default
    convert_state_dict(small_state_dict, config, path, metadata={"note": "a note"})
    blob = bytearray(path.read_bytes())
    needle = {"config": np.float32(3.25e-6).tobytes(), "metadata": b"a note", "tensor record": b"head.bias"}[where]
    assert blob.count(needle) == 1
    blob[blob.index(needle)] ^= 0x01
    path.write_bytes(bytes(blob))
    f = read_tarn(path)
    assert f.checksum_ok and f.file_checksum_ok is False


def without_file_checksum(path: Path, minor: int) -> None:
    """The converted file at `path` with file_checksum gone from the model's
    vtable and its schema minor set to `minor`."""
    from converter.schema_code import schema

    blob = bytearray(path.read_bytes())
    root = int.from_bytes(blob[:4], "little")
    vtable = root - int.from_bytes(blob[root : root + 4], "little", signed=True)
    slot = vtable + converter.writer.FILE_CHECKSUM_SLOT
    blob[slot : slot + 2] = bytes(2)
    version = schema().Model.GetRootAs(blob, 0).SchemaVersion()._tab.Pos
    blob[version + 2 : version + 4] = minor.to_bytes(2, "little")
    path.write_bytes(bytes(blob))


def test_a_file_without_a_file_checksum_reads(tmp_path, small_config, small_state_dict):
    """Files before schema 2.1: the field absent from the model's vtable."""
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    without_file_checksum(path, minor=0)
    f = read_tarn(path)
    assert f.file_checksum is None and f.file_checksum_ok is None and f.checksum_ok


def test_a_2_1_file_without_its_file_checksum_is_damaged(tmp_path, small_config, small_state_dict):
    """Every 2.1 file carries one (the runtime refuses one without): it was
    read as a file before 2.1, unchecked."""
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    without_file_checksum(path, minor=1)
    f = read_tarn(path)
    assert f.file_checksum is None and f.file_checksum_ok is False


def test_read_back_refuses_a_wrong_file_checksum(tmp_path, small_config, small_state_dict, monkeypatch):
    monkeypatch.setattr(converter.writer, "file_checksum", lambda data, at: 12345)
    path = tmp_path / "m.tarn"
    with pytest.raises(ConversionError, match=r"read-back check of .*m\.tarn failed: the file checksum reads back wrong for the file's bytes; the file was not written$"):
        convert_state_dict(small_state_dict, small_config, path)
    assert list(tmp_path.iterdir()) == []


def test_f16_stores_matrices_and_embeddings_only(tmp_path, small_config, small_state_dict):
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path, dtype="f16")
    f = read_tarn(path)
    half = {n for n, t in f.tensors.items() if t.dtype == np.float16}
    assert half == {
        n for n in f.tensors if n.endswith(".weight") and f.tensors[n].ndim == 2 and ".conv." not in n
    }
    assert "token_embedding.weight" in half and "head.weight" in half
    for kept in ("layers.0.conv.weight", "layers.0.attention.feature_map.omega", "layers.0.norm1.weight", "head.bias"):
        assert f.tensors[kept].dtype == np.float32, kept
    for name, tensor in small_state_dict.items():
        expected = tensor.numpy().astype(f.tensors[name].dtype)
        np.testing.assert_array_equal(f.tensors[name], expected, err_msg=name)
    assert f.checksum_ok
    convert_state_dict(small_state_dict, small_config, tmp_path / "f32.tarn")
    assert path.stat().st_size < 0.7 * (tmp_path / "f32.tarn").stat().st_size


def test_f16_overflow_is_an_error(tmp_path, small_config, small_state_dict):
    small_state_dict["head.weight"][0, 0] = 1e6
    with pytest.raises(ConversionError, match=r"head\.weight overflows float16"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype="f16")


def test_bf16_stores_matrices_and_embeddings_only(tmp_path, small_config, small_state_dict):
    """bf16 files store what f16 files store, as bfloat16 bits: those of
    torch's round-to-nearest-even (an independent rounding), ties and the
    largest finite values included."""
    weight = small_state_dict["layers.0.linear1.weight"]
    # Ties, both ways: 1 + 2^-8 rounds down to 1 (even), 1 + 3 * 2^-8 up.
    weight[0, :4] = torch.tensor([1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8), 3.0e38])
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path, dtype="bf16")
    f = read_tarn(path)
    bf16 = {n for n, t in f.tensors.items() if t.dtype == np.uint16}
    assert bf16 == {n for n in f.tensors if n.endswith(".weight") and f.tensors[n].ndim == 2 and ".conv." not in n}
    assert "token_embedding.weight" in bf16 and "head.weight" in bf16
    for kept in ("layers.0.conv.weight", "layers.0.attention.feature_map.omega", "layers.0.norm1.weight", "head.bias"):
        assert f.tensors[kept].dtype == np.float32, kept
    for name, tensor in small_state_dict.items():
        if name in bf16:
            expected = tensor.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        else:
            expected = tensor.numpy()
        np.testing.assert_array_equal(f.tensors[name], expected, err_msg=name)
    values = converter.writer.from_bf16(f.tensors["layers.0.linear1.weight"][0, :4])
    np.testing.assert_array_equal(values[:3], np.float32([1, 1 + 2.0**-6, -1]))
    assert f.checksum_ok
    convert_state_dict(small_state_dict, small_config, tmp_path / "f32.tarn")
    assert path.stat().st_size < 0.7 * (tmp_path / "f32.tarn").stat().st_size


def test_bf16_overflow_is_an_error(tmp_path, small_config, small_state_dict):
    small_state_dict["head.weight"][0, 0] = 3.4e38  # rounds up past bf16's largest, 3.39e38
    with pytest.raises(ConversionError, match=r"head\.weight overflows bf16"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype="bf16")


@pytest.mark.parametrize(
    "dtype, scale, narrow, kind",
    [
        ("f16", 1e-8, torch.float16, "float16"),  # the reviewer's embedding, below f16's 6e-8
        ("bf16", 1e-41, torch.bfloat16, "bf16"),  # f32 subnormals, below bf16's 9.2e-41
        ("i8", 1e-8, torch.float16, "float16"),  # i8 files keep embeddings in f16
    ],
)
def test_values_flushed_to_zero_are_an_error(tmp_path, small_config, small_state_dict, dtype, scale, narrow, kind):
    embedding = small_state_dict["token_embedding.weight"] * scale
    small_state_dict["token_embedding.weight"] = embedding
    nonzero = int((embedding != 0).sum())
    lost = int(((embedding != 0) & (embedding.to(narrow) == 0)).sum())
    assert lost > nonzero / 100  # torch's own rounding flushes most of them
    with pytest.raises(ConversionError) as error:
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype=dtype)
    message = str(error.value)
    assert message.startswith(f"tensor token_embedding.weight underflows {kind}: {lost} of its {nonzero} nonzero values")
    assert f"max |x| = {float(embedding.abs().max()):g}" in message and message.endswith("use --dtype f32")
    assert "\n" not in message
    assert not (tmp_path / "m.tarn").exists()


def test_values_flushed_to_zero_that_hold_the_norm_are_an_error(tmp_path, small_config, small_state_dict):
    """Under 1 % of the values, but more than 1e-3 of the norm: a matrix at
    f16's subnormal scale (1e-6 is 17 steps of 2^-24) with 10 values below
    half a step, 2^-25."""
    weight = torch.full((48, 32), 1e-6)
    weight.view(-1)[::150] = 2.5e-8  # 11 values
    small_state_dict["layers.0.linear1.weight"] = weight
    w = weight.double().numpy()
    lost = np.abs(w) < 2.0**-25
    share = np.sqrt((w[lost] ** 2).sum() / (w**2).sum())
    assert lost.sum() == 11 and 11 / w.size < 0.01 and share > 1e-3
    assert int((weight.half() == 0).sum()) == 11  # torch's rounding agrees
    with pytest.raises(ConversionError, match=rf"layers\.0\.linear1\.weight underflows float16: 11 of its 1536 nonzero values \(0\.716 %; {share:.3g} of its norm\)"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype="f16")


@pytest.mark.parametrize("dtype, tiny, narrow", [("f16", 1e-9, torch.float16), ("bf16", 1e-42, torch.bfloat16)])
def test_a_few_tiny_weights_flushed_to_zero_are_not_flagged(tmp_path, small_config, small_state_dict, dtype, tiny, narrow):
    """3 of an embedding's 1,280 values (0.23 %) below the dtype's least:
    they become 0 as torch's rounding makes them, and the file is written."""
    embedding = small_state_dict["token_embedding.weight"]
    embedding.view(-1)[[7, 500, 1100]] = torch.tensor([tiny, -tiny, tiny])
    assert int(((embedding != 0) & (embedding.to(narrow) == 0)).sum()) == 3
    path = tmp_path / "m.tarn"
    convert_state_dict(small_state_dict, small_config, path, dtype=dtype)
    rounded = embedding.to(narrow)
    expected = rounded.numpy() if narrow == torch.float16 else rounded.view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(read_tarn(path).tensors["token_embedding.weight"], expected)
    assert not rounded.float().view(-1)[[7, 500, 1100]].any()


def test_i8_stores_dense_weights_with_a_scale_per_row(tmp_path, small_config, small_state_dict):
    small_state_dict["layers.0.linear1.weight"][5] = 0  # an all-zero row
    path = tmp_path / "model.tarn"
    convert_state_dict(small_state_dict, small_config, path, dtype="i8")
    f = read_tarn(path)
    int8 = {n for n, t in f.tensors.items() if t.dtype == np.int8}
    assert int8 == {n for n in small_state_dict if n.endswith(converter.writer.DENSE_WEIGHTS)}
    assert "layers.0.attention.query_projection.weight" in int8 and "head.weight" in int8
    assert f.tensors["token_embedding.weight"].dtype == np.float16
    for kept in ("layers.0.conv.weight", "layers.0.attention.feature_map.omega", "layers.0.norm1.weight", "head.bias"):
        assert f.tensors[kept].dtype == np.float32, kept
    for name in int8:
        w, q, scale = small_state_dict[name].numpy(), f.tensors[name].astype(np.float32), f.tensors[name + ".scale"]
        assert scale.dtype == np.float32 and scale.shape == (w.shape[0],)
        assert np.abs(q).max() <= 127
        # each row's largest weight maps to +-127; every weight is within half a step
        np.testing.assert_allclose(scale, np.abs(w).max(axis=1) / 127, rtol=1e-6, err_msg=name)
        assert np.all(np.abs(w - q * scale[:, None]) <= scale[:, None] / 2 * (1 + 1e-5)), name
        np.testing.assert_array_equal(q * scale[:, None], converter.writer.stored_values(name, w, "i8"))
    assert f.tensors["layers.0.linear1.weight.scale"][5] == 0
    assert not f.tensors["layers.0.linear1.weight"][5].any()
    assert f.checksum_ok
    convert_state_dict(small_state_dict, small_config, tmp_path / "f32.tarn")
    assert path.stat().st_size < 0.45 * (tmp_path / "f32.tarn").stat().st_size


def test_i8_refuses_non_finite_weights(tmp_path, small_config, small_state_dict):
    small_state_dict["layers.1.linear2.weight"][0, 3] = float("inf")
    with pytest.raises(ConversionError, match=r"layers\.1\.linear2\.weight holds NaN or infinite"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype="i8")


def test_nan_weights_are_an_error(tmp_path, small_config, small_state_dict):
    small_state_dict["layers.1.linear2.bias"][3] = float("nan")
    with pytest.raises(ConversionError, match=r"layers\.1\.linear2\.bias holds NaN"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")


def test_wrong_label_count_is_an_error(tmp_path, small_config, small_state_dict):
    with pytest.raises(ConversionError, match="3 labels given, but the model's output_dim is 40"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", labels=["a", "b", "c"])


def test_bad_audio_recipe_is_an_error(tmp_path, small_config, small_state_dict):
    with pytest.raises(ConversionError, match="feature_mean has 2 values, expected num_mel_bins = 3"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio={**AUDIO, "feature_mean": [1.0, 2.0]})
    with pytest.raises(ConversionError, match="unknown audio front-end keys"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio={**AUDIO, "hop": 1})
    with pytest.raises(ConversionError, match="window must be one of"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio={**AUDIO, "window": "blackman"})
    with pytest.raises(ConversionError, match=r"audio warp 3 is outside \[0.5, 2\]"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio={**AUDIO, "warp": 3.0})


def test_audio_must_fit_the_models_frames(tmp_path, small_config, small_state_dict):
    """The recognizer refuses both, so neither is written."""
    with pytest.raises(ConversionError, match="an audio front end needs a model that takes frames"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio=AUDIO)
    config = CONFIGS["frames_stacked_prenorm"]
    with pytest.raises(ConversionError, match="audio num_mel_bins 3 differs from the model's input_dim 10"):
        convert_state_dict(make_model(config).state_dict(), config, tmp_path / "m.tarn", audio=AUDIO)
    assert not (tmp_path / "m.tarn").exists()


@pytest.mark.parametrize(
    "rate, message",
    [
        (0, "audio sample_rate 0 is not supported"),
        (8000, "audio mel range low_frequency 20 Hz to high_frequency 7600 Hz is not supported: it must satisfy "
               "0 <= low < high <= sample_rate / 2 = 4000 Hz"),
    ],
)
def test_unsupported_sample_rate_is_an_error(tmp_path, small_config, small_state_dict, rate, message):
    with pytest.raises(ConversionError, match=message):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio={**AUDIO, "sample_rate": rate})
    assert not (tmp_path / "m.tarn").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"high_frequency": None}, r"high_frequency 0 Hz is not supported.*\(give high_frequency\)"),
        ({"log_floor": None}, r"log_floor 0 is not supported"),
        ({"log_floor": 0.0}, r"log_floor 0 is not supported"),
        ({"fft_size": 256}, r"fft_size 256 is not supported: it must be even, at least window_length \(400\)"),
        ({"fft_size": 401, "window_length": 400}, r"fft_size 401 is not supported"),
        ({"hop_length": 0}, r"hop_length 0 samples is outside \[1, 1048576\]"),
        ({"preemphasis": 1.5}, r"preemphasis 1.5 is outside \[0, 1\]"),
        ({"feature_std": None}, r"feature_mean and feature_std must both be present or both absent"),
        ({"feature_mean": 0.5}, r"feature_mean must be a list of num_mel_bins numbers, got 0.5"),
        ({"feature_std": [2.5, 0.0, 1.0]}, r"feature_std\[1\] is 0; it must be positive"),
        ({"sample_rate": 8000, "high_frequency": 4000.0},
         r"warp 0.875 needs sample_rate / 2 above 4800 Hz; this recipe's is 4000 Hz"),
        # Checked as the float32 the file holds:
        ({"log_floor": 1e-50}, r"log_floor 0 is not supported"),
        ({"log_floor": 1e39}, r"log_floor must be a finite float32 number"),
        ({"low_frequency": 100.000001, "high_frequency": 100.000002}, r"mel range low_frequency 100 Hz to high_frequency 100 Hz"),
    ],
)
def test_audio_recipes_the_runtime_refuses_are_not_written(tmp_path, small_config, small_state_dict, change, message):
    """Each of these was written, then loaded, and refused only when a
    recognizer was made from it."""
    audio = {**AUDIO, **change}
    audio = {k: v for k, v in audio.items() if v is not None}
    with pytest.raises(ConversionError, match=message):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", audio=audio)
    assert not (tmp_path / "m.tarn").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_layers": 0}, r"num_layers = 0 is outside \[1, 1024\]"),
        ({"num_layers": 2.0}, r"num_layers must be a non-negative integer, got 2.0"),
        ({"d_ff": 70000}, r"d_ff = 70000 is outside \[1, 65536\]"),
        ({"norm_eps": 0.0}, r"norm_eps must be positive"),
        ({"attention_eps": -1.0}, r"attention_eps >= 0"),
        ({"favor_softmax_temp": -0.5}, r"favor_softmax_temp must be positive"),
        ({"conv_kernel": 2000}, r"conv_kernel = 2000 is more than 1024"),
        ({"norm_eps": float("nan")}, r"norm_eps must be a finite float32 number"),
        ({"vocab_size": 2**24 + 1}, r"vocab_size = 16777217 is more than 16777216"),
        ({"output_dim": 2**24 + 1}, r"output_dim = 16777217 is more than 16777216"),
        ({"feature_dim": 131072}, r"feature_dim = 131072 is more than 65536"),
        ({"num_heads": 65536, "d_value": 1000}, r"the attention state, num_heads x feature_dim x d_value = 1572864000"),
        # Checked as the float32 the file holds:
        ({"norm_eps": 1e-46}, r"norm_eps must be positive"),
        ({"favor_softmax_temp": 1e-46}, r"favor_softmax_temp must be positive"),
        ({"embedding_scale": 1e39}, r"embedding_scale must be a finite float32 number"),
        ({"embedding_scale": 10**400}, r"embedding_scale must be a finite float32 number"),  # not even a float64
    ],
)
def test_configs_the_runtime_refuses_are_not_written(tmp_path, small_config, small_state_dict, change, message):
    config = {**small_config.to_dict(), **change}
    with pytest.raises(ConversionError, match=message):
        convert_state_dict(small_state_dict, config, tmp_path / "m.tarn")
    assert not (tmp_path / "m.tarn").exists()


def test_fields_a_model_does_not_use_are_not_checked(tmp_path):
    """As the runtime: a frame model's vocab_size, a model's max_positions
    without learned positions, a token model's input_dim."""
    config = CONFIGS["frames_stacked_prenorm"]
    changed = dataclasses.replace(config, vocab_size=2**24 + 1, max_positions=2**24 + 1)
    convert_state_dict(make_model(config).state_dict(), changed, tmp_path / "frames.tarn")
    config = CONFIGS["tokens_favor_conv"]
    changed = dataclasses.replace(config, input_dim=2**16 + 1, stack_hop=0)
    convert_state_dict(make_model(config).state_dict(), changed, tmp_path / "tokens.tarn")
    assert read_tarn(tmp_path / "tokens.tarn").config.stack_hop == 0


def test_output_paths(tmp_path, small_config, small_state_dict):
    for path in (Path("."), Path("")):
        with pytest.raises(ConversionError, match="it names no file"):
            convert_state_dict(small_state_dict, small_config, path)
    with pytest.raises(ConversionError, match="Is a directory"):
        convert_state_dict(small_state_dict, small_config, tmp_path)
    assert not list(tmp_path.parent.glob(".tarn-*.tmp"))
    # A long name of its own is fine: the temporary file's name is short.
    long_name = tmp_path / ("m" * 245 + ".tarn")
    convert_state_dict(small_state_dict, small_config, long_name)
    assert long_name.exists() and [p.name for p in tmp_path.iterdir()] == [long_name.name]


def test_a_file_whose_weights_do_not_read_back_as_written_is_not_written(tmp_path, small_config, small_state_dict, monkeypatch):
    """The read-back check: a writer fault (here a packing that reverses each
    dense weight's rows) gives a file of other values; it is refused, and
    the file already at the path stays as it was."""
    path = tmp_path / "m.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    before = path.read_bytes()
    pack = converter.writer.pack_dense
    monkeypatch.setattr(converter.writer, "pack_dense", lambda w: pack(w[::-1]))
    first_dense = "layers.0.attention.query_projection.weight"  # after the embedding, in the schema's order
    with pytest.raises(ConversionError) as error:
        convert_state_dict(small_state_dict, small_config, path, dtype="f16")
    assert str(error.value) == (
        f"read-back check of {path} failed: tensor {first_dense}'s values read back differ from those written; "
        "the file was not written"
    )
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["m.tarn"]


def test_a_config_that_does_not_read_back_as_written_is_not_written(tmp_path, small_config, small_state_dict, monkeypatch):
    check_scalar = converter.writer.check_scalar
    doubled = lambda where, kind, value: check_scalar(where, kind, 2 * value if where == "attention_eps" else value)  # noqa: E731
    monkeypatch.setattr(converter.writer, "check_scalar", doubled)
    assert small_config.attention_eps == 1e-6
    with pytest.raises(ConversionError, match=r"^read-back check of .*m\.tarn failed: config attention_eps reads back as 2e-06, written 1e-06; the file was not written$"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")
    assert list(tmp_path.iterdir()) == []


def test_a_float_field_given_an_int_passes_the_read_back(tmp_path, small_config, small_state_dict):
    """The file holds float32: 3 reads back as 3.0, the same value."""
    config = {**small_config.to_dict(), "embedding_scale": 3, "favor_softmax_temp": np.float64(0.25)}
    convert_state_dict(small_state_dict, config, tmp_path / "m.tarn")
    f = read_tarn(tmp_path / "m.tarn")
    assert f.config.embedding_scale == 3.0 and f.config.favor_softmax_temp == 0.25


def test_newer_major_version_is_refused(tmp_path, small_config, small_state_dict, monkeypatch):
    monkeypatch.setattr(converter.writer, "SCHEMA_VERSION", (3, 0))
    path = tmp_path / "m.tarn"
    # The writer's read-back refuses to leave a file its own reader refuses,
    with pytest.raises(ConversionError, match=r"read-back check of .*m\.tarn failed: schema version 3\.0; this converter reads majors 1 to 2; the file was not written$"):
        convert_state_dict(small_state_dict, small_config, path)
    assert list(tmp_path.iterdir()) == []
    # and the reader refuses such a file however it was made.
    tensors = {name: t.numpy() for name, t in small_state_dict.items()}
    path.write_bytes(converter.writer._build(small_config, tensors, None, None, {})[0])
    with pytest.raises(ConversionError, match=r"schema version 3\.0; this converter reads majors 1 to 2"):
        read_tarn(path)


def test_major_one_files_are_read(tmp_path, small_config, small_state_dict, monkeypatch):
    """Files the converter wrote before 2.0 (the same bytes, version 1.x)."""
    monkeypatch.setattr(converter.writer, "SCHEMA_VERSION", (1, 5))
    path = tmp_path / "m.tarn"
    convert_state_dict(small_state_dict, small_config, path)
    f = read_tarn(path)
    assert f.schema_version == (1, 5) and f.checksum_ok


def test_not_a_tarn_file_is_refused(tmp_path):
    path = tmp_path / "x.tarn"
    path.write_bytes(b"\0" * 64)
    with pytest.raises(ConversionError, match="not a .tarn file"):
        read_tarn(path)


def test_write_is_atomic_and_leaves_no_temporary(tmp_path, small_config, small_state_dict):
    convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")
    assert [p.name for p in tmp_path.iterdir()] == ["m.tarn"]


def test_reference_model_runs_from_the_file(tmp_path, small_config, small_model):
    """What the reader gives back is a working model: same outputs."""
    path = tmp_path / "m.tarn"
    convert_state_dict(small_model.state_dict(), small_config, path)
    f = read_tarn(path)
    again = LinearTransformer(f.config).eval()
    again.load_state_dict({k: torch.from_numpy(v) for k, v in f.tensors.items()})
    tokens = torch.arange(12) % small_config.vocab_size
    with torch.no_grad():
        torch.testing.assert_close(again(tokens[None]), small_model(tokens[None]), rtol=0, atol=0)


def test_labels_the_runtime_could_not_tell_apart_are_an_error(tmp_path, small_config, small_state_dict):
    labels = [f"l{i}" for i in range(small_config.output_dim)]
    labels[3] = labels[7] = "<blank>"
    with pytest.raises(ConversionError, match="labels 3 and 7 are both '<blank>'"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", labels=labels)
    labels[3] = labels[7] = "<pad>"  # a filler may repeat
    convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", labels=labels)
    labels[0] = "\udcff"  # a lone surrogate: not text the file can hold
    with pytest.raises(ConversionError, match="label 0"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", labels=labels)
    with pytest.raises(ConversionError, match="metadata 'note'"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", metadata={"note": "\udcff"})
    # The runtime refuses metadata holding a NUL (C strings end there).
    with pytest.raises(ConversionError, match="metadata 'note': its value holds a NUL"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", metadata={"note": "a\0b"})
    with pytest.raises(ConversionError, match="its key holds a NUL"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", metadata={"no\0te": "x"})
    labels[0] = "a\0b"  # and labels, which become transcripts
    with pytest.raises(ConversionError, match=r"label 0 \('a\\x00b'\) holds a NUL"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", labels=labels)


def test_conversions_in_one_process_write_their_own_files(tmp_path, small_config, small_state_dict):
    """Two conversions at once into one directory, each its own temporary
    (one name per process was shared: one file got the other's weights)."""
    import threading

    checksums = {}

    def convert(dtype):
        checksums[dtype] = convert_state_dict(small_state_dict, small_config, tmp_path / f"m_{dtype}.tarn", dtype=dtype)

    threads = [threading.Thread(target=convert, args=(dtype,)) for dtype in ("f32", "f16", "bf16", "i8")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_bf16.tarn", "m_f16.tarn", "m_f32.tarn", "m_i8.tarn"]
    for dtype, checksum in checksums.items():
        assert read_tarn(tmp_path / f"m_{dtype}.tarn").weight_checksum == checksum.weight_checksum


# -- what no .tarn file can hold -------------------------------------------------


def test_a_model_past_the_flatbuffer_limit_is_refused_before_building(tmp_path, monkeypatch):
    """A FlatBuffer addresses 2 GiB: weights under it but labels that take
    the file past it are refused with a message, not the builder's
    BuilderSizeError traceback (the size check counted the weights only).
    Scaled down: the builder's cap lowered to 512 KiB."""
    import flatbuffers.builder

    monkeypatch.setattr(flatbuffers.builder.Builder, "MAX_BUFFER_SIZE", 2**19)
    config = dataclasses.replace(CONFIGS["tokens_concat_position_mixture"], output_dim=3008, output_distribution="none", output_levels=0)
    tensors = {name: t.numpy() for name, t in make_model(config).state_dict().items()}
    # f32 bytes as stored: dense weights in blocks of 16 rows
    weight_bytes = sum(-(-a.shape[0] // 16) * 16 * a[0].nbytes if converter.writer.is_dense_weight(name, a) else a.nbytes
                       for name, a in tensors.items())
    assert weight_bytes < 2**19 - 2**16
    labels = [f"a label of some sixty-four characters, the most of any, no. {i:04d}" for i in range(3008)]
    assert weight_bytes + sum(map(len, labels)) > 2**19
    with pytest.raises(ConversionError) as error:
        converter.writer.write_tarn(tmp_path / "m.tarn", config, tensors, labels=labels)
    message = str(error.value)
    assert message.startswith("the model is too large for one .tarn file: it needs about ")
    assert f"({weight_bytes} of weights, the rest labels, metadata and tensor records)" in message
    assert "one file (a FlatBuffer) holds at most 524288; --dtype f16, bf16 or i8" in message
    assert list(tmp_path.iterdir()) == []
    converter.writer.write_tarn(tmp_path / "m.tarn", config, tensors)  # without the labels it fits


def test_a_builder_that_runs_out_of_room_is_a_conversion_error(tmp_path, monkeypatch, small_config, small_state_dict):
    """Where the size estimate falls short, the builder's own refusal says
    the same, as a ConversionError."""
    import flatbuffers.builder

    monkeypatch.setattr(flatbuffers.builder.Builder, "MAX_BUFFER_SIZE", 2**14)
    monkeypatch.setattr(converter.writer, "_size_estimate", lambda *args: 2**12)
    with pytest.raises(ConversionError, match=r"^the model is too large for one \.tarn file: it needs more than 16384 bytes \(\d+ of weights"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn", dtype="i8")
    assert list(tmp_path.iterdir()) == []


def test_a_file_past_the_runtimes_limit_is_refused(tmp_path, monkeypatch, small_config, small_state_dict):
    """The runtime reads files under 2^31 - 1 bytes, a byte under the
    builder's own limit: a file the builder makes past it is refused too.
    Scaled down: the file limit lowered to 4 KiB, the estimate fooled."""
    monkeypatch.setattr(converter.writer, "MAX_FILE_SIZE", 2**12)
    monkeypatch.setattr(converter.writer, "_size_estimate", lambda *args: 2**10)
    with pytest.raises(ConversionError, match=r"^the model is too large for one \.tarn file: it needs \d+ bytes .* holds at most 4096"):
        convert_state_dict(small_state_dict, small_config, tmp_path / "m.tarn")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i8"])
def test_float64_values_beyond_float32_are_refused_by_name(tmp_path, small_config, small_state_dict, dtype):
    """write_tarn given float64 arrays: a finite 1e300 fits no dtype of the
    file. It said `overflows float32 ...; use --dtype f32` with --dtype f32
    already given, and i8 quantised an infinite row scale."""
    import warnings

    tensors = {name: t.numpy().astype(np.float64) for name, t in small_state_dict.items()}
    tensors["layers.0.linear1.weight"][3, 1] = -1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way
        with pytest.raises(ConversionError) as error:
            converter.writer.write_tarn(tmp_path / "m.tarn", small_config, tensors, dtype=dtype)
    assert str(error.value) == (
        "tensor layers.0.linear1.weight holds values beyond float32's range (max |x| = 1e+300, float32's largest is "
        "3.40282e+38); a .tarn file holds weights in float32 at most"
    )
