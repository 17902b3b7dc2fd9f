"""tarn: linear-attention transformers run as recurrent networks, on CPUs.

    import tarn
    model = tarn.Model("examples/asr/model/asr.tarn")
    print(tarn.transcribe(model, "examples/asr/samples/slt_012600.wav").text)

    session = model.session()             # a token or frame model
    output = session.step_token(3)        # numpy float32 [output_size]
    state = session.snapshot()            # bytes; session.restore(state)

    tarn.convert("checkpoint.pt", "model.tarn", config={...})

Model, Session, SessionBatch and Recognizer wrap the C++ runtime (the GIL is
released while it computes); every failure raises tarn.Error (a subclass per
status code) with the runtime's message. The converter is tarn.converter
(`tarn-convert` on the command line).
"""

from typing import List, Mapping, Optional, Union

from ._errors import (
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidModelError,
    IoError,
    OutOfMemoryError,
    OutOfRangeError,
    UnsupportedError,
)
from ._api import (
    DEFAULT_WORD_LIST_BEAM,
    Model,
    ModelConfig,
    Recognizer,
    Result,
    Session,
    SessionBatch,
    WarpEstimator,
    Word,
    estimate_warp,
    decode_wav,
    read_wav,
    transcribe,
)

__version__ = "0.1.0"


class ConversionError(Error):
    """The converter refused a checkpoint or configuration; the message says why."""

    code = "conversion"


def convert(
    checkpoint,
    out_path,
    *,
    config=None,
    arch: str = "tarn",
    dtype: str = "f32",
    labels: Union[None, List[str], str] = None,
    audio=None,
    metadata: Optional[Mapping[str, str]] = None,
    state_dict_key: Optional[str] = None,
):
    """Writes a .tarn file from a PyTorch checkpoint.

    checkpoint: a file (.pt/.pth/.ckpt/.bin/.safetensors, named as `arch`
    names them), or a state_dict (a mapping of tensors or numpy arrays,
    named as tarn.converter.reference names them; `config` then required).
    config, audio: a dict, JSON text or the path of a JSON file; config may
    also be a ModelConfig, the converter's or tarn.ModelConfig (Model.config:
    its labels are the file's unless `labels` is given). dtype:
    "f32", "f16", "bf16" or "i8". state_dict_key: the checkpoint's entry that
    holds the state dict, where it has more than one candidate (a model and
    its EMA). Returns the converter's result (config, checksum).
    Needs torch for .pt checkpoints and state_dicts of tensors.
    """
    from .converter.errors import ConversionError as _ConverterError

    if isinstance(config, ModelConfig):
        # A loaded model's: the converter spells `causal` as `attention` and
        # takes the labels as an argument of their own.
        config = config.to_dict()
        config["attention"] = "causal" if config.pop("causal") else "bidirectional"
        model_labels = config.pop("labels")
        if labels is None and model_labels:
            labels = model_labels
    try:
        if isinstance(checkpoint, Mapping):
            from .converter.convert import convert_state_dict, load_json

            if config is None:
                raise ConversionError("convert: a state_dict needs its config")
            if hasattr(config, "to_dict"):  # the converter's ModelConfig (converter.config, converter.reference)
                config = config.to_dict()
            config = dict(config) if isinstance(config, Mapping) else load_json(config, "config")
            return convert_state_dict(checkpoint, config, out_path, dtype, labels, load_json(audio, "audio"), metadata)
        from .converter.convert import convert_file

        return convert_file(checkpoint, out_path, arch, config, dtype, labels, audio, metadata, state_dict_key)
    except _ConverterError as e:
        raise ConversionError(str(e)) from None


__all__ = [
    "ConversionError",
    "DEFAULT_WORD_LIST_BEAM",
    "Error",
    "InternalError",
    "InvalidArgumentError",
    "InvalidModelError",
    "IoError",
    "Model",
    "ModelConfig",
    "OutOfMemoryError",
    "OutOfRangeError",
    "Recognizer",
    "Result",
    "Session",
    "SessionBatch",
    "UnsupportedError",
    "WarpEstimator",
    "Word",
    "convert",
    "estimate_warp",
    "decode_wav",
    "read_wav",
    "transcribe",
]
