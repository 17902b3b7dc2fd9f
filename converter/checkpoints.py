"""Reading checkpoints safely: PyTorch pickles (.pt, .pth, .ckpt, .bin) and
.safetensors.

A pickle can run any code while it loads, so PyTorch files are loaded with
`torch.load(weights_only=True)` where torch has it, else (or where that
unpickler lacks an opcode) with our own reader of torch.save's two formats
(the zip archive and the legacy one before it), whose unpickler resolves only
the globals a state dict needs; either way a file that names anything else
is refused before that thing is called. .safetensors files are parsed here
with numpy alone (8-byte header length, JSON header, raw little-endian
bytes), so reading them needs no torch.
"""

import collections
import dataclasses
import json
import math
import pickle
import re
import zipfile
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from .errors import ConversionError, as_path

TORCH_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin")
SAFETENSORS_SUFFIX = ".safetensors"

# Where training code usually puts the state dict inside a checkpoint dict.
STATE_DICT_KEYS = ("state_dict", "model_state_dict", "model_state", "model")
# Prefixes a wrapper adds to every name: Lightning's `self.model`,
# (Distributed)DataParallel's `module.`, torch.compile's `_orig_mod.`.
WRAPPER_PREFIXES = ("model.", "module.", "_orig_mod.")
FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclasses.dataclass
class Checkpoint:
    tensors: Dict[str, np.ndarray]  # name -> float32 or float16 array (others as stored)
    config: Optional[dict] = None  # the `config` dict the file carries, if any
    state_dict_key: Optional[str] = None  # the checkpoint dict's entry that held the tensors, if one did


def load_checkpoint(path, state_dict_key: Optional[str] = None) -> Checkpoint:
    """The tensors of a checkpoint file; state_dict_key names the entry of a
    checkpoint dict that holds them (needed where several entries could)."""
    path = as_path(path, "checkpoint")
    if not path.is_file():
        raise ConversionError(f"no such checkpoint file: {path}")
    suffix = path.suffix.lower()
    if suffix == SAFETENSORS_SUFFIX:
        if state_dict_key is not None:
            raise ConversionError(
                f"{path}: a .safetensors file holds one set of tensors; --state-dict-key is for PyTorch checkpoints"
            )
        tensors, metadata = read_safetensors(path)
        config = None
        if "config" in metadata:  # where a torch-free training script can keep its ModelConfig
            try:
                config = json.loads(metadata["config"])
            except ValueError as e:
                raise ConversionError(f"{path}: __metadata__.config is not JSON: {e}") from e
        return Checkpoint(strip_wrapper_prefixes(tensors), config)
    if suffix in TORCH_SUFFIXES:
        return unwrap_checkpoint(load_torch(path), str(path), state_dict_key)
    raise ConversionError(
        f"{path}: unknown checkpoint type {suffix!r}; expected one of "
        f"{', '.join(TORCH_SUFFIXES + (SAFETENSORS_SUFFIX,))}"
    )


# -- PyTorch pickles --------------------------------------------------------


def load_torch(path: Path):
    """The object a PyTorch checkpoint holds, loaded without running code.

    With torch's weights_only unpickler where torch has one; otherwise, and
    for files that unpickler cannot parse, with read_torch_zip or
    read_torch_legacy below."""
    _check_torch_container(path)
    if _is_torchscript(path):
        # torch.load hands these to torch.jit.load, whatever weights_only says.
        raise ConversionError(f"{path} is a TorchScript archive, not a checkpoint; save model.state_dict() instead")
    try:
        import torch
    except ImportError:
        torch = None
    try:
        if torch is not None and torch_has_weights_only(torch):
            try:
                return torch.load(path, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError as e:
                # torch 1.13's weights-only unpickler lacks some plain opcodes
                # (BINFLOAT: any float, such as a config's eps). That refusal
                # is about an opcode, not a global, so the file is read again
                # by our reader, which takes every plain value but resolves
                # only the globals a state dict needs.
                if "Unsupported operand" not in str(e):
                    raise
        return read_torch_zip(path) if zipfile.is_zipfile(path) else read_torch_legacy(path)
    except pickle.UnpicklingError as e:
        raise ConversionError(_refusal(path, str(e))) from None
    except ConversionError:
        raise
    except Exception as e:  # a damaged or foreign file: say which, not where in torch
        raise ConversionError(f"cannot read {path} as a PyTorch checkpoint: {_exception_text(e)}") from None


# torch.save's legacy format opens with a pickle of this magic number: as
# LONG text when saved with pickle protocol 0 or 1 (any later protocol
# starts with the PROTO opcode, 0x80, and the protocol's number).
_LEGACY_MAGIC_TEXT = b"L119547037146038801333356"
_PICKLE_PROTOCOLS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


def _check_torch_container(path: Path) -> None:
    """Refuses, saying what it is not, a file that cannot be a checkpoint:
    torch.save writes a zip archive (torch >= 1.6) or a pickle (before)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise ConversionError(f"cannot read {path}: {e}") from e
    if not head:
        raise ConversionError(f"{path}: empty file (0 bytes), not a PyTorch checkpoint")
    if head.startswith(b"PK\x03\x04") or zipfile.is_zipfile(path):
        return  # a damaged archive is reported by what reads it
    if head[:2] in _PICKLE_PROTOCOLS or head.startswith(_LEGACY_MAGIC_TEXT[: len(head)]):
        return
    hint = "; it looks like a .safetensors file: give it that suffix" if head[8:10] == b'{"' else ""
    raise ConversionError(
        f"{path}: not a PyTorch checkpoint (neither a zip archive nor a pickle; it begins {head[:8]!r}){hint}"
    )


def _exception_text(e: Exception) -> str:
    """What went wrong, also where the exception says it with no words (an
    EOFError of no message, a KeyError of a pickle opcode)."""
    text = str(e)
    if isinstance(e, EOFError):
        return f"the file ends early ({type(e).__name__}{': ' + text if text else ''})"
    if not text:
        return type(e).__name__
    return f"{type(e).__name__} {text}" if isinstance(e, LookupError) else text


def torch_has_weights_only(torch) -> bool:
    import inspect

    return "weights_only" in inspect.signature(torch.load).parameters


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(name.endswith("/constants.pkl") or name == "constants.pkl" for name in z.namelist())
    except zipfile.BadZipFile:
        return False  # torch.load then says what is wrong with it


def _refusal(path: Path, detail: str) -> str:
    found = re.search(r"(?:Unsupported class|Unsupported global: GLOBAL|forbidden global) ([\w.]+)", detail)
    if found:
        return (
            f"refused to load {path}: its pickle references {found.group(1)}, which a weights-only "
            "checkpoint may not (only tensors and plain containers are allowed); re-save it with "
            "torch.save(model.state_dict(), ...) or as .safetensors"
        )
    return f"refused to load {path}: {detail}"


def read_torch_zip(path: Path):
    """Reads torch.save's zip format (torch >= 1.6) with numpy alone: tensors
    come back as numpy arrays. Its unpickler resolves only the globals a
    state dict pickle names, each to a local stand-in, so no torch code and
    nothing else runs; any other global is refused by name."""
    with zipfile.ZipFile(path) as z:
        pickles = [n for n in z.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ConversionError(f"{path}: expected one <archive>/data.pkl in the zip, found {len(pickles)}")
        prefix = pickles[0][: -len("data.pkl")]
        if prefix + "byteorder" in z.namelist() and z.read(prefix + "byteorder").strip() != b"little":
            raise ConversionError(f"{path}: big-endian tensor data is not supported")
        storages = {}

        def storage(key: str, dtype: str, numel: int) -> np.ndarray:
            """One storage's elements, from <archive>/data/<key>."""
            if key not in storages:
                raw = z.read(f"{prefix}data/{key}")
                stored = _stored_dtype(dtype)
                if len(raw) != numel * stored.itemsize:
                    raise pickle.UnpicklingError(f"storage {key} holds {len(raw)} bytes, not {numel} elements of {stored}")
                storages[key] = _widened(np.frombuffer(raw, dtype=stored), dtype)
            return storages[key]

        with z.open(pickles[0]) as f:
            return _StateDictUnpickler(f, storage).load()


# The legacy format's first two pickles: torch.save's magic number and protocol.
_LEGACY_MAGIC = int(_LEGACY_MAGIC_TEXT[1:])
_LEGACY_PROTOCOL = 1001


def read_torch_legacy(path: Path):
    """Reads torch.save's legacy format (before torch 1.6, or
    _use_new_zipfile_serialization=False) with numpy alone: pickles of the
    magic number, the protocol version and the system's byte order, the
    object (tensors naming storages by key), the list of storage keys, then
    each storage's element count (int64) and bytes, in that list's order.
    Every pickle goes through an unpickler that resolves only a state dict's
    globals. The storages come after the object, so its tensors are views of
    storages filled once it is read, as torch.load's tensors share theirs."""
    file_size = path.stat().st_size
    with open(path, "rb") as f:
        magic = _PlainUnpickler(f).load()
        if magic != _LEGACY_MAGIC:
            raise ConversionError(f"{path}: a pickle, but not a PyTorch checkpoint (torch.save's magic number is missing)")
        protocol, system = _PlainUnpickler(f).load(), _PlainUnpickler(f).load()
        if protocol != _LEGACY_PROTOCOL:
            raise ConversionError(f"{path}: legacy PyTorch format of protocol {protocol!r}; only {_LEGACY_PROTOCOL} is known")
        if not isinstance(system, dict) or system.get("little_endian") is not True:
            raise ConversionError(f"{path}: big-endian tensor data is not supported")
        storages = {}  # key -> (array to fill, element type)

        def storage(key: str, dtype: str, numel: int) -> np.ndarray:
            if key not in storages:
                claimed = numel * _stored_dtype(dtype).itemsize
                claimed += sum(a.size * _stored_dtype(t).itemsize for a, t in storages.values())
                if claimed > file_size:  # refused before allocating what a damaged count asks for
                    raise pickle.UnpicklingError(f"storage {key} of {numel} elements does not fit in the file's {file_size} bytes")
                storages[key] = (np.empty(numel, dtype=np.float32 if dtype == "bfloat16" else dtype), dtype)
            array = storages[key][0]
            if array.size != numel:
                raise pickle.UnpicklingError(f"storage {key} is named with {array.size} and with {numel} elements")
            return array

        obj = _StateDictUnpickler(f, storage, views=True).load()
        keys = _PlainUnpickler(f).load()
        if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(storages):
            raise ConversionError(f"{path}: its list of storages does not match the storages its tensors name")
        for key in map(str, keys):
            array, dtype = storages[key]
            head = f.read(8)
            count = int.from_bytes(head, "little")
            if len(head) == 8 and count != array.size:
                raise ConversionError(f"{path}: storage {key} holds {count} elements, its tensors name {array.size}")
            raw = f.read(count * _stored_dtype(dtype).itemsize)
            if len(head) != 8 or len(raw) != count * _stored_dtype(dtype).itemsize:
                raise ConversionError(f"{path}: the file ends early, in storage {key}")
            array[...] = _widened(np.frombuffer(raw, dtype=_stored_dtype(dtype)), dtype)
    return obj


def _stored_dtype(dtype: str) -> np.dtype:
    """How a storage of this element type lies in the file."""
    return np.dtype("<u2" if dtype == "bfloat16" else dtype)


def _widened(array: np.ndarray, dtype: str) -> np.ndarray:
    """A storage's stored elements as read: bfloat16 as float32 (the top half
    of a float32), others as they are."""
    return (array.astype(np.uint32) << 16).view(np.float32) if dtype == "bfloat16" else array


# Storage classes a tensor's pickle names -> their element type (bfloat16 is
# read as the top half of a float32).
_STORAGE_DTYPES = {
    "FloatStorage": "<f4",
    "HalfStorage": "<f2",
    "BFloat16Storage": "bfloat16",
    "DoubleStorage": "<f8",
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


def _rebuild_tensor(storage, offset, size, stride, *unused, copy=True):
    """torch._utils._rebuild_tensor(_v2): a strided view of a storage, copied
    (unless copy is False), after checking that every element it reaches lies
    inside the storage."""
    size, stride = tuple(size), tuple(stride)
    ints = (offset,) + size + stride
    well_formed = isinstance(storage, np.ndarray) and len(size) == len(stride)
    if not well_formed or not all(isinstance(v, int) and v >= 0 for v in ints):
        raise pickle.UnpicklingError("malformed tensor record")
    if 0 in size:
        return np.zeros(size, dtype=storage.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage.size:
        raise pickle.UnpicklingError(f"a tensor reaches element {last} of a {storage.size}-element storage")
    view = np.lib.stride_tricks.as_strided(storage[offset:], size, [s * storage.itemsize for s in stride])
    return view.copy() if copy else view


def _rebuild_view(storage, offset, size, stride, *unused):
    """_rebuild_tensor for a storage not yet filled: the view itself."""
    return _rebuild_tensor(storage, offset, size, stride, copy=False)


def _rebuild_parameter(data, *unused):
    return data


class _PlainUnpickler(pickle.Unpickler):
    """Plain values only: any global is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"forbidden global {module}.{name}")


class _StateDictUnpickler(pickle.Unpickler):
    _GLOBALS = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch", "Size"): tuple,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        **{("torch", name): dtype for name, dtype in _STORAGE_DTYPES.items()},
    }
    _REBUILDERS = {("torch._utils", "_rebuild_tensor"), ("torch._utils", "_rebuild_tensor_v2")}

    def __init__(self, file, storage, views: bool = False):
        """storage(key, element type, numel): that storage's elements, a 1-D
        array. views: tensors are left views of their storages (not copies),
        for storages filled after the pickle is read."""
        super().__init__(file, encoding="utf-8")
        self._storage, self._views = storage, views

    def find_class(self, module, name):
        if (module, name) not in self._GLOBALS:
            raise pickle.UnpicklingError(f"forbidden global {module}.{name}")
        if self._views and (module, name) in self._REBUILDERS:
            return _rebuild_view
        return self._GLOBALS[(module, name)]

    def persistent_load(self, pid):
        """('storage', storage type, key, location, numel), and in the legacy
        format a sixth item, None or (view key, offset, numel) of a view."""
        well_formed = (
            isinstance(pid, tuple)
            and len(pid) in (5, 6)
            and pid[0] in ("storage", b"storage")
            and pid[1] in _STORAGE_DTYPES.values()
            and isinstance(pid[2], (str, bytes, int))
            and _count(pid[4])
        )
        if not well_formed:
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, dtype, key, _, numel = pid[:5]
        key = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
        storage = self._storage(key, dtype, numel)
        view = pid[5] if len(pid) == 6 else None
        if view is None:
            return storage
        if not (isinstance(view, tuple) and len(view) == 3 and _count(view[1]) and _count(view[2])):
            raise pickle.UnpicklingError(f"unexpected storage view {view!r}")
        _, offset, count = view
        if offset + count > storage.size:
            raise pickle.UnpicklingError(f"a view reaches element {offset + count - 1} of a {storage.size}-element storage")
        return storage[offset : offset + count]


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def unwrap_checkpoint(obj, source: str, state_dict_key: Optional[str] = None) -> Checkpoint:
    """Finds the state dict in what torch.load returned (a raw state dict or a
    training checkpoint holding one) and the optional `config` beside it.

    A training checkpoint may hold several (an EMA copy, a discriminator):
    with more than one entry that could be the state dict, the caller names
    it (state_dict_key) rather than the converter guessing."""
    if not isinstance(obj, Mapping):
        raise ConversionError(f"{source}: expected a state_dict or a dict holding one, got {type(obj).__name__}")
    config = obj.get("config")
    if config is not None and not isinstance(config, Mapping):
        raise ConversionError(f"{source}: `config` must be a dict, got {type(config).__name__}")
    candidates = [k for k, v in obj.items() if k != "config" and _may_be_state_dict(k, v)]
    if state_dict_key is not None:
        if state_dict_key not in obj:
            shown = ", ".join(map(repr, candidates)) or "none"
            raise ConversionError(
                f"{source}: no entry {state_dict_key!r} (--state-dict-key); the entries that hold tensors: {shown}"
            )
        state, key = obj[state_dict_key], state_dict_key
        if not isinstance(state, Mapping):
            raise ConversionError(f"{source}: entry {key!r} is a {type(state).__name__}, not a state dict")
    elif len(candidates) > 1:
        shown = ", ".join(f"{k!r} ({_describe(obj[k])})" for k in candidates)
        raise ConversionError(
            f"{source} holds several state dicts: {shown}; choose the one to convert with --state-dict-key KEY"
        )
    elif candidates:
        key = candidates[0]
        state = obj[key]
    else:  # a raw state dict
        key, state = None, {k: v for k, v in obj.items() if k != "config"}
    where = f"{source}: " if key is None else f"{source}, entry {key!r}: "
    state = strip_wrapper_prefixes(state_dict_arrays(state, where))
    return Checkpoint(state, dict(config) if config else None, key)


def _may_be_state_dict(key, value) -> bool:
    """An entry of a checkpoint dict that may be the model's state dict: one
    under a name training code uses for it, or any mapping of tensors."""
    if not isinstance(value, Mapping):
        return False
    return key in STATE_DICT_KEYS or (len(value) > 0 and all(_is_tensor(v) for v in value.values()))


def _describe(value: Mapping) -> str:
    tensors = sum(1 for v in value.values() if _is_tensor(v))
    return f"{tensors} tensor{'s' if tensors != 1 else ''}" + (f" of {len(value)} entries" if tensors != len(value) else "")


def state_dict_arrays(state, where: str = "") -> Dict[str, np.ndarray]:
    """name -> array (to_numpy) of a state dict, after checking that it is a
    mapping of names to tensors (torch or numpy): anything else is a
    ConversionError naming the key, prefixed by `where`."""
    if not isinstance(state, Mapping):
        raise ConversionError(
            f"{where}expected a state dict (a mapping of tensor names to tensors), got {type(state).__name__}"
        )
    not_names = [k for k in state if not isinstance(k, str)]
    if not_names:
        shown = ", ".join(f"{k!r} ({type(k).__name__})" for k in not_names[:5])
        raise ConversionError(f"{where}state dict keys that are not names: {shown}; expected str keys such as 'head.weight'")
    not_tensors = sorted(k for k, v in state.items() if not _is_tensor(v))
    if not_tensors:
        kinds = ", ".join(type(state[k]).__name__ for k in not_tensors)
        raise ConversionError(
            f"{where}state dict entries that are not tensors: {', '.join(not_tensors)} "
            f"(expected torch.Tensor or numpy.ndarray values, got {kinds})"
        )
    arrays = {}
    for name, tensor in state.items():
        try:
            arrays[name] = narrow_float64(name, to_numpy(tensor), where)
        except (TypeError, RuntimeError, NotImplementedError) as e:  # sparse, meta, quantized tensors
            raise ConversionError(f"{where}tensor {name}: cannot be read as an array of numbers ({e})") from None
    return arrays


def strip_wrapper_prefixes(state: Mapping) -> dict:
    state = dict(state)
    while state:
        prefix = next((p for p in WRAPPER_PREFIXES if all(k.startswith(p) for k in state)), None)
        if prefix is None:
            break
        state = {k[len(prefix):]: v for k, v in state.items()}
    return state


def _is_tensor(value) -> bool:
    if isinstance(value, np.ndarray):
        return True
    try:
        import torch
    except ImportError:
        return False
    return isinstance(value, torch.Tensor)


def to_numpy(tensor) -> np.ndarray:
    """float32, float16 and float64 as stored; bfloat16 becomes float32 (numpy
    has no bfloat16); other dtypes are kept so the shape check can name them."""
    if not isinstance(tensor, np.ndarray):
        import torch

        tensor = tensor.detach().cpu()
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.float()
        tensor = tensor.numpy()
    return np.ascontiguousarray(tensor)


def narrow_float64(name: str, array: np.ndarray, where: str = "") -> np.ndarray:
    """A float64 array as float32 (tarn holds weights in float32 at most),
    after checking that its finite values fit: one beyond float32's range
    would become infinite. Other arrays as they are."""
    if array.dtype != np.float64:
        return array
    with np.errstate(over="ignore"):  # found just below, with the tensor's name
        narrowed = array.astype(np.float32)
    overflowed = np.isinf(narrowed) & np.isfinite(array)
    if overflowed.any():
        largest = float(np.abs(array[overflowed]).max())
        raise ConversionError(
            f"{where}tensor {name}: float64 values beyond float32's range (max |x| = {largest:g}, float32's largest "
            f"is {FLOAT32_MAX:g}); tarn holds weights in float32 at most"
        )
    return narrowed


# -- safetensors --------------------------------------------------------------

# safetensors dtype -> (stored little-endian numpy dtype, bytes per element)
_SAFETENSORS_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8)}


def read_safetensors(path) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """(name -> float32/float16 array, __metadata__) of a .safetensors file
    (float64 tensors narrowed to float32, as a .pt's are: narrow_float64)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConversionError(f"cannot read {path}: {e}") from e
    if len(data) < 8:
        raise ConversionError(f"{path}: {len(data)} bytes is too short for a safetensors header")
    header_len = int.from_bytes(data[:8], "little")
    if header_len > len(data) - 8:
        raise ConversionError(f"{path}: header length {header_len} exceeds the file's {len(data) - 8} remaining bytes")
    try:
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ConversionError(f"{path}: the safetensors header is not valid JSON: {e}") from e
    if not isinstance(header, dict):
        raise ConversionError(f"{path}: the safetensors header must be a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ConversionError(f"{path}: __metadata__ must map strings to strings")

    body = memoryview(data)[8 + header_len :]
    tensors, spans = {}, []
    for name, entry in header.items():
        array, span = _safetensors_tensor(path, name, entry, body)
        tensors[name] = array
        spans.append(span + (name,))
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
        if begin < end:
            raise ConversionError(f"{path}: the bytes of tensors {first} and {second} overlap")
    return tensors, metadata


def _safetensors_tensor(path, name, entry, body) -> Tuple[np.ndarray, Tuple[int, int]]:
    where = f"{path}: tensor {name}"
    if not isinstance(entry, dict):
        raise ConversionError(f"{where}: header entry must be an object")
    dtype = entry.get("dtype")
    if dtype not in _SAFETENSORS_DTYPES:
        raise ConversionError(f"{where}: unsupported dtype {dtype!r} (supported: {', '.join(_SAFETENSORS_DTYPES)})")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ConversionError(f"{where}: shape must be a list of non-negative integers, got {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= len(body)
    ):
        raise ConversionError(
            f"{where}: data_offsets {offsets!r} must be [begin, end] within the {len(body)}-byte data section"
        )
    stored, itemsize = _SAFETENSORS_DTYPES[dtype]
    count = math.prod(shape)
    begin, end = offsets
    if end - begin != count * itemsize:
        raise ConversionError(
            f"{where}: holds {end - begin} bytes, but {dtype} of shape {shape} needs {count * itemsize}"
        )
    raw = np.frombuffer(body, dtype=stored, count=count, offset=begin).reshape(shape)
    if dtype == "BF16":  # bfloat16 is the top half of a float32
        array = (raw.astype(np.uint32) << 16).view(np.float32)
    elif dtype == "F64":  # narrowed as a float64 .pt checkpoint is
        array = narrow_float64(name, raw, f"{path}: ")
    else:
        array = raw.astype(stored[1:], copy=True)  # native byte order, owning its memory
    return array, (begin, end)

