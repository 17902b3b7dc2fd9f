#!/usr/bin/python3
"""tarn's batches and prefill against PyTorch and ONNX Runtime, in one run.

    .venv/bin/python bench/batch_peers.py --api-bench build/bench/tarn_api_bench --json batch_peers.json

bench/peers.py compares single-stream steps; this compares the two paths
that are bound by the FMA units rather than by memory, on the same weights
(random, seeded, the MNIST shape of bench/step_bench.py's SHAPES; --smoke: a
tiny model for the test suite), the same thread count, f32:
  - a batch step of B streams (default 16): tarn's SessionBatch::StepTokens
    (tarn_api_bench); PyTorch eager: the reference model's recurrent step()
    on [B] tokens (S and z updated in place, as bench/peers.py times it);
    ONNX Runtime: that step as a function of the state (bench/peer_models.py
    LinearStep, which copies S and z so that the export can return them)
    exported as a graph of batch B;
  - a prefill of N tokens (default 1,024): tarn's PrefillTokens in chunks
    of 64 and N (tarn_api_bench); the reference model's parallel causal form
    (converter/reference.py forward: masked phi(Q) phi(K)^T V, as a PyTorch
    user writes it), eager and exported (ONNX Runtime).
Each figure is also given as the dense layers' GFLOP/s (the same count for
every engine: 2 x matrix parameters per position, the work tarn does; the
parallel form does more, its T x T scores) beside the FMA peak tarn_api_bench
measures in the same run. The ONNX graphs are checked against the eager
modules, and the batched step against the parallel form, before timing.

Timing: tarn_api_bench times its own runs (--reps, the fastest and the
median); then each Python peer runs --reps times back to back, one untimed
run first, timed the same way. With 1 thread, by the calling thread's CPU
time (PyTorch and ONNX Runtime run on it); with --threads above 1, by the
wall clock for every engine (one thread's CPU time would leave out the
others' work). The report prints times by that clock; the JSON holds the
wall times too. Nothing here asserts a speed.
"""

import os

# Before torch loads OpenMP: idle OpenMP threads sleep instead of spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO), str(BENCH)]

import numpy as np  # noqa: E402
import torch  # noqa: E402

import peer_models  # noqa: E402
from converter.convert import convert_state_dict  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402
from peers import VENV_HINT, ort, ort_session  # noqa: E402
from step_bench import SHAPES, SMOKE_SHAPE, fmt_load, loaded_blas, machine_info, use_best_openblas_core  # noqa: E402
from tests.goldens import build_model  # noqa: E402

# Largest |difference| of logits allowed between a graph and its eager
# module, relative to the largest |logit|.
CHECK_TOLERANCE = 1e-4


def main(argv=None) -> int:
    args = parse_args(argv)
    use_best_openblas_core(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="tarn-batch-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    if ort is None:
        print(VENV_HINT)
    spec = SMOKE_SHAPE if args.smoke else SHAPES["mnist"]
    config = ModelConfig(**spec["config"])
    model = build_model(config, seed=args.seed).eval()
    tarn_path = work / "model.tarn"
    convert_state_dict(model.state_dict(), config, tarn_path, dtype="f32", metadata={"source": f"bench/batch_peers.py, seed {args.seed}"})

    rng = np.random.default_rng(args.seed)
    prefill_tokens = torch.from_numpy(rng.integers(0, config.vocab_size, (1, args.tokens)))
    batch_tokens = torch.from_numpy(rng.integers(0, config.vocab_size, args.streams))
    # Streams at position 7, their states those of 7 random steps (a step's
    # cost does not depend on them).
    S = torch.rand(config.num_layers, args.streams, config.num_heads, config.feature_dim, config.d_value)
    z = torch.rand(config.num_layers, args.streams, config.num_heads, config.feature_dim) + 1
    position = torch.tensor([7])
    state = {**model.initial_state(args.streams), "position": int(position), "S": S.clone(), "z": z.clone()}
    step = peer_models.LinearStep(model).eval()
    jobs = {
        "torch_prefill": lambda: model(prefill_tokens),
        "torch_batch": lambda: model.step(batch_tokens, state),
    }
    checks = check_batch_steps(model, step, args.streams)
    if ort is not None:
        feeds = {"prefill": {"tokens": prefill_tokens.numpy()}, "batch": {"token": batch_tokens.numpy(), "position": position.numpy(), "S": S.numpy(), "z": z.numpy()}}
        modules = {"prefill": model, "batch": step}
        for name, module in modules.items():
            path = work / f"{name}.onnx"
            export(module, feeds[name], path)
            session = ort_session(path, args.threads)
            with torch.no_grad():
                expected = module(*(torch.from_numpy(v) for v in feeds[name].values()))
            expected = expected[0] if isinstance(expected, tuple) else expected
            got = session.run(None, feeds[name])[0]
            checks[f"ort_{name}_vs_torch"] = relative_error(got, expected.numpy())
            jobs[f"ort_{name}"] = lambda session=session, feed=feeds[name]: session.run(None, feed)
    print("largest |difference| of logits / largest |logit|: " + ", ".join(f"{k} {v:.2e}" for k, v in checks.items()), flush=True)
    bad = {k: v for k, v in checks.items() if not v <= CHECK_TOLERANCE}
    if bad:
        raise SystemExit(f"bench/batch_peers.py: peers disagree with their references beyond {CHECK_TOLERANCE}: {bad}")

    load_start = os.getloadavg()
    tarn = run_tarn(args, tarn_path, work)
    by_wall = args.threads > 1
    if tarn["clock"] != ("wall" if by_wall else "thread_cpu"):
        raise SystemExit(f"bench/batch_peers.py: tarn_api_bench timed by {tarn['clock']}, the peers would not be")
    peers = time_jobs(jobs, args.reps, by_wall)
    report = {
        "command": " ".join([sys.executable] + sys.argv),
        "machine": {**machine_info(), "load_start": load_start, "load_end": os.getloadavg()},
        "versions": {"torch": torch.__version__, "blas": loaded_blas(), "onnxruntime": ort.__version__ if ort else None},
        "config": config.to_dict(),
        "streams": args.streams,
        "tokens": args.tokens,
        "checks": checks,
        "tarn": tarn,
        "peers": peers,
    }
    print_report(report)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/batch_peers.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--api-bench", default=str(REPO / "build" / "bench" / "tarn_api_bench"), help="the tarn_api_bench executable")
    p.add_argument("--streams", type=int, default=16, help="B, the streams of a batch step")
    p.add_argument("--tokens", type=int, default=1024, help="N, the prefill's tokens")
    p.add_argument("--steps", type=int, default=128, help="batch steps per tarn run")
    p.add_argument("--reps", type=int, default=7, help="runs per figure")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", help="keep the model, graphs and tarn's JSON here")
    p.add_argument("--json", help="write every figure to this file")
    p.add_argument("--smoke", action="store_true", help="a tiny model, few runs (the test suite)")
    args = p.parse_args(argv)
    if args.smoke:
        args.streams, args.tokens, args.steps, args.reps = min(args.streams, 4), min(args.tokens, 32), min(args.steps, 4), min(args.reps, 2)
    return args


# -- checks -------------------------------------------------------------------


def relative_error(got, expected) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@torch.no_grad()
def check_batch_steps(model, step, streams: int) -> dict:
    """The batched steps, stream by stream, against the parallel form: each
    stream steps its own tokens from an empty state for 5 positions, by the
    reference's in-place step() (timed eager) and by LinearStep (exported)."""
    c = model.config
    tokens = torch.arange(streams * 5).reshape(streams, 5) % c.vocab_size
    expected = model(tokens).numpy()
    state = model.initial_state(streams)
    in_place = torch.stack([model.step(tokens[:, p], state) for p in range(5)], 1)
    S = torch.zeros(c.num_layers, streams, c.num_heads, c.feature_dim, c.d_value)
    z = torch.zeros(c.num_layers, streams, c.num_heads, c.feature_dim)
    stepped = []
    for p in range(5):
        logits, S, z = step(tokens[:, p], torch.tensor([p]), S, z)
        stepped.append(logits)
    return {
        "torch_batch_vs_parallel": relative_error(in_place.numpy(), expected),
        "linear_step_vs_parallel": relative_error(torch.stack(stepped, 1).numpy(), expected),
    }


def export(module, feed: dict, path: Path) -> None:
    args = tuple(torch.from_numpy(v) for v in feed.values())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on constant shapes
        torch.onnx.export(module, args, str(path), input_names=list(feed), opset_version=17)


# -- timing -------------------------------------------------------------------


def run_tarn(args, model_path: Path, work: Path) -> dict:
    json_path = work / "api_bench.json"
    chunks = sorted({min(64, args.tokens), args.tokens})
    command = [args.api_bench, str(model_path), "--batches", str(args.streams), "--chunks", *map(str, chunks), "--tokens", str(args.tokens),
               "--steps", str(args.steps), "--reps", str(args.reps), "--threads", str(args.threads), "--json", str(json_path)]  # fmt: skip
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return json.loads(json_path.read_text())


def time_jobs(jobs: dict, reps: int, by_wall: bool) -> dict:
    """Each job once untimed, then `reps` times back to back, as tarn_api_bench
    times tarn: interleaved, a batch step came cold after a prefill, and ONNX
    Runtime's batch step took 8.4-9.8 ms against 4.4-7.4 ms warm. "ms" and
    "median_ms" by the wall clock if `by_wall`, else by the thread's CPU
    time; "wall_ms" and "median_wall_ms" by the wall clock."""
    times = {name: {"cpu": [], "wall": []} for name in jobs}
    with torch.no_grad():
        for name, job in jobs.items():
            job()
            for _ in range(reps):
                c0, t0 = time.thread_time(), time.perf_counter()
                job()
                times[name]["wall"].append((time.perf_counter() - t0) * 1e3)
                times[name]["cpu"].append((time.thread_time() - c0) * 1e3)
    used = "wall" if by_wall else "cpu"
    return {name: {"ms": min(t[used]), "median_ms": statistics.median(t[used]), "wall_ms": min(t["wall"]), "median_wall_ms": statistics.median(t["wall"])}
            for name, t in times.items()}


# -- report -------------------------------------------------------------------


def print_report(report: dict):
    m, tarn, peers = report["machine"], report["tarn"], report["peers"]
    peak, b, n = tarn["fma_peak_gflops"], report["streams"], report["tokens"]
    print(f"\nmachine: {m['cpu']}, {m['cores']} cores, load average {fmt_load(m['load_start'])} -> {fmt_load(m['load_end'])}")
    print(f"torch {report['versions']['torch']} (BLAS {report['versions']['blas']}), onnxruntime {report['versions']['onnxruntime']}, "
          f"threads {tarn['threads']}; FMA peak {peak:.1f} GFLOP/s (tarn_api_bench, same run)")  # fmt: skip
    clock = "the wall clock" if tarn["clock"] == "wall" else "the calling thread's CPU time"
    print(f"ms by {clock}, the fastest run (median); GFLOP/s of the dense layers' work, % of the FMA peak; the engine's time / tarn's")

    def row(label, ms, median_ms, flop, tarn_ms):
        gflops = flop / (ms * 1e6)
        print(f"  {label:<44} {ms:9.3f} ({median_ms:9.3f})  {gflops:6.1f} GFLOP/s {100 * gflops / peak:4.0f} %  {ms / tarn_ms:6.2f}x")

    batch = tarn["batches"][0]
    flop = tarn["flop_per_step"] * b
    print(f"\na batch step of {b} streams (ms a batch step):")
    row("tarn, SessionBatch", batch["batch_step_ms"], batch["median_batch_step_ms"], flop, batch["batch_step_ms"])
    for name, label in (("torch_batch", "PyTorch eager, recurrent step()"), ("ort_batch", "ONNX Runtime, LinearStep graph")):
        if name in peers:
            row(label, peers[name]["ms"], peers[name]["median_ms"], flop, batch["batch_step_ms"])
    print(f"  (tarn's memory floor: {batch['floor_ms']:.3f} ms, the weights once and every stream's state in and out)")
    flop = tarn["flop_per_prefill_token"] * n
    best = min(tarn["prefill"], key=lambda p: p["ms"])
    print(f"\na prefill of {n} tokens (ms):")
    for p in tarn["prefill"]:
        row(f"tarn, PrefillTokens, chunk {p['chunk']}", p["ms"], p["median_ms"], flop, best["ms"])
    for name, label in (("torch_prefill", "PyTorch eager, parallel causal form"), ("ort_prefill", "ONNX Runtime, parallel causal form")):
        if name in peers:
            row(label, peers[name]["ms"], peers[name]["median_ms"], flop, best["ms"])
    print(f"  (the ratios against tarn's fastest chunk, {best['chunk']})")


if __name__ == "__main__":
    sys.exit(main())
