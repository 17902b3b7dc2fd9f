"""The command line, run as users run it: python3 -m converter ..."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from converter import read_tarn

from converter_testing import FAST_TRANSFORMERS_DATA, REPO_ROOT, make_model, run_cli


def test_convert_then_inspect(tmp_path, small_config, small_state_dict):
    checkpoint, out = tmp_path / "model.pt", tmp_path / "model.tarn"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{c}\n" for c in [" ", "'"] + [f"t{i}" for i in range(38)]))

    result = run_cli("convert", checkpoint, out, "--dtype", "f16", "--labels", labels, "--meta", "run=42")
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stdout
    f = read_tarn(out)
    assert f.labels[:2] == [" ", "'"] and len(f.labels) == 40
    assert f.metadata["run"] == "42"
    assert f.tensors["head.weight"].dtype == np.float16

    result = run_cli("inspect", out)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "schema 2.1" in text
    for field, value in small_config.to_dict().items():
        assert f"  {field:<20} {value}" in text, field
    assert "token_embedding.weight" in text and "f16  40x32" in text
    assert "layers.0.attention.feature_map.omega" in text
    assert "weight checksum:" in text and " ok" in text
    assert f"file checksum:   {f.file_checksum:016x} ok" in text
    assert "source: " + str(checkpoint) in text
    assert "labels (40): ' ', \"'\"" in text


def test_inspect_reports_a_damaged_file(tmp_path, small_config, small_state_dict):
    checkpoint, out = tmp_path / "model.pt", tmp_path / "model.tarn"
    torch.save(small_state_dict, checkpoint)
    config = json.dumps(small_config.to_dict())
    assert run_cli("convert", checkpoint, out, "--config", config).returncode == 0  # JSON text works too
    offset = read_tarn(out).tensor_offsets["layers.0.linear1.weight"]
    blob = bytearray(out.read_bytes())
    blob[offset + 3] ^= 0x40
    out.write_bytes(bytes(blob))
    result = run_cli("inspect", out)
    assert result.returncode == 1
    assert "BAD" in result.stdout


def test_inspect_reports_damage_outside_the_weights(tmp_path, small_config, small_state_dict):
    checkpoint, out = tmp_path / "model.pt", tmp_path / "model.tarn"
    torch.save(small_state_dict, checkpoint)
    assert run_cli("convert", checkpoint, out, "--config", json.dumps(small_config.to_dict()), "--meta", "run=42").returncode == 0
    blob = bytearray(out.read_bytes())
    blob[blob.index(b"42")] ^= 0x01
    out.write_bytes(bytes(blob))
    result = run_cli("inspect", out)
    assert result.returncode == 1
    assert "weight checksum:" in result.stdout and "file checksum:" in result.stdout
    assert "BAD (the file does not match: damaged file)" in result.stdout


def test_errors_are_one_line_without_traceback(tmp_path, small_config, small_state_dict):
    del small_state_dict["head.bias"]
    checkpoint = tmp_path / "model.pt"
    torch.save({"model": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn")
    assert result.returncode == 1
    assert result.stderr == "error: missing tensors: head.bias\n"
    assert not (tmp_path / "m.tarn").exists()

    result = run_cli("inspect", tmp_path / "absent.tarn")
    assert result.returncode == 1 and result.stderr.startswith("error: cannot read")
    assert "Traceback" not in result.stderr


def test_unreadable_inputs_are_one_line_errors(tmp_path, small_config, small_state_dict):
    """Each of these ended in a Python traceback."""
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    (tmp_path / "latin1.json").write_bytes(b'{"num_layers": 1, "note": "caf\xe9"}')
    (tmp_path / "list.json").write_text('["n_heads"]')
    (tmp_path / "labels.txt").write_bytes(b"a\n\xff\n")
    zipped = bytearray(checkpoint.read_bytes())
    entry = zipped.index(b"PK\x01\x02")  # the central directory's first entry
    zipped[entry + 1 : entry + 2] = b"X"  # its signature damaged
    (tmp_path / "bad_zip.pt").write_bytes(bytes(zipped))
    torch.save({1: small_state_dict["head.bias"]}, tmp_path / "int_keys.pt")
    cases = [
        ([checkpoint, "--config", tmp_path / "latin1.json"], "cannot read the config JSON"),
        ([checkpoint, "--config", tmp_path / "list.json"], "is a list, not an object of settings"),
        ([checkpoint, "--labels", tmp_path / "labels.txt"], "cannot read labels"),
        ([tmp_path / "bad_zip.pt"], "bad_zip.pt"),
        ([tmp_path / "int_keys.pt"], "state dict keys that are not names: 1"),
    ]
    for args, message in cases:
        result = run_cli("convert", args[0], tmp_path / "m.tarn", *args[1:])
        assert result.returncode == 1 and message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        assert not (tmp_path / "m.tarn").exists()


def test_fast_transformers_flags(tmp_path):
    directory = FAST_TRANSFORMERS_DATA / "causal_relu"
    if not (directory / "model.pt").is_file():
        import pytest

        pytest.skip(f"fast-transformers fixture {directory} not present yet")
    out = tmp_path / "m.tarn"
    # The fixture's own config.json...
    result = run_cli("convert", directory / "model.pt", out, "--arch", "fast-transformers", "--config", directory / "config.json")
    assert result.returncode == 0, result.stderr
    from_json = read_tarn(out).config
    # ...and the flags alone give the same model.
    args = ["--n-heads", "4", "--attention-type", "causal-linear", "--feature-map", "relu", "--activation", "gelu"]
    result = run_cli("convert", directory / "model.pt", out, "--arch", "fast-transformers", *args)
    assert result.returncode == 0, result.stderr
    assert read_tarn(out).config == from_json


def test_feature_map_flag_keeps_the_configs_favor_parameters(tmp_path):
    """--feature-map favor over a config whose feature_map is favor's
    dictionary names the same map: its temperature, stabilisation and
    sizes stay (the flag used to replace the dictionary, and the file
    computed with favor's defaults: 0.31 from the fixture's outputs).
    Another name than the dictionary's is refused."""
    directory = FAST_TRANSFORMERS_DATA / "causal_favor_stabilize"
    base = ["convert", directory / "model.pt", None, "--arch", "fast-transformers", "--config", directory / "config.json"]
    plain, flagged = tmp_path / "plain.tarn", tmp_path / "flagged.tarn"
    assert run_cli(*[plain if a is None else a for a in base]).returncode == 0
    result = run_cli(*[flagged if a is None else a for a in base], "--feature-map", "favor")
    assert result.returncode == 0, result.stderr
    assert read_tarn(flagged).config == read_tarn(plain).config
    assert read_tarn(plain).config.favor_stabilize
    result = run_cli(*[tmp_path / "elu.tarn" if a is None else a for a in base], "--feature-map", "elu")
    assert result.returncode == 1
    assert "--feature-map elu contradicts the config's feature_map 'favor'" in result.stderr


def test_fast_transformers_flags_need_that_arch(tmp_path, small_config):
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": make_model(small_config).state_dict(), "config": small_config.to_dict()}, checkpoint)
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn", "--n-heads", "2")
    assert result.returncode == 1
    assert result.stderr == "error: --n-heads is for --arch fast-transformers only\n"


def test_inspect_into_a_reader_that_stops_early(tmp_path, small_config, small_state_dict):
    """`inspect | head -1`: the reader closes the pipe early; the converter
    stops as a Unix tool does, without a BrokenPipeError traceback, whether
    the pipe breaks at a print (unbuffered) or at the flush of its output."""
    out = tmp_path / "model.tarn"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, tmp_path / "model.pt")
    assert run_cli("convert", tmp_path / "model.pt", out).returncode == 0
    # Buffered (the pipe breaks at the flush) and unbuffered (at a print).
    for unbuffered in ("", "1", "", "1"):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        if unbuffered:
            env["PYTHONUNBUFFERED"] = unbuffered
        process = subprocess.Popen([sys.executable, "-m", "converter", "inspect", str(out)], cwd=REPO_ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        process.stdout.close()  # before the converter has written anything
        stderr = process.stderr.read().decode()
        assert process.wait() in (0, 141)
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


def test_mistakes_a_user_makes_are_one_line_errors(tmp_path, small_config, small_state_dict):
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    result = run_cli("convert", checkpoint, checkpoint)
    assert result.returncode == 1 and "is the checkpoint itself" in result.stderr, result.stderr
    assert checkpoint.read_bytes()[:2] == b"PK"  # still the checkpoint
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"l{i}\n" for i in range(small_config.output_dim)), encoding="utf-8-sig")
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn", "--labels", labels)
    assert result.returncode == 0, result.stderr
    assert read_tarn(tmp_path / "m.tarn").labels[0] == "l0"  # the byte order mark is not part of it
    directory = FAST_TRANSFORMERS_DATA / "causal_relu"
    if (directory / "model.pt").is_file():
        for config, message in [('{"attention_type": "causal-linear", "feature_map": ["elu"]}', "feature_map must be one of"),
                                ('{"attention_type": ["causal-linear"]}', "attention_type must be one of")]:
            result = run_cli("convert", directory / "model.pt", tmp_path / "ft.tarn", "--arch", "fast-transformers",
                             "--n-heads", "4", "--config", config)
            assert result.returncode == 1 and message in result.stderr, result.stderr
            assert "Traceback" not in result.stderr


def test_the_state_dict_used_is_said_and_can_be_chosen(tmp_path, small_config, small_state_dict):
    """Which entry of a training checkpoint was converted was never said, and
    an EMA copy beside it was dropped unsaid."""
    checkpoint, out = tmp_path / "model.pt", tmp_path / "m.tarn"
    config = json.dumps(small_config.to_dict())
    torch.save({"model_state": small_state_dict, "iteration": 5}, checkpoint)
    result = run_cli("convert", checkpoint, out, "--config", config)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(", from the checkpoint's 'model_state' entry"), result.stdout

    ema = {k: v * 0.5 for k, v in small_state_dict.items()}
    torch.save({"model_state": small_state_dict, "ema": ema, "iteration": 5}, checkpoint)
    result = run_cli("convert", checkpoint, out, "--config", config)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == (
        f"error: {checkpoint} holds several state dicts: 'model_state' (41 tensors), 'ema' (41 tensors); "
        "choose the one to convert with --state-dict-key KEY\n"
    )
    result = run_cli("convert", checkpoint, out, "--config", config, "--state-dict-key", "ema")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(", from the checkpoint's 'ema' entry")
    np.testing.assert_array_equal(read_tarn(out).tensors["head.bias"], ema["head.bias"].numpy())


def _image_model(vocab_size=257, **fields):
    from converter.reference import ModelConfig

    config = ModelConfig(**{**dict(d_model=8, num_layers=1, num_heads=1, d_key=8, d_value=8, d_ff=8,
                                   vocab_size=vocab_size, output_dim=256, position="sinusoidal"), **fields})
    return config, make_model(config).state_dict()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"image_height": "28px"}, "metadata image_height '28px' is not an integer in [1, 65536]"),
        ({"image_width": "0"}, "metadata image_width '0' is not an integer in [1, 65536]"),
        ({"image_width": "65537"}, "metadata image_width '65537' is not an integer in [1, 65536]"),
        ({"image_height": "4294967300"}, "metadata image_height '4294967300' is not an integer in [1, 65536]"),
        ({"image_height": ""}, "metadata image_height '' is not an integer in [1, 65536]"),
        ({"image_height": "+4"}, "metadata image_height '+4' is not an integer in [1, 65536]"),
        ({"image_start_token": "0"}, "metadata image_start_token '0' is not an integer in [256, 256] "
                                     "(a token outside the grey levels) nor none"),
        ({"image_start_token": "257"}, "metadata image_start_token '257' is not an integer in [256, 256] "
                                       "(a token outside the grey levels) nor none"),
        ({"image_start_token": None}, "the image layout lacks image_start_token: tarn generate needs all of "
                                      "image_height, image_width, image_start_token"),
    ],
)
def test_the_image_layout_is_checked_when_converting(tmp_path, change, message):
    """`tarn generate` refused these (runtime/cli/generate.cc), but only when
    run: the converter wrote them."""
    from converter import ConversionError, convert_state_dict

    config, state = _image_model()
    layout = {"image_height": "4", "image_width": "4", "image_start_token": "256", **change}
    layout = {k: v for k, v in layout.items() if v is not None}
    with pytest.raises(ConversionError) as error:
        convert_state_dict(state, config, tmp_path / "m.tarn", metadata=layout)
    assert str(error.value) == message
    assert not (tmp_path / "m.tarn").exists()


def test_the_image_layout_needs_an_image_model(tmp_path, small_config, small_state_dict):
    from converter import ConversionError, convert_state_dict

    config, state = _image_model(vocab_size=256)
    layout = {"image_height": "4", "image_width": "4", "image_start_token": "256"}
    with pytest.raises(ConversionError, match=r"^metadata image_start_token '256', but the vocabulary of 256 tokens "
                                              r"holds only the grey levels: .* says image_start_token=none$"):
        convert_state_dict(state, config, tmp_path / "m.tarn", metadata=layout)
    convert_state_dict(state, config, tmp_path / "m.tarn", metadata={**layout, "image_start_token": "none"})
    with pytest.raises(ConversionError) as error:
        convert_state_dict(small_state_dict, small_config, tmp_path / "s.tarn", metadata=layout)
    assert str(error.value) == (
        "image metadata is for an image model: tarn generate needs a causal token model with 256 outputs (one per "
        "grey level) or a logistic mixture over 256 levels; this one is a causal token model with 40 outputs"
    )


def test_the_image_layout_fits_the_vocabulary_and_the_learned_positions(tmp_path):
    """generate's two other checks: a vocabulary without the grey levels,
    and more steps than learned positions (an image without a start token
    takes one step fewer than its pixels)."""
    from converter import ConversionError, convert_state_dict

    config, state = _image_model(vocab_size=100)
    with pytest.raises(ConversionError, match=r"^image metadata, but the vocabulary of 100 tokens cannot hold the 256"):
        convert_state_dict(state, config, tmp_path / "m.tarn",
                           metadata={"image_height": "4", "image_width": "4", "image_start_token": "none"})
    config, state = _image_model(position="learned", max_positions=15)
    layout = {"image_height": "4", "image_width": "4", "image_start_token": "256"}
    with pytest.raises(ConversionError) as error:
        convert_state_dict(state, config, tmp_path / "m.tarn", metadata=layout)
    assert str(error.value) == "the image layout's 16 pixels take 16 steps, but the model has only 15 learned positions"
    convert_state_dict(state, config, tmp_path / "m.tarn", metadata={**layout, "image_start_token": "none"})


def test_a_bad_image_layout_is_a_one_line_error(tmp_path):
    config, state = _image_model()
    checkpoint = tmp_path / "model.pt"
    torch.save({"state_dict": state, "config": config.to_dict()}, checkpoint)
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn", "--meta", "image_height=28px", "--meta",
                     "image_width=28", "--meta", "image_start_token=256")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == "error: metadata image_height '28px' is not an integer in [1, 65536]\n"
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn", "--meta", "image_height=28", "--meta",
                     "image_width=28", "--meta", "image_start_token=256", "--meta", "date=2024-01-01")
    assert result.returncode == 0, result.stderr
    first = (tmp_path / "m.tarn").read_bytes()
    result = run_cli("convert", checkpoint, tmp_path / "m.tarn", "--meta", "image_height=28", "--meta",
                     "image_width=28", "--meta", "image_start_token=256", "--meta", "date=2024-01-01")
    assert (tmp_path / "m.tarn").read_bytes() == first  # README: a fixed date makes the bytes reproducible


@pytest.mark.parametrize(
    "checkpoint, arch, message",
    [
        ("authors", "fast-transformers", "the checkpoint holds value_embedding.weight, a tensor only --arch "
         "linear-transformer-experiments reads: convert it with --arch linear-transformer-experiments, not fast-transformers"),
        ("authors", "tarn", "the checkpoint holds value_embedding.weight, a tensor only --arch "
         "linear-transformer-experiments reads: convert it with --arch linear-transformer-experiments, not tarn"),
        ("favor", "tarn", "the checkpoint holds layers.0.attention.inner_attention.feature_map.omega, a tensor only "
         "--arch fast-transformers reads: convert it with --arch fast-transformers, not tarn"),
        ("favor", "linear-transformer-experiments", "the checkpoint holds "
         "layers.0.attention.inner_attention.feature_map.omega, a tensor only --arch fast-transformers reads: convert "
         "it with --arch fast-transformers, not linear-transformer-experiments"),
        ("tarn", "fast-transformers", "the checkpoint holds token_embedding.weight, a tensor only --arch tarn reads: "
         "convert it with --arch tarn, not fast-transformers"),
    ],
)
def test_a_checkpoint_of_another_architecture_names_the_one_it_fits(tmp_path, small_config, small_state_dict,
                                                                       checkpoint, arch, message):
    """The authors' checkpoint with --arch fast-transformers said "give
    query_dimensions in the config"."""
    paths = {
        "authors": REPO_ROOT / "tests" / "data" / "linear_transformer_experiments" / "model.pt",
        "favor": FAST_TRANSFORMERS_DATA / "causal_favor" / "model.pt",
        "tarn": tmp_path / "tarn.pt",
    }
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, paths["tarn"])
    config = {"fast-transformers": '{"n_heads": 4, "attention_type": "causal-linear"}',
              "linear-transformer-experiments": '{"n_heads": 4}'}
    result = run_cli("convert", paths[checkpoint], tmp_path / "m.tarn", "--arch", arch,
                     *(["--config", config[arch]] if arch in config else []))
    assert result.returncode == 1 and result.stderr == f"error: {message}\n", result.stderr
