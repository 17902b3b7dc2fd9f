"""The one exception the converter raises for bad input."""

import os
from pathlib import Path


class ConversionError(Exception):
    """A checkpoint, config or model file that cannot be converted or read.

    The message says what and where (tensor name, expected and actual shape,
    byte offset), so the CLI prints it as is, without a traceback."""


def as_path(value, what: str) -> Path:
    """A path argument of the library as a Path, or a ConversionError
    naming it (Path(None) is a TypeError)."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise ConversionError(f"the {what} must be a path (str or os.PathLike), got {type(value).__name__}")
    return Path(os.fsdecode(value))
