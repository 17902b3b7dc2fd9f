"""Fixtures of the converter's tests (run: /usr/bin/python3 -m pytest tests/python)."""

import pytest

from converter_testing import CONFIGS, make_model  # first: puts the repository on sys.path
from converter.reference import LinearTransformer, ModelConfig


@pytest.fixture(params=sorted(CONFIGS))
def config(request) -> ModelConfig:
    return CONFIGS[request.param]


@pytest.fixture
def small_config() -> ModelConfig:
    return CONFIGS["tokens_favor_conv"]


@pytest.fixture
def small_model(small_config) -> LinearTransformer:
    return make_model(small_config)


@pytest.fixture
def small_state_dict(small_model) -> dict:
    return {k: v.clone() for k, v in small_model.state_dict().items()}
