"""tarn's own reference model (converter/reference.py): its state_dict names
are already the canonical names."""

import dataclasses
from typing import Optional

from ..checkpoints import Checkpoint
from ..config import ModelConfig, same_as_stored
from ..errors import ConversionError
from ..fields import make_config


def map_checkpoint(checkpoint: Checkpoint, config: Optional[dict] = None):
    """The config the checkpoint carries is the one that converts: the
    weights were trained with it. A config given beside it may only repeat
    its values, since one that differs (an activation, an eps, a field left
    to its default) describes another function with the same tensors."""
    tensors = dict(checkpoint.tensors)
    if checkpoint.config is None:
        if config is None:
            raise ConversionError(
                "the checkpoint carries no `config`; pass --config JSON holding the ModelConfig fields"
            )
        return make_config(config), tensors
    carried = make_config(checkpoint.config)
    if config is not None:
        _check_agrees(config, checkpoint.config, carried)
    return carried, tensors


def _check_agrees(given: dict, raw: dict, carried: ModelConfig) -> None:
    """Each given value makes the carried config the same model, as the file
    stores it (feature_dim 0 is d_key; floats as float32)."""
    unknown = sorted(set(given) - {f.name for f in dataclasses.fields(ModelConfig)})
    if unknown:
        raise ConversionError(f"invalid model config: unknown model config keys: {unknown}")
    differ = [
        f"{key} {value!r} (the checkpoint's: {getattr(carried, key)!r})"
        for key, value in given.items()
        if not _same_model(carried, {**raw, key: value})
    ]
    if differ:
        raise ConversionError(
            "the config given differs from the one the checkpoint carries, which is what converts: "
            + ", ".join(differ)
            + "; leave --config out, or give only values that agree"
        )


def _same_model(carried: ModelConfig, fields: dict) -> bool:
    try:
        other = ModelConfig.from_dict(fields)
    except (TypeError, ValueError):
        return False
    return all(same_as_stored(getattr(other, f.name), getattr(carried, f.name)) for f in dataclasses.fields(ModelConfig))
