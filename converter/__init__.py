"""tarn's converter: PyTorch checkpoints in, .tarn model files out.

    python3 -m converter convert CHECKPOINT OUT.tarn [--arch ...] [--config JSON]
    python3 -m converter inspect MODEL.tarn

Library use (training scripts, tests):

    from converter import convert_state_dict
    convert_state_dict(model.state_dict(), model.config, "model.tarn")
"""

import importlib

# Exported name -> its module, imported on first use: reading, writing and
# inspecting .tarn files and reading .safetensors need no torch (only the
# reference model, .pt checkpoints and the image model's mapping do).
_EXPORTS = {
    "CONVERTER_VERSION": "version",
    "ConversionError": "errors",
    "ModelConfig": "config",
    "convert_file": "convert",
    "convert_state_dict": "convert",
    "load_checkpoint": "checkpoints",
    "read_safetensors": "checkpoints",
    "read_tarn": "reader",
    "write_tarn": "writer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
