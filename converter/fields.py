"""How ModelConfig and the audio recipe map onto the schema's tables.

Each ModelConfig field has the schema field of the same name (snake_case in
the schema, CamelCase in the generated accessors); string choices map to
schema enums through ENUMS. The writer and the reader both use these tables,
so the two directions cannot drift apart.
"""

import dataclasses
import math

from .errors import ConversionError
from .config import ModelConfig, as_float32

SCHEMA_VERSION = (2, 1)
OLDEST_SCHEMA_MAJOR = 1  # major 1 files read as they did (schema/tarn.fbs's log)

# config field -> (schema enum, {config string: enum member})
_ACTIVATION = ("Activation", {"none": "None_", "relu": "Relu", "gelu": "Gelu"})
ENUMS = {
    "input_kind": ("InputKind", {"tokens": "Tokens", "frames": "Frames"}),
    "input_activation": _ACTIVATION,
    "activation": _ACTIVATION,
    "position": ("Position", {"none": "None_", "sinusoidal": "Sinusoidal", "learned": "Learned"}),
    "norm_placement": ("NormPlacement", {"post": "Post", "pre": "Pre"}),
    "attention": ("AttentionKind", {"causal": "Causal", "bidirectional": "Bidirectional"}),
    "feature_map": ("FeatureMap", {"elu+1": "EluPlusOne", "relu": "Relu", "favor+": "FavorPlus"}),
    "window": ("WindowFunction", {"hamming": "Hamming", "hann": "Hann", "povey": "Povey"}),
    "output_distribution": ("OutputDistribution", {"none": "None_", "logistic-mixture": "LogisticMixture"}),
}

# AudioFrontEnd fields -> kind; the defaults are the schema's.
AUDIO_FIELDS = {
    "sample_rate": "uint",
    "window_length": "uint",
    "hop_length": "uint",
    "fft_size": "uint",
    "num_mel_bins": "uint",
    "low_frequency": "float",
    "high_frequency": "float",
    "preemphasis": "float",
    "remove_dc_offset": "bool",
    "window": "enum",
    "log_floor": "float",
    "feature_mean": "floats",
    "feature_std": "floats",
    "warp": "float",
}
AUDIO_REQUIRED = ("sample_rate", "window_length", "hop_length", "fft_size", "num_mel_bins")
AUDIO_DEFAULTS = {"preemphasis": 0.97, "remove_dc_offset": True, "window": "hamming", "warp": 1.0}
# The runtime's front end's limits (runtime/speech/front_end.cc).
AUDIO_MAX_LENGTH, AUDIO_MAX_MEL_BINS = 1 << 20, 4096
AUDIO_WARP_BOUNDARY_HZ = 4800.0  # where the vocal tract warp's two pieces meet


def camel(name: str) -> str:
    """d_ff -> DFf, the name flatc gives a field's accessors."""
    return "".join(part.capitalize() for part in name.split("_"))


def model_fields():
    """(name, kind) for every ModelConfig field, kind one of uint, float,
    bool, enum, from the dataclass's own annotations."""
    kinds = {"int": "uint", "float": "float", "bool": "bool", "str": "enum"}
    # f.type is the class, or its name under postponed annotations.
    return [(f.name, kinds[getattr(f.type, "__name__", f.type)]) for f in dataclasses.fields(ModelConfig)]


def enum_value(schema, field: str, value: str) -> int:
    enum, members = ENUMS[field]
    if value not in members:
        raise ConversionError(f"{field} must be one of {sorted(members)}, got {value!r}")
    return getattr(getattr(schema, enum), members[value])


def enum_name(schema, field: str, value: int) -> str:
    enum, members = ENUMS[field]
    for name, member in members.items():
        if getattr(getattr(schema, enum), member) == value:
            return name
    raise ConversionError(f"{field}: unknown enum value {value} (a newer schema?)")


def check_scalar(where: str, kind: str, value):
    """The value as the schema stores it, or a ConversionError saying why not."""
    if kind == "uint":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
            raise ConversionError(f"{where} must be an integer in [0, 2^32), got {value!r}")
        return value
    if kind == "float":
        # The file holds float32: checks that follow see what it will hold
        # (a log_floor of 1e-50 is 0 there, 1e39 is inf).
        stored = as_float32(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not math.isfinite(stored):
            raise ConversionError(f"{where} must be a finite float32 number, got {value!r}")
        return stored
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConversionError(f"{where} must be true or false, got {value!r}")
        return value
    raise AssertionError(kind)


def check_audio_fits(audio: dict, config: ModelConfig) -> None:
    """The recognizer feeds the front end's features to the model as its
    frames, and refuses a file where they do not fit
    (runtime/speech/recognizer.cc): such a file is not written."""
    if config.input_kind != "frames":
        raise ConversionError("an audio front end needs a model that takes frames (input_kind 'frames'); this one takes tokens")
    if audio["num_mel_bins"] != config.input_dim:
        raise ConversionError(
            f"audio num_mel_bins {audio['num_mel_bins']} differs from the model's input_dim {config.input_dim}: "
            "the front end's features are the model's frames"
        )


def normalise_audio(audio: dict) -> dict:
    """A complete, checked AudioFrontEnd dict (defaults filled in)."""
    unknown = sorted(set(audio) - set(AUDIO_FIELDS))
    if unknown:
        raise ConversionError(f"unknown audio front-end keys {unknown}; known: {sorted(AUDIO_FIELDS)}")
    missing = [k for k in AUDIO_REQUIRED if k not in audio]
    if missing:
        raise ConversionError(f"audio front-end lacks {missing}")
    out = dict(AUDIO_DEFAULTS)
    for key, value in audio.items():
        kind = AUDIO_FIELDS[key]
        if kind == "enum":
            if not isinstance(value, str) or value not in ENUMS[key][1]:
                raise ConversionError(f"audio {key} must be one of {sorted(ENUMS[key][1])}, got {value!r}")
            out[key] = value
        elif kind == "floats":
            if not isinstance(value, (list, tuple)):
                raise ConversionError(f"audio {key} must be a list of num_mel_bins numbers, got {value!r}")
            values = [check_scalar(f"audio {key}[{i}]", "float", v) for i, v in enumerate(value)]
            if len(values) != audio["num_mel_bins"]:
                raise ConversionError(
                    f"audio {key} has {len(values)} values, expected num_mel_bins = {audio['num_mel_bins']}"
                )
            out[key] = values
        else:
            out[key] = check_scalar(f"audio {key}", kind, value)
    # What the runtime's front end refuses (CheckAudioFrontEnd), refused
    # here before a file is written that would load but never listen.
    rate = out["sample_rate"]
    if rate == 0:
        raise ConversionError("audio sample_rate 0 is not supported: it must be a positive rate in Hz")
    for key, least in (("window_length", 2), ("hop_length", 1)):
        if not least <= out[key] <= AUDIO_MAX_LENGTH:
            raise ConversionError(f"audio {key} {out[key]} samples is outside [{least}, {AUDIO_MAX_LENGTH}]")
    if out["fft_size"] % 2 or not out["window_length"] <= out["fft_size"] <= AUDIO_MAX_LENGTH:
        raise ConversionError(
            f"audio fft_size {out['fft_size']} is not supported: it must be even, at least window_length "
            f"({out['window_length']}) and at most {AUDIO_MAX_LENGTH}"
        )
    if not 1 <= out["num_mel_bins"] <= AUDIO_MAX_MEL_BINS:
        raise ConversionError(f"audio num_mel_bins {out['num_mel_bins']} is outside [1, {AUDIO_MAX_MEL_BINS}]")
    low, high = out.get("low_frequency", 0.0), out.get("high_frequency", 0.0)
    if not 0 <= low < high <= rate / 2:
        raise ConversionError(
            f"audio mel range low_frequency {low:g} Hz to high_frequency {high:g} Hz is not supported: it must "
            f"satisfy 0 <= low < high <= sample_rate / 2 = {rate / 2:g} Hz (give high_frequency)"
        )
    if not 0 <= out["preemphasis"] <= 1:
        raise ConversionError(f"audio preemphasis {out['preemphasis']:g} is outside [0, 1]")
    if not out.get("log_floor", 0.0) > 0:
        raise ConversionError(
            f"audio log_floor {out.get('log_floor', 0.0):g} is not supported: it must be positive "
            "(ln(0) of digital silence is -inf; give log_floor)"
        )
    if ("feature_mean" in out) != ("feature_std" in out):
        raise ConversionError("audio feature_mean and feature_std must both be present or both absent")
    for i, std in enumerate(out.get("feature_std", [])):
        if not std > 0:
            raise ConversionError(f"audio feature_std[{i}] is {std:g}; it must be positive")
    if not 0.5 <= out["warp"] <= 2.0:
        raise ConversionError(f"audio warp {out['warp']:g} is outside [0.5, 2]")
    if out["warp"] != 1 and not rate / 2 > AUDIO_WARP_BOUNDARY_HZ:
        raise ConversionError(
            f"audio warp {out['warp']:g} needs sample_rate / 2 above {AUDIO_WARP_BOUNDARY_HZ:g} Hz; "
            f"this recipe's is {rate / 2:g} Hz"
        )
    return out


def make_config(d) -> ModelConfig:
    """A ModelConfig from a dict (a --config JSON, a checkpoint's `config`),
    with ModelConfig's own checks turned into ConversionErrors."""
    if isinstance(d, ModelConfig):
        return d
    if not isinstance(d, dict):
        raise ConversionError(f"a model config must be a JSON object, got {type(d).__name__}")
    try:
        return ModelConfig.from_dict(dict(d))
    except (TypeError, ValueError) as e:
        raise ConversionError(f"invalid model config: {e}") from None
