"""Name mappings: from the names a training library gives a model's tensors
to tarn's canonical names (schema/tarn.fbs), and from what the checkpoint and
the user say about the model to a ModelConfig.

Each architecture module has `map_checkpoint(checkpoint, config) ->
(ModelConfig, {canonical name: array})`, where `config` is the user's
--config dict or None. Shapes are checked afterwards, in one place
(converter/shapes.py).
"""

from . import fast_transformers, linear_transformer_experiments, tarn

ARCHITECTURES = {
    "tarn": tarn.map_checkpoint,
    "fast-transformers": fast_transformers.map_checkpoint,
    "linear-transformer-experiments": linear_transformer_experiments.map_checkpoint,
}
