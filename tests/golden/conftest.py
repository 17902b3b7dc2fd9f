"""The golden tests under a forced kernel variant (TARN_KERNELS, see
kernels/kernels.h): ctest runs them once per variant. A variant this CPU or
build lacks would silently fall back to scalar; the session ends with 77
instead, which ctest reports as skipped."""

import os
import subprocess
from pathlib import Path

import pytest

SKIP_RETURN_CODE = 77


def pytest_sessionstart(session):
    forced = os.environ.get("TARN_KERNELS")
    tarn = os.environ.get("TARN_BIN")
    if not forced or not tarn:
        return
    model = Path(os.environ.get("TARN_GOLDENS", "/nonexistent")) / "tokens" / "model.tarn"
    result = subprocess.run([tarn, "info", str(model)], capture_output=True, text=True)
    if f"TARN_KERNELS={forced}" in result.stderr:
        pytest.exit(f"TARN_KERNELS={forced}: {result.stderr.strip()}", returncode=SKIP_RETURN_CODE)
