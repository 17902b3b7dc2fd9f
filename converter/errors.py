"""The one exception the converter raises for bad input."""


class ConversionError(Exception):
    """A checkpoint, config or model file that cannot be converted or read.

    The message says what and where (tensor name, expected and actual shape,
    byte offset), so the CLI prints it as is, without a traceback."""
