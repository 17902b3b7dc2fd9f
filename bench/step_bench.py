#!/usr/bin/python3
"""tarn's step benchmark: the paper's MNIST and CIFAR-10 shapes at batch 1.

    /usr/bin/python3 bench/step_bench.py --bench build/bench/tarn_step_bench \
        --json step_bench.json

For each shape (random weights, seeded) it writes the model with the
converter in f32, f16, bf16 and i8 (int8 dense weights), runs tarn_step_bench on each, and on the i8 file
again as i8dot (--int8-dot: activations quantised, integer dot products) (ms/step for 1 and 2
threads, the weight bytes streamed per step, the read bandwidth the same
program measures for a buffer that size, and a profile), and in the same run
steps the same model with PyTorch eager: the reference model's step() (a
recurrent step like fast-transformers' RecurrentEncoder) with
torch.set_num_threads equal to tarn's. It checks that both produce the same
outputs, prints one table, derives per-image times (784 steps for MNIST, 3072
for CIFAR-10) beside the paper's CPU figures, and writes every figure to
--json.

PyTorch has no f16 matrix product on the CPU (torch 1.13: addmm is not
implemented for Half), so the f16, bf16, i8 and i8dot rows compare with the f32 PyTorch
model; their outputs are checked against the reference holding the file's
values (tests.goldens.model_as_stored).
Timing, for a shared machine: --rounds rounds, each running tarn and then
PyTorch on every model, so both meet the same load; within a round every step
is timed on its own. The pooled steps give the median, the fastest step and,
for one thread, the median CPU time of the stepping thread.
Nothing here asserts a speed: --smoke runs a tiny model for the test suite.
"""

import os

# Before torch loads OpenMP: idle OpenMP threads sleep instead of spinning on
# a machine whose cores are shared.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from converter.convert import convert_state_dict  # noqa: E402
from tests.goldens import build_model, model_as_stored  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402
from converter.writer import DTYPES  # noqa: E402

# Katharopoulos et al. (2020), image generation: 8 (MNIST) and 16 (CIFAR-10)
# layers of 8 heads, d_k = d_v = 32, d_model 256, d_ff 1024, one pixel value
# (of 256) per step; the paper's CPU seconds per image.
WIDTHS = dict(d_model=256, num_heads=8, d_key=32, d_value=32, d_ff=1024, vocab_size=256, output_dim=256)
COMMON = dict(position="sinusoidal", feature_map="elu+1", activation="relu", norm_placement="post")
SHAPES = {
    "mnist": dict(config=dict(WIDTHS, num_layers=8, **COMMON), steps_per_image=784, paper_linear_s=5.5, paper_softmax_s=7.4),
    "cifar": dict(config=dict(WIDTHS, num_layers=16, **COMMON), steps_per_image=3072, paper_linear_s=45.1, paper_softmax_s=71.9),
}
SMOKE_SHAPE = dict(
    config=dict(d_model=32, num_heads=2, d_key=16, d_value=16, d_ff=64, vocab_size=16, output_dim=16, num_layers=2, **COMMON),
    steps_per_image=16,
    paper_linear_s=None,
    paper_softmax_s=None,
)
CHECK_TOKENS = [3, 141, 59, 26, 53, 58, 97, 93]
# What each --dtypes entry runs: the file's matrix dtype, tarn_step_bench's
# extra flags.
RUNS = {
    **{dtype: (dtype, []) for dtype in DTYPES},
    "i8dot": ("i8", ["--int8-dot"]),
}
# Each run's outputs against PyTorch holding the file's own weights: float
# rounding only, except with integer dot products, which quantise the
# activations too (about 0.01 on the smoke model's logits of order 1).
CHECK_TOLERANCE = {"i8dot": 0.05}
EXACT_TOLERANCE = 1e-4


def main(argv=None) -> int:
    args = parse_args(argv)
    use_best_openblas_core(argv)
    shapes = {"tiny": SMOKE_SHAPE} if args.smoke else {name: SHAPES[name] for name in args.shapes}
    if args.smoke:
        args.rounds, args.steps, args.torch_steps, args.warmup, args.profile_reps = 1, 4, 4, 2, 3
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="tarn-step-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    report = {
        "command": " ".join([sys.executable] + sys.argv),
        "machine": machine_info(),
        "torch": {"version": torch.__version__, "blas": loaded_blas()},
        "timing": (
            f"{args.rounds} rounds, each running tarn then PyTorch on every model; per model and thread count "
            f"{args.rounds * args.steps} tarn steps and {args.rounds * args.torch_steps} PyTorch steps, each timed on its own "
            f"after {args.warmup} warm-up steps (tarn: at most {args.max_seconds:g} s per thread count and round), median and best "
            "(fastest) step. Read bandwidth: one pass before each tarn step, "
            "a vectorised sum of four streams at once over a buffer the size of the step's weights with the same threads, best pass"
        ),
        "shapes": {},
    }
    print(f"machine: {report['machine']['cpu']}, {report['machine']['cores']} cores, load average {fmt_load(report['machine']['load_start'])}")
    print(f"torch {torch.__version__}, BLAS {report['torch']['blas']}; OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    print(report["timing"])

    models = {}
    for name, shape in shapes.items():
        config = ModelConfig(**shape["config"])
        model = build_model(config, seed=args.seed)
        paths = {dtype: work / f"{name}-{RUNS[dtype][0]}.tarn" for dtype in args.dtypes}
        for dtype in {RUNS[d][0] for d in args.dtypes}:  # once per file: i8 and i8dot share one
            meta = {"source": f"bench/step_bench.py {name}, seed {args.seed}"}
            convert_state_dict(model.state_dict(), config, work / f"{name}-{dtype}.tarn", dtype=dtype, metadata=meta)
        models[name] = (config, model, paths)
        report["shapes"][name] = {
            "config": config.to_dict(),
            "steps_per_image": shape["steps_per_image"],
            "paper_cpu_s_per_image": {"linear": shape["paper_linear_s"], "stateful_softmax": shape["paper_softmax_s"]},
            "file_bytes": {dtype: path.stat().st_size for dtype, path in paths.items()},
        }

    tarn_rounds = {name: {dtype: [] for dtype in args.dtypes} for name in shapes}
    torch_rounds = {name: {t: {"wall": [], "cpu": []} for t in args.threads} for name in shapes}
    for r in range(args.rounds):
        for name, (config, model, paths) in models.items():
            for dtype, path in paths.items():
                out = work / f"{name}-{dtype}-round{r}.json"
                first = r == 0
                tokens = [t % config.vocab_size for t in CHECK_TOKENS] if first else []
                run_tarn(args, path, out, tokens, dtype, profile=first)
                tarn_rounds[name][dtype].append(json.loads(out.read_text()))
                print(f"round {r + 1}/{args.rounds} {name} {dtype} tarn: " + ", ".join(
                    f"{run['threads']} thr {run['ms_per_step_median']:.3f} ms" for run in tarn_rounds[name][dtype][-1]["runs"]), flush=True)
            for threads in args.threads:
                wall, cpu = time_torch(model, threads, args)
                torch_rounds[name][threads]["wall"] += wall
                torch_rounds[name][threads]["cpu"] += cpu
                print(f"round {r + 1}/{args.rounds} {name} PyTorch: {threads} thr {statistics.median(wall):.3f} ms", flush=True)

    for name, (config, model, paths) in models.items():
        entry = report["shapes"][name]
        entry["tarn"] = {dtype: pool_tarn(rounds) for dtype, rounds in tarn_rounds[name].items()}
        for dtype, result in entry["tarn"].items():
            if result.get("check_outputs") is not None:
                reference = model_as_stored(model, RUNS[dtype][0])
                expected = reference_outputs(reference, result["check_tokens"])
                result["max_abs_diff_vs_torch"] = float(np.max(np.abs(np.array(result.pop("check_outputs")) - expected)))
                tolerance = CHECK_TOLERANCE.get(dtype, EXACT_TOLERANCE)
                if not result["max_abs_diff_vs_torch"] <= tolerance:  # NaN fails too
                    raise SystemExit(f"bench/step_bench.py: {name} {dtype}: tarn differs from PyTorch by "
                                     f"{result['max_abs_diff_vs_torch']} (bound {tolerance})")
            if not result.get("threads_bit_identical", True):
                raise SystemExit(f"bench/step_bench.py: {name} {dtype}: outputs differ between thread counts")
        entry["torch"] = {
            str(t): summarise(times["wall"], times["cpu"] if t == 1 else None, threads=t) for t, times in torch_rounds[name].items()
        }
        if args.perf and "f32" in paths:
            entry["perf"] = perf_profile(args, paths["f32"], work / f"{name}-f32.perf")

    report["machine"]["load_end"] = os.getloadavg()
    print_summary(report, args)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def fmt_load(load) -> str:
    return " ".join(f"{x:.1f}" for x in load)


def summarise(wall, cpu=None, threads=None) -> dict:
    return {
        "threads": threads,
        "steps_timed": len(wall),
        "ms_per_step_median": statistics.median(wall),
        "ms_per_step_best": min(wall),
        "cpu_ms_per_step_median": statistics.median(cpu) if cpu else None,
    }


def pool_tarn(rounds) -> dict:
    """One model's tarn_step_bench results over the rounds: steps and
    bandwidth passes pooled per thread count, the rest from round 1."""
    first = rounds[0]
    result = {k: v for k, v in first.items() if k != "runs"}
    result["runs"] = []
    weight_gb = first["step_bytes"]["weights"] / 1e9
    for i, run in enumerate(first["runs"]):
        wall = [ms for r in rounds for ms in r["runs"][i]["step_ms"]]
        cpu = [ms for r in rounds for ms in r["runs"][i]["step_cpu_ms"]]
        gbs = [g for r in rounds for g in r["runs"][i]["bandwidth_gbs_all"]]
        pooled = summarise(wall, cpu, threads=run["threads"])
        warm = summarise([ms for r in rounds for ms in r["runs"][i]["warm_step_ms"]],
                         [ms for r in rounds for ms in r["runs"][i]["warm_step_cpu_ms"]])
        floor_ms = weight_gb / max(gbs) * 1e3
        warm_gbs = max(r["runs"][i]["warm_bandwidth_gbs_best"] for r in rounds)
        warm_floor_ms = weight_gb / warm_gbs * 1e3
        pooled.update(
            rounds=len(rounds),
            warmup_steps=run["warmup_steps"],
            achieved_gbs_median=weight_gb / pooled["ms_per_step_median"] * 1e3,
            achieved_gbs_best=weight_gb / pooled["ms_per_step_best"] * 1e3,
            bandwidth_bytes=run["bandwidth_bytes"],
            bandwidth_passes=len(gbs),
            bandwidth_gbs_best=max(gbs),
            bandwidth_gbs_median=statistics.median(gbs),
            floor_ms=floor_ms,
            fraction_of_floor_median=floor_ms / pooled["ms_per_step_median"],
            fraction_of_floor_best=floor_ms / pooled["ms_per_step_best"],
            warm_steps_timed=warm["steps_timed"],
            warm_ms_per_step_median=warm["ms_per_step_median"],
            warm_ms_per_step_best=warm["ms_per_step_best"],
            warm_cpu_ms_per_step_median=warm["cpu_ms_per_step_median"],
            warm_bandwidth_gbs_best=warm_gbs,
            warm_floor_ms=warm_floor_ms,
            warm_fraction_of_floor_median=warm_floor_ms / warm["ms_per_step_median"],
            warm_fraction_of_floor_best=warm_floor_ms / warm["ms_per_step_best"],
        )
        result["runs"].append(pooled)
    one = [run for run in result["runs"] if run["threads"] == 1]
    if "profile" in result and one:
        p = result["profile"]
        p["step_us"] = one[0]["ms_per_step_best"] * 1e3
        p["step_basis"] = "fastest 1-thread step, all rounds"
        p["rest_us"] = p["step_us"] - p["sum_us_median"]
    return result


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/step_bench.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", default=str(REPO / "build" / "bench" / "tarn_step_bench"), help="the tarn_step_bench executable")
    p.add_argument("--shapes", default="mnist,cifar", type=lambda s: s.split(","), help="mnist,cifar")
    p.add_argument("--dtypes", default="f32,f16,bf16,i8,i8dot", type=lambda s: s.split(","), help="f32,f16,bf16,i8,i8dot")
    p.add_argument("--threads", default="1,2", type=lambda s: [int(t) for t in s.split(",")], help="thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of tarn then PyTorch, pooled (default 3)")
    p.add_argument("--steps", type=int, default=200, help="timed tarn steps per round (default 200)")
    p.add_argument("--torch-steps", type=int, default=100, help="timed PyTorch steps per round (default 100)")
    p.add_argument("--max-seconds", type=float, default=20, help="cap on one thread count's timed steps per round (default 20)")
    p.add_argument("--warmup", type=int, default=32, help="untimed steps first (default 32)")
    p.add_argument("--profile-reps", type=int, default=101, help="samples per profiled part (default 101)")
    p.add_argument("--perf", action="store_true", help="also profile tarn's f32 step with perf record (1 thread)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", help="keep the models and per-model JSON here (default: a temporary directory)")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--smoke", action="store_true", help="a tiny model and a few steps, for the test suite")
    args = p.parse_args(argv)
    for name in args.shapes:
        if name not in SHAPES:
            p.error(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
    for dtype in args.dtypes:
        if dtype not in RUNS:
            p.error(f"unknown dtype {dtype!r}; known: {', '.join(RUNS)}")
    if not Path(args.bench).is_file():
        p.error(f"{args.bench} does not exist: build tarn_step_bench first, or pass --bench")
    return args


def cpuinfo(field: str) -> str:
    """The first `field` line of /proc/cpuinfo (its value), or ""."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine_info() -> dict:
    cpu = cpuinfo("model name") or platform.processor() or platform.machine()
    return {"cpu": cpu, "cores": os.cpu_count(), "load_start": os.getloadavg()}


def blas_libraries() -> list:
    """The BLAS libraries this process mapped (torch's linear layers call them)."""
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    libs = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if re.search(r"(openblas|libblas|mkl_rt|libmkl)", path):
            libs.add(os.path.realpath(path))
    return sorted(libs)


def openblas_core():
    """The kernels OpenBLAS chose for this CPU (its core name), or None."""
    for path in blas_libraries():
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        return corename().decode()
    return None


def loaded_blas() -> str:
    core = openblas_core()
    asked = os.environ.get("OPENBLAS_CORETYPE", "")
    forced = " (OPENBLAS_CORETYPE)" if core and asked.lower() == core.lower() else ""
    return ", ".join(blas_libraries()) + (f", OpenBLAS core {core}{forced}" if core else "") or "none found"


# OpenBLAS cores without AVX2: a CPU OpenBLAS does not know gets one of these.
PRE_AVX2_OPENBLAS_CORES = {
    "katmai", "coppermine", "northwood", "prescott", "banias", "core2", "penryn", "dunnington", "nehalem",
    "sandybridge", "atom", "nano", "opteron", "opteron_sse3", "barcelona", "bobcat", "bulldozer", "piledriver",
}  # fmt: skip


def use_best_openblas_core(argv):
    """Restarts this script (run as one: argv None) with OPENBLAS_CORETYPE
    set where OpenBLAS took this CPU for one without AVX2 that it has, so that
    PyTorch, a peer, runs its best kernels: Debian's OpenBLAS 0.3.21 takes an
    Emerald Rapids Xeon for a Prescott, whose SSE3 kernels ran a 1024^3
    product at 22.7 GFLOP/s against 118.6 with its SkylakeX ones, and made
    PyTorch's prefill twice as slow."""
    if argv is not None or "OPENBLAS_CORETYPE" in os.environ:
        return
    core = openblas_core()
    if core is None or core.lower() not in PRE_AVX2_OPENBLAS_CORES:
        return
    flags = set(cpuinfo("flags").split())
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        best = "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        best = "Haswell"
    else:
        return
    print(f"OpenBLAS took this CPU for a {core}: restarting with OPENBLAS_CORETYPE={best}", file=sys.stderr, flush=True)
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "OPENBLAS_CORETYPE": best})


def run_tarn(args, model_path: Path, out: Path, tokens, dtype: str, profile: bool):
    cmd = [
        args.bench,
        "--model", str(model_path),
        "--dtype", RUNS[dtype][0],
        "--threads", ",".join(map(str, args.threads)),
        "--steps", str(args.steps),
        "--max-seconds", str(args.max_seconds),
        "--warmup", str(args.warmup),
        "--profile-reps", str(args.profile_reps),
        "--json", str(out),
    ]  # fmt: skip
    if tokens:
        cmd += ["--check-tokens", ",".join(map(str, tokens))]
    if not profile:
        cmd.append("--no-profile")
    subprocess.run(cmd + RUNS[dtype][1], check=True)


def reference_outputs(model, tokens) -> np.ndarray:
    torch.set_num_threads(1)
    state = model.initial_state(1)
    return torch.cat([model.step(torch.tensor([t]), state) for t in tokens]).numpy()


def time_torch(model, threads: int, args):
    """Per-step wall and thread-CPU milliseconds of PyTorch stepping `model`."""
    torch.set_num_threads(threads)
    vocab = model.config.vocab_size
    state = model.initial_state(1)
    tokens = [torch.tensor([(i * 37 + 11) % vocab]) for i in range(vocab)]
    for i in range(args.warmup):
        model.step(tokens[i % vocab], state)
    wall, cpu = [], []
    for i in range(args.torch_steps):
        c0, t0 = time.thread_time(), time.perf_counter()
        model.step(tokens[i % vocab], state)
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.thread_time() - c0) * 1e3)
    return wall, cpu


# perf groups, by library or symbol (self time)
PERF_GROUPS = [
    ("dense layers", re.compile(r"XNNPACK|xnn_|Dense|Tile<")),
    ("attention (phi + rank-one)", re.compile(r"CausalStep|EluPlusOne|ExpShifted|::Relu\b|FeatureMap|expf")),
    ("norms + residual", re.compile(r"Normalize|LayerNorm|::Add\b")),
    ("thread pool", re.compile(r"pthreadpool")),
    ("position (sin, cos)", re.compile(r"\b_*(sin|cos|sincos)(_fma)?\b|AddPosition")),
    ("OS kernel", re.compile(r"\[kernel|\[k\]")),
]


def perf_profile(args, model_path: Path, data: Path) -> dict:
    """Self time by symbol of tarn_step_bench stepping the model (1 thread),
    grouped; the bandwidth meter's own passes are left out."""
    if shutil.which("perf") is None:
        print("perf: not installed; skipped")
        return {"error": "perf not installed"}
    steps = max(args.rounds * args.steps, 1000)
    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-o", str(data), "--",
           args.bench, "--model", str(model_path), "--threads", "1", "--no-profile",
           "--steps", str(steps), "--warmup", str(args.warmup)]  # fmt: skip
    rec = subprocess.run(cmd, capture_output=True, text=True)
    if rec.returncode != 0:
        print(f"perf record failed: {rec.stderr.strip()[:300]}; skipped")
        return {"error": rec.stderr.strip()[:300]}
    rep = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,symbol", "--percent-limit", "0", "-q"],
        capture_output=True,
        text=True,
    )
    rows = []
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(\[.\])\s+(.*)", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()))
    # Leave out what is not a step: loading, the bandwidth meter, start-up.
    skip = re.compile(r"SumFloats|ReadBandwidthMeter|Verify|XXH|Model::|_dl_|page_fault|clear_page|memcg")
    step_rows = [r for r in rows if not skip.search(r[3])]
    total = sum(r[0] for r in step_rows) or 1.0
    groups = {}
    top = []
    for pct, dso, kind, sym in step_rows:
        label = f"{dso} {kind} {sym}"
        group = next((g for g, pattern in PERF_GROUPS if pattern.search(label)), "other")
        groups[group] = groups.get(group, 0.0) + 100 * pct / total
        top.append({"percent_of_step": 100 * pct / total, "group": group, "dso": dso, "symbol": sym[:100]})
    top.sort(key=lambda r: -r["percent_of_step"])
    return {"steps": steps, "samples_note": "cpu-clock at 4999 Hz, self time", "groups_percent": groups, "top": top[:15]}


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def speedup(one: dict, many: dict) -> dict:
    return {
        "median": one["ms_per_step_median"] / many["ms_per_step_median"],
        "best": one["ms_per_step_best"] / many["ms_per_step_best"],
        **({"warm_median": one["warm_ms_per_step_median"] / many["warm_ms_per_step_median"],
            "warm_best": one["warm_ms_per_step_best"] / many["warm_ms_per_step_best"]}
           if "warm_ms_per_step_median" in one and "warm_ms_per_step_median" in many else {}),
    }


def speedup_text(s: dict) -> str:
    text = f"{s['median']:.2f}x ({s['best']:.2f}x)"
    if "warm_median" in s:
        text += f" warm {s['warm_median']:.2f}x ({s['warm_best']:.2f}x)"
    return text


def secs(x, spec=".2f"):
    return "-" if x is None else format(x, spec) + "s"


def print_summary(report: dict, args):
    print("\n" + "=" * 110)
    print("tarn at batch 1 vs the memory floor (floor = weight bytes per step / best measured read bandwidth, same threads)")
    header = (
        f"{'shape':<6} {'dtype':<5} {'thr':>3} {'ms/step':>8} {'best':>7} {'cpu ms':>7} {'weights MB':>10} "
        f"{'GB/s':>6} {'read GB/s':>9} {'floor ms':>8} {'% floor':>7} {'(best)':>6} {'warm ms':>8} {'floor':>6} {'% floor':>7} {'(best)':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, e in report["shapes"].items():
        for dtype, r in e["tarn"].items():
            for run in r["runs"]:
                print(
                    f"{name:<6} {dtype:<5} {run['threads']:>3} {run['ms_per_step_median']:>8.3f} {run['ms_per_step_best']:>7.3f} "
                    f"{fmt(run['cpu_ms_per_step_median']):>7} {r['step_bytes']['weights'] / 1e6:>10.2f} "
                    f"{run['achieved_gbs_median']:>6.1f} {run['bandwidth_gbs_best']:>9.1f} {run['floor_ms']:>8.3f} "
                    f"{100 * run['fraction_of_floor_median']:>6.0f}% {100 * run['fraction_of_floor_best']:>5.0f}% "
                    f"{run['warm_ms_per_step_median']:>8.3f} {run['warm_floor_ms']:>6.3f} "
                    f"{100 * run['warm_fraction_of_floor_median']:>6.0f}% "
                    f"{100 * run['warm_fraction_of_floor_best']:>5.0f}%"
                )
    print(
        "ms/step: median wall time of one step, each after a read-bandwidth pass over a buffer as large as the weights (cold: the\n"
        "weights partly evicted, as when other work runs between steps); best: fastest step; cpu ms: median CPU time of the\n"
        "stepping thread (1 thread only). warm ms: median of as many steps again, back to back (a stream stepping alone), against\n"
        "its own floor: the same bytes at the best of passes back to back over the buffer (as a warm step finds its weights).\n"
        "f16, bf16, i8 and i8dot rows: the floor counts the file's bytes (2 or 1 per matrix weight, and i8's scales), whatever\n"
        "the runtime does with them. i8dot: the i8 file with --int8-dot (activations quantised per row, integer dot products)."
    )
    for dtype in (d for d in args.dtypes if d != "f32" and "f32" in args.dtypes):
        print(f"{dtype} speed-up over f32 (median; fastest step; CPU time), per thread count:")
        for name, e in report["shapes"].items():
            runs32 = {run["threads"]: run for run in e["tarn"]["f32"]["runs"]}
            cells = []
            for run in e["tarn"][dtype]["runs"]:
                r32 = runs32[run["threads"]]
                ratio = {
                    "median": r32["ms_per_step_median"] / run["ms_per_step_median"],
                    "best": r32["ms_per_step_best"] / run["ms_per_step_best"],
                    "cpu": r32["cpu_ms_per_step_median"] / run["cpu_ms_per_step_median"] if run["cpu_ms_per_step_median"] else None,
                }
                e.setdefault(f"{dtype}_speedup", {})[str(run["threads"])] = ratio
                cpu = f", {ratio['cpu']:.2f}x" if ratio["cpu"] else ""
                cells.append(f"{run['threads']} thr {ratio['median']:.2f}x, {ratio['best']:.2f}x{cpu}")
            print(f"  {name}: " + "; ".join(cells))

    print("\ntarn vs PyTorch eager, same model, same run, both stepping back to back (tarn's warm steps; PyTorch/tarn > 1: tarn is\n"
          "faster)")
    header = (
        f"{'shape':<6} {'dtype':<5} {'thr':>3} {'tarn ms':>8} {'torch ms':>9} {'ratio':>6}   {'tarn best':>9} {'torch best':>10} "
        f"{'ratio':>6}   {'tarn cpu':>8} {'torch cpu':>9} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, e in report["shapes"].items():
        for dtype, r in e["tarn"].items():
            for run in r["runs"]:
                t = e["torch"][str(run["threads"])]
                cpu_ratio = None
                if run["warm_cpu_ms_per_step_median"] and t["cpu_ms_per_step_median"]:
                    cpu_ratio = t["cpu_ms_per_step_median"] / run["warm_cpu_ms_per_step_median"]
                run["torch_over_tarn"] = {
                    "median": t["ms_per_step_median"] / run["warm_ms_per_step_median"],
                    "best": t["ms_per_step_best"] / run["warm_ms_per_step_best"],
                    "cpu": cpu_ratio,
                }
                ratio = run["torch_over_tarn"]
                print(
                    f"{name:<6} {dtype:<5} {run['threads']:>3} {run['warm_ms_per_step_median']:>8.3f} {t['ms_per_step_median']:>9.3f} "
                    f"{ratio['median']:>5.1f}x   {run['warm_ms_per_step_best']:>9.3f} {t['ms_per_step_best']:>10.3f} {ratio['best']:>5.1f}x   "
                    f"{fmt(run['warm_cpu_ms_per_step_median']):>8} {fmt(t['cpu_ms_per_step_median']):>9} "
                    f"{fmt(cpu_ratio, '.1f') + 'x' if cpu_ratio else '-':>6}"
                )
    print(
        "PyTorch: the reference model's step() under torch.no_grad() (fast-transformers' recurrent form), f32 (no f16 matmul on\n"
        "the CPU), torch.set_num_threads = tarn's threads. On a loaded machine a long PyTorch step is preempted more often than a\n"
        "short tarn step: the CPU-time ratio (1 thread) is the fairer one there."
    )

    if len(args.threads) > 1:
        lo, hi = str(args.threads[0]), str(args.threads[-1])
        print(f"\nspeed-up from {hi} threads over {lo} (median; best step in parentheses; then the same for warm steps):")
        for name, e in report["shapes"].items():
            parts = []
            for dtype, r in e["tarn"].items():
                runs = {str(run["threads"]): run for run in r["runs"]}
                e.setdefault("thread_speedup", {})[f"tarn_{dtype}"] = speedup(runs[lo], runs[hi])
                parts.append(f"tarn {dtype} " + speedup_text(e["thread_speedup"][f"tarn_{dtype}"]))
            e["thread_speedup"]["torch"] = speedup(e["torch"][lo], e["torch"][hi])
            parts.append("PyTorch " + speedup_text(e["thread_speedup"]["torch"]))
            bit = all(r.get("threads_bit_identical") for r in e["tarn"].values())
            print(f"  {name}: " + ", ".join(parts) + f"; tarn outputs bit-identical across threads: {bit}")

    for name, e in report["shapes"].items():
        profiled = [(dtype, r["profile"]) for dtype, r in e["tarn"].items() if "profile" in r]
        if not profiled:
            continue
        # Parts are medians, the step its fastest: on a loaded machine the
        # parts can add up to more than the step.
        steps = {dtype: max(p.get("step_us") or 0, p["sum_us_median"]) for dtype, p in profiled}
        p0 = profiled[0][1]
        print(f"\nprofile, {name}, 1 thread: the kernels a step runs ({p0['kernels']}, dense in each file's dtype), timed in isolation "
              f"at the model's sizes (median of {p0['reps']}); us and % of the step")
        print(f"  {'':<9} {'part':<36} " + " ".join(f"{dtype:>14}" for dtype, _ in profiled))
        for i, part in enumerate(p0["parts"]):
            cells = []
            for dtype, p in profiled:
                q = p["parts"][i] if i < len(p["parts"]) and p["parts"][i]["group"] == part["group"] else None
                cells.append("-" if q is None else f"{q['us_per_step_median']:.1f} {100 * q['us_per_step_median'] / steps[dtype]:4.1f}%")
            label = part["part"] if not part["part"].startswith("embedding row") else "embedding row"
            print(f"  {part['group']:<9} {label:<36} " + " ".join(f"{c:>14}" for c in cells) + f"  {part['sizes']}")
        for group in p0["groups"]:
            cells = [f"{p['groups'][group]['us_per_step_median']:.1f} {100 * p['groups'][group]['us_per_step_median'] / steps[dtype]:4.1f}%"
                     for dtype, p in profiled]
            print(f"  = {group:<44} " + " ".join(f"{c:>14}" for c in cells))
        if all(p.get("rest_us") is not None for _, p in profiled):
            cells = [f"{p['rest_us']:.1f} {100 * p['rest_us'] / steps[dtype]:4.1f}%" for dtype, p in profiled]
            print(f"  = {'rest (measured step - parts)':<44} " + " ".join(f"{c:>14}" for c in cells))
            print(f"  {'step (' + p0['step_basis'] + ')':<46} " + " ".join(f"{steps[dtype]:>14.1f}" for dtype, _ in profiled))
        print("  (in isolation a part whose weights fit in L2 runs faster than inside a step, where all weights stream from\n"
              "   further out; the rest absorbs that as well as the thread pool, bookkeeping and call overhead)")
        if "perf" in e and "groups_percent" in e["perf"]:
            print(f"  perf record of the real step ({e['perf']['steps']} steps, self time): " + ", ".join(
                f"{g} {v:.1f}%" for g, v in sorted(e["perf"]["groups_percent"].items(), key=lambda kv: -kv[1])))

    print("\nseconds per image at 1 thread = steps x ms/step, warm (fastest step / median step / median CPU time), beside the paper's CPU figures")
    columns = list(args.dtypes) + ["torch"]
    print(f"{'shape':<6} {'steps':>5} " + " ".join(f"{'tarn ' + d if d != 'torch' else 'PyTorch':>22}" for d in columns)
          + f" {'paper linear':>13} {'paper softmax':>14}")
    for name, e in report["shapes"].items():
        n = e["steps_per_image"]
        e["per_image_s"] = {}
        cells = []
        runs = {dtype: r["runs"][0] for dtype, r in e["tarn"].items() if r["runs"][0]["threads"] == 1}
        runs["torch"] = e["torch"].get("1")
        for key in columns:
            run = runs.get(key)
            if run is None:
                cells.append("-")
                continue
            # An image is stepped back to back: tarn's warm figures.
            prefix = "" if key == "torch" else "warm_"
            best = run[prefix + "ms_per_step_best"] * n / 1e3
            wall = run[prefix + "ms_per_step_median"] * n / 1e3
            cpu = run[prefix + "cpu_ms_per_step_median"] * n / 1e3 if run[prefix + "cpu_ms_per_step_median"] else None
            e["per_image_s"]["tarn_" + key if key != "torch" else "torch"] = {"best": best, "median": wall, "cpu_median": cpu}
            cells.append(f"{secs(best)}/{secs(wall)}/{secs(cpu)}")
        paper = e["paper_cpu_s_per_image"]
        print(f"{name:<6} {n:>5} " + " ".join(f"{c:>22}" for c in cells)
              + f" {secs(paper['linear'], '.1f'):>13} {secs(paper['stateful_softmax'], '.1f'):>14}")
    print(f"load average (1, 5, 15 min) at start {fmt_load(report['machine']['load_start'])}, at end {fmt_load(report['machine']['load_end'])}")


if __name__ == "__main__":
    sys.exit(main())
