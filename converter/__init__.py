"""tarn's converter: PyTorch checkpoints in, .tarn model files out.

    python3 -m converter convert CHECKPOINT OUT.tarn [--arch ...] [--config JSON]
    python3 -m converter inspect MODEL.tarn

Library use (training scripts, tests):

    from converter import convert_state_dict
    convert_state_dict(model.state_dict(), model.config, "model.tarn")
"""

from .checkpoints import load_checkpoint, read_safetensors
from .convert import convert_file, convert_state_dict
from .errors import ConversionError
from .reader import read_tarn
from .reference import ModelConfig
from .version import CONVERTER_VERSION
from .writer import write_tarn

__all__ = [
    "CONVERTER_VERSION",
    "ConversionError",
    "ModelConfig",
    "convert_file",
    "convert_state_dict",
    "load_checkpoint",
    "read_safetensors",
    "read_tarn",
    "write_tarn",
]
