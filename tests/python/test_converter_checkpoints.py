"""Reading checkpoints: PyTorch files (safely) and .safetensors (without torch)."""

import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
import zlib
from collections import OrderedDict

import numpy as np
import pytest
import torch

import converter.checkpoints as checkpoints
from converter import ConversionError, load_checkpoint, read_safetensors

from converter_testing import REPO_ROOT, write_safetensors


def assert_same_tensors(loaded: dict, state_dict: dict):
    assert sorted(loaded) == sorted(state_dict)
    for name, tensor in state_dict.items():
        np.testing.assert_array_equal(loaded[name], tensor.numpy(), err_msg=name)


# -- PyTorch files -------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".pt", ".pth", ".ckpt"])
def test_raw_state_dict(tmp_path, small_state_dict, suffix):
    path = tmp_path / f"model{suffix}"
    torch.save(small_state_dict, path)
    checkpoint = load_checkpoint(path)
    assert_same_tensors(checkpoint.tensors, small_state_dict)
    assert checkpoint.config is None


@pytest.mark.parametrize("key", ["state_dict", "model", "model_state_dict"])
def test_state_dict_inside_a_training_checkpoint(tmp_path, small_state_dict, small_config, key):
    path = tmp_path / "model.ckpt"
    torch.save({key: small_state_dict, "epoch": 3, "config": small_config.to_dict()}, path)
    checkpoint = load_checkpoint(path)
    assert_same_tensors(checkpoint.tensors, small_state_dict)
    assert checkpoint.config == small_config.to_dict()


def test_lightning_prefix_is_stripped(tmp_path, small_state_dict):
    path = tmp_path / "lightning.ckpt"
    prefixed = OrderedDict((f"model.{k}", v) for k, v in small_state_dict.items())
    torch.save({"state_dict": prefixed, "global_step": 10}, path)
    assert_same_tensors(load_checkpoint(path).tensors, small_state_dict)


@pytest.mark.parametrize("prefix", ["_orig_mod.", "module._orig_mod.", "_orig_mod.module."])
def test_torch_compile_prefix_is_stripped(tmp_path, small_state_dict, prefix):
    """torch.compile's OptimizedModule names its model _orig_mod, alone or
    with (Distributed)DataParallel's module."""
    path = tmp_path / "compiled.pt"
    torch.save({f"{prefix}{k}": v for k, v in small_state_dict.items()}, path)
    assert_same_tensors(load_checkpoint(path).tensors, small_state_dict)


@pytest.mark.parametrize("prefix", ["module.", "model.", "_orig_mod."])
def test_safetensors_wrapper_prefix_is_stripped(tmp_path, small_state_dict, prefix):
    """As a .pt's: they were stripped from .pt checkpoints only."""
    path = tmp_path / "wrapped.safetensors"
    write_safetensors(path, {f"{prefix}{k}": v.numpy() for k, v in small_state_dict.items()})
    assert_same_tensors(load_checkpoint(path).tensors, small_state_dict)


def test_a_prefix_that_not_every_name_has_is_kept(tmp_path, small_state_dict):
    path = tmp_path / "model.safetensors"
    arrays = {k: v.numpy() for k, v in small_state_dict.items()}
    arrays["module.extra"] = arrays["head.bias"]
    write_safetensors(path, arrays)
    assert sorted(load_checkpoint(path).tensors) == sorted(arrays)


# -- which state dict ---------------------------------------------------------------


@pytest.mark.parametrize(
    "entries, key",
    [
        ({"state_dict": "model", "epoch": 3}, "state_dict"),
        ({"model_state": "model", "optimizer_state": "optimizer", "iteration": 5}, "model_state"),
        ({"weights": "model", "step": 1}, "weights"),  # the one entry that holds tensors
        ({"fc.weight": None}, None),  # a raw state dict
    ],
)
def test_the_state_dict_used_is_named(tmp_path, small_state_dict, entries, key):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1, momentum=0.9).state_dict()
    values = {"model": small_state_dict, "optimizer": optimizer}
    obj = small_state_dict if key is None else {k: values.get(v, v) for k, v in entries.items()}
    torch.save(obj, tmp_path / "m.pt")
    checkpoint = load_checkpoint(tmp_path / "m.pt")
    assert checkpoint.state_dict_key == key
    assert_same_tensors(checkpoint.tensors, small_state_dict)


@pytest.mark.parametrize(
    "ema_key, names",
    [
        ("state_dict_ema", "'state_dict' (41 tensors), 'state_dict_ema' (41 tensors)"),  # timm's
        ("model_ema", "'state_dict' (41 tensors), 'model_ema' (41 tensors)"),
    ],
)
def test_several_state_dicts_are_refused_until_one_is_named(tmp_path, small_state_dict, ema_key, names):
    """An EMA copy beside the model's weights was dropped unsaid; the two
    differ, and which to convert is the user's choice."""
    ema = {k: v * 0.5 for k, v in small_state_dict.items()}
    path = tmp_path / "m.pt"
    torch.save({"state_dict": small_state_dict, ema_key: ema, "epoch": 3}, path)
    assert len(small_state_dict) == 41
    with pytest.raises(ConversionError) as error:
        load_checkpoint(path)
    assert str(error.value) == (
        f"{path} holds several state dicts: {names}; choose the one to convert with --state-dict-key KEY"
    )
    for key, expected in (("state_dict", small_state_dict), (ema_key, ema)):
        checkpoint = load_checkpoint(path, state_dict_key=key)
        assert checkpoint.state_dict_key == key
        assert_same_tensors(checkpoint.tensors, expected)


def test_a_state_dict_key_that_is_not_there_is_refused(tmp_path, small_state_dict):
    path = tmp_path / "m.pt"
    torch.save({"state_dict": small_state_dict, "epoch": 3}, path)
    with pytest.raises(ConversionError, match=r"m\.pt: no entry 'ema' \(--state-dict-key\); the entries that hold tensors: 'state_dict'$"):
        load_checkpoint(path, state_dict_key="ema")
    with pytest.raises(ConversionError, match=r"m\.pt: entry 'epoch' is a int, not a state dict$"):
        load_checkpoint(path, state_dict_key="epoch")
    write_safetensors(tmp_path / "m.safetensors", {"w": np.zeros(2, dtype=np.float32)})
    with pytest.raises(ConversionError, match="a .safetensors file holds one set of tensors; --state-dict-key is for PyTorch checkpoints"):
        load_checkpoint(tmp_path / "m.safetensors", state_dict_key="state_dict")


def test_a_state_dict_entry_that_is_not_all_tensors_is_named(tmp_path, small_state_dict):
    path = tmp_path / "m.pt"
    torch.save({"state_dict": {**small_state_dict, "step": 3}, "epoch": 3}, path)
    with pytest.raises(ConversionError, match=r"m\.pt, entry 'state_dict': state dict entries that are not tensors: step "):
        load_checkpoint(path)


def test_bfloat16_and_float64_become_float32_and_float16_stays(tmp_path):
    path = tmp_path / "mixed.pt"
    torch.save({"a": torch.tensor([1.5, -2.0], dtype=torch.bfloat16), "b": torch.tensor([0.1], dtype=torch.float64), "c": torch.ones(2, dtype=torch.float16)}, path)
    tensors = load_checkpoint(path).tensors
    assert tensors["a"].dtype == np.float32 and tensors["a"].tolist() == [1.5, -2.0]
    assert tensors["b"].dtype == np.float32
    assert tensors["c"].dtype == np.float16


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_float64_beyond_float32_is_refused_by_name(tmp_path, small_state_dict, suffix):
    """A finite float64 1e300 became inf with a numpy warning, then `holds
    NaN or infinite values`."""
    import warnings

    state = {k: v.double() for k, v in small_state_dict.items()}
    state["head.bias"][0] = 1e300
    path = tmp_path / f"f64{suffix}"
    if suffix == ".pt":
        torch.save(state, path)
    else:
        body = b"".join(v.numpy().astype("<f8").tobytes() for v in state.values())
        header, offset = {}, 0
        for name, tensor in state.items():
            header[name] = {"dtype": "F64", "shape": list(tensor.shape), "data_offsets": [offset, offset + 8 * tensor.numel()]}
            offset += 8 * tensor.numel()
        _raw_safetensors(path, header, body)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConversionError) as error:
            load_checkpoint(path)
    assert str(error.value) == (
        f"{path}: tensor head.bias: float64 values beyond float32's range (max |x| = 1e+300, float32's largest is "
        "3.40282e+38); tarn holds weights in float32 at most"
    )


def test_float64_within_float32_is_narrowed(tmp_path):
    largest = float(np.finfo(np.float32).max)
    path = tmp_path / "f64.pt"
    torch.save({"w": torch.tensor([largest, -largest, 1e-50, float("nan")], dtype=torch.float64)}, path)
    w = load_checkpoint(path).tensors["w"]
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w, np.float32([largest, -largest, 0, np.nan]))


def test_non_tensor_entries_are_named(tmp_path):
    path = tmp_path / "odd.pt"
    torch.save({"w": torch.zeros(2), "step": 5, "note": "x"}, path)
    with pytest.raises(ConversionError, match="not tensors: note, step"):
        load_checkpoint(path)


def test_unknown_suffix_and_missing_file(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"x")
    with pytest.raises(ConversionError, match="unknown checkpoint type '.onnx'"):
        load_checkpoint(tmp_path / "model.onnx")
    with pytest.raises(ConversionError, match="no such checkpoint file"):
        load_checkpoint(tmp_path / "absent.pt")


def test_damaged_torch_file(tmp_path):
    path = tmp_path / "broken.pt"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConversionError, match="cannot read .*broken.pt"):
        load_checkpoint(path)


def _png() -> bytes:
    """A 1x1 grey PNG, chunk by chunk (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", r"empty file \(0 bytes\), not a PyTorch checkpoint"),
        (_png(), r"not a PyTorch checkpoint \(neither a zip archive nor a pickle; it begins b'\\x89PNG"),
        (b"step,loss\n1,0.5\n", r"not a PyTorch checkpoint \(neither a zip archive nor a pickle; it begins b'step,los'"),
        (b"\x80\x02", r"cannot read .*as a PyTorch checkpoint: the file ends early"),
    ],
    ids=["empty", "png", "csv", "truncated_pickle"],
)
def test_a_file_that_is_not_a_checkpoint_says_what_it_is_not(tmp_path, content, says):
    path = tmp_path / "model.pt"
    path.write_bytes(content)
    with pytest.raises(ConversionError, match=says) as error:
        load_checkpoint(path)
    message = str(error.value)
    assert "\n" not in message and "legacy" not in message
    assert not message.rstrip().endswith(":")


def test_torchscript_archive_is_refused(tmp_path):
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(ConversionError, match="TorchScript archive"):
        load_checkpoint(path)


class _Payload:
    """Unpickling this calls os.system, creating the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _save_malicious(path, marker, legacy=False):
    torch.save({"weight": torch.zeros(2), "payload": _Payload(marker)}, path, _use_new_zipfile_serialization=not legacy)
    return path


@pytest.mark.parametrize("weights_only", [True, False], ids=["weights_only", "own_zip_reader"])
def test_malicious_pickle_is_refused_without_running(tmp_path, monkeypatch, weights_only):
    """Both loaders (torch's weights_only, and ours for torch versions
    without it) refuse a pickle that would call os.system, and name it."""
    marker = tmp_path / "PWNED"
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: weights_only)
    path = _save_malicious(tmp_path / "evil.pt", marker)
    with pytest.raises(ConversionError) as error:
        load_checkpoint(path)
    assert f"refused to load {path}: its pickle references posix.system" in str(error.value)
    assert not marker.exists()


@pytest.mark.parametrize("weights_only", [True, False], ids=["weights_only", "own_legacy_reader"])
def test_malicious_legacy_format_pickle_is_refused(tmp_path, monkeypatch, weights_only):
    marker = tmp_path / "PWNED"
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: weights_only)
    path = _save_malicious(tmp_path / "evil_legacy.pt", marker, legacy=True)
    with pytest.raises(ConversionError, match="its pickle references posix.system"):
        load_checkpoint(path)
    assert not marker.exists()


# What torch.save wrote before torch 1.6 (and writes with
# _use_new_zipfile_serialization=False): pickles and raw storages, no zip.


def _save_legacy(obj, path):
    torch.save(obj, path, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(path)
    return path


@pytest.mark.parametrize("weights_only", [True, False], ids=["torch_then_own_reader", "own_reader"])
@pytest.mark.parametrize("layout", ["config_with_floats", "their_training_checkpoint", "raw"])
def test_legacy_format_checkpoints_are_read(tmp_path, monkeypatch, small_state_dict, small_config, layout, weights_only):
    """torch 1.13's weights-only unpickler cannot read a Python float (a
    config's eps, an optimizer's lr), and the converter's own reader read
    only the zip format: such legacy files were refused as unreadable."""
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: weights_only)
    obj = {
        "config_with_floats": {"config": small_config.to_dict(), "state_dict": small_state_dict},
        "their_training_checkpoint": {"model_state": small_state_dict, "optimizer_state": {"param_groups": [{"lr": 1e-4}]}, "iteration": 5},
        "raw": small_state_dict,
    }[layout]
    checkpoint = load_checkpoint(_save_legacy(obj, tmp_path / "legacy.pt"))
    assert_same_tensors(checkpoint.tensors, small_state_dict)
    assert checkpoint.config == (small_config.to_dict() if layout == "config_with_floats" else None)


def test_own_legacy_reader_reads_every_storage_kind(tmp_path, monkeypatch):
    """Strided views, shared storages, bfloat16, float16, float64 (narrowed),
    a scalar and an empty tensor, as torch.load gives them back."""
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: False)
    base = torch.arange(12.0).reshape(3, 4)
    state = {
        "t": base.t(),
        "row": base[1],  # a view of t's storage, at an offset
        "bf": torch.tensor([1.5, -2.25], dtype=torch.bfloat16),
        "half": torch.tensor([0.5, 3.0], dtype=torch.float16),
        "double": torch.tensor([1 / 3, 1e-3], dtype=torch.float64),
        "scalar": torch.tensor(7.0),
        "empty": torch.zeros(0, 3),
    }
    path = _save_legacy({"state_dict": state, "config": {"eps": 1e-5}}, tmp_path / "legacy.pt")
    expected = torch.load(path)["state_dict"]  # torch's own legacy reader
    checkpoint = load_checkpoint(path)
    assert checkpoint.config == {"eps": 1e-5}
    assert sorted(checkpoint.tensors) == sorted(expected)
    for name, tensor in expected.items():
        want = tensor.float().numpy() if tensor.dtype in (torch.bfloat16, torch.float64) else tensor.numpy()
        assert checkpoint.tensors[name].dtype == want.dtype, name
        np.testing.assert_array_equal(checkpoint.tensors[name], want, err_msg=name)


def test_damaged_legacy_files_are_refused_by_the_own_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: False)
    path = _save_legacy({"w": torch.arange(4.0)}, tmp_path / "legacy.pt")
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(ConversionError, match=r"legacy\.pt: the file ends early, in storage \d+$"):
        load_checkpoint(path)
    count = data.rindex((4).to_bytes(8, "little"))  # the storage's element count, before its 16 bytes
    assert count == len(data) - 8 - 16
    path.write_bytes(data[:count] + (5).to_bytes(8, "little") + data[count + 8 :])
    with pytest.raises(ConversionError, match=r"legacy\.pt: storage \d+ holds 5 elements, its tensors name 4$"):
        load_checkpoint(path)


def test_own_zip_reader_loads_state_dicts_without_torch_code(tmp_path, monkeypatch, small_state_dict):
    """Also what reads checkpoints carrying a config with floats, which
    torch 1.13's weights_only unpickler cannot parse."""
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: False)
    path = tmp_path / "model.pt"
    transposed = {"t": torch.arange(6.0).reshape(2, 3).t(), "bf": torch.tensor([1.5], dtype=torch.bfloat16)}
    torch.save({"state_dict": {**small_state_dict, **transposed}, "config": {"eps": 1e-5, "n": 2}}, path)
    checkpoint = load_checkpoint(path)
    assert all(type(t) is np.ndarray for t in checkpoint.tensors.values())
    np.testing.assert_array_equal(checkpoint.tensors.pop("t"), transposed["t"].numpy())
    assert checkpoint.tensors.pop("bf").tolist() == [1.5]
    assert_same_tensors(checkpoint.tensors, small_state_dict)
    assert checkpoint.config == {"eps": 1e-5, "n": 2}


def test_own_zip_reader_refuses_out_of_bounds_strides(tmp_path, monkeypatch):
    """A crafted stride must not read memory beyond the storage."""
    monkeypatch.setattr(checkpoints, "torch_has_weights_only", lambda torch: False)
    path = tmp_path / "model.pt"
    torch.save({"w": torch.zeros(4)}, path)
    with zipfile.ZipFile(path) as z:
        records = {name: z.read(name) for name in z.namelist()}
    name = next(n for n in records if n.endswith("/data.pkl"))
    # The pickled size (4,) is BININT1 4, TUPLE1: make it (400,).
    patched = records[name].replace(b"K\x04\x85", b"M\x90\x01\x85", 1)
    assert patched != records[name]
    records[name] = patched
    with zipfile.ZipFile(path, "w") as z:
        for n, data in records.items():
            z.writestr(n, data)
    with pytest.raises(ConversionError, match="reaches element 399 of a 4-element storage"):
        load_checkpoint(path)


def test_plain_pickle_of_a_global_is_refused(tmp_path):
    """A bare pickle (not torch.save's format) naming a forbidden global."""
    marker = tmp_path / "PWNED"
    path = tmp_path / "plain.pkl.pt"
    path.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(ConversionError, match="plain.pkl.pt"):
        load_checkpoint(path)
    assert not marker.exists()


# -- safetensors ---------------------------------------------------------------


def test_safetensors_f32_f16_bf16(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float16)
    c = rng.standard_normal((2, 2)).astype(np.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"a": a, "b": b, "c": c}, metadata={"format": "pt"}, dtypes={"c": "BF16"})
    tensors, metadata = read_safetensors(path)
    np.testing.assert_array_equal(tensors["a"], a)
    assert tensors["b"].dtype == np.float16
    np.testing.assert_array_equal(tensors["b"], b)
    assert tensors["c"].dtype == np.float32
    truncated = (c.view(np.uint32) & 0xFFFF0000).view(np.float32)  # what write_safetensors stored
    np.testing.assert_array_equal(tensors["c"], truncated)
    assert metadata == {"format": "pt"}


def test_safetensors_f64_is_narrowed_as_a_pt_checkpoints_is(tmp_path):
    values = np.array([[1.0, 1 / 3, 2.0**-30], [-5.5, 1e-40, 3e38]])
    path = tmp_path / "f64.safetensors"
    _raw_safetensors(path, {"w": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 48]}}, values.astype("<f8").tobytes())
    tensors, _ = read_safetensors(path)
    assert tensors["w"].dtype == np.float32
    np.testing.assert_array_equal(tensors["w"], values.astype(np.float32))


def test_safetensors_checkpoint_with_config(tmp_path, small_state_dict, small_config):
    path = tmp_path / "model.safetensors"
    arrays = {k: v.numpy() for k, v in small_state_dict.items()}
    write_safetensors(path, arrays, metadata={"config": json.dumps(small_config.to_dict())})
    checkpoint = load_checkpoint(path)
    assert_same_tensors(checkpoint.tensors, small_state_dict)
    assert checkpoint.config == small_config.to_dict()


def test_safetensors_is_read_without_torch(tmp_path):
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any import of torch fails
        "from converter.checkpoints import read_safetensors\n"
        f"t, _ = read_safetensors({str(path)!r}); print(t['w'].sum())"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "15.0"


def test_safetensors_convert_and_inspect_without_torch(tmp_path, small_state_dict, small_config):
    """The command line's convert (of a .safetensors file) and inspect need
    no torch: a pip install without it can use them."""
    path, out = tmp_path / "m.safetensors", tmp_path / "m.tarn"
    write_safetensors(path, {k: v.numpy() for k, v in small_state_dict.items()},
                      metadata={"config": json.dumps(small_config.to_dict())})
    for args in (["convert", str(path), str(out)], ["inspect", str(out)]):
        code = (
            "import sys; sys.modules['torch'] = None\n"  # any import of torch fails
            f"from converter.__main__ import main; sys.exit(main({args!r}))"
        )
        result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    assert "weight checksum:" in result.stdout and " ok" in result.stdout


def _raw_safetensors(path, header: dict, body: bytes, header_len=None):
    text = json.dumps(header).encode()
    length = len(text) if header_len is None else header_len
    path.write_bytes(length.to_bytes(8, "little") + text + body)


@pytest.mark.parametrize(
    "header, body, header_len, message",
    [
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, 10**9, "header length 1000000000 exceeds"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, b"\0" * 8, None, r"data_offsets \[0, 16\] must be .* 8-byte data section"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "tensor w: holds 8 bytes, but F32 of shape \\[3\\] needs 12"),
        ({"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8, None, "tensor w: unsupported dtype 'I64'"),
        ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, None, "shape must be a list of non-negative integers"),
        (
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
            b"\0" * 12,
            None,
            "the bytes of tensors a and b overlap",
        ),
    ],
    ids=["header_too_long", "offsets_outside", "size_mismatch", "dtype", "shape", "overlap"],
)
def test_safetensors_errors(tmp_path, header, body, header_len, message):
    path = tmp_path / "bad.safetensors"
    _raw_safetensors(path, header, body, header_len)
    with pytest.raises(ConversionError, match=message):
        load_checkpoint(path)


def test_safetensors_bad_json_and_short_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes((5).to_bytes(8, "little") + b"{oops")
    with pytest.raises(ConversionError, match="not valid JSON"):
        load_checkpoint(path)
    path.write_bytes(b"\1\0")
    with pytest.raises(ConversionError, match="too short"):
        load_checkpoint(path)
