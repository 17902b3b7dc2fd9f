"""tarn's C++ runtime (through the `tarn` CLI) against independent references:
the PyTorch reference model (goldens made by `tests.goldens` at test time)
and fast-transformers itself (fixtures committed under tests/data).

Run by ctest, which sets TARN_BIN (the CLI) and TARN_GOLDENS (the goldens).
"""

import io
import json
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.goldens import bf16_values, build_model, quantize_per_row, round_bf16, scaled_error, stamped, stored_bytes_by_dtype

ROOT = Path(__file__).resolve().parents[2]
TARN = os.environ.get("TARN_BIN")
GOLDENS = Path(os.environ["TARN_GOLDENS"]) if "TARN_GOLDENS" in os.environ else None
FAST_TRANSFORMERS = ROOT / "tests" / "data" / "fast_transformers"

pytestmark = pytest.mark.skipif(
    not TARN or GOLDENS is None, reason="TARN_BIN or TARN_GOLDENS is not set: run through ctest"
)

# Acceptance bound of the end-to-end slice: max |tarn - reference| <= 1e-4,
# relative to max |reference| where that exceeds 1.
TOLERANCE = 1e-4
# f16 weights round every matrix to 11 significant bits (relative error up to
# 2^-11 = 4.9e-4 per weight); the arithmetic stays f32. Measured max scaled
# |tarn f16 - PyTorch f32|: 3.4e-4 on tokens_f16 (2,000 steps), 3.1e-4 on the
# paper's MNIST shape (tests.goldens --case mnist, 1,000 steps). The bound
# is one f16 ulp at 1 (2^-10), about 3x the measured error.
F16_TOLERANCE = 1e-3
# int8 weights with a scale per row move a weight by up to half a step,
# max |w| / 254 of its row. Measured max scaled |tarn i8 - PyTorch f32| on
# tokens_i8 (2,000 steps): 5.7e-3 (and 6.5e-7 against PyTorch holding the
# file's values). The bound is about 3x that.
I8_TOLERANCE = 1.5e-2
# Integer dot products quantise each step's activations too, to 8 bits
# with a scale per row, moving each by up to max |x| / 254 of its row.
# Measured max scaled |tarn i8 dot - PyTorch holding the file's weights| on
# tokens_i8 (2,000 steps): 1.0e-2. The bound is about 3x that.
I8_DOT_TOLERANCE = 3e-2
# bf16 weights round every matrix and embedding to 8 significant bits
# (relative error up to 2^-8 = 3.9e-3 per weight, 8x f16's 2^-11); the
# arithmetic stays f32. Measured max scaled |tarn bf16 - PyTorch f32| on tokens_bf16
# (2,000 steps): 2.5e-3 (and 5.2e-7 against PyTorch holding the file's
# values). The bound is one bf16 ulp at 1 (2^-7), about 3x the measured error.
BF16_TOLERANCE = 2.0**-7


def tarn_run(model: Path, inputs: Path, out_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [TARN, "run", str(model), "--input", str(inputs), "--output", str(out_dir / "output.npy"),
         "--state-dir", str(out_dir), *extra],
        capture_output=True, text=True)


def run_ok(model: Path, inputs: Path, out_dir: Path, *extra: str) -> None:
    result = tarn_run(model, inputs, out_dir, *extra)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "case", ["tokens", "frames", "speech", "favor", "favor_stabilize", "relu", "learned", "concat_mixture"])
def test_steps_match_pytorch_reference(case, tmp_path):
    golden = GOLDENS / case
    run_ok(golden / "model.tarn", golden / "input.npy", tmp_path)
    error = scaled_error(np.load(tmp_path / "output.npy"), np.load(golden / "output.npy"))
    print(f"{case}: max scaled |tarn - pytorch| = {error:.2e}")
    assert error <= TOLERANCE
    for state in ("state_S", "state_z"):
        assert scaled_error(np.load(tmp_path / f"{state}.npy"), np.load(golden / f"{state}.npy")) <= TOLERANCE


def test_two_threads_bit_identical_to_one(tmp_path):
    golden = GOLDENS / "tokens"
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    run_ok(golden / "model.tarn", golden / "input.npy", tmp_path / "1", "--threads", "1")
    run_ok(golden / "model.tarn", golden / "input.npy", tmp_path / "2", "--threads", "2")
    assert np.array_equal(np.load(tmp_path / "1" / "output.npy"), np.load(tmp_path / "2" / "output.npy"))


def stored_and_f32_errors(case: str, tmp_path: Path, *extra: str):
    """tarn's outputs on a reduced-precision golden, as max scaled errors
    against PyTorch holding the file's values (output.npy) and against the
    f32 model (output_f32.npy), printed."""
    golden = GOLDENS / case
    run_ok(golden / "model.tarn", golden / "input.npy", tmp_path, *extra)
    output = np.load(tmp_path / "output.npy")
    stored = scaled_error(output, np.load(golden / "output.npy"))
    f32 = scaled_error(output, np.load(golden / "output_f32.npy"))
    print(f"{case} {' '.join(extra)}: max scaled |tarn - pytorch with the file's weights| = {stored:.2e}, "
          f"|tarn - pytorch f32| = {f32:.2e}")
    return stored, f32


def test_f16_weights_match_the_model_the_file_holds(tmp_path):
    """f16 weights: tarn against the reference holding the f16-rounded
    weights, to the f32 bound; and how far f16 moves the outputs from f32."""
    error, rounding = stored_and_f32_errors("tokens_f16", tmp_path)
    assert error <= TOLERANCE
    assert rounding <= F16_TOLERANCE


def test_i8_weights_match_the_model_the_file_holds(tmp_path):
    """int8 weights: tarn against the reference holding the weights the
    tests' own quantiser gives (tests.goldens.quantize_per_row, int8 times
    scale; the next test checks the file holds the same), to the f32 bound;
    and how far int8 moves the outputs from the f32 model."""
    error, quantization = stored_and_f32_errors("tokens_i8", tmp_path)
    assert error <= TOLERANCE
    assert quantization <= I8_TOLERANCE


def test_i8_integer_dot_products_stay_close_to_the_model_the_file_holds(tmp_path):
    """--int8 dot quantises each step's activations to int8 as well (a scale
    per row, docs/decisions.md): against the reference holding the file's
    weights, whose activations stay f32."""
    error, _ = stored_and_f32_errors("tokens_i8", tmp_path, "--int8", "dot")
    assert error <= I8_DOT_TOLERANCE


@pytest.mark.any_kernels
def test_i8_file_holds_the_independent_quantisation():
    """The converter's int8 values and scales are the tests' own quantiser's
    (per-row symmetric, docs/decisions.md), bit for bit, for every dense
    weight of tokens_i8; its embeddings are the f32 model's rounded to f16."""
    import torch

    from converter.reader import read_tarn
    from converter.reference import ModelConfig

    golden = GOLDENS / "tokens_i8"
    case = json.loads((golden / "case.json").read_text())
    model = build_model(ModelConfig.from_dict(case["config"]), case["seed"])
    stored = read_tarn(golden / "model.tarn").tensors
    dense = [name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    assert len(dense) == 6 * model.config.num_layers + 1  # q, k, v, out, linear1, linear2; head
    for name in dense:
        q, scale = quantize_per_row(model.get_submodule(name).weight.detach().numpy())
        assert stored[f"{name}.weight"].dtype == np.int8, name
        assert np.array_equal(stored[f"{name}.weight"], q), name
        assert np.array_equal(stored[f"{name}.weight.scale"], scale), name
    embedding = model.token_embedding.weight.detach().numpy()
    assert np.array_equal(stored["token_embedding.weight"], embedding.astype(np.float16))


def test_bf16_weights_match_the_model_the_file_holds(tmp_path):
    """bf16 weights: tarn against the reference holding the tests' own
    bf16 rounding of the weights (tests.goldens.round_bf16), to the f32 bound;
    and how far bf16 moves the outputs from the f32 model, to BF16_TOLERANCE."""
    error, rounding = stored_and_f32_errors("tokens_bf16", tmp_path)
    assert error <= TOLERANCE
    assert rounding <= BF16_TOLERANCE


@pytest.mark.any_kernels
def test_bf16_file_holds_the_independent_rounding():
    """Every matrix and embedding of tokens_bf16 is stored as BF16 holding
    the bits of the tests' own rounding and of torch's (round to nearest
    even), which agree; the vectors stay f32, unrounded."""
    import torch

    from converter.reader import read_tarn
    from converter.reference import ModelConfig

    golden = GOLDENS / "tokens_bf16"
    case = json.loads((golden / "case.json").read_text())
    model = build_model(ModelConfig.from_dict(case["config"]), case["seed"])
    stored = read_tarn(golden / "model.tarn").tensors
    matrices = 0
    for name, value in model.state_dict().items():
        value = value.detach().numpy()
        if name.endswith(".weight") and value.ndim == 2 and ".conv." not in name:
            bits = round_bf16(value)
            by_torch = torch.from_numpy(value).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            assert np.array_equal(bits, by_torch), name
            assert stored[name].dtype == np.uint16, name
            assert np.array_equal(stored[name], bits), name
            assert np.all(np.abs(bf16_values(bits) - value) <= np.abs(value) * 2.0**-8), name
            matrices += 1
        elif name in stored:
            assert stored[name].dtype == np.float32, name
            assert np.array_equal(stored[name], value), name
    assert matrices == 6 * model.config.num_layers + 2  # and head, token embedding


@pytest.mark.any_kernels
def test_bf16_only_where_f16_may_be(tmp_path):
    """A LayerNorm weight (a vector the step reads directly) in bf16 is a
    load error naming it."""
    from converter.reader import read_tarn
    from converter.writer import _build

    f = read_tarn(GOLDENS / "tokens_bf16" / "model.tarn")
    tensors = dict(f.tensors)
    tensors["layers.0.norm1.weight"] = round_bf16(tensors["layers.0.norm1.weight"])
    path = tmp_path / "edited.tarn"
    path.write_bytes(_build(f.config, tensors, f.labels, f.audio, f.metadata)[0])
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tensor 'layers.0.norm1.weight' must be f32" in result.stderr


@pytest.mark.parametrize("which", ["converted now", "bundled"])
def test_info_prints_the_schema_version(which):
    """The version the file holds, as the converter's reader reads it."""
    from converter.reader import read_tarn

    path = (GOLDENS / "tokens" / "model.tarn" if which == "converted now"
            else Path(__file__).resolve().parents[2] / "examples/asr/model/asr.tarn")
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    major, minor = read_tarn(path).schema_version
    assert result.stdout.splitlines()[0].endswith(f"{path} (schema {major}.{minor})")


@pytest.mark.any_kernels
def test_a_configuration_changed_in_place_is_refused_as_damage(tmp_path):
    """Schema 2.1's file checksum: a freshly converted model whose norm_eps
    was changed in place loaded without an error and computed other outputs
    (the weight checksum covers the weights only). Stamped anew, as a
    writer of that value would have, the same file loads."""
    from converter import convert_state_dict
    from converter.reference import ModelConfig

    config = ModelConfig(d_model=16, num_layers=1, num_heads=2, d_key=8, d_value=8, d_ff=32, vocab_size=10,
                         output_dim=10, norm_eps=3.25e-6)
    path = tmp_path / "model.tarn"
    convert_state_dict(build_model(config, 0).state_dict(), config, path)
    blob = bytearray(path.read_bytes())
    stored = np.float32(3.25e-6).tobytes()
    assert blob.count(stored) == 1
    at = blob.index(stored)
    blob[at : at + 4] = np.float32(0.5).tobytes()
    path.write_bytes(bytes(blob))
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "model is damaged: checksum " in result.stderr
    assert "(its weights match their own checksum: the damage is outside them)" in result.stderr

    path.write_bytes(stamped(blob))
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "-norm, eps 0.5)" in result.stdout


# Committed models, files of older schemas (no file checksum) among them.
COMMITTED_MODELS = sorted((ROOT / "tests" / "fuzz" / "seeds").glob("*.tarn")) + sorted(ROOT.glob("examples/*/model/*.tarn"))


@pytest.mark.any_kernels
@pytest.mark.parametrize("path", COMMITTED_MODELS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_models_load(path):
    """Files of older schemas load as before, their weights checked."""
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.any_kernels
def test_info_names_the_kernels_in_use(kernels_in_use):
    model = GOLDENS / "tokens" / "model.tarn"
    assert kernels_in_use(TARN, model, forced="scalar") == "scalar"
    assert kernels_in_use(TARN, model, forced=None) in ("scalar", "avx2", "avx512", "neon")


@pytest.mark.any_kernels
@pytest.mark.parametrize("case,matrices", [("tokens", "f32"), ("tokens_f16", "f16"), ("tokens_i8", "i8"),
                                           ("tokens_bf16", "bf16")])
def test_info_splits_the_weight_bytes_by_dtype(case, matrices):
    path = GOLDENS / case / "model.tarn"
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("weight bytes"))
    total, parts = line.split(None, 2)[2].split(" ", 1)
    printed = {name: int(n) for name, n in (part.split() for part in parts.strip("()").split(", "))}
    stored = stored_bytes_by_dtype(path)
    assert printed == stored
    assert int(total) == sum(stored.values())
    assert next(iter(printed)) == matrices  # largest first: the matrices' dtype


@pytest.mark.any_kernels
def test_a_token_models_stacking_fields_are_not_read(tmp_path):
    """A token model never stacks frames; files whose stack_hop is 0 (the
    converter checked stacking for frame models only) load and step as
    before, and nothing divides by that hop (Session::StepsForFrames of a
    token session is 0: BadStep.WrongInputKind)."""
    from converter.reader import read_tarn
    from converter.writer import _build

    golden = GOLDENS / "tokens"
    f = read_tarn(golden / "model.tarn")
    f.config.stack_hop = 0
    path = tmp_path / "hop0.tarn"
    path.write_bytes(_build(f.config, dict(f.tensors), f.labels, f.audio, f.metadata)[0])
    run_ok(path, golden / "input.npy", tmp_path)
    assert scaled_error(np.load(tmp_path / "output.npy"), np.load(golden / "output.npy")) <= TOLERANCE


def rewritten_i8(tmp_path: Path, edit) -> Path:
    """tokens_i8's tensors as stored, changed by edit(tensors), in a new file
    (a valid checksum: the loader's own checks are what is tested)."""
    from converter.reader import read_tarn
    from converter.writer import _build

    f = read_tarn(GOLDENS / "tokens_i8" / "model.tarn")
    tensors = dict(f.tensors)
    edit(tensors)
    path = tmp_path / "edited.tarn"
    path.write_bytes(_build(f.config, tensors, f.labels, f.audio, f.metadata)[0])
    return path


@pytest.mark.any_kernels
def test_i8_only_in_dense_layers(tmp_path):
    from converter.writer import quantize_rows

    def embedding_in_int8(tensors):
        name = "token_embedding.weight"
        tensors[name], tensors[name + ".scale"] = quantize_rows(tensors[name].astype(np.float32))

    result = subprocess.run([TARN, "info", str(rewritten_i8(tmp_path, embedding_in_int8))], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tensor 'token_embedding.weight' is i8, but only dense-layer weights may be" in result.stderr


@pytest.mark.any_kernels
def test_i8_and_f32_projections_mixed_in_one_layer(tmp_path):
    """Queries, keys and values are stacked into one dense layer; when their
    dtypes differ they are stacked in f32 (int8 times its scales): the same
    model, to the f32 bound."""

    def key_in_f32(tensors):
        name = "layers.0.attention.key_projection.weight"
        tensors[name] = tensors[name].astype(np.float32) * tensors.pop(name + ".scale")[:, None]

    golden = GOLDENS / "tokens_i8"
    run_ok(rewritten_i8(tmp_path, key_in_f32), golden / "input.npy", tmp_path)
    error = scaled_error(np.load(tmp_path / "output.npy"), np.load(golden / "output.npy"))
    print(f"i8 with one f32 projection: max scaled |tarn - pytorch with the file's weights| = {error:.2e}")
    assert error <= TOLERANCE


@pytest.mark.any_kernels
def test_scales_of_a_weight_that_is_not_i8(tmp_path):
    def dequantize(tensors):
        name = "layers.0.linear1.weight"
        tensors[name] = tensors[name].astype(np.float32) * tensors[name + ".scale"][:, None]

    result = subprocess.run([TARN, "info", str(rewritten_i8(tmp_path, dequantize))], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tensor 'layers.0.linear1.weight.scale' that its configuration does not use" in result.stderr


def rewritten(case: str, tmp_path: Path, name: str, blocked: bool = True) -> Path:
    """A golden's model written again with its dense weights blocked (as the
    converter writes them) or row-major (as files before schema 1.3)."""
    from converter.reader import read_tarn
    from converter.writer import _build

    f = read_tarn(GOLDENS / case / "model.tarn")
    path = tmp_path / name
    path.write_bytes(_build(f.config, dict(f.tensors), f.labels, f.audio, f.metadata, blocked)[0])
    return path


@pytest.mark.any_kernels
@pytest.mark.parametrize("case", ["tokens", "tokens_f16", "tokens_i8", "speech", "relu"])
def test_row_major_and_blocked_files_give_the_same_bits(case, tmp_path):
    """Blocked dense weights are used in place, row-major ones packed at load
    (files before schema 1.3): the same kernels over the same bytes."""
    from converter.reader import read_tarn

    assert "blocked" in read_tarn(GOLDENS / case / "model.tarn").layouts.values()
    golden = GOLDENS / case
    outputs = []
    for blocked in (True, False):
        out = tmp_path / str(blocked)
        out.mkdir()
        run_ok(rewritten(case, tmp_path, f"{blocked}.tarn", blocked), golden / "input.npy", out)
        outputs.append((out / "output.npy").read_bytes())
    assert outputs[0] == outputs[1]


@pytest.mark.any_kernels
def test_blocked_only_in_dense_layers(tmp_path, monkeypatch):
    import converter.writer

    monkeypatch.setattr(converter.writer, "is_dense_weight", lambda name, array: array.ndim == 2)
    path = rewritten("tokens", tmp_path, "embedding_blocked.tarn")
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tensor 'token_embedding.weight' is dense_blocked16, but only dense-layer weights may be" in result.stderr


@pytest.mark.any_kernels
def test_bidirectional_model_refuses_to_step(tmp_path):
    golden = GOLDENS / "bidirectional"
    result = tarn_run(golden / "model.tarn", golden / "input.npy", tmp_path)
    assert result.returncode == 1
    assert "bidirectional" in result.stderr and "cannot be stepped" in result.stderr


@pytest.mark.any_kernels
def test_info_reports_sizes():
    """The sizes `tarn info` prints against figures made apart from it: the
    C API's (model_sizes, tests/reliability, built beside the CLI) and a
    parameter count from the golden's config."""
    model = GOLDENS / "speech" / "model.tarn"
    result = subprocess.run([TARN, "info", str(model)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "layers" in result.stdout and "causal depthwise, kernel 7" in result.stdout
    c = json.loads((GOLDENS / "speech" / "case.json").read_text())["config"]
    assert f"{c['num_layers']} x (d_model {c['d_model']}" in result.stdout

    sizes_program = Path(TARN).with_name("model_sizes")
    assert sizes_program.is_file(), f"{sizes_program} is missing: build the target tarn_model_sizes"
    sizes = subprocess.run([str(sizes_program), str(model)], capture_output=True, text=True)
    assert sizes.returncode == 0, sizes.stderr
    c_api = {name: int(value) for name, value in (line.split() for line in sizes.stdout.splitlines())}
    session = re.search(r"^session bytes +(\d+) \(prefill chunks of 64; (\d+) with 1\)$", result.stdout, re.M)
    assert session, result.stdout
    assert int(session[1]) == c_api["session_bytes"]
    assert int(session[2]) == c_api["session_bytes_chunk_1"]
    assert f"\nsnapshot bytes   {c_api['snapshot_bytes']}\n" in result.stdout

    # The speech model: stacked frames projected, then per layer the q, k,
    # v and out projections, the depthwise convolution, the feed-forward
    # pair and two LayerNorms; a final LayerNorm and the head. Every dense
    # layer and the convolution have a bias.
    d, ff, qk, v = c["d_model"], c["d_ff"], c["num_heads"] * c["d_key"], c["num_heads"] * c["d_value"]
    layer = (2 * (d * qk + qk) + (d * v + v) + (v * d + d) + (d * c["conv_kernel"] + d)
             + (d * ff + ff) + (ff * d + d) + 2 * 2 * d)
    stacked = c["input_dim"] * c["stack_window"]
    parameters = (stacked * d + d) + c["num_layers"] * layer + 2 * d + (d * c["output_dim"] + c["output_dim"])
    assert f"\nparameters       {parameters}\n" in result.stdout


@pytest.mark.any_kernels
def test_input_through_a_pipe(tmp_path):
    """A pipe has no end to seek to: --input /dev/stdin was refused as
    "data is truncated: ... the file holds 0". It is read to its end."""
    golden = GOLDENS / "tokens"
    inputs = (golden / "input.npy").read_bytes()
    command = [TARN, "run", str(golden / "model.tarn"), "--input"]
    result = subprocess.run([*command, str(golden / "input.npy"), "--output", str(tmp_path / "path.npy")],
                            capture_output=True)
    assert result.returncode == 0, result.stderr
    result = subprocess.run([*command, "/dev/stdin", "--output", str(tmp_path / "pipe.npy")],
                            input=inputs, capture_output=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "pipe.npy").read_bytes() == (tmp_path / "path.npy").read_bytes()
    # Cut short, a pipe's data is counted as a file's is.
    data_start = 10 + int.from_bytes(inputs[8:10], "little")  # a version 1.0 header
    result = subprocess.run([*command, "/dev/stdin", "--output", str(tmp_path / "cut.npy")],
                            input=inputs[:-4], capture_output=True, text=False)
    assert result.returncode == 1
    expected = f"expected {len(inputs) - data_start} bytes, the file holds {len(inputs) - 4 - data_start}"
    assert expected in result.stderr.decode(), result.stderr


@pytest.mark.any_kernels
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_no_output_is_left_when_a_later_write_fails(tmp_path):
    """Every output is written before any is renamed into place: --log-probs
    on a full disk (/dev/full) failed after --output had replaced the file
    at its path."""
    golden = GOLDENS / "concat_mixture"
    (tmp_path / "output.npy").write_bytes(b"an earlier output")
    result = tarn_run(golden / "model.tarn", golden / "input.npy", tmp_path, "--log-probs", "/dev/full")
    assert result.returncode == 1
    assert "cannot write '/dev/full': No space left on device" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output.npy"]
    assert (tmp_path / "output.npy").read_bytes() == b"an earlier output"


def with_metadata(tmp_path: Path, metadata: dict, labels=None) -> Path:
    """The tokens golden rewritten with `metadata` added to its own (and
    `labels`, when given), past the converter's checks."""
    from converter.reader import read_tarn
    from converter.writer import _build

    f = read_tarn(GOLDENS / "tokens" / "model.tarn")
    path = tmp_path / "edited.tarn"
    path.write_bytes(_build(f.config, dict(f.tensors), labels or f.labels, f.audio, {**f.metadata, **metadata})[0])
    return path


@pytest.mark.any_kernels
@pytest.mark.parametrize("metadata, expected", [
    ({"note": "ab\0c"}, "model metadata 'note' has a value holding a NUL byte at byte 2"),
    ({"no\0te": "x"}, "model metadata key 'no\\x00te' (entry 4) holds a NUL byte"),
])
def test_metadata_holding_a_nul_is_refused(tmp_path, metadata, expected):
    """The C API hands metadata out as NUL-terminated strings: a NUL read
    one as other, shorter text."""
    result = subprocess.run([TARN, "info", str(with_metadata(tmp_path, metadata))], capture_output=True, text=True)
    assert result.returncode == 1
    assert expected in result.stderr, result.stderr


@pytest.mark.any_kernels
def test_a_label_holding_a_nul_is_refused(tmp_path):
    """Labels become transcripts, which the C API hands out NUL-terminated."""
    from converter.reader import read_tarn

    labels = [f"l{i}" for i in range(read_tarn(GOLDENS / "tokens" / "model.tarn").config.output_dim)]
    labels[3] = "a\0b"
    result = subprocess.run([TARN, "info", str(with_metadata(tmp_path, {}, labels))], capture_output=True, text=True)
    assert result.returncode == 1
    assert "model label 3 ('a\\x00b') holds a NUL byte" in result.stderr, result.stderr


@pytest.mark.any_kernels
def test_a_tensor_name_that_is_not_printable_is_refused(tmp_path):
    """Tensor names reach messages: raw, a name's control bytes reached the
    terminal."""
    from converter.reader import read_tarn
    from converter.writer import _build

    f = read_tarn(GOLDENS / "tokens" / "model.tarn")
    tensors = dict(f.tensors)
    tensors["x\n\x1b[2J"] = tensors.pop(next(iter(tensors)))
    path = tmp_path / "edited.tarn"
    path.write_bytes(_build(f.config, tensors, f.labels, f.audio, f.metadata)[0])
    result = subprocess.run([TARN, "info", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tensor name 'x\\x0a\\x1b[2J' is not printable ASCII" in result.stderr, result.stderr


@pytest.mark.any_kernels
def test_info_shows_control_characters_in_metadata_escaped(tmp_path):
    """Metadata printed raw could forge lines of `tarn info` or drive the
    terminal (ESC, or the C1 CSI U+009B)."""
    forged = "x\nsession bytes    1\n\x1b[2J\u009b6n\x7f"
    result = subprocess.run([TARN, "info", str(with_metadata(tmp_path, {"note": forged, "tab\tkey": "é"}))],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("session bytes") for line in lines) == 1
    assert "meta note        x\\x0asession bytes    1\\x0a\\x1b[2J\\u009b6n\\x7f" in lines
    assert "meta tab\\x09key  é" in lines
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in result.stdout.replace("\n", ""))


# -- fast-transformers ---------------------------------------------------------

CAUSAL_CASES = ["causal_linear", "causal_relu", "causal_favor", "causal_favor_stabilize"]




@pytest.mark.parametrize("case", CAUSAL_CASES)
def test_fast_transformers_recurrent_model(case, converted, tmp_path):
    fixture = FAST_TRANSFORMERS / case
    model = converted("fast-transformers", fixture)
    run_ok(model, fixture / "input.npy", tmp_path)
    output = np.load(tmp_path / "output.npy")
    assert output.shape[0] >= 256
    error = scaled_error(output, np.load(fixture / "output.npy"))
    print(f"{case}: max scaled |tarn - fast-transformers| = {error:.2e}")
    assert error <= TOLERANCE
    for state in ("state_S", "state_z"):
        assert scaled_error(np.load(tmp_path / f"{state}.npy"), np.load(fixture / f"{state}.npy")) <= TOLERANCE


# -- the paper authors' image model (idiap/linear-transformer-experiments) ----

AUTHORS = ROOT / "tests" / "data" / "linear_transformer_experiments"




@pytest.mark.parametrize("prefill", [pytest.param(0, marks=pytest.mark.any_kernels), 500])
def test_authors_image_model_matches_their_recurrent_code(prefill, converted, tmp_path):
    """784 pixels through their RecurrentGenerator (output.npy) and through
    tarn, stepped or with the first 500 as a prefill."""
    model = converted("linear-transformer-experiments", AUTHORS)
    run_ok(model, AUTHORS / "input.npy", tmp_path, "--prefill", str(prefill))
    output, expected = np.load(tmp_path / "output.npy"), np.load(AUTHORS / "output.npy")
    assert output.shape == expected.shape == (784, 30)
    error = scaled_error(output, expected)
    print(f"authors' image model, prefill {prefill}: max scaled |tarn - their recurrent code| = {error:.2e}")
    assert error <= TOLERANCE


def test_authors_image_model_level_distribution(converted, tmp_path):
    """tarn's level log-probabilities (C++) against the reference's table
    (NumPy, float64), computed from the same outputs. make_fixtures.py checked
    that table against their sampler's draws."""
    from converter.reference import logistic_mixture_levels

    model = converted("linear-transformer-experiments", AUTHORS)
    run_ok(model, AUTHORS / "input.npy", tmp_path, "--log-probs", str(tmp_path / "log_p.npy"))
    output, log_p = np.load(tmp_path / "output.npy"), np.load(tmp_path / "log_p.npy").astype(np.float64)
    assert log_p.shape == (784, 256)
    table = logistic_mixture_levels(output.astype(np.float64), 256)
    assert np.allclose(table.sum(-1), 1, atol=1e-12)
    probability_error = float(np.abs(np.exp(log_p) - table).max())
    kept = table > 1e-30  # above float's range, log_p is floored at log(FLT_MIN)
    log_error = float(np.abs(log_p[kept] - np.log(table[kept])).max())
    print(f"level distribution: max |p tarn - p reference| = {probability_error:.2e}, max |log p diff| = {log_error:.2e}")
    assert probability_error <= 1e-6
    assert log_error <= 1e-4


@pytest.mark.any_kernels
def test_log_probs_refused_without_a_distribution(converted, tmp_path):
    model = converted("fast-transformers", FAST_TRANSFORMERS / "causal_linear")
    inputs = FAST_TRANSFORMERS / "causal_linear" / "input.npy"
    result = tarn_run(model, inputs, tmp_path, "--log-probs", str(tmp_path / "p.npy"))
    assert result.returncode == 1
    assert "no output distribution over levels" in result.stderr


def test_no_output_is_written_when_one_cannot_be(converted, tmp_path):
    """Every output path is checked before the run: an unwritable --log-probs
    used to fail after --output and the state were written."""
    model = converted("linear-transformer-experiments", AUTHORS)
    result = tarn_run(model, AUTHORS / "input.npy", tmp_path, "--log-probs", str(tmp_path / "absent" / "log_p.npy"))
    assert result.returncode == 1
    assert "cannot write" in result.stderr and "log_p.npy" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.any_kernels
def test_outputs_that_are_not_plain_files(tmp_path):
    """--output /dev/stdout is written in place (there is nothing to rename
    over), and a symlink's target is replaced, the link kept."""
    golden = GOLDENS / "tokens"
    expected = np.load(golden / "output.npy")
    result = subprocess.run([TARN, "run", str(golden / "model.tarn"), "--input", str(golden / "input.npy"),
                             "--output", "/dev/stdout"], capture_output=True)
    assert result.returncode == 0, result.stderr
    assert scaled_error(np.load(io.BytesIO(result.stdout)), expected) <= TOLERANCE
    target = tmp_path / "target.npy"
    target.write_bytes(b"old")
    link = tmp_path / "link.npy"
    link.symlink_to(target)
    result = subprocess.run([TARN, "run", str(golden / "model.tarn"), "--input", str(golden / "input.npy"),
                             "--output", str(link)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and scaled_error(np.load(target), expected) <= TOLERANCE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npy", "target.npy"]


@pytest.mark.any_kernels
def test_generate_completes_the_authors_model_from_their_outputs(tmp_path):
    """tarn generate on the authors' model, which has no start token: step p
    reads pixel p and gives pixel p + 1 (their predict_with_recurrent). An
    image of 393 x 1 pixels whose first 392 are their fixture's input,
    completed 4,096 times (64 copies, 64 completions each): each drawn pixel 392 is a draw from the level
    distribution of their output 391 (output.npy, their own code's). Pearson
    chi-square over the levels, neighbours merged only until each group
    expects 5 draws (a sampler off by one level, or a step off by one pixel,
    moves draws across groups). Generate fed a start token first, so that
    every pixel went one position late; unconditional generation is refused."""
    from converter.reference import logistic_mixture_levels
    from matplotlib.image import imread

    known, copies, per_image = 392, 64, 64
    count = copies * per_image
    model = tmp_path / "model.tarn"
    result = subprocess.run(
        [sys.executable, "-m", "converter", "convert", str(AUTHORS / "model.pt"), str(model),
         "--arch", "linear-transformer-experiments", "--config", str(AUTHORS / "config.json"),
         "--meta", f"image_height={known + 1}", "--meta", "image_width=1", "--meta", "image_start_token=none"],
        capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    pixels = np.load(AUTHORS / "input.npy")
    images = tmp_path / "images-idx3-ubyte"
    images.write_bytes(struct.pack(">IIII", 0x00000803, copies, known + 1, 1)
                       + copies * pixels[: known + 1].astype(np.uint8).tobytes())
    grid_path = tmp_path / "grid.png"
    result = subprocess.run(
        [TARN, "generate", str(model), "--out", str(grid_path), "--complete", str(images), "--known-rows", str(known),
         "--count", str(copies), "--per-image", str(per_image), "--scale", "1", "--seed", "6", "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    grid = np.rint(imread(grid_path) * 255).astype(int)
    # generate's grid: a row per image of [known part, completions, original], 2-pixel gaps
    gap = 2
    rows, cols = np.divmod(np.arange(count), per_image)
    levels = grid[gap + rows * (known + 1 + gap) + known, gap + (1 + cols) * (1 + gap)]

    table = logistic_mixture_levels(np.load(AUTHORS / "output.npy")[known - 1].astype(np.float64), 256)
    group = np.zeros(256, dtype=int)  # each level's group, in level order
    groups, filled = 0, 0.0
    for level in range(256):
        group[level] = groups
        filled += count * table[level]
        if filled >= 5:
            groups, filled = groups + 1, 0.0
    group[group == groups] = groups - 1  # a short tail joins the last full group
    expected = np.bincount(group, weights=count * table)
    observed = np.bincount(group[levels], minlength=len(expected))
    dof = len(expected) - 1
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    # The 1e-5 tail of chi-square with dof degrees of freedom, by Wilson and
    # Hilferty's normal approximation (z = 4.265).
    limit = dof * (1 - 2 / (9 * dof) + 4.265 * math.sqrt(2 / (9 * dof))) ** 3
    print(f"tarn generate, 4,096 draws of pixel {known}: chi-square {chi2:.1f} on {dof} degrees of freedom "
          f"(limit {limit:.1f})")
    assert dof >= 15
    assert chi2 < limit

    result = subprocess.run([TARN, "generate", str(model), "--out", str(grid_path), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "has no start token" in result.stderr, result.stderr

    # The draws above agree with a step one pixel late too (the fixture's
    # random weights change little from one position to the next). The most
    # likely level (--top-k 1) tells them apart at pixels 3 and 500, where a
    # late step picks the other edge level; 1 and 392 as well.
    whole = tmp_path / "whole.tarn"
    result = subprocess.run(
        [sys.executable, "-m", "converter", "convert", str(AUTHORS / "model.pt"), str(whole),
         "--arch", "linear-transformer-experiments", "--config", str(AUTHORS / "config.json"),
         "--meta", "image_height=784", "--meta", "image_width=1", "--meta", "image_start_token=none"],
        capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    images.write_bytes(struct.pack(">IIII", 0x00000803, 1, 784, 1) + pixels.astype(np.uint8).tobytes())
    outputs = np.load(AUTHORS / "output.npy").astype(np.float64)
    for known in (1, 3, 392, 500):
        table = np.sort(logistic_mixture_levels(outputs[known - 1], 256))
        assert table[-1] - table[-2] > 1e-3  # no near tie that rounding could flip
        result = subprocess.run(
            [TARN, "generate", str(whole), "--out", str(grid_path), "--complete", str(images), "--known-rows",
             str(known), "--count", "1", "--per-image", "1", "--top-k", "1", "--scale", "1", "--quiet"],
            capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        drawn = np.rint(imread(grid_path) * 255).astype(int)[gap + known, gap + 1 + gap]
        assert drawn == logistic_mixture_levels(outputs[known - 1], 256).argmax(), known


@pytest.mark.any_kernels
def test_outputs_that_would_replace_what_the_run_reads(tmp_path):
    """A directory, the model, the input, or one output twice is refused
    before anything is written; a full standard output is an error."""
    golden = GOLDENS / "tokens"
    model = tmp_path / "model.tarn"
    model.write_bytes((golden / "model.tarn").read_bytes())
    inputs = tmp_path / "input.npy"
    inputs.write_bytes((golden / "input.npy").read_bytes())
    (tmp_path / "dir").mkdir()
    run = [TARN, "run", str(model), "--input", str(inputs), "--output"]
    for output, message in [(tmp_path / "dir", "it is a directory"), (model, "is the model"), (inputs, "is the input")]:
        result = subprocess.run([*run, str(output)], capture_output=True, text=True)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    assert model.read_bytes() == (golden / "model.tarn").read_bytes()
    with open("/dev/full", "w") as full:
        result = subprocess.run([TARN, "info", str(model)], stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 1 and "cannot write the standard output" in result.stderr


@pytest.mark.any_kernels
def test_labels_that_are_not_text_are_refused_at_load(tmp_path):
    """A label reaches JSON and Python as text: one that is not UTF-8 is a
    damaged model (tarn transcribe --json aborted on it)."""
    data = bytearray((GOLDENS / "speech" / "model.tarn").read_bytes())
    at = data.index(b"<blank>")
    data[at] = 0xFF
    (tmp_path / "model.tarn").write_bytes(stamped(data))
    result = subprocess.run([TARN, "info", str(tmp_path / "model.tarn")], capture_output=True, text=True)
    assert result.returncode == 1 and "is not UTF-8 text" in result.stderr, result.stderr


@pytest.mark.any_kernels
def test_two_spellings_of_one_new_output_are_one_file(tmp_path):
    """A relative and an absolute path of one file that does not exist yet:
    the log-probabilities would have replaced the outputs."""
    model = GOLDENS / "concat_mixture" / "model.tarn"
    result = subprocess.run([TARN, "run", str(model), "--input", str(GOLDENS / "concat_mixture" / "input.npy"),
                             "--output", "o.npy", "--log-probs", str(tmp_path / "o.npy")],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1 and "two outputs are the same file" in result.stderr, result.stderr
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.any_kernels
def test_cli_messages_say_things_once(tmp_path):
    """Past a learned position table the error names the step once; an .npy
    version byte above 127 reads as itself; --hotword-boost needs --hotwords."""
    golden = GOLDENS / "learned"
    tokens = tmp_path / "long.npy"
    np.save(tokens, np.zeros(600, np.int32))
    result = subprocess.run([TARN, "run", str(golden / "model.tarn"), "--input", str(tokens), "--output",
                             str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.count("step 512") == 1, result.stderr
    data = bytearray((GOLDENS / "tokens" / "input.npy").read_bytes())
    data[6] = 0xFF
    (tmp_path / "v.npy").write_bytes(bytes(data))
    result = subprocess.run([TARN, "run", str(GOLDENS / "tokens" / "model.tarn"), "--input", str(tmp_path / "v.npy"),
                             "--output", str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert "version 255" in result.stderr, result.stderr
    result = subprocess.run([TARN, "transcribe", str(GOLDENS / "speech" / "model.tarn"), "-", "--hotword-boost", "2"],
                            capture_output=True, text=True, input="")
    assert result.returncode != 0 and "--hotword-boost requires --hotwords" in result.stderr, result.stderr
