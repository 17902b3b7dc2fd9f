"""The converter's library entry points: checkpoint or state dict in, .tarn out."""

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import List, Mapping, Optional, Union

from .architectures import ARCHITECTURES, check_architecture
from .checkpoints import load_checkpoint, state_dict_arrays
from .errors import ConversionError
from .fields import make_config
from .config import ModelConfig
from .writer import check_mapping, write_tarn


@dataclasses.dataclass
class Converted:
    config: ModelConfig
    weight_checksum: int
    state_dict_key: Optional[str] = None  # the checkpoint dict's entry the tensors came from, if one


def convert_state_dict(
    state_dict: Mapping,
    config: Union[ModelConfig, dict],
    out_path,
    dtype: str = "f32",
    labels: Optional[List[str]] = None,
    audio: Optional[dict] = None,
    metadata: Optional[Mapping[str, str]] = None,
    dense_layout: str = "blocked",
) -> Converted:
    """Writes a reference model's state_dict (torch tensors or numpy arrays,
    named as converter/reference.py names them) as a .tarn file (dense_layout:
    see write_tarn)."""
    config = make_config(config)
    tensors = state_dict_arrays(state_dict)
    check_mapping(metadata, "metadata")
    check_image_layout(metadata or {}, config)
    meta = {"arch": "tarn", **(metadata or {})}
    return Converted(config, write_tarn(out_path, config, tensors, dtype, labels, audio, meta, dense_layout))


def convert_file(
    checkpoint_path,
    out_path,
    arch: str = "tarn",
    config: Union[None, ModelConfig, dict, str, Path] = None,
    dtype: str = "f32",
    labels: Union[None, List[str], str, Path] = None,
    audio: Union[None, dict, str, Path] = None,
    metadata: Optional[Mapping[str, str]] = None,
    state_dict_key: Optional[str] = None,
) -> Converted:
    """Converts a checkpoint file (.pt/.pth/.ckpt/.bin/.safetensors).

    config, audio: a dict, a path to a JSON file, or JSON text; for --arch
    tarn the config may be omitted when the checkpoint carries one, and may
    only agree with it when given.
    labels: a list, or a path to a file with one label per line (or a JSON
    list when the name ends in .json). state_dict_key: the entry of a
    training checkpoint's dict that holds the state dict to convert, needed
    where several entries hold one (a model's and its EMA's)."""
    if arch not in ARCHITECTURES:
        raise ConversionError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    if isinstance(config, ModelConfig):
        config = config.to_dict()
    config = load_json(config, "config")
    audio = load_json(audio, "audio front end")
    if labels is not None and not isinstance(labels, (list, tuple)):
        labels = read_labels(labels)
    check_mapping(metadata, "metadata")
    if _same_file(checkpoint_path, out_path):
        raise ConversionError(f"the output {out_path} is the checkpoint itself; write the .tarn elsewhere")
    if state_dict_key is not None and not isinstance(state_dict_key, str):
        raise ConversionError(f"the state dict key must be a str, got {type(state_dict_key).__name__}")
    checkpoint = load_checkpoint(checkpoint_path, state_dict_key)
    check_architecture(checkpoint, arch)
    model_config, tensors = ARCHITECTURES[arch](checkpoint, config)
    check_image_layout(metadata or {}, model_config)
    # The file system's name, shown as text even where it is not UTF-8.
    source = os.fsencode(checkpoint_path).decode("utf-8", "backslashreplace")
    meta = {"source": source, "arch": arch, **(metadata or {})}
    checksum = write_tarn(out_path, model_config, tensors, dtype, labels, audio, meta)
    return Converted(model_config, checksum, checkpoint.state_dict_key)


# The image layout `tarn generate` reads from the metadata, and its limits
# (runtime/cli/generate.cc).
IMAGE_KEYS = ("image_height", "image_width", "image_start_token")
GREY_LEVELS, MAX_IMAGE_SIDE = 256, 1 << 16


def check_image_layout(metadata: Mapping, config: ModelConfig) -> None:
    """`tarn generate`'s checks of the image layout (ReadImageModel), made
    when converting, so that a bad value fails here rather than at the first
    generation. write_tarn does not make them: it writes such files for the
    runtime's own tests. Stricter on one point: only digits (strtoll also
    takes a sign and leading spaces)."""
    given = {key: str(metadata[key]) for key in IMAGE_KEYS if key in metadata}
    if not given:
        return
    missing = [key for key in IMAGE_KEYS if key not in given]
    if missing:
        raise ConversionError(f"the image layout lacks {', '.join(missing)}: tarn generate needs all of {', '.join(IMAGE_KEYS)}")
    mixture = config.output_distribution == "logistic-mixture" and config.output_levels == GREY_LEVELS
    outputs = config.output_dim or config.d_model
    if config.input_kind != "tokens" or config.attention != "causal" or (outputs != GREY_LEVELS and not mixture):
        raise ConversionError(
            "image metadata is for an image model: tarn generate needs a causal token model with 256 outputs (one per "
            f"grey level) or a logistic mixture over 256 levels; this one is a {config.attention} {config.input_kind[:-1]} "
            f"model with {outputs} outputs"
        )
    if config.vocab_size < GREY_LEVELS:
        raise ConversionError(f"image metadata, but the vocabulary of {config.vocab_size} tokens cannot hold the 256 grey levels")
    for key, value in given.items():
        start = key == "image_start_token"
        if start and value == "none":
            continue
        least, most = (GREY_LEVELS, config.vocab_size - 1) if start else (1, MAX_IMAGE_SIDE)
        if start and most < least:
            raise ConversionError(
                f"metadata image_start_token {value!r}, but the vocabulary of {config.vocab_size} tokens holds only the "
                "grey levels: a model that reads pixel p at step p, as the paper authors' does, says image_start_token=none"
            )
        # Ten digits hold every number in range; leading zeros are allowed, as strtoll allows them.
        number = int(value.lstrip("0") or "0") if re.fullmatch(r"0*[0-9]{1,10}", value) else -1
        if not least <= number <= most:
            raise ConversionError(
                f"metadata {key} {value!r} is not an integer in [{least}, {most}]"
                + (" (a token outside the grey levels) nor none" if start else "")
            )
    # An image takes a step a pixel, less the last pixel's without a start token.
    steps = int(given["image_height"]) * int(given["image_width"]) - (given["image_start_token"] == "none")
    if config.position == "learned" and steps > config.max_positions:
        raise ConversionError(
            f"the image layout's {int(given['image_height']) * int(given['image_width'])} pixels take {steps} steps, but the "
            f"model has only {config.max_positions} learned positions"
        )


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, TypeError, ValueError):
        return False


def load_json(value, what: str):
    """A dict given as a dict, as JSON text, or as the path of a JSON file."""
    if value is None or isinstance(value, dict):
        return value
    text = str(value)
    if not text.lstrip().startswith("{"):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:  # UnicodeDecodeError is a ValueError
            raise ConversionError(f"cannot read the {what} JSON {value}: {e}") from e
    try:
        loaded = json.loads(text)
    except ValueError as e:
        raise ConversionError(f"the {what} is not valid JSON ({value}): {e}") from e
    if not isinstance(loaded, dict):
        raise ConversionError(f"the {what} JSON ({value}) is a {type(loaded).__name__}, not an object of settings")
    return loaded


def read_labels(path) -> List[str]:
    """One label per line, kept verbatim (a label may be a space), or a JSON
    list of strings when the file name ends in .json."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a byte order mark is not a label
    except (OSError, UnicodeDecodeError) as e:
        raise ConversionError(f"cannot read labels {path}: {e}") from e
    if str(path).endswith(".json"):
        try:
            labels = json.loads(text)
        except ValueError as e:
            raise ConversionError(f"labels {path}: not valid JSON: {e}") from e
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ConversionError(f"labels {path}: expected a JSON list of strings")
        return labels
    lines = text.split("\n")  # not splitlines(): that also splits at \x0c, \u2028, ...
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
