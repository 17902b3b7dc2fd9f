"""Reads a .tarn file back into (config, tensors, metadata), for inspection
and round-trip tests. Checks what the writer promises: identifier, schema
major version, each tensor's byte count, the checksums."""

import dataclasses
import math
from typing import Dict, List, Optional, Tuple

import numpy as np
import xxhash

from .errors import ConversionError, as_path
from .fields import AUDIO_FIELDS, OLDEST_SCHEMA_MAJOR, SCHEMA_VERSION, camel, enum_name, model_fields
from .config import ModelConfig
from .schema_code import schema
from .writer import FILE_IDENTIFIER, file_checksum, file_checksum_at, unpack_dense

# BF16 tensors come back as np.uint16 bits (writer.from_bf16 gives the values).
_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "I8": np.dtype("i1"), "BF16": np.dtype("<u2")}


@dataclasses.dataclass
class TarnFile:
    config: ModelConfig
    tensors: Dict[str, np.ndarray]  # as stored: float32, float16, int8 (with NAME.scale) or uint16 (bf16 bits), row-major
    layouts: Dict[str, str]  # "row-major" or "blocked" (schema TensorLayout), as stored
    metadata: Dict[str, str]
    labels: Optional[List[str]]
    audio: Optional[dict]
    schema_version: Tuple[int, int]
    weight_checksum: int  # as stored
    checksum_ok: bool  # whether it matches the buffers
    file_checksum: Optional[int]  # as stored; None before schema 2.1
    # Whether it matches the file's bytes; None before 2.1, False for a 2.1
    # file without one (every 2.1 file carries one: it was lost).
    file_checksum_ok: Optional[bool]
    tensor_offsets: Dict[str, int]  # file offset of each tensor's bytes
    file_size: int


def read_tarn(path) -> TarnFile:
    path = as_path(path, "model file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConversionError(f"cannot read {path}: {e}") from e
    if len(data) < 8 or data[4:8] != FILE_IDENTIFIER:
        raise ConversionError(f"{path} is not a .tarn file (no {FILE_IDENTIFIER.decode()} identifier)")
    s = schema()
    try:
        return _read(s, s.Model.GetRootAs(data, 0), data)
    except ConversionError as e:
        raise ConversionError(f"{path}: {e}") from None
    except Exception as e:  # the generated accessors do no bounds checks of their own
        raise ConversionError(f"{path}: damaged file ({type(e).__name__}: {e})") from None


def _read(s, model, data: bytes) -> TarnFile:
    version = model.SchemaVersion()
    if version is None:
        raise ConversionError("no schema_version")
    major, minor = version.Major(), version.Minor()
    if not OLDEST_SCHEMA_MAJOR <= major <= SCHEMA_VERSION[0]:
        raise ConversionError(
            f"schema version {major}.{minor}; this converter reads majors {OLDEST_SCHEMA_MAJOR} to {SCHEMA_VERSION[0]}"
        )

    fields = {}
    for name, kind in model_fields():
        value = getattr(model, camel(name))()
        fields[name] = enum_name(s, name, value) if kind == "enum" else _plain(value)
    try:
        config = ModelConfig(**fields)
    except ValueError as e:
        raise ConversionError(f"inconsistent hyper-parameters: {e}") from None

    base = np.frombuffer(data, dtype=np.uint8).ctypes.data
    buffers, checksum = [], xxhash.xxh64(seed=0)
    for i in range(model.BuffersLength()):
        raw = model.Buffers(i).DataAsNumpy()
        if isinstance(raw, int):  # the accessor's way of saying "absent"
            raw = np.zeros(0, dtype=np.uint8)
        buffers.append((raw, raw.ctypes.data - base if raw.size else 0))
        checksum.update(raw.tobytes())

    tensors, offsets, layouts = {}, {}, {}
    for i in range(model.TensorsLength()):
        t = model.Tensors(i)
        name = t.Name().decode("utf-8")
        dtype_name = next((k for k in _DTYPES if getattr(s.DType, k) == t.Dtype()), None)
        if dtype_name is None:
            raise ConversionError(f"tensor {name}: unknown dtype {t.Dtype()}")
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        if t.Buffer() >= len(buffers):
            raise ConversionError(f"tensor {name}: buffer {t.Buffer()} out of range ({len(buffers)} buffers)")
        raw, offset = buffers[t.Buffer()]
        dtype = _DTYPES[dtype_name]
        layout = t.Layout()
        if layout == s.TensorLayout.DenseBlocked16:
            if len(shape) != 2:
                raise ConversionError(f"tensor {name}: a blocked tensor must be 2-D, its shape is {list(shape)}")
            elements = -(-shape[0] // 16) * 16 * shape[1]
        elif layout == s.TensorLayout.RowMajor:
            elements = math.prod(shape)
        else:
            raise ConversionError(f"tensor {name}: unknown layout {layout}")
        if raw.size != elements * dtype.itemsize:
            raise ConversionError(
                f"tensor {name}: buffer holds {raw.size} bytes, shape {list(shape)} of {dtype_name} needs "
                f"{elements * dtype.itemsize}"
            )
        values = raw.view(dtype).astype(dtype.newbyteorder("="))
        if layout == s.TensorLayout.DenseBlocked16:
            tensors[name], layouts[name] = unpack_dense(values, *shape), "blocked"
        else:
            tensors[name], layouts[name] = values.reshape(shape), "row-major"
        offsets[name] = offset

    labels = [model.Labels(i).decode("utf-8") for i in range(model.LabelsLength())] if not model.LabelsIsNone() else None
    metadata = {}
    for i in range(model.MetadataLength()):
        kv = model.Metadata(i)
        metadata[kv.Key().decode("utf-8")] = (kv.Value() or b"").decode("utf-8")
    stored = model.WeightChecksum()
    at = file_checksum_at(model, data)
    whole = None if at is None else model.FileChecksum()
    return TarnFile(
        config=config,
        tensors=tensors,
        layouts=layouts,
        metadata=metadata,
        labels=labels,
        audio=_audio(s, model.Audio()),
        schema_version=(major, minor),
        weight_checksum=stored,
        checksum_ok=checksum.intdigest() == stored,
        file_checksum=whole,
        file_checksum_ok=(None if (major, minor) < (2, 1) else False) if at is None else file_checksum(data, at) == whole,
        tensor_offsets=offsets,
        file_size=len(data),
    )


def _plain(value):
    # Floats are stored as float32; the shortest decimal that rounds to the
    # same float32 gives back the value the config was written with (1e-05,
    # not 9.999999747378752e-06).
    if isinstance(value, float):
        return float(str(np.float32(value)))
    return value


def _audio(s, audio) -> Optional[dict]:
    if audio is None:
        return None
    out = {}
    for key, kind in AUDIO_FIELDS.items():
        if kind == "floats":
            if not getattr(audio, camel(key) + "IsNone")():
                out[key] = [_plain(float(v)) for v in getattr(audio, camel(key) + "AsNumpy")()]
        elif kind == "enum":
            out[key] = enum_name(s, key, getattr(audio, camel(key))())
        else:
            out[key] = _plain(getattr(audio, camel(key))())
    return out
