"""tarn's own reference model (converter/reference.py): its state_dict names
are already the canonical names."""

from typing import Optional

from ..checkpoints import Checkpoint
from ..errors import ConversionError
from ..fields import make_config


def map_checkpoint(checkpoint: Checkpoint, config: Optional[dict] = None):
    """The user's config wins over the one the checkpoint carries."""
    source = config if config is not None else checkpoint.config
    if source is None:
        raise ConversionError(
            "the checkpoint carries no `config`; pass --config JSON holding the ModelConfig fields"
        )
    return make_config(source), dict(checkpoint.tensors)
