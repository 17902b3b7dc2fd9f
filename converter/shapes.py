"""The tensors a model must hold, derived from its ModelConfig: the one table
of names and shapes (schema/tarn.fbs lists the same at its bottom)."""

from typing import Dict, Mapping, Tuple

import numpy as np

from .errors import ConversionError
from .config import ModelConfig

Shape = Tuple[int, ...]


def expected_shapes(c: ModelConfig) -> Dict[str, Shape]:
    """Canonical tensor name -> shape, in the order they are written."""
    qk, v = c.num_heads * c.d_key, c.num_heads * c.d_value
    shapes: Dict[str, Shape] = {}
    if c.input_kind == "tokens":
        shapes["token_embedding.weight"] = (c.vocab_size, c.embedding_dim)
    elif c.input_projection:
        shapes["input_projection.weight"] = (c.d_model, c.stacked_dim)
        shapes["input_projection.bias"] = (c.d_model,)
    if c.position == "learned":
        shapes["position_embedding.weight"] = (c.max_positions, c.d_model)
    for i in range(c.num_layers):
        p = f"layers.{i}."
        for name, rows in (("query", qk), ("key", qk), ("value", v)):
            shapes[f"{p}attention.{name}_projection.weight"] = (rows, c.d_model)
            shapes[f"{p}attention.{name}_projection.bias"] = (rows,)
        shapes[f"{p}attention.out_projection.weight"] = (c.d_model, v)
        shapes[f"{p}attention.out_projection.bias"] = (c.d_model,)
        if c.feature_map == "favor+":
            shapes[f"{p}attention.feature_map.omega"] = (c.d_key, c.feature_dim // 2)
        if c.conv_kernel:
            shapes[f"{p}conv.weight"] = (c.d_model, c.conv_kernel)
            shapes[f"{p}conv.bias"] = (c.d_model,)
        shapes[f"{p}linear1.weight"] = (c.d_ff, c.d_model)
        shapes[f"{p}linear1.bias"] = (c.d_ff,)
        shapes[f"{p}linear2.weight"] = (c.d_model, c.d_ff)
        shapes[f"{p}linear2.bias"] = (c.d_model,)
        for norm in ("norm1", "norm2"):
            shapes[f"{p}{norm}.weight"] = (c.d_model,)
            shapes[f"{p}{norm}.bias"] = (c.d_model,)
    if c.final_norm:
        shapes["norm.weight"] = (c.d_model,)
        shapes["norm.bias"] = (c.d_model,)
    if c.output_dim:
        shapes["head.weight"] = (c.output_dim, c.d_model)
        shapes["head.bias"] = (c.output_dim,)
    return shapes


def check_tensors(tensors: Mapping[str, np.ndarray], config: ModelConfig) -> Dict[str, np.ndarray]:
    """The tensors in canonical order, after checking that they are exactly
    the ones the config implies, each with its shape and a float dtype."""
    if not isinstance(tensors, Mapping):
        raise ConversionError(f"expected the tensors as a mapping of names to numpy arrays, got {type(tensors).__name__}")
    for name, array in tensors.items():
        if not isinstance(name, str):
            raise ConversionError(f"tensor key {name!r} ({type(name).__name__}) is not a name; expected str keys such as 'head.weight'")
        if not isinstance(array, np.ndarray):
            raise ConversionError(f"tensor {name}: expected a numpy array, got {type(array).__name__}")
    expected = expected_shapes(config)
    missing = [n for n in expected if n not in tensors]
    unknown = sorted(n for n in tensors if n not in expected)
    problems = []
    if missing:
        problems.append(f"missing tensors: {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown tensors (not used by this config): {', '.join(unknown)}")
    for name, shape in expected.items():
        if name not in tensors:
            continue
        actual = tuple(tensors[name].shape)
        if actual != shape:
            problems.append(f"tensor {name}: expected shape {list(shape)}, got {list(actual)}")
        elif tensors[name].dtype.kind != "f":
            problems.append(f"tensor {name}: expected a floating-point tensor, got {tensors[name].dtype}")
    if problems:
        if len(problems) == 1:
            raise ConversionError(problems[0])
        raise ConversionError("\n  ".join(["tensors do not match the config:"] + problems))
    return {name: tensors[name] for name in expected}
