"""tarn's model configuration: the hyper-parameters of docs/design.md §1 with the
checks the runtime makes, in plain Python (no torch), so that reading and
writing .tarn files (converter/reader.py, writer.py) and converting a
.safetensors file need neither torch nor the reference model."""

import dataclasses
import math
import struct

# The runtime's limits on a model (runtime/src/model.cc).
MAX_WIDTH, MAX_LAYERS, MAX_WINDOW, MAX_VOCAB = 1 << 16, 1024, 1024, 1 << 24
MAX_STATE = 1 << 28  # heads x feature_dim x d_value
INPUT_KINDS = ("tokens", "frames")
POSITIONS = ("none", "sinusoidal", "learned")
ACTIVATIONS = ("none", "relu", "gelu")
NORM_PLACEMENTS = ("post", "pre")
ATTENTIONS = ("causal", "bidirectional")
FEATURE_MAPS = ("elu+1", "relu", "favor+")
OUTPUT_DISTRIBUTIONS = ("none", "logistic-mixture")


def as_float32(value: float) -> float:
    """The value a file stores for a float field: rounded to float32, inf
    where it is beyond float32's range."""
    try:
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    except OverflowError:  # beyond float32's range, or even float64's
        return math.inf if value > 0 else -math.inf


def same_as_stored(written, read) -> bool:
    """Equal as a file stores them: floats as float32, lists item by item."""
    if isinstance(written, (list, tuple)):
        return isinstance(read, list) and len(read) == len(written) and all(map(same_as_stored, written, read))
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (written, read))
    if numbers and (isinstance(written, float) or isinstance(read, float)):  # a float field given an int reads back a float
        return as_float32(written) == as_float32(read)
    return type(written) is type(read) and written == read


@dataclasses.dataclass
class ModelConfig:
    """Every hyper-parameter of a tarn model (the fields of schema Model)."""

    d_model: int
    num_layers: int
    num_heads: int
    d_key: int
    d_value: int
    d_ff: int
    input_kind: str = "tokens"
    vocab_size: int = 0
    embedding_scale: float = 1.0
    input_dim: int = 0  # frames: width of one frame
    stack_window: int = 1  # frames concatenated per step
    stack_hop: int = 1  # frames consumed per step
    input_projection: bool = True  # frames: project stacked frames to d_model
    input_activation: str = "none"
    position: str = "none"
    max_positions: int = 0
    activation: str = "relu"
    norm_placement: str = "post"
    norm_eps: float = 1e-5
    attention: str = "causal"
    feature_map: str = "elu+1"
    feature_dim: int = 0  # C; 0 means d_key (elu+1, relu)
    attention_eps: float = 1e-6
    favor_softmax_temp: float = 0.0  # 0 means 1/sqrt(d_key)
    favor_stabilize: bool = False
    conv_kernel: int = 0  # causal depthwise convolution width, 0 = none
    final_norm: bool = False
    output_dim: int = 0  # 0 = no head
    # >0: the position encoding, this wide, follows a token embedding of
    # d_model - position_concat_dim (concatenated, not added).
    position_concat_dim: int = 0
    # What the outputs parameterise: "none", or "logistic-mixture" (a
    # distribution over output_levels grey levels: logistic_mixture_levels).
    output_distribution: str = "none"
    output_levels: int = 0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value, kind = getattr(self, f.name), getattr(f.type, "__name__", f.type)
            if kind == "int" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{f.name} must be a non-negative integer, got {value!r}")
            if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or not math.isfinite(as_float32(value))):
                raise ValueError(f"{f.name} must be a finite float32 number, got {value!r}")
        # The runtime's limits (runtime/src/model.cc), so that a file it would
        # refuse is not written.
        for name in ("d_model", "num_heads", "d_key", "d_value", "d_ff", "num_layers"):
            most = MAX_LAYERS if name == "num_layers" else MAX_WIDTH
            if not 1 <= getattr(self, name) <= most:
                raise ValueError(f"{name} = {getattr(self, name)} is outside [1, {most}]")
        # Each where the runtime checks it: a field a model does not use (a
        # frame model's vocab_size) is not checked there either.
        limits = [("feature_dim", MAX_WIDTH), ("output_dim", MAX_VOCAB)]
        if self.input_kind == "tokens":
            limits.append(("vocab_size", MAX_VOCAB))
        else:
            limits += [("input_dim", MAX_WIDTH), ("stack_window", MAX_WINDOW)]
        if self.position == "learned":
            limits.append(("max_positions", MAX_VOCAB))
        if self.output_distribution == "logistic-mixture":
            limits.append(("output_levels", MAX_VOCAB))
        for name, most in limits:
            if getattr(self, name) > most:
                raise ValueError(f"{name} = {getattr(self, name)} is more than {most}")
        # The file stores floats as float32: an eps that rounds to 0 is 0.
        if not as_float32(self.norm_eps) > 0 or self.attention_eps < 0:
            raise ValueError(f"norm_eps must be positive and attention_eps >= 0 as float32, got {self.norm_eps}, "
                             f"{self.attention_eps}")
        if self.conv_kernel > MAX_WINDOW:
            raise ValueError(f"conv_kernel = {self.conv_kernel} is more than {MAX_WINDOW}")
        _check_choice("input_kind", self.input_kind, INPUT_KINDS)
        _check_choice("position", self.position, POSITIONS)
        _check_choice("activation", self.activation, ACTIVATIONS[1:])
        _check_choice("input_activation", self.input_activation, ACTIVATIONS)
        _check_choice("norm_placement", self.norm_placement, NORM_PLACEMENTS)
        _check_choice("attention", self.attention, ATTENTIONS)
        _check_choice("feature_map", self.feature_map, FEATURE_MAPS)
        if self.feature_dim == 0 and self.feature_map != "favor+":
            self.feature_dim = self.d_key
        if self.feature_map == "favor+":
            if self.feature_dim <= 0 or self.feature_dim % 2:
                raise ValueError("favor+ needs an even feature_dim > 0")
            if self.favor_softmax_temp == 0.0:
                self.favor_softmax_temp = 1.0 / math.sqrt(self.d_key)
            if not as_float32(self.favor_softmax_temp) > 0:
                raise ValueError(f"favor_softmax_temp must be positive, got {self.favor_softmax_temp}")
        elif self.feature_dim != self.d_key:
            raise ValueError(f"{self.feature_map} needs feature_dim == d_key")
        if self.num_heads * self.feature_dim * self.d_value > MAX_STATE:
            raise ValueError(f"the attention state, num_heads x feature_dim x d_value = "
                             f"{self.num_heads * self.feature_dim * self.d_value}, is more than {MAX_STATE}")
        if self.input_kind == "tokens" and self.vocab_size <= 0:
            raise ValueError("token input needs vocab_size > 0")
        if self.input_kind == "frames":
            if self.input_dim <= 0:
                raise ValueError("frame input needs input_dim > 0")
            if not 1 <= self.stack_hop <= self.stack_window:
                raise ValueError("frame stacking needs 1 <= stack_hop <= stack_window")
            if not self.input_projection and self.input_dim * self.stack_window != self.d_model:
                raise ValueError("without input_projection, input_dim * stack_window must equal d_model")
        if self.position == "learned" and self.max_positions <= 0:
            raise ValueError("learned position needs max_positions > 0")
        if self.position_concat_dim:
            if self.input_kind != "tokens" or self.position != "sinusoidal":
                raise ValueError("position_concat_dim needs token input and sinusoidal position")
            if not 0 < self.position_concat_dim < self.d_model:
                raise ValueError("position_concat_dim must be in (0, d_model)")
        _check_choice("output_distribution", self.output_distribution, OUTPUT_DISTRIBUTIONS)
        if self.output_distribution == "logistic-mixture":
            if self.output_dim <= 0 or self.output_dim % 3:
                raise ValueError("a logistic mixture needs output_dim = 3 x mixtures > 0")
            if self.output_levels < 2:
                raise ValueError("a logistic mixture needs output_levels >= 2")
        elif self.output_levels:
            raise ValueError("output_levels applies to a logistic-mixture output only")

    @property
    def embedding_dim(self) -> int:
        """Width of a token's embedding: d_model less a concatenated position."""
        return self.d_model - self.position_concat_dim

    @property
    def stacked_dim(self) -> int:
        return self.input_dim * self.stack_window

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown model config keys: {unknown}")
        return cls(**d)


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
