"""Fixtures of the speech tests' Python side: what ctest passes in the
environment (tests/speech/CMakeLists.txt). Without it (a plain `pytest`) the
tests are skipped, as tests/golden's are."""

import os
from pathlib import Path

import pytest


def _from_environment(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: run through ctest")
    return value


@pytest.fixture
def tarn() -> str:
    """The `tarn` command-line program."""
    return _from_environment("TARN_BIN")


@pytest.fixture
def fixtures() -> Path:
    """What make_fixtures.py wrote (the speech_fixtures test)."""
    return Path(_from_environment("TARN_SPEECH_FIXTURES"))


@pytest.fixture
def features_tool() -> str:
    """features_tool.cc: the C++ front end over a WAV file."""
    return _from_environment("TARN_SPEECH_FEATURES")


@pytest.fixture
def transcribe_c() -> str:
    """examples/embed/transcribe.c, built."""
    return _from_environment("TARN_TRANSCRIBE_C")
