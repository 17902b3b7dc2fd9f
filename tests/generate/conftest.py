"""Fixtures of the image-generation tests' Python side: what ctest passes in
the environment (tests/generate/CMakeLists.txt). Without it (a plain
`pytest`) the tests are skipped, as tests/golden's are."""

import os

import pytest


def _from_environment(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: run through ctest")
    return value


@pytest.fixture(scope="module")
def tarn() -> str:
    """The `tarn` command-line program."""
    return _from_environment("TARN_BIN")


@pytest.fixture(scope="module")
def fashion_test() -> str:
    """Fashion-MNIST's test images (t10k-images-idx3-ubyte.gz)."""
    return _from_environment("TARN_FASHION_TEST")


@pytest.fixture(scope="module")
def goldens() -> str:
    """The golden models (tests/CMakeLists.txt's `goldens` fixture)."""
    return _from_environment("TARN_GOLDENS")
