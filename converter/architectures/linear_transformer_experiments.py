"""The paper authors' image-generation model (idiap/linear-transformer-experiments,
image-generation/main.py ImageGenerator, stepped by prediction.py's
RecurrentGenerator with the same weights).

A pixel's grey level (0..255) is looked up in `value_embedding` (d_model/2
wide) and followed by a sinusoidal position encoding of d_model/2
(`pos_embedding.pe`, concatenated, not added); a fast-transformers encoder
(TransformerEncoderBuilder: post-norm, final norm, relu, elu+1 features,
feed-forward 4 x d_model) follows; `predictor` maps d_model to 3 x mixtures
parameters of a discretised mixture of logistics over 256 levels (tarn's
output_distribution "logistic-mixture", the distribution their sample_mol
draws from).

Their checkpoints (utils.save_model) hold {"model_state", "optimizer_state",
"iteration"}; n_heads is not in them, so it comes from --config (their
command-line names: n_heads, and optionally d_query, n_layers, mixtures,
attention_type, checked against the tensors). Only attention_type
"causal-linear" is a linear transformer; their "full" and "reformer" models
have the same tensors but compute something else, so they are refused.
"""

import dataclasses
import math
import re
from typing import Optional

import numpy as np

from ..checkpoints import Checkpoint
from ..errors import ConversionError
from .fast_transformers import model_config as encoder_config

# Their PositionalEncoding computes in float32: position * div_term, rounded
# to float32, is off the exact angle by up to half a float32 step (1.2e-4 at
# position 3071, 4.9e-4 at 12287), so their table is compared with one
# computed their way, not with the exact sinusoid. Only their float32 exp
# cannot be repeated here bit for bit (torch's vectorised exp is within an ulp
# of exp, not correctly rounded): each column's div_term is taken as the
# float32 within DIV_TERM_ULPS of exp's value that the table fits best. What
# is left is sin's and cos's own float32 rounding (about 6e-8).
DIV_TERM_ULPS = 2
PE_TOLERANCE = 1e-6


def _their_table_error(table: np.ndarray) -> float:
    """The largest difference between a [length, d] table and their
    PositionalEncoding's (sin at even columns, cos at odd ones, as tarn's
    sinusoidal position), in numpy: a .safetensors checkpoint converts
    without torch."""
    length, d = table.shape
    positions = np.arange(length, dtype=np.float32)[:, None]
    # torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d)):
    # the float32 exponent exactly; its exp in float64, rounded to float32.
    exponent = np.arange(0, d, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / d)
    div_term = np.exp(exponent.astype(np.float64)).astype(np.float32)
    sines, cosines = table[:, 0::2].astype(np.float64), table[:, 1::2].astype(np.float64)
    best_sin, best_cos = np.full(sines.shape[1], np.inf), np.full(cosines.shape[1], np.inf)
    for step in range(-DIV_TERM_ULPS, DIV_TERM_ULPS + 1):
        candidate = (div_term.view(np.int32) + step).view(np.float32)
        angle = (positions * candidate).astype(np.float64)  # rounded to float32 first, as theirs
        best_sin = np.minimum(best_sin, np.abs(np.sin(angle) - sines).max(axis=0, initial=0.0))
        best_cos = np.minimum(best_cos, np.abs(np.cos(angle[:, : cosines.shape[1]]) - cosines).max(axis=0, initial=0.0))
    return float(max(best_sin.max(), best_cos.max(initial=0.0)))


LEVELS = 256  # their value_embedding rows and sample_mol's num_classes
# Their command-line names for the model; n_heads is required.
MODEL_KEYS = {"n_heads", "d_query", "n_layers", "mixtures", "attention_type"}
# Their other command-line options and the fixture script's provenance:
# training, data and reformer settings that do not change the function.
IGNORED_KEYS = {
    "dropout", "attention_dropout", "softmax_temp", "bits", "rounds", "chunk_size", "masked",
    "optimizer", "lr", "weight_decay", "iterations", "batch_size", "save_to", "continue_from",
    "save_frequency", "evaluate_frequency", "yield_frequency", "dataset", "dataset_directory",
    "sequence_length", "source", "torch_version", "seed", "state_dict",
}  # fmt: skip
_ENCODER = re.compile(r"^transformer\.")
# Their ImageGenerator's tensors besides the encoder's, all of them: any other
# would be dropped unconverted.
OUTSIDE_ENCODER = ("value_embedding.weight", "pos_embedding.pe", "predictor.weight", "predictor.bias")


def map_checkpoint(checkpoint: Checkpoint, config: Optional[dict] = None):
    config = dict(config or {})
    unknown = sorted(k for k in config if k not in MODEL_KEYS | IGNORED_KEYS and not k.startswith("crosscheck_"))
    if unknown:
        raise ConversionError(f"unknown linear-transformer-experiments config keys {unknown}; known: {sorted(MODEL_KEYS)}")
    if "n_heads" not in config:
        raise ConversionError(
            "their checkpoints do not record n_heads (their --n_heads, default 6): pass --config '{\"n_heads\": N}'"
        )
    attention = config.get("attention_type", "causal-linear")
    if attention != "causal-linear":
        raise ConversionError(f"attention_type {attention!r} is not a linear transformer; only 'causal-linear' converts")
    t = checkpoint.tensors
    for name in OUTSIDE_ENCODER:
        if name not in t:
            raise ConversionError(f"not their ImageGenerator: the checkpoint has no {name}")
    outside = sorted(n for n in t if not _ENCODER.match(n) and n not in OUTSIDE_ENCODER)
    if outside:
        raise ConversionError(f"unknown tensors (not in their ImageGenerator): {', '.join(outside)}")

    heads = config["n_heads"]
    encoder = {_ENCODER.sub("", n): a for n, a in t.items() if _ENCODER.match(n)}
    ft = {"n_heads": heads, "attention_type": "causal-linear", "feature_map": "elu", "activation": "relu"}
    if "n_layers" in config:
        ft["n_layers"] = config["n_layers"]
    base = encoder_config(ft, encoder)
    d, half = base.d_model, base.d_model // 2
    if config.get("d_query", base.d_key) != base.d_key or base.d_value != base.d_key:
        raise ConversionError(
            f"d_query = {config.get('d_query', base.d_key)}, but the projections give {base.d_key} per head for queries "
            f"and {base.d_value} for values with n_heads = {heads}"
        )
    if base.d_ff != 4 * d:
        raise ConversionError(f"feed-forward width {base.d_ff}: their builder makes it 4 x d_model = {4 * d}")

    embedding = t["value_embedding.weight"]
    if tuple(embedding.shape) != (LEVELS, half):
        raise ConversionError(f"tensor value_embedding.weight: expected shape [{LEVELS}, {half}], got {list(embedding.shape)}")
    pe = t["pos_embedding.pe"]
    if pe.ndim != 3 or pe.shape[0] != 1 or pe.shape[2] != half:
        raise ConversionError(f"tensor pos_embedding.pe: expected shape [1, sequence_length, {half}], got {list(pe.shape)}")
    pe_error = _their_table_error(pe[0])
    if not pe_error <= PE_TOLERANCE:  # a NaN is refused too
        raise ConversionError(
            f"pos_embedding.pe differs from the sinusoidal encoding (computed in float32, as their PositionalEncoding "
            f"computes it) by {pe_error:.3g} (> {PE_TOLERANCE}): not their PositionalEncoding"
        )
    outputs = t["predictor.weight"].shape[0]
    mixtures = config.get("mixtures", outputs // 3)
    if isinstance(mixtures, bool) or not isinstance(mixtures, int) or mixtures < 1:
        raise ConversionError(f"mixtures must be a positive int, got {mixtures!r}")
    if outputs != 3 * mixtures:
        raise ConversionError(f"tensor predictor.weight: {outputs} rows, expected 3 x mixtures = {3 * mixtures}")

    model = dataclasses.replace(
        base,
        input_kind="tokens",
        vocab_size=LEVELS,
        input_dim=0,
        input_projection=True,
        position="sinusoidal",
        position_concat_dim=half,
        output_dim=outputs,
        output_distribution="logistic-mixture",
        output_levels=LEVELS,
    )
    tensors = dict(encoder)
    tensors["token_embedding.weight"] = embedding
    tensors["head.weight"] = t["predictor.weight"]
    tensors["head.bias"] = t["predictor.bias"]
    return model, tensors
