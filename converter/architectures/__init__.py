"""Name mappings: from the names a training library gives a model's tensors
to tarn's canonical names (schema/tarn.fbs), and from what the checkpoint and
the user say about the model to a ModelConfig.

Each architecture module has `map_checkpoint(checkpoint, config) ->
(ModelConfig, {canonical name: array})`, where `config` is the user's
--config dict or None. Shapes are checked afterwards, in one place
(converter/shapes.py).
"""

import re

from ..checkpoints import Checkpoint
from ..errors import ConversionError
from . import fast_transformers, linear_transformer_experiments, tarn

ARCHITECTURES = {
    "tarn": tarn.map_checkpoint,
    "fast-transformers": fast_transformers.map_checkpoint,
    "linear-transformer-experiments": linear_transformer_experiments.map_checkpoint,
}

# Names that one architecture's checkpoints hold and the others' never do.
# The encoders' own names are shared (an elu fast-transformers encoder has
# exactly a tarn frame model's), so many checkpoints tell nothing.
_TELLING = (
    ("linear-transformer-experiments", re.compile(r"^(value_embedding\.weight|predictor\.weight)$")),
    ("fast-transformers", re.compile(r"^layers\.\d+\.attention\.inner_attention\.")),
    ("tarn", re.compile(r"^(token_embedding|input_projection|position_embedding|head)\.|^layers\.\d+\.(conv|attention\.feature_map)\.")),
)


def check_architecture(checkpoint: Checkpoint, arch: str) -> None:
    """Refuses a checkpoint holding a tensor that only another architecture's
    have, naming the --arch it fits: the chosen mapping would otherwise fail
    on something beside the point (a size it cannot read, a missing tensor)."""
    for other, pattern in _TELLING:
        name = next((n for n in checkpoint.tensors if pattern.match(n)), None)
        if other != arch and name is not None:
            raise ConversionError(
                f"the checkpoint holds {name}, a tensor only --arch {other} reads: convert it with --arch {other}, "
                f"not {arch}"
            )
