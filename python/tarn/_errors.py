"""tarn.Error and its subclasses, one per status code of the C++ runtime."""

from typing import Dict, Type


class Error(Exception):
    """Every failure of tarn: its message is the runtime's Status message."""

    #: The runtime's status code (tarn::StatusCode) by name.
    code = "unknown"


class InvalidArgumentError(Error, ValueError):
    """A caller's argument is wrong: dtype, shape, token, NaN, a closed model."""

    code = "invalid_argument"


class InvalidModelError(Error):
    """A model file is damaged or inconsistent."""

    code = "invalid_model"


class UnsupportedError(Error):
    """Valid, but not something this build can run."""

    code = "unsupported"


class OutOfRangeError(Error, IndexError):
    """Past a limit, e.g. a learned position table's length."""

    code = "out_of_range"


class IoError(Error, OSError):
    """A file could not be opened, read or mapped."""

    code = "io_error"


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed."""

    code = "out_of_memory"


class InternalError(Error):
    """A third-party library failed unexpectedly."""

    code = "internal"


# tarn::StatusCode's values, in its order (tarn/tarn.hpp).
_BY_CODE: Dict[int, Type[Error]] = {
    1: InvalidArgumentError,
    2: InvalidModelError,
    3: UnsupportedError,
    4: OutOfRangeError,
    5: IoError,
    6: OutOfMemoryError,
    7: InternalError,
}


def error_for_code(code: int) -> Type[Error]:
    """The exception class for a tarn::StatusCode value (the extension's)."""
    return _BY_CODE.get(code, Error)
