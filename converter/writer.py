"""Writes a .tarn file (schema/tarn.fbs) with flatc's generated Python code.

Each tensor's bytes go in a Buffer of their own, 64-byte aligned in the file
so that the runtime can use them in place from an mmap; weight_checksum is
XXH64 (seed 0) over all buffers' bytes, concatenated in buffer order, and
file_checksum (schema 2.1) XXH64 (seed 0) of the whole file with its own 8
bytes taken as zero.
"""

import datetime
import os
import secrets
import struct
from pathlib import Path
from typing import Dict, List, Mapping, Optional

import flatbuffers
import numpy as np
import xxhash

from .errors import ConversionError, as_path
from .fields import (
    AUDIO_FIELDS,
    SCHEMA_VERSION,
    camel,
    check_audio_fits,
    check_scalar,
    enum_value,
    model_fields,
    normalise_audio,
)
from .config import ModelConfig, same_as_stored
from .schema_code import schema
from .shapes import check_tensors
from .version import CONVERTER_VERSION

ALIGNMENT = 64
DTYPES = ("f32", "f16", "i8", "bf16")
# A bfloat16 tensor is held, before and after the file, as np.uint16 arrays of
# its bits (numpy has no bfloat16): the top 16 bits of each f32.
BF16 = np.dtype(np.uint16)
FILE_IDENTIFIER = b"TARN"
# Model.file_checksum's vtable slot, 4 + 2 x its field index (38): flatc's
# Python code has no name for it. A reader checks it against the generated
# accessor (file_checksum_at).
FILE_CHECKSUM_SLOT = 80
# The largest file the runtime reads: it refuses FLATBUFFERS_MAX_BUFFER_SIZE
# (2^31 - 1) bytes and more. The Python builder's own limit is 2^31.
MAX_FILE_SIZE = (1 << 31) - 2


DENSE_WEIGHTS = ("projection.weight", "linear1.weight", "linear2.weight", "head.weight")
DENSE_BLOCK = 16  # schema TensorLayout.DenseBlocked16; kernels::kDenseBlock
DENSE_LAYOUTS = ("blocked", "row-major")


def is_dense_weight(name: str, array: np.ndarray) -> bool:
    """A weight the runtime runs as a dense layer (and may store blocked)."""
    return name.endswith(DENSE_WEIGHTS) and array.ndim == 2


def pack_dense(w: np.ndarray) -> np.ndarray:
    """W [outputs][inputs] in the schema's DenseBlocked16 layout, flat:
    blocks of 16 output rows, each input-major, zero-padded rows."""
    outputs, inputs = w.shape
    blocks = -(-outputs // DENSE_BLOCK)
    padded = np.zeros((blocks * DENSE_BLOCK, inputs), dtype=w.dtype)
    padded[:outputs] = w
    return np.ascontiguousarray(padded.reshape(blocks, DENSE_BLOCK, inputs).transpose(0, 2, 1)).reshape(-1)


def unpack_dense(packed: np.ndarray, outputs: int, inputs: int) -> np.ndarray:
    """The inverse of pack_dense: W [outputs][inputs]."""
    blocks = -(-outputs // DENSE_BLOCK)
    if packed.size != blocks * DENSE_BLOCK * inputs:
        raise ConversionError(f"a blocked [{outputs}, {inputs}] weight needs {blocks * DENSE_BLOCK * inputs} elements, found {packed.size}")
    w = packed.reshape(blocks, inputs, DENSE_BLOCK).transpose(0, 2, 1).reshape(blocks * DENSE_BLOCK, inputs)
    return np.ascontiguousarray(w[:outputs])


def storage_dtype(name: str, array: np.ndarray, dtype: str) -> np.dtype:
    """The dtype a tensor is stored in for the requested file dtype.

    f16 files store the 2-D matrices and embeddings in f16: they are nearly
    all of a model's bytes. i8 files store the dense layers' weights in int8
    (one scale per row, see quantize_rows) and the embeddings in f16: a step
    streams the former and gathers one row of the latter. LayerNorm
    parameters, biases, favor+'s omega and the depthwise conv weights stay
    f32: they are small, and their rounding would show in every output (omega
    sits inside an exp). bf16 files store what f16 files store in bf16
    (BF16: the bits of each value rounded to bfloat16)."""
    matrix = name.endswith(".weight") and array.ndim == 2 and ".conv." not in name
    if dtype == "i8" and name.endswith(DENSE_WEIGHTS):
        return np.dtype(np.int8)
    if dtype == "bf16" and matrix:
        return BF16
    if dtype in ("f16", "i8") and matrix:
        return np.dtype(np.float16)
    return np.dtype(np.float32)


def to_bf16(array: np.ndarray) -> np.ndarray:
    """The bits of each f32 rounded to the nearest bfloat16, ties to even (as
    torch's .to(torch.bfloat16)): np.uint16, the top half of an f32."""
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    """The f32 values of bfloat16 bits (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def quantize_rows(w: np.ndarray):
    """Symmetric int8 with one scale per row: (q, scale) with w[o] ~= scale[o]
    * q[o], scale = max |w[o]| / 127, q = round(w / scale) in [-127, 127]
    (an all-zero row: scale 0, q 0). The file's model is exactly scale * q."""
    w = np.asarray(w, dtype=np.float32)
    scale = (np.abs(w).max(axis=1) / 127).astype(np.float32)
    safe = np.where(scale > 0, scale, 1).astype(np.float32)
    q = np.clip(np.rint(w / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def stored_values(name: str, array: np.ndarray, dtype: str) -> np.ndarray:
    """The f32 values a file of `dtype` holds for this tensor: rounded to f16
    or bf16, or int8 times its row's scale (as the runtime widens them)."""
    storage = storage_dtype(name, array, dtype)
    if storage == BF16:
        return from_bf16(to_bf16(array))
    if storage == np.int8:
        q, scale = quantize_rows(array)
        return q.astype(np.float32) * scale[:, None]
    return np.asarray(array, dtype=storage).astype(np.float32)


def write_tarn(
    path,
    config: ModelConfig,
    tensors: Mapping[str, np.ndarray],
    dtype: str = "f32",
    labels: Optional[List[str]] = None,
    audio: Optional[dict] = None,
    metadata: Optional[Mapping[str, str]] = None,
    dense_layout: str = "blocked",
) -> int:
    """Checks the tensors against the config and writes the file atomically
    (a temporary file renamed into place). Returns the weight checksum.

    dense_layout "blocked" stores the dense layers' weights in the layout the
    runtime's kernels read (it then uses them in place, the model held in
    memory once); "row-major" writes them as files before schema 1.3 did
    (the runtime packs a copy at load), for compatibility tests."""
    if dtype not in DTYPES:
        raise ConversionError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if dense_layout not in DENSE_LAYOUTS:
        raise ConversionError(f"dense_layout must be one of {DENSE_LAYOUTS}, got {dense_layout!r}")
    tensors = check_tensors(tensors, config)
    stored = {}
    for name, array in tensors.items():
        storage = storage_dtype(name, array, dtype)
        if storage == np.int8:
            _check_finite(name, array)
            _check_float32_range(name, array)  # quantize_rows computes in float32
            stored[name], stored[name + ".scale"] = quantize_rows(array)
        else:
            stored[name] = _stored(name, array, storage)
    labels = _check_labels(labels, config)
    check_mapping(audio, "audio front end")
    check_mapping(metadata, "metadata")
    if audio is not None:
        audio = normalise_audio(audio)
        check_audio_fits(audio, config)
    # The caller's entries win (a fixed "date" makes a build reproducible).
    meta = {"converter_version": CONVERTER_VERSION, "date": _now()}
    for key, value in (metadata or {}).items():
        key, value = str(key), str(value)
        for text in (key, value):
            _check_utf8(text, f"metadata {key!r}")
            if "\0" in text:  # C reads the runtime's strings to the first NUL; it refuses them
                raise ConversionError(f"metadata {key!r}: {'its key' if text is key else 'its value'} holds a NUL character")
        meta[key] = value

    blob, checksum = _build(config, stored, labels, audio, meta, dense_layout == "blocked", dtype)
    path = as_path(path, "output")
    if not path.name or path.name in (".", ".."):
        raise ConversionError(f"cannot write {str(path)!r}: it names no file")
    # Beside the file, under a short name of its own (one derived from a long
    # file name could exceed the file system's limit; one per process would
    # be shared by two conversions in one process), renamed over it once
    # complete; removed however the write ends short (Ctrl-C included).
    tmp = None
    try:
        fd, tmp = _create_temporary(path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        blob = None  # the read-back holds the file's bytes instead
        _check_read_back(tmp, path, config, stored, labels, audio, meta, checksum, dense_layout == "blocked")
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise ConversionError(f"cannot write {path}: {e}") from e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return checksum


def _check_read_back(tmp: Path, path: Path, config, stored, labels, audio, meta, checksum: int, blocked: bool) -> None:
    """Reads the written temporary back with the converter's own reader and
    refuses it (it is then never renamed into place) unless it holds what
    was meant: the config, every tensor's dtype, shape, layout and bytes,
    the labels, audio front end, metadata and both checksums."""
    from .reader import read_tarn  # the reader imports this module

    def refuse(problem: str):
        raise ConversionError(f"read-back check of {path} failed: {problem}; the file was not written")

    try:
        f = read_tarn(tmp)
    except ConversionError as e:
        refuse(str(e).replace(f"{tmp}: ", "", 1))
    if f.schema_version != SCHEMA_VERSION:
        refuse(f"schema version {f.schema_version} reads back, {SCHEMA_VERSION} written")
    for name, _ in model_fields():
        written, read = getattr(config, name), getattr(f.config, name)
        if not same_as_stored(written, read):
            refuse(f"config {name} reads back as {read!r}, written {written!r}")
    if list(f.tensors) != list(stored):
        refuse(f"the tensors read back are {', '.join(f.tensors)}, written {', '.join(stored)}")
    for name, written in stored.items():
        read = f.tensors[name]
        layout = "blocked" if blocked and is_dense_weight(name, written) else "row-major"
        if (read.dtype.kind, read.dtype.itemsize, read.shape) != (written.dtype.kind, written.dtype.itemsize, written.shape):
            refuse(f"tensor {name} reads back as {read.dtype.name} {list(read.shape)}, written {written.dtype.name} {list(written.shape)}")
        if f.layouts[name] != layout:
            refuse(f"tensor {name} reads back {f.layouts[name]}, written {layout}")
        little = read.dtype.newbyteorder("<")
        if np.ascontiguousarray(read, dtype=little).tobytes() != np.ascontiguousarray(written, dtype=little).tobytes():
            refuse(f"tensor {name}'s values read back differ from those written")
    if f.labels != labels:
        refuse("the labels read back differ from those written")
    if audio is not None and (f.audio is None or not all(same_as_stored(v, f.audio.get(k)) for k, v in audio.items())):
        refuse("the audio front end read back differs from the one written")
    if audio is None and f.audio is not None:
        refuse("the file reads back with an audio front end; none was written")
    if f.metadata != meta:
        refuse("the metadata read back differs from that written")
    if f.weight_checksum != checksum or not f.checksum_ok:
        refuse(f"the weight checksum reads back as {f.weight_checksum:016x}, written {checksum:016x}")
    if f.file_checksum is None or not f.file_checksum_ok:
        refuse("the file checksum reads back " + ("absent" if f.file_checksum is None else "wrong for the file's bytes"))


def _create_temporary(directory: Path):
    """A new file of a name of its own in `directory`, created as open()
    creates files (mode 0666 less the umask and as the directory's default
    ACL says; mkstemp's 0600 would need a chmod, and reading the umask
    changes it for every thread)."""
    while True:
        name = directory / f".tarn-{secrets.token_hex(8)}.tmp"
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue


def check_mapping(value, what: str) -> None:
    """None, or a dict of settings (audio) or of key -> value (metadata)."""
    if value is not None and not isinstance(value, Mapping):
        raise ConversionError(f"the {what} must be a dict, got {type(value).__name__}")


def _check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConversionError(f"{what}: {text!r} is not valid text (not UTF-8)") from None


def _check_finite(name: str, array: np.ndarray) -> None:
    if not np.all(np.isfinite(array)):
        raise ConversionError(f"tensor {name} holds NaN or infinite values")


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_float32_range(name: str, array: np.ndarray) -> None:
    """A wider array (float64, given to write_tarn as is) must fit float32,
    the widest dtype a file holds; no --dtype would store it."""
    if array.dtype.itemsize <= 4:
        return
    with np.errstate(over="ignore"):  # found just below, with the tensor's name
        beyond = np.isinf(array.astype(np.float32)) & np.isfinite(array)
    if beyond.any():
        raise ConversionError(
            f"tensor {name} holds values beyond float32's range (max |x| = {float(np.abs(array[beyond]).max()):g}, "
            f"float32's largest is {FLOAT32_MAX:g}); a .tarn file holds weights in float32 at most"
        )


def _stored(name: str, array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    _check_finite(name, array)
    _check_float32_range(name, array)
    # Past this check a narrower dtype's overflow is the dtype's: f32 holds it.
    if dtype == BF16:
        out = to_bf16(array)
        if not np.all(np.isfinite(from_bf16(out))):
            raise ConversionError(f"tensor {name} overflows bf16 (max |x| = {np.abs(array).max():g}); use --dtype f32")
        _check_underflow(name, array, (out & 0x7FFF) == 0, "bf16")
        return out.astype(BF16.newbyteorder("<"))
    with np.errstate(over="ignore"):  # detected just below, with a better message
        out = np.ascontiguousarray(array, dtype=dtype.newbyteorder("<"))
    if not np.all(np.isfinite(out)):
        hint = "" if dtype == np.float32 else "; use --dtype f32"
        raise ConversionError(f"tensor {name} overflows {dtype.name} (max |x| = {np.abs(array).max():g}){hint}")
    if dtype != array.dtype:
        _check_underflow(name, array, out == 0, dtype.name)
    return out


# A narrow dtype's rounding may flush a tensor's tiniest values to 0. That is
# refused when it loses more than UNDERFLOW_SHARE of the tensor's nonzero
# values or more than UNDERFLOW_NORM of its norm: a tensor trained at a scale
# the dtype cannot hold (docs/decisions.md). An ordinary weight matrix loses
# a few values in a million, whose norm is far below the rounding's own.
UNDERFLOW_SHARE = 0.01
UNDERFLOW_NORM = 1e-3


def _check_underflow(name: str, array: np.ndarray, stored_zero: np.ndarray, kind: str) -> None:
    vanished = stored_zero & (array != 0)
    lost = int(np.count_nonzero(vanished))
    if not lost:
        return
    nonzero = int(np.count_nonzero(array))
    lost_values = array[vanished].astype(np.float64)  # squared in f64: f32 squares of 1e-40 are 0
    lost_norm = float(np.sqrt(np.sum(lost_values * lost_values)))
    largest = float(np.abs(array).max())
    refused = lost > UNDERFLOW_SHARE * nonzero
    # The tensor's norm is at least its largest value: computed in full (a
    # float64 copy of the tensor) only where that bound leaves it open.
    if refused or lost_norm / largest > UNDERFLOW_NORM:
        flat = array.reshape(-1).astype(np.float64)
        share = lost_norm / float(np.sqrt(np.dot(flat, flat)))
        refused = refused or share > UNDERFLOW_NORM
    if refused:
        raise ConversionError(
            f"tensor {name} underflows {kind}: {lost} of its {nonzero} nonzero values ({100 * lost / nonzero:.3g} %; "
            f"{share:.3g} of its norm) become 0 (max |x| = {largest:g}, largest lost {np.abs(lost_values).max():g}); "
            "use --dtype f32"
        )


def _check_labels(labels, config: ModelConfig):
    if labels is None:
        return None
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise ConversionError(f"labels must be a list of strings, not {type(labels).__name__} {labels!r:.40}")
    labels = list(labels)
    if not all(isinstance(label, str) for label in labels):
        raise ConversionError("labels must be strings")
    if len(labels) != config.output_dim:
        raise ConversionError(f"{len(labels)} labels given, but the model's output_dim is {config.output_dim}")
    seen = {}
    for i, label in enumerate(labels):
        _check_utf8(label, f"label {i}")
        if "\0" in label:  # labels become transcripts, which C reads to the first NUL
            raise ConversionError(f"label {i} ({label!r}) holds a NUL character")
        # The labels the runtime gives a meaning (the CTC blank, the word
        # separator) must each be one output; other labels may repeat (a
        # vocabulary padded with one filler).
        if label in ("<blank>", " ") and label in seen:
            raise ConversionError(f"labels {seen[label]} and {i} are both {label!r}: the runtime needs one of it")
        seen.setdefault(label, i)
    return labels


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def _build(config, stored: Dict[str, np.ndarray], labels, audio, meta, blocked: bool = True, dtype: str = "f32"):
    s = schema()
    layouts = {name: s.TensorLayout.DenseBlocked16 if blocked and is_dense_weight(name, array) else s.TensorLayout.RowMajor for name, array in stored.items()}
    raw = [
        (pack_dense(array) if layouts[name] == s.TensorLayout.DenseBlocked16 else array).tobytes()
        for name, array in stored.items()
    ]
    weight_bytes = sum(len(r) for r in raw)
    limit = min(flatbuffers.builder.Builder.MAX_BUFFER_SIZE, MAX_FILE_SIZE)  # one FlatBuffer addresses 2 GiB
    needed = _size_estimate(stored, raw, labels, audio, meta)
    if needed > limit:
        raise ConversionError(_too_large(f"about {needed}", weight_bytes, limit, dtype))
    try:
        blob, checksum = _flatbuffer(s, min(needed, limit), config, stored, raw, layouts, labels, audio, meta)
    except flatbuffers.builder.BuilderSizeError:
        # The estimate is near, not a bound: the builder may still run out.
        raise ConversionError(_too_large(f"more than {limit}", weight_bytes, limit, dtype)) from None
    if len(blob) > limit:  # the builder's own limit is above the runtime's
        raise ConversionError(_too_large(str(len(blob)), weight_bytes, limit, dtype))
    return blob, checksum


def file_checksum_at(model, data) -> Optional[int]:
    """The file offset of `model`'s file_checksum (a schema Model read from
    `data`), or None where the file has none (schema before 2.1)."""
    field = model._tab.Offset(FILE_CHECKSUM_SLOT)
    if not field:
        return None
    at = model._tab.Pos + field
    if struct.unpack_from("<Q", data, at)[0] != model.FileChecksum():
        raise AssertionError(f"FILE_CHECKSUM_SLOT {FILE_CHECKSUM_SLOT} is not file_checksum's slot in the generated code")
    return at


def file_checksum(data, at: int) -> int:
    """XXH64 (seed 0) of `data` with the 8 bytes at `at`, file_checksum's
    own, taken as zero: the value file_checksum holds."""
    view = memoryview(data)
    h = xxhash.xxh64(seed=0)
    h.update(view[:at])
    h.update(bytes(8))
    h.update(view[at + 8 :])
    return h.intdigest()


def _too_large(needed: str, weight_bytes: int, limit: int, dtype: str) -> str:
    narrower = {"f32": "; --dtype f16, bf16 or i8 stores a half or a quarter of f32's bytes", "f16": "; --dtype i8 stores fewer bytes", "bf16": "; --dtype i8 stores fewer bytes"}
    return (
        f"the model is too large for one .tarn file: it needs {needed} bytes ({weight_bytes} of weights, the rest "
        f"labels, metadata and tensor records), and one file (a FlatBuffer) holds at most {limit}{narrower.get(dtype, '')}"
    )


# Per-item bytes of the FlatBuffer besides the items' own bytes, rounded up:
# a buffer's table, vtable, offset, length and alignment padding; a tensor's
# table, vtable, offset, name's length, terminator and padding, and its
# shape's length; a string's offset, length, terminator and padding; a
# key-value's table, vtable and offset.
_BUFFER_OVERHEAD = ALIGNMENT + 32
_TENSOR_OVERHEAD = 64
_STRING_OVERHEAD = 12
_KEY_VALUE_OVERHEAD = 32
_FIXED_OVERHEAD = 4096  # the model table, its vtable, the audio table, the header


def _size_estimate(stored, raw, labels, audio, meta) -> int:
    """The file's size, near enough to refuse a model that cannot fit before
    building it: weights, tensor records, labels, metadata and audio."""
    size = _FIXED_OVERHEAD + sum(len(r) + _BUFFER_OVERHEAD for r in raw)
    size += sum(_TENSOR_OVERHEAD + len(name.encode("utf-8")) + 8 * array.ndim for name, array in stored.items())
    size += sum(_STRING_OVERHEAD + len(label.encode("utf-8")) for label in labels or ())
    size += sum(_KEY_VALUE_OVERHEAD + 2 * _STRING_OVERHEAD + len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in meta.items())
    size += sum(4 * len(v) + _STRING_OVERHEAD for v in (audio or {}).values() if isinstance(v, list))
    return size


def _flatbuffer(s, initial_size: int, config, stored, raw, layouts, labels, audio, meta):
    b = flatbuffers.Builder(initial_size)

    # Written back to front, so the last buffer goes first: buffers then lie
    # in the file in index order, as a reader streaming them would like.
    data = [0] * len(raw)
    data_ends = [0] * len(raw)  # each data start, counted from the end of the file
    for i in reversed(range(len(raw))):
        data[i], data_ends[i] = _aligned_bytes(b, raw[i])
    buffers = []
    for vector in data:
        s.BufferStart(b)
        s.BufferAddData(b, vector)
        buffers.append(s.BufferEnd(b))
    buffers_vector = _offsets_vector(b, buffers)

    tensor_tables = []
    for index, (name, array) in enumerate(stored.items()):
        name_offset = b.CreateString(name)
        shape_offset = b.CreateNumpyVector(np.array(array.shape, dtype="<i8"))
        s.TensorStart(b)
        s.TensorAddName(b, name_offset)
        kinds = {np.dtype(np.float16): s.DType.F16, np.dtype(np.int8): s.DType.I8, BF16: s.DType.BF16}
        s.TensorAddDtype(b, kinds.get(array.dtype, s.DType.F32))
        s.TensorAddShape(b, shape_offset)
        s.TensorAddBuffer(b, index)
        s.TensorAddLayout(b, layouts[name])
        tensor_tables.append(s.TensorEnd(b))
    tensors_vector = _offsets_vector(b, tensor_tables)

    labels_vector = _offsets_vector(b, [b.CreateString(label) for label in labels]) if labels is not None else None
    audio_table = _audio(b, s, audio) if audio is not None else None
    metadata_vector = _offsets_vector(b, [_key_value(b, s, k, v) for k, v in meta.items()])

    checksum = xxhash.xxh64(seed=0)
    for r in raw:
        checksum.update(r)
    checksum = checksum.intdigest()

    s.ModelStart(b)
    s.ModelAddSchemaVersion(b, s.CreateSchemaVersion(b, *SCHEMA_VERSION))
    for name, kind in model_fields():
        value = getattr(config, name)
        value = enum_value(s, name, value) if kind == "enum" else check_scalar(name, kind, value)
        getattr(s, "ModelAdd" + camel(name))(b, value)
    if labels_vector is not None:
        s.ModelAddLabels(b, labels_vector)
    if audio_table is not None:
        s.ModelAddAudio(b, audio_table)
    s.ModelAddTensors(b, tensors_vector)
    s.ModelAddBuffers(b, buffers_vector)
    s.ModelAddWeightChecksum(b, checksum)
    s.ModelAddMetadata(b, metadata_vector)
    # A placeholder other than the default, so that the builder stores the
    # field (it leaves out a default); the hash of the finished file replaces it.
    s.ModelAddFileChecksum(b, 0xFFFFFFFFFFFFFFFF)
    b.Finish(s.ModelEnd(b), file_identifier=FILE_IDENTIFIER)
    blob = b.Output()  # a copy of the builder's bytes, patched in place

    for i, end in enumerate(data_ends):  # the property the runtime relies on
        if (len(blob) - end) % ALIGNMENT:
            raise AssertionError(f"buffer {i} landed at offset {len(blob) - end}, not {ALIGNMENT}-aligned")
    at = file_checksum_at(s.Model.GetRootAs(blob, 0), blob)
    struct.pack_into("<Q", blob, at, file_checksum(blob, at))
    return blob, checksum


def _aligned_bytes(b: flatbuffers.Builder, raw: bytes):
    """A [ubyte] vector whose data starts on an ALIGNMENT boundary of the
    final file. flatc's Python BufferStartDataVector ignores the schema's
    force_align, so the vector is started here with the alignment spelled
    out; since the builder also pads the whole file to its largest
    alignment, an offset aligned from the end is aligned from the start.
    Returns (vector offset, data start counted from the end)."""
    b.StartVector(1, len(raw), ALIGNMENT)
    b.head = b.Head() - len(raw)
    b.Bytes[b.Head() : b.Head() + len(raw)] = raw
    data_start = b.Offset()
    return b.EndVector(), data_start


def _offsets_vector(b: flatbuffers.Builder, offsets: List[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _key_value(b, s, key: str, value: str) -> int:
    key_offset, value_offset = b.CreateString(key), b.CreateString(value)
    s.KeyValueStart(b)
    s.KeyValueAddKey(b, key_offset)
    s.KeyValueAddValue(b, value_offset)
    return s.KeyValueEnd(b)


def _audio(b, s, audio: dict) -> int:
    vectors = {
        key: b.CreateNumpyVector(np.asarray(audio[key], dtype="<f4"))
        for key, kind in AUDIO_FIELDS.items()
        if kind == "floats" and key in audio
    }
    s.AudioFrontEndStart(b)
    for key, kind in AUDIO_FIELDS.items():
        if key not in audio:
            continue
        add = getattr(s, "AudioFrontEndAdd" + camel(key))
        if kind == "floats":
            add(b, vectors[key])
        elif kind == "enum":
            add(b, enum_value(s, key, audio[key]))
        else:
            add(b, audio[key])
    return s.AudioFrontEndEnd(b)
