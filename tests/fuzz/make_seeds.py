"""Writes the fuzzer's seed corpus: one tiny valid .tarn model of every kind.

    /usr/bin/python3 tests/fuzz/make_seeds.py tests/fuzz/seeds [NAME ...]

(NAMEs: write only those seeds.)

Each model has every width at 2 to 8, so a file is a few KB and the fuzzer
mutates fields rather than weights. Together they cover every schema choice
the runtime branches on: token and frame input (projected or not, stacked),
each position kind, a sinusoidal position concatenated (1.1), post- and
pre-norm, relu and gelu, the three feature maps (favor+ with and without its
stabiliser), causal and bidirectional attention, the depthwise convolution
(including width 1), final norm, head or none, a logistic-mixture output
(1.1), labels, a speech front end (with a speaker's warp, 1.5), f32, f16,
bf16 (1.4) and int8 (1.2) dense weights, stored blocked (1.3, the
converter's default, used in place) or row-major (packed at load). The
converter writes the current schema (2.1: with a file checksum). Byte-level
mutation cannot add a field a file leaves out as a default, so each of
these must be in some seed for the fuzzer to reach it
(replay_test.cc SeedsCoverEverySchemaFeature checks that they are).

Two seeds are not written here but kept as an older converter wrote them,
so that major-1 files (no file checksum, row-major weights packed at load)
are fuzzed too: legacy_1_0_speech.tarn (schema 1.0) and
legacy_1_2_tokens_i8_two_layers.tarn (1.2).

Run from the repository root (the converter is imported from there); the
files are committed, and the output is deterministic (a fixed seed and
date).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from converter.convert import convert_state_dict  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402
from tests.goldens import build_model  # noqa: E402

TINY = dict(d_model=4, num_layers=1, num_heads=2, d_key=2, d_value=2, d_ff=8)

SPEECH_AUDIO = dict(
    sample_rate=16000,
    window_length=400,
    hop_length=160,
    fft_size=512,
    num_mel_bins=3,
    low_frequency=20.0,
    high_frequency=7600.0,
    window="povey",
    log_floor=1e-10,
    feature_mean=[-8.0, -7.5, -7.0],
    feature_std=[2.0, 2.5, 3.0],
)

# name: (config overrides, writer options)
SEEDS = {
    "tokens_elu_post_sinusoidal": (dict(vocab_size=5, position="sinusoidal", output_dim=5), {}),
    "tokens_relu_pre_gelu_learned": (
        dict(
            vocab_size=5,
            feature_map="relu",
            norm_placement="pre",
            activation="gelu",
            position="learned",
            max_positions=6,
            embedding_scale=2.0,
            final_norm=True,
            output_dim=3,
        ),
        {},
    ),
    "tokens_favor": (dict(vocab_size=5, feature_map="favor+", feature_dim=4, output_dim=5), {}),
    "tokens_favor_stabilize_two_layers": (
        dict(vocab_size=5, feature_map="favor+", feature_dim=4, favor_stabilize=True, num_layers=2),
        {},
    ),
    "tokens_bidirectional": (dict(vocab_size=5, attention="bidirectional", output_dim=5), {}),
    "tokens_f16_no_head": (dict(vocab_size=5, conv_kernel=2), {"dtype": "f16"}),
    "frames_projected_conv_labels": (
        dict(
            input_kind="frames",
            input_dim=3,
            input_activation="gelu",
            conv_kernel=3,
            final_norm=True,
            output_dim=3,
        ),
        {"labels": ["<blank>", "a", "b"]},
    ),
    "frames_stacked_relu": (
        dict(input_kind="frames", input_dim=2, stack_window=3, stack_hop=2, input_activation="relu", output_dim=2),
        {},
    ),
    "frames_unprojected_conv1": (
        dict(input_kind="frames", input_dim=2, stack_window=2, input_projection=False, conv_kernel=1),
        {},
    ),
    "frames_unprojected_relu": (
        dict(input_kind="frames", input_dim=4, input_projection=False, input_activation="relu", output_dim=2),
        {},
    ),
    "tokens_i8_two_layers": (dict(vocab_size=5, num_layers=2, output_dim=5), {"dtype": "i8"}),
    "speech": (
        dict(
            input_kind="frames",
            input_dim=3,
            stack_window=3,
            stack_hop=1,
            input_activation="gelu",
            norm_placement="pre",
            activation="gelu",
            conv_kernel=2,
            final_norm=True,
            output_dim=3,
        ),
        {"labels": ["<blank>", " ", "a"], "audio": SPEECH_AUDIO},
    ),
    "tokens_bf16_conv": (dict(vocab_size=5, conv_kernel=2, output_dim=5), {"dtype": "bf16"}),
    "tokens_row_major": (
        dict(vocab_size=5, feature_map="relu", norm_placement="pre", output_dim=5),
        {"dense_layout": "row-major"},
    ),
    "frames_i8_row_major": (
        dict(input_kind="frames", input_dim=3, conv_kernel=2, output_dim=3),
        {"dtype": "i8", "dense_layout": "row-major"},
    ),
    "tokens_position_concat_mixture": (
        dict(
            vocab_size=5,
            position="sinusoidal",
            position_concat_dim=2,
            output_dim=6,
            output_distribution="logistic-mixture",
            output_levels=5,
        ),
        {},
    ),
    "speech_warp_f16": (
        dict(
            input_kind="frames",
            input_dim=3,
            stack_window=2,
            stack_hop=2,
            input_activation="gelu",
            conv_kernel=2,
            output_dim=3,
        ),
        {"dtype": "f16", "labels": ["<blank>", " ", "b"], "audio": {**SPEECH_AUDIO, "warp": 0.9, "window": "hann"}},
    ),
}


def main(out_dir: str, only=None) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, (overrides, options)) in enumerate(SEEDS.items()):
        if only and name not in only:
            continue
        config = ModelConfig(**{**TINY, **overrides})
        model = build_model(config, seed=i, weights="default")
        convert_state_dict(
            model.state_dict(),
            config,
            out / f"{name}.tarn",
            metadata={"source": f"tests/fuzz/make_seeds.py {name}", "date": "fixed"},
            **options,
        )
    total = sum(f.stat().st_size for f in out.glob("*.tarn"))
    written = len([n for n in SEEDS if not only or n in only])
    print(f"wrote {written} seeds into {out}, which now holds {total} bytes of them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/seeds", sys.argv[2:]))
