"""Golden data for the runtime's tests, made from the PyTorch reference model,
and the one builder of seeded random reference models every Python test and
tool uses (build_model).

    python3 -m tests.goldens OUT_DIR --case tokens [--length T] [--seed N] [--dtype f16]
    python3 -m tests.goldens ROOT --suite      every golden the tests read (SUITE),
                                               each in ROOT/<name>, in one process

writes into OUT_DIR:
    model.tarn       a seeded reference model, converted
    input.npy        tokens [T] int32, or frames [T, input_dim] float32
    output.npy       [steps, out] float32: run_recurrent's per-step outputs
                     (for `bidirectional`, the parallel form's outputs)
    state_S.npy      [layers, heads, C, d_value] final attention state
    state_z.npy      [layers, heads, C]
    state_conv.npy   [layers, conv_kernel - 1, d_model] (models with conv)
    case.json        the case, length, seed and ModelConfig, for the reader

Outputs come from the f32 reference: with --dtype f16 only the model file's
matrices are rounded, so a test compares with an f16 tolerance. With --dtype
i8, output.npy comes from the model the file holds (model_as_stored: int8
weights times their scales, f16 embeddings), so a test compares with the f32
tolerance, and output_f32.npy from the f32 reference shows what int8 costs;
--dtype bf16 likewise (matrices rounded to bf16 by round_bf16).
Nothing here is committed: ctest runs --suite at test time (the `goldens`
fixture of tests/CMakeLists.txt). Run from the repository root (PYTHONPATH=.).
"""

import argparse
import dataclasses
import json
import math
import string
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from converter.convert import convert_state_dict
from converter.errors import ConversionError
from converter.reference import LinearTransformer, ModelConfig
from converter.writer import DTYPES


def scaled_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """How every golden test measures tarn against the reference: max |actual -
    expected|, relative to max |expected| where that exceeds 1 (so large
    logits are held to their float precision, small ones absolutely)."""
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    return float(np.abs(actual - expected).max() / max(1.0, np.abs(expected).max()))


@dataclasses.dataclass
class Case:
    config: ModelConfig
    length: int  # tokens, or frames before stacking
    labels: Optional[List[str]] = None
    audio: Optional[dict] = None


def _small_tokens(**overrides) -> ModelConfig:
    """The small token model the feature-map cases vary."""
    fields = dict(d_model=32, num_layers=2, num_heads=2, d_key=16, d_value=16, d_ff=64)
    fields.update(vocab_size=64, output_dim=64, position="sinusoidal")
    fields.update(overrides)
    return ModelConfig(**fields)


_LARGE = dict(
    d_model=128,
    num_layers=4,
    num_heads=4,
    d_key=32,
    d_value=32,
    d_ff=512,
    position="sinusoidal",
    norm_placement="post",
    activation="relu",
)

# CTC labels of the speech case: blank, space, a-z, apostrophe.
_SPEECH_LABELS = ["<blank>", " "] + list(string.ascii_lowercase) + ["'"]


def _speech_audio(rng: np.random.Generator) -> dict:
    return dict(
        sample_rate=16000,
        window_length=400,
        hop_length=160,
        fft_size=512,
        num_mel_bins=40,
        low_frequency=20.0,
        high_frequency=7600.0,
        window="povey",
        log_floor=1e-10,
        feature_mean=rng.normal(-8.0, 2.0, 40).round(4).tolist(),
        feature_std=rng.uniform(2.0, 4.0, 40).round(4).tolist(),
    )


CASES: Dict[str, Callable[[np.random.Generator], Case]] = {
    "tokens": lambda rng: Case(ModelConfig(**_LARGE, vocab_size=256, output_dim=256), 2000),
    "frames": lambda rng: Case(ModelConfig(**_LARGE, input_kind="frames", input_dim=40, output_dim=32), 2000),
    "speech": lambda rng: Case(
        ModelConfig(
            d_model=144,
            num_layers=4,
            num_heads=4,
            d_key=36,
            d_value=36,
            d_ff=512,
            input_kind="frames",
            input_dim=40,
            stack_window=9,
            stack_hop=3,
            input_activation="gelu",
            norm_placement="pre",
            activation="gelu",
            conv_kernel=7,
            final_norm=True,
            output_dim=len(_SPEECH_LABELS),
        ),
        600,
        labels=_SPEECH_LABELS,
        audio=_speech_audio(rng),
    ),
    "favor": lambda rng: Case(_small_tokens(feature_map="favor+", feature_dim=32), 300),
    "favor_stabilize": lambda rng: Case(_small_tokens(feature_map="favor+", feature_dim=32, favor_stabilize=True), 300),
    "relu": lambda rng: Case(_small_tokens(feature_map="relu"), 300),
    "learned": lambda rng: Case(
        _small_tokens(
            position="learned",
            max_positions=512,
            embedding_scale=math.sqrt(32),
            norm_placement="pre",
            activation="gelu",
            final_norm=True,
        ),
        300,
    ),
    "bidirectional": lambda rng: Case(_small_tokens(attention="bidirectional"), 200),
    # The paper authors' image-model input and head: a grey level's embedding
    # followed by a concatenated sinusoid, a logistic mixture over 256 levels.
    "concat_mixture": lambda rng: Case(
        _small_tokens(
            vocab_size=256,
            position_concat_dim=16,
            final_norm=True,
            output_dim=30,
            output_distribution="logistic-mixture",
            output_levels=256,
        ),
        784,
    ),
    # An offline encoder over frames: stacking, convolution, favor+, pre-norm.
    "bidirectional_speech": lambda rng: Case(
        ModelConfig(
            d_model=48,
            num_layers=2,
            num_heads=2,
            d_key=16,
            d_value=24,
            d_ff=96,
            input_kind="frames",
            input_dim=20,
            stack_window=4,
            stack_hop=2,
            input_activation="gelu",
            position="sinusoidal",
            norm_placement="pre",
            activation="gelu",
            attention="bidirectional",
            feature_map="favor+",
            feature_dim=32,
            conv_kernel=5,
            final_norm=True,
            output_dim=29,
        ),
        301,
    ),
    # The paper's MNIST shape (8 layers, 8 x 32 heads, d_ff 1024), for
    # benchmarks (bench/api_bench.cc); not a ctest case.
    "mnist": lambda rng: Case(
        ModelConfig(
            d_model=256,
            num_layers=8,
            num_heads=8,
            d_key=32,
            d_value=32,
            d_ff=1024,
            vocab_size=256,
            output_dim=256,
            position="sinusoidal",
        ),
        16,
    ),
}


# How build_model sets the parameters after PyTorch's initialisation.
WEIGHTS = ("perturbed", "random", "default")


def build_model(config: ModelConfig, seed: int, weights: str = "perturbed") -> LinearTransformer:
    """A seeded reference model (torch.manual_seed(seed), then PyTorch's
    initialisation). `weights`:
      perturbed  LayerNorm parameters and conv biases, which start at 1 and 0
                 in PyTorch, perturbed, so that a runtime that swaps or
                 ignores them fails the goldens;
      random     every parameter drawn again from N(0, 0.3^2), so that a
                 swapped tensor cannot go unnoticed (the converter's tests);
      default    PyTorch's initialisation as it is (the fuzz seeds)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights {weights!r}: expected one of {', '.join(WEIGHTS)}")
    torch.manual_seed(seed)
    model = LinearTransformer(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if weights == "random":
                p.copy_(torch.randn_like(p) * 0.3)
            elif weights == "perturbed":
                if ".norm" in f".{name}" and name.endswith(".weight"):
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                elif ".norm" in f".{name}" or name.endswith("conv.bias"):
                    p.copy_(0.1 * torch.randn_like(p))
    return model


def quantize_per_row(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The tests' own int8 quantiser, written from docs/decisions.md ("int8
    weights") and sharing no code with the converter's: symmetric, one f32
    scale per output row, scale = max |w| / 127, q = w / scale rounded half
    to even and clipped to [-127, 127]; an all-zero row has scale 0 and q 0.
    Returns (q [rows, cols] int8, scale [rows] float32)."""
    w = np.asarray(w, dtype=np.float32)
    q = np.zeros(w.shape, dtype=np.int8)
    scale = np.zeros(w.shape[0], dtype=np.float32)
    for row in range(w.shape[0]):
        peak = np.float32(np.abs(w[row]).max())
        if peak == 0:
            continue
        scale[row] = peak / np.float32(127)
        q[row] = np.clip(np.round(w[row] / scale[row]), -127, 127)
    return q, scale


def round_bf16(w: np.ndarray) -> np.ndarray:
    """The tests' own rounding of f32 to bfloat16, written from the format
    (the top 16 bits of an f32, rounded to nearest, ties to even) and sharing
    no code with the converter's: keep the top half, add one to it when the
    dropped half is over 0x8000, or exactly 0x8000 and the kept half odd.
    Returns the bits (uint16) of each rounded value."""
    bits = np.ascontiguousarray(w, dtype=np.float32).view(np.uint32)
    upper = (bits >> np.uint32(16)).astype(np.uint32)
    lower = bits & np.uint32(0xFFFF)
    up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    return (upper + up.astype(np.uint32)).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    """The f32 values of bfloat16 bits."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def model_as_stored(model: LinearTransformer, dtype: str) -> LinearTransformer:
    """A copy of `model` holding, in f32, the values a file of `dtype` holds,
    as the format documents them (docs/decisions.md) rather than as the
    converter computes them, so that goldens check the converter too: f16
    files round the dense layers' and embeddings' weights to f16; i8 files
    hold the dense layers' weights as quantize_per_row gives them (q times
    scale) and the embeddings in f16; bf16 files round what f16 files round
    to bf16 instead (round_bf16); everything else stays f32."""
    import copy

    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    stored = copy.deepcopy(model)
    with torch.no_grad():
        for module in stored.modules():
            if isinstance(module, torch.nn.Linear) and dtype == "i8":
                q, scale = quantize_per_row(module.weight.numpy())
                module.weight.copy_(torch.from_numpy(q.astype(np.float32) * scale[:, None]))
            elif isinstance(module, (torch.nn.Linear, torch.nn.Embedding)) and dtype == "bf16":
                module.weight.copy_(torch.from_numpy(bf16_values(round_bf16(module.weight.numpy()))))
            elif isinstance(module, (torch.nn.Linear, torch.nn.Embedding)) and dtype != "f32":
                module.weight.copy_(module.weight.half().float())
    return stored


def stored_bytes_by_dtype(path: Path) -> dict:
    """Each dtype's bytes of tensor data, read from the file with the
    flatc-generated Python code (not tarn's loader)."""
    from converter.schema_code import schema

    s = schema()
    model = s.Model.GetRootAs(path.read_bytes(), 0)
    names = {getattr(s.DType, name): name.lower() for name in ("F32", "F16", "I8", "BF16")}
    stored = {}
    for i in range(model.TensorsLength()):
        tensor = model.Tensors(i)
        name = names[tensor.Dtype()]
        stored[name] = stored.get(name, 0) + model.Buffers(tensor.Buffer()).DataLength()
    return stored


def stamped(data: bytes) -> bytes:
    """A model file edited in place, with the file checksum (schema 2.1) a
    writer of the edited values would have given it, so that a load checks
    the values rather than refusing the file as damaged."""
    from converter.schema_code import schema
    from converter.writer import file_checksum, file_checksum_at

    data = bytearray(data)
    at = file_checksum_at(schema().Model.GetRootAs(data, 0), data)
    data[at : at + 8] = file_checksum(data, at).to_bytes(8, "little")
    return bytes(data)


def make_input(config: ModelConfig, length: int, rng: np.random.Generator) -> np.ndarray:
    if config.input_kind == "tokens":
        return rng.integers(0, config.vocab_size, size=length, dtype=np.int32)
    return rng.standard_normal((length, config.input_dim)).astype(np.float32)


def generate(out_dir, case: str, length: Optional[int] = None, seed: int = 0, dtype: str = "f32") -> Path:
    """Writes the golden files of one case into out_dir; returns out_dir."""
    if case not in CASES:
        raise ConversionError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    rng = np.random.default_rng(seed)
    spec = CASES[case](rng)
    config = spec.config
    length = spec.length if length is None else length
    if config.input_kind == "frames" and length < config.stack_window:
        raise ConversionError(f"case {case} needs at least stack_window = {config.stack_window} frames")
    if config.position == "learned" and length > config.max_positions:
        raise ConversionError(f"case {case} has learned positions for {config.max_positions} steps, not {length}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = build_model(config, seed)
    inputs = make_input(config, length, rng)
    as_torch = torch.from_numpy(inputs).long() if config.input_kind == "tokens" else torch.from_numpy(inputs)

    def run(m):
        if config.attention == "causal":
            return m.run_recurrent(as_torch)
        return m(as_torch.unsqueeze(0))[0], None

    arrays = {"input": inputs}
    with torch.no_grad():
        if dtype != "f32":
            arrays["output_f32"] = run(model)[0]
            model_output = model_as_stored(model, dtype)
        else:
            model_output = model
        output, state = run(model_output)
    if state is not None:
        arrays["state_S"] = state["S"][:, 0]
        arrays["state_z"] = state["z"][:, 0]
        if config.conv_kernel:
            arrays["state_conv"] = state["conv"][:, 0]
    arrays["output"] = output
    for name, array in arrays.items():
        array = array.numpy() if isinstance(array, torch.Tensor) else array
        np.save(out / f"{name}.npy", np.ascontiguousarray(array))

    convert_state_dict(
        model.state_dict(),
        config,
        out / "model.tarn",
        dtype=dtype,
        labels=spec.labels,
        audio=spec.audio,
        # A fixed date: the same case gives the same bytes on every run.
        metadata={"source": f"tests.goldens case {case}, seed {seed}", "date": "fixed"},
    )
    summary = {"case": case, "length": length, "seed": seed, "dtype": dtype, "config": config.to_dict()}
    (out / "case.json").write_text(json.dumps(summary, indent=2) + "\n")
    return out


# The goldens the tests read, by folder under TARN_GOLDENS: (case, dtype).
SUITE: Dict[str, Tuple[str, str]] = {
    **{
        case: (case, "f32")
        for case in ("tokens", "frames", "speech", "favor", "favor_stabilize", "relu", "learned",
                     "bidirectional", "bidirectional_speech", "concat_mixture")
    },
    "tokens_f16": ("tokens", "f16"),
    "tokens_i8": ("tokens", "i8"),
    "tokens_bf16": ("tokens", "bf16"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.goldens", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--suite", action="store_true",
                        help="write every golden of SUITE into OUT_DIR/<name> (torch starts once)")
    parser.add_argument("--length", "-T", type=int, help="tokens or frames (default: the case's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=DTYPES, default="f32", help="of the model file's matrices")
    args = parser.parse_args(argv)
    if (args.case is None) == (not args.suite):
        parser.error("give --case or --suite")
    if args.suite and (args.length is not None or args.dtype != "f32"):
        parser.error("--suite makes each golden with its own length and dtype")
    if args.length is not None and args.length <= 0:
        parser.error("--length must be positive")
    # Steps are tiny matrix-vector products: threads cost more than they give.
    torch.set_num_threads(1)
    jobs = ([(name, Path(args.out_dir) / name, case, dtype) for name, (case, dtype) in SUITE.items()]
            if args.suite else [(args.case, Path(args.out_dir), args.case, args.dtype)])
    for name, out_dir, case, dtype in jobs:
        start = time.perf_counter()
        try:
            generate(out_dir, case, args.length, args.seed, dtype)
        except ConversionError as e:
            print(f"error: {name}: {e}", file=sys.stderr)
            return 1
        print(f"{name}: wrote {out_dir} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
