"""fast-transformers' TransformerEncoder (idiap/fast-transformers, built with
TransformerEncoderBuilder, attention "causal-linear" or "linear").

Its state_dict names the encoder as tarn does, except that favor's omega sits
under `inner_attention`. It does not record n_heads, the attention type, the
feature map or the activation, so those come from the user: a --config JSON
using the builder's parameter names, or CLI flags. Sizes the tensors do
record (layers, dimensions, the final norm, favor's n_dims) are read from
them when the config leaves them out; given ones are checked against the
tensors along with every other shape.

The encoder takes d_model vectors directly, so the tarn model has frame input
of width d_model, no input projection, no position and no head.
"""

import math
import re
from typing import Optional

from ..checkpoints import Checkpoint
from ..errors import ConversionError
from ..fields import make_config

ATTENTION_TYPES = {"causal-linear": "causal", "linear": "bidirectional"}
FEATURE_MAPS = {"elu": "elu+1", "elu+1": "elu+1", "relu": "relu", "favor": "favor+", "favor+": "favor+"}
ACTIVATIONS = ("relu", "gelu")

# Builder parameter -> what it means here. Required: n_heads, attention_type.
CONFIG_KEYS = {
    "n_heads": "heads per layer (not in the state_dict)",
    "attention_type": f"one of {sorted(ATTENTION_TYPES)}",
    "feature_map": f"one of {sorted(FEATURE_MAPS)} (default elu)",
    "activation": "relu (default) or gelu",
    "n_layers": "read from the tensors if absent",
    "query_dimensions": "per head; read from the tensors if absent",
    "value_dimensions": "per head; read from the tensors if absent",
    "feed_forward_dimensions": "read from the tensors if absent",
    "final_normalization": "read from the tensors (norm.weight) if absent",
    "n_dims": "favor: feature count; read from omega if absent",
    "softmax_temp": "favor: default 1/sqrt(query_dimensions)",
    "stabilize": "favor: default false",
    "eps": "attention denominator epsilon, default 1e-6",
}

_OMEGA = re.compile(r"^layers\.(\d+)\.attention\.inner_attention\.feature_map\.omega$")
_LAYER = re.compile(r"^layers\.(\d+)\.")


def map_checkpoint(checkpoint: Checkpoint, config: Optional[dict] = None):
    if not config:
        raise ConversionError(
            "fast-transformers checkpoints do not record n_heads or the attention type: pass --config JSON "
            "(or --n-heads and --attention-type); keys: " + ", ".join(sorted(CONFIG_KEYS))
        )
    tensors = {_OMEGA.sub(r"layers.\1.attention.feature_map.omega", name): t for name, t in checkpoint.tensors.items()}
    return model_config(config, tensors), tensors


def model_config(config: dict, tensors: dict):
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ConversionError(f"unknown fast-transformers config keys {unknown}; known: {sorted(CONFIG_KEYS)}")
    for key in ("n_heads", "attention_type"):
        if key not in config:
            raise ConversionError(f"the fast-transformers config needs {key} ({CONFIG_KEYS[key]})")
    attention = _choice(config, "attention_type", ATTENTION_TYPES)
    feature_map = _choice(config, "feature_map", FEATURE_MAPS, default="elu")
    activation = config.get("activation", "relu")
    if activation not in ACTIVATIONS:
        raise ConversionError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")

    heads = config["n_heads"]
    if not isinstance(heads, int) or heads <= 0:
        raise ConversionError(f"n_heads must be a positive integer, got {heads!r}")

    def read(key, tensor, axis, per_head=False):
        """A size from the config, else from a tensor's shape."""
        if key in config:
            return config[key]
        if tensor not in tensors:
            raise ConversionError(f"cannot read {key} from the checkpoint: it has no tensor {tensor}; give {key} in the config")
        size = tensors[tensor].shape[axis]
        if per_head and size % heads:
            raise ConversionError(f"tensor {tensor}: {size} rows do not split into n_heads = {heads} heads")
        return size // heads if per_head else size

    layers = config.get("n_layers")
    if layers is None:
        indices = {int(m.group(1)) for m in map(_LAYER.match, tensors) if m}
        layers = max(indices) + 1 if indices else 0
    d_key = read("query_dimensions", "layers.0.attention.query_projection.weight", 0, per_head=True)
    d_value = read("value_dimensions", "layers.0.attention.value_projection.weight", 0, per_head=True)
    d_ff = read("feed_forward_dimensions", "layers.0.linear1.weight", 0)
    final_norm = config.get("final_normalization", "norm.weight" in tensors)

    favor = {}
    if feature_map == "favor+":
        n_dims = read("n_dims", "layers.0.attention.feature_map.omega", 1) * (1 if "n_dims" in config else 2)
        temp = config.get("softmax_temp")
        favor = {
            "feature_dim": n_dims,
            "favor_softmax_temp": 1 / math.sqrt(d_key) if temp is None else temp,
            "favor_stabilize": config.get("stabilize", False),
        }
    d_model = heads * d_value  # as the builder sizes the model
    return make_config(
        dict(
            d_model=d_model,
            num_layers=layers,
            num_heads=heads,
            d_key=d_key,
            d_value=d_value,
            d_ff=d_ff,
            input_kind="frames",
            input_dim=d_model,
            input_projection=False,
            position="none",
            activation=activation,
            norm_placement="post",
            attention=attention,
            feature_map=feature_map,
            attention_eps=config.get("eps", 1e-6),
            final_norm=final_norm,
            **favor,
        )
    )


def _choice(config, key, choices, default=None):
    value = config.get(key, default)
    if value not in choices:
        raise ConversionError(f"{key} must be one of {sorted(choices)}, got {value!r}")
    return choices[value]
