"""fast-transformers' TransformerEncoder (idiap/fast-transformers, built with
TransformerEncoderBuilder, attention "causal-linear" or "linear").

Its state_dict names the encoder as tarn does, except that favor's omega sits
under `inner_attention`. It does not record n_heads, the attention type, the
feature map or the activation, so those come from the user: a --config JSON
(the format of tests/data/fast_transformers/*/config.json, whose keys are the
builder's parameter names) or CLI flags. Sizes the tensors do record (layers,
dimensions, the final norm, favor's n_dims) are read from them when the
config leaves them out; given ones are checked against the tensors along
with every other shape.

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

# Keys that describe the model. n_heads and attention_type are required.
MODEL_KEYS = {
    "n_heads",
    "attention_type",
    "causal",  # checked against attention_type
    "feature_map",  # a name, or {"name": ..., favor's parameters}
    "activation",
    "n_layers",
    "query_dimensions",
    "value_dimensions",
    "d_model",  # checked: the builder makes it n_heads * value_dimensions
    "feed_forward_dimensions",
    "final_normalization",
    "norm_placement",  # fast-transformers is post-norm; checked
    "layer_norm_eps",
    "attention_eps",
    # favor's n_dims and stabilize, also accepted at the top level (the
    # builder has no parameters of these names, so they can mean nothing
    # else); where feature_map gives one too, the two must agree
    "n_dims",
    "stabilize",
}
# Sizes a config may give; each must be a positive integer.
SIZE_KEYS = {"n_heads", "n_layers", "query_dimensions", "value_dimensions", "d_model", "feed_forward_dimensions"}
# The builder's softmax_temp is the temperature of its softmax attentions
# (full, local, clustered, ...). It never reaches the linear or causal-linear
# attention, which are registered with only query_dimensions, feature_map and
# event_dispatcher, nor their feature map, so it does not change the model:
# ignored here. Favor's own temperature is given inside feature_map.
IGNORED_KEYS = {"softmax_temp"}
# Keys that describe where the checkpoint came from or how it was trained.
PROVENANCE_KEYS = {
    "source",
    "fast_transformers_commit",
    "torch_version",
    "builder",
    "recurrent_builder",
    "dropout",  # inference has none
    "seed",
    "T",
    "files",
    "state_dict",
}
FEATURE_MAP_KEYS = {"name", "feature_dim", "n_dims", "omega_shape", "softmax_temp", "stabilize"}
# How omega was drawn and when fast-transformers redraws it: the stored omega
# is what converts, so these do not matter here.
FEATURE_MAP_IGNORED = {"orthogonal", "redraw", "deterministic_eval"}

_OMEGA = re.compile(r"^layers\.(\d+)\.attention\.inner_attention\.feature_map\.omega$")
_LAYER = re.compile(r"^layers\.(\d+)\.")


def map_checkpoint(checkpoint: Checkpoint, config: Optional[dict] = None):
    if not config:
        raise ConversionError(
            "fast-transformers checkpoints do not record n_heads or the attention type: pass --config JSON "
            "(or --n-heads and --attention-type); keys: " + ", ".join(sorted(MODEL_KEYS))
        )
    tensors = {_OMEGA.sub(r"layers.\1.attention.feature_map.omega", name): t for name, t in checkpoint.tensors.items()}
    return model_config(config, tensors), tensors


def model_config(config: dict, tensors: dict):
    """A ModelConfig from a fast-transformers config and the (renamed) tensors."""
    known = MODEL_KEYS | PROVENANCE_KEYS | IGNORED_KEYS
    unknown = sorted(k for k in config if k not in known and not k.startswith("crosscheck_"))
    if unknown:
        raise ConversionError(f"unknown fast-transformers config keys {unknown}; known: {sorted(MODEL_KEYS)}")
    for key in ("n_heads", "attention_type"):
        if key not in config:
            raise ConversionError(f"the fast-transformers config needs {key}")
    attention = _choice("attention_type", config["attention_type"], ATTENTION_TYPES)
    if "causal" in config and config["causal"] != (attention == "causal"):
        raise ConversionError(f"causal = {config['causal']} contradicts attention_type {config['attention_type']!r}")
    if config.get("norm_placement", "post") != "post":
        raise ConversionError("fast-transformers' encoder layers are post-norm; norm_placement must be 'post'")
    activation = config.get("activation", "relu")
    if activation not in ACTIVATIONS:
        raise ConversionError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    for key in (k for k in config if k in SIZE_KEYS):
        _check_positive_int(key, config[key])
    heads = config["n_heads"]

    def size(key, tensor, axis, per_head=False):
        """A size from the config, else from a tensor's shape."""
        if key in config:
            return config[key]
        if tensor not in tensors:
            raise ConversionError(f"cannot read {key} from the checkpoint (it has no {tensor}): give {key} in the config")
        n = tensors[tensor].shape[axis]
        if per_head and n % heads:
            raise ConversionError(f"tensor {tensor}: {n} rows do not split into n_heads = {heads} heads")
        return n // heads if per_head else n

    if "n_layers" in config:
        layers = config["n_layers"]
    else:
        layers = 1 + max((int(m.group(1)) for m in map(_LAYER.match, tensors) if m), default=-1)
    d_key = size("query_dimensions", "layers.0.attention.query_projection.weight", 0, per_head=True)
    d_value = size("value_dimensions", "layers.0.attention.value_projection.weight", 0, per_head=True)
    d_model = heads * d_value
    if config.get("d_model", d_model) != d_model:
        raise ConversionError(f"d_model = {config['d_model']}, but n_heads * value_dimensions = {d_model}")
    feature_map = _feature_map(config, tensors, d_key)
    if attention == "bidirectional" and feature_map.get("favor_stabilize"):
        # LinearAttention hands Favor (N, L, H, D), so its max is over the
        # sequence; the runtime's stabiliser is per step (docs/decisions.md).
        raise ConversionError(
            "favor's stabilize with attention_type 'linear' does not convert: fast-transformers' LinearAttention "
            "takes the stabiliser's max squared norm over the whole sequence, tarn's runtime over the heads at each "
            "step (as fast-transformers' recurrent form), a different function"
        )

    return make_config(
        dict(
            d_model=d_model,
            num_layers=layers,
            num_heads=heads,
            d_key=d_key,
            d_value=d_value,
            d_ff=size("feed_forward_dimensions", "layers.0.linear1.weight", 0),
            input_kind="frames",
            input_dim=d_model,
            input_projection=False,
            position="none",
            activation=activation,
            norm_placement="post",
            norm_eps=config.get("layer_norm_eps", 1e-5),
            attention=attention,
            attention_eps=config.get("attention_eps", 1e-6),
            final_norm=config.get("final_normalization", "norm.weight" in tensors),
            **feature_map,
        )
    )


def _feature_map(config: dict, tensors: dict, d_key: int) -> dict:
    """The ModelConfig fields of the feature map, from a name or a dict."""
    spec = config.get("feature_map")
    if spec is None:  # the builder's default (null in a config written from its arguments)
        spec = "elu"
    spec = dict(spec) if isinstance(spec, dict) else {"name": spec}
    unknown = sorted(set(spec) - FEATURE_MAP_KEYS - FEATURE_MAP_IGNORED)
    if unknown:
        raise ConversionError(f"unknown feature_map keys {unknown}; known: {sorted(FEATURE_MAP_KEYS)}")
    # A null parameter is Favor's own default (n_dims=None is query_dimensions,
    # softmax_temp=None is 1/sqrt(query_dimensions)): as if not given.
    spec = {key: value for key, value in spec.items() if value is not None}
    for key in ("n_dims", "stabilize"):  # the flat form
        flat = config.get(key)
        if flat is None:
            continue
        if key in spec and (type(spec[key]) is not type(flat) or spec[key] != flat):
            raise ConversionError(f"{key} = {flat!r} contradicts feature_map {key} = {spec[key]!r}")
        spec[key] = flat
    kind = _choice("feature_map", spec.get("name"), FEATURE_MAPS)
    for key in ("n_dims", "feature_dim"):
        if key in spec:
            _check_positive_int(f"feature_map {key}", spec[key])
    if "stabilize" in spec and not isinstance(spec["stabilize"], bool):
        raise ConversionError(f"feature_map stabilize must be true or false, got {spec['stabilize']!r}")
    if kind != "favor+":
        favor_only = sorted(set(spec) & {"n_dims", "omega_shape", "softmax_temp", "stabilize"})
        if favor_only:
            raise ConversionError(f"{favor_only} apply to the favor feature map only, not {spec['name']!r}")
        if spec.get("feature_dim", d_key) != d_key:
            raise ConversionError(
                f"feature_dim = {spec['feature_dim']}, but {spec['name']} has one feature per query dimension ({d_key})"
            )
        return {"feature_map": kind}

    omega = "layers.0.attention.feature_map.omega"
    if "n_dims" in spec:
        n_dims = spec["n_dims"]
    elif "feature_dim" in spec:
        n_dims = spec["feature_dim"]
    elif omega in tensors:
        n_dims = 2 * tensors[omega].shape[1]
    else:
        n_dims = d_key  # the builder's default
    if spec.get("feature_dim", n_dims) != n_dims:
        raise ConversionError(f"favor feature_dim = {spec['feature_dim']} but n_dims = {n_dims}")
    temp = spec.get("softmax_temp")
    if temp is not None and (isinstance(temp, bool) or not isinstance(temp, (int, float)) or not 0 < temp < math.inf):
        # 0 too: Favor would use it, where a .tarn file's 0 means 1/sqrt(query_dimensions)
        raise ConversionError(f"feature_map softmax_temp must be a positive number, got {temp!r}")
    expected = [d_key, n_dims // 2]
    if "omega_shape" in spec and (not isinstance(spec["omega_shape"], (list, tuple)) or list(spec["omega_shape"]) != expected):
        raise ConversionError(f"favor omega_shape {spec['omega_shape']} is not [query_dimensions, n_dims/2] = {expected}")
    return {
        "feature_map": kind,
        "feature_dim": n_dims,
        "favor_softmax_temp": 1 / math.sqrt(d_key) if temp is None else temp,
        "favor_stabilize": spec.get("stabilize", False),
    }


def _check_positive_int(key, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConversionError(f"{key} must be a positive integer, got {value!r}")


def _choice(key, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ConversionError(f"{key} must be one of {sorted(choices)}, got {value!r}")
    return choices[value]
