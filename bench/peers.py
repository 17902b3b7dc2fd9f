#!/usr/bin/python3
"""tarn against its peers, on the same models and thread count, in one run.

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install onnxruntime "onnx<1.18" "ml_dtypes<0.5" "numpy<1.25"
    .venv/bin/python bench/peers.py --bench build/bench/tarn_step_bench --json peers.json

The peers, all on the same weights (random, seeded) of the paper's image
shapes (bench/step_bench.py's SHAPES: MNIST 8 layers, CIFAR-10 16 layers):
  - tarn: tarn_step_bench --positions, one session per position;
  - PyTorch eager, linear: the reference model's step() (converter/reference.py,
    fast-transformers' recurrent form: S and z updated in place each step);
  - ONNX Runtime, linear: that step exported as an ONNX graph with S and z as
    inputs and outputs (bench/peer_models.py LinearStep);
  - PyTorch eager and ONNX Runtime, softmax with a key/value cache (the paper's
    "stateful-softmax", bench/peer_models.py SoftmaxStep): same layers and
    weights, softmax attention over a cache of p positions.
A step at position p is timed with a stream at that position: tarn's sessions
are advanced there (PrefillTokens), the linear peers' states start there
(their cost does not depend on the state's values) and the softmax peers read
a cache of p positions of arbitrary values. Every graph and module is checked
against an independent computation before timing (the ONNX linear step
against the reference's step(); the softmax step, eager and ONNX, against the
softmax model's parallel causal form; tarn's outputs against the reference).

Smaller weights, at the first position of each shape: tarn with its f16, bf16
and i8 files (each checked against the reference holding the file's values),
the i8 file again with --int8-dot (activations quantised per step, integer
dot products, as ONNX Runtime's dynamic int8 does; checked as ONNX Runtime's
smaller forms are), and
ONNX Runtime's own smaller forms of the linear step, made by its own tools
(bench/peer_models.py reduced_precision_exports: all-float16, and int8
dynamic quantisation; they need the onnx package). Each is listed with how far
its logits are from the f32 reference's.

Timing, for a shared machine: --rounds rounds; in each, tarn times --steps
steps of every position (round-robin, in its own process, which waits between
rounds), then every Python peer's cell (one peer at one position) in turn,
start rotated every round, runs one untimed step then --steps timed ones back
to back, as a stream stepping one model runs them: every engine is timed
warm (a cell whose step exceeds 100 ms, a softmax cache far larger than any
CPU cache, gets one timed step and no warm-up). tarn's sessions at the
positions step round-robin, one step each in turn: the same weights stay
warm, each session's state is read after the others' (as many streams of
one model would). Each figure is printed beside the weight floor of its
precision, measured by tarn_step_bench at the end of the same run (the bytes
a step reads at the best read bandwidth of a buffer that size). Every step is timed
on its own; the pooled steps give the median, the fastest step and the median
CPU time of the stepping thread. Memory: tarn's RSS as one stream advances (tarn_step_bench);
each Python peer's RSS in a process of its own, positions in increasing order,
after 3 steps at each. Per image: a linear step costs the same at every
position, so steps x ms/step; a softmax step grows with the position, so the
sum over positions 0..N-1 of the step time interpolated between measured
positions.

Prints the tables, writes PNG plots (--plots, default docs/) and every figure
to --json. Nothing here asserts a speed: --smoke runs a tiny model for the
test suite, --quick the MNIST shape to position 4,096.
"""

import os

# Before torch loads OpenMP: idle OpenMP threads sleep instead of spinning on
# a machine whose cores are shared.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO), str(BENCH)]

import numpy as np  # noqa: E402
import torch  # noqa: E402

import peer_models  # noqa: E402
from converter.convert import convert_state_dict  # noqa: E402
from tests.goldens import build_model, model_as_stored  # noqa: E402
from converter.reference import ModelConfig  # noqa: E402
from step_bench import CHECK_TOKENS, SHAPES, SMOKE_SHAPE, fmt_load, loaded_blas, machine_info, reference_outputs, use_best_openblas_core  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:
    ort = None

VENV_HINT = (
    "onnxruntime is not importable: the ONNX Runtime columns are left out. Make the virtual environment:\n"
    "  /usr/bin/python3 -m venv --system-site-packages .venv && .venv/bin/pip install onnxruntime \"onnx<1.18\" \"ml_dtypes<0.5\" \"numpy<1.25\"\n"
    "and run this script with .venv/bin/python"
)
ENGINES = ["tarn", "torch_linear", "ort_linear", "torch_softmax", "ort_softmax"]
# Smaller weights: timed at the first position only.
TARN_REDUCED = {"tarn_f16": "f16", "tarn_bf16": "bf16", "tarn_i8": "i8", "tarn_i8dot": "i8"}
# tarn_step_bench's flags beyond the file; runs with them are approximations
# of the file's model, checked to REDUCED_TOLERANCE.
TARN_FLAGS = {"tarn_i8dot": ["--int8-dot"]}
REDUCED = [*TARN_REDUCED, "ort_f16", "ort_int8"]
LABELS = {
    "tarn": "tarn (linear)",
    "tarn_f16": "tarn, f16 weights",
    "tarn_bf16": "tarn, bf16 weights",
    "tarn_i8": "tarn, int8 weights",
    "tarn_i8dot": "tarn, int8, integer dot products",
    "ort_f16": "ONNX Runtime, linear, float16",
    "ort_int8": "ONNX Runtime, linear, int8 dynamic",
    "torch_linear": "PyTorch eager, linear recurrent",
    "ort_linear": "ONNX Runtime, linear recurrent",
    "torch_softmax": "PyTorch eager, softmax + KV cache",
    "ort_softmax": "ONNX Runtime, softmax + KV cache",
}
SHORT = {"tarn": "tarn", "torch_linear": "PyTorch linear", "ort_linear": "ORT linear", "torch_softmax": "PyTorch softmax", "ort_softmax": "ORT softmax"}
CHECK_TOLERANCE = 1e-4
REDUCED_TOLERANCE = 0.5  # logits of order 1: an error this large is a broken conversion
MEMORY_STEPS = 3
LONG_STEP_MS = 100


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        return memory_child(args)
    use_best_openblas_core(argv)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="tarn-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    if ort is None:
        print(VENV_HINT)
    report = {
        "command": " ".join([sys.executable] + sys.argv),
        "machine": machine_info(),
        "threads": args.threads,
        "versions": {"torch": torch.__version__, "blas": loaded_blas(), "onnxruntime": ort.__version__ if ort else None},
        "timing": (
            f"{args.rounds} rounds; each: tarn {args.steps} steps per position (round-robin over positions), then "
            f"every Python peer at every position in turn (start rotated each round), each an untimed step then {args.steps} "
            f"timed ones back to back (1 and no warm-up where a step exceeds {LONG_STEP_MS} ms); "
            "every step timed on its own; median, fastest and median thread-CPU time of the pooled steps"
        ),
        "shapes": {},
    }
    print(f"machine: {report['machine']['cpu']}, {report['machine']['cores']} cores, load average {fmt_load(report['machine']['load_start'])}")
    print(f"torch {torch.__version__} (BLAS {report['versions']['blas']}), onnxruntime {report['versions']['onnxruntime']}, "
          f"threads {args.threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    print(report["timing"], flush=True)

    shapes = prepare_shapes(args, work, report)
    tarns = {}
    for name, s in shapes.items():
        tarns[(name, "tarn")] = TarnSweep(args, s, s["tarn_path"], s["positions"], s["model"], work, "tarn")
        for engine, (path, stored) in s["reduced"].items():
            tarns[(name, engine)] = TarnSweep(args, s, path, s["positions"][:1], stored, work, engine)
    cells = [cell for s in shapes.values() for cell in python_cells(args, s)]
    for r in range(args.rounds):
        for sweep in tarns.values():
            sweep.round(args.steps)
        run_round(cells, args.steps, r)
        print(f"round {r + 1}/{args.rounds} done, load average {fmt_load(os.getloadavg())}", flush=True)
    for (name, engine), sweep in tarns.items():
        report["shapes"][name][engine] = sweep.finish()
    for cell in cells:
        report["shapes"][cell.shape]["peers"].setdefault(cell.engine, {})[str(cell.position)] = summarise(cell.wall, cell.cpu)
    if args.memory:
        for name in (n for n, s in shapes.items() if s["sweep"]):
            report["shapes"][name]["memory"] = measure_memory(args, shapes[name], report["shapes"][name]["tarn"])
    report["machine"]["load_end"] = os.getloadavg()

    print_report(report, args)
    plots = args.plots
    if plots is None and not (args.quick or args.smoke):
        plots = str(REPO / "docs")
    elif plots is None:
        plots = str(work / "plots") if args.work_dir else ""
    if plots:
        from peer_plots import plot_all

        for path in plot_all(report, Path(plots)):
            print(f"wrote {path}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.json}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# -- arguments ----------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/peers.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", default=str(REPO / "build" / "bench" / "tarn_step_bench"), help="the tarn_step_bench executable")
    p.add_argument("--threads", type=int, default=1, help="threads for every engine (default 1)")
    p.add_argument("--shapes", default="mnist,cifar", type=lambda s: s.split(","), help="mnist,cifar")
    p.add_argument("--positions", type=lambda s: [int(x) for x in s.split(",")], help="the MNIST shape's positions (default 16,64,...,65536)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=100, help="timed steps of every engine at every position per round (default 100)")
    p.add_argument("--quick", action="store_true", help="MNIST shape only, positions to 4,096, fewer steps (about 30 s on 2 cores)")
    p.add_argument("--smoke", action="store_true", help="a tiny model and a few steps, for the test suite")
    p.add_argument("--no-memory", dest="memory", action="store_false", help="skip the memory-against-position runs")
    p.add_argument("--plots", help="directory for the PNG plots ('' for none; default docs/, with --quick or --smoke WORK_DIR/plots or none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", help="keep the models here (default: a temporary directory)")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--memory-child", help=argparse.SUPPRESS)
    p.add_argument("--child-shape", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        return args
    if args.smoke:
        args.shapes, args.rounds, args.steps = ["tiny"], 1, 3
        args.positions = args.positions or [4, 64]
    elif args.quick:
        args.shapes, args.rounds, args.steps = ["mnist"], 2, 50
        args.positions = args.positions or [16, 256, 4096]
    args.positions = args.positions or [16, 64, 256, 1024, 4096, 16384, 65536]
    if args.positions != sorted(set(args.positions)) or args.positions[0] < 1:
        p.error("--positions must be ascending and at least 1 (ONNX Runtime refuses an empty cache)")
    for name in args.shapes:
        if name not in SHAPES and not (args.smoke and name == "tiny"):
            p.error(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
    if not Path(args.bench).is_file():
        p.error(f"{args.bench} does not exist: build tarn_step_bench first, or pass --bench")
    return args


def shape_spec(name: str) -> dict:
    return SMOKE_SHAPE if name == "tiny" else SHAPES[name]


def shape_positions(args, name: str, steps_per_image: int) -> tuple:
    """(positions, sweep): the position sweep for the first shape; for the
    others, enough positions to integrate one image's softmax steps."""
    if name == args.shapes[0]:
        return args.positions, True
    return [16, 256, 1024, steps_per_image], False


# -- models and checks ----------------------------------------------------------


def prepare_shapes(args, work: Path, report: dict) -> dict:
    shapes = {}
    for name in args.shapes:
        spec = shape_spec(name)
        config = ModelConfig(**spec["config"])
        model = build_model(config, seed=args.seed).eval()
        tarn_path = work / f"{name}.tarn"
        # Smaller files, each with the reference holding its values.
        reduced = {engine: (work / f"{name}-{dtype}.tarn", model_as_stored(model, dtype)) for engine, dtype in TARN_REDUCED.items()}
        files = {"f32": tarn_path, **{TARN_REDUCED[engine]: path for engine, (path, _) in reduced.items()}}
        for dtype, path in files.items():
            convert_state_dict(model.state_dict(), config, path, dtype=dtype, metadata={"source": f"bench/peers.py {name}, seed {args.seed}"})
        positions, sweep = shape_positions(args, name, spec["steps_per_image"])
        s = dict(name=name, config=config, model=model, reduced=reduced, tarn_path=tarn_path, positions=positions, sweep=sweep, spec=spec)
        entry = report["shapes"][name] = {
            "config": config.to_dict(),
            "positions": positions,
            "steps_per_image": spec["steps_per_image"],
            "paper_cpu_s_per_image": {"linear": spec["paper_linear_s"], "stateful_softmax": spec["paper_softmax_s"]},
            "kv_cache_bytes_per_position": 4 * config.num_layers * config.num_heads * (config.d_key + config.d_value),
            "peers": {},
        }
        tokens = [t % config.vocab_size for t in CHECK_TOKENS]
        if ort is not None:
            s["onnx_linear"] = work / f"{name}-linear.onnx"
            s["onnx_softmax"] = work / f"{name}-softmax.onnx"
            peer_models.export_linear(model, s["onnx_linear"])
            peer_models.export_softmax(model, s["onnx_softmax"])
            s["ort_linear"] = ort_session(s["onnx_linear"], args.threads)
            s["ort_softmax"] = ort_session(s["onnx_softmax"], args.threads)
            s["ort_reduced"] = {engine: ort_session(path, args.threads)
                                for engine, path in peer_models.reduced_precision_exports(s["onnx_linear"], work).items()}  # fmt: skip
            if not s["ort_reduced"]:
                print("ONNX Runtime's float16 and int8 forms need the onnx package in the virtual environment (see VENV_HINT)")
        checks = entry["checks"] = {}
        if ort is not None:
            checks["ort_linear_vs_reference_step"] = peer_models.check_linear(model, lambda f: s["ort_linear"].run(None, f), tokens)
            # Smaller weights change the logits: how much is reported, and
            # only a form far off its model (a broken conversion) is refused.
            entry["reduced_precision_error"] = {}
            for engine, session in s["ort_reduced"].items():
                error = peer_models.check_linear(model, lambda f, session=session: session.run(None, f), tokens)
                entry["reduced_precision_error"][engine] = error
                if not error <= REDUCED_TOLERANCE:
                    raise SystemExit(f"bench/peers.py: {name}: {engine} differs from the f32 reference by {error}")
        softmax = peer_models.check_softmax(model, (lambda f: s["ort_softmax"].run(None, f)) if ort else None, tokens)
        checks["torch_softmax_step_vs_parallel"] = softmax["eager"]
        if ort is not None:
            checks["ort_softmax_step_vs_parallel"] = softmax["onnx"]
        print(f"{name}: largest |difference| of logits over {len(tokens)} steps: "
              + ", ".join(f"{k} {v:.2e}" for k, v in checks.items()), flush=True)
        bad = {k: v for k, v in checks.items() if not v <= CHECK_TOLERANCE}
        if bad:
            raise SystemExit(f"bench/peers.py: {name}: peers disagree with their references beyond {CHECK_TOLERANCE}: {bad}")
        shapes[name] = s
    return shapes


def ort_session(path: Path, threads: int):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # As OMP_WAIT_POLICY=PASSIVE for PyTorch: no spinning on shared cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# -- tarn -------------------------------------------------------------------------


class TarnSweep:
    """tarn_step_bench --positions --rounds-on-stdin: it advances its sessions
    once, then times one round per request."""

    def __init__(self, args, s: dict, model_path: Path, positions: list, reference, work: Path, engine: str):
        """reference: the PyTorch model the file holds (its weights rounded
        as the file stores them)."""
        self.json_path = work / f"{s['name']}-{engine}.json"
        self.tolerance = REDUCED_TOLERANCE if engine in TARN_FLAGS else CHECK_TOLERANCE
        self.reference, self.model = reference, s["model"]
        tokens = [t % s["config"].vocab_size for t in CHECK_TOKENS]
        cmd = [
            args.bench, "--model", str(model_path), "--threads", str(args.threads),
            "--positions", ",".join(map(str, positions)), "--rounds-on-stdin",
            "--check-tokens", ",".join(map(str, tokens)), "--json", str(self.json_path),
            *TARN_FLAGS.get(engine, []),
        ]  # fmt: skip
        print(f"{s['name']}: {engine} advancing its sessions to positions {positions}", flush=True)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = json.loads(self.proc.stdout.readline() or "{}")
        if "ready" not in ready:
            raise SystemExit(f"bench/peers.py: {' '.join(cmd)} failed")
        print(f"{s['name']}: tarn advanced in {ready['ready']['seconds']:.1f} s", flush=True)

    def round(self, steps: int):
        self.proc.stdin.write(f"{steps}\n")
        self.proc.stdin.flush()
        json.loads(self.proc.stdout.readline())

    def finish(self) -> dict:
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise SystemExit("bench/peers.py: tarn_step_bench failed")
        result = json.loads(self.json_path.read_text())
        tokens = result.pop("check_tokens")
        expected = reference_outputs(self.reference, tokens)
        outputs = np.array(result.pop("check_outputs"))
        result["max_abs_diff_vs_reference"] = float(np.abs(outputs - expected).max())
        if self.reference is not self.model:
            result["max_abs_diff_vs_reference_f32"] = float(np.abs(outputs - reference_outputs(self.model, tokens)).max())
        if not result["max_abs_diff_vs_reference"] <= self.tolerance:
            raise SystemExit(f"bench/peers.py: tarn disagrees with the reference: {result['max_abs_diff_vs_reference']}")
        return result


# -- Python peers -------------------------------------------------------------------


class Cell:
    """One peer at one position: `step` runs one timed step."""

    def __init__(self, shape: str, engine: str, position: int, step):
        self.shape, self.engine, self.position, self.step = shape, engine, position, step
        self.wall, self.cpu = [], []


def python_cells(args, s: dict) -> list:
    model, name = s["model"], s["name"]
    token = 3 % s["config"].vocab_size
    softmax = peer_models.SoftmaxStep(model).eval()
    cells = []
    for p in s["positions"]:
        cells.append(Cell(name, "torch_linear", p, torch_linear_step(model, token, p)))
        if ort is not None:
            cells.append(Cell(name, "ort_linear", p, ort_linear_step(model, s["ort_linear"], token, p)))
        cache = peer_models.random_cache(model, p, seed=p)
        feed = peer_models.softmax_inputs(model, token, p, cache)
        cells.append(Cell(name, "torch_softmax", p, torch_softmax_step(softmax, feed)))
        if ort is not None:
            cells.append(Cell(name, "ort_softmax", p, lambda sess=s["ort_softmax"], feed=feed: sess.run(None, feed)))
    for engine, session in s.get("ort_reduced", {}).items():
        cells.append(Cell(name, engine, s["positions"][0], ort_linear_step(model, session, token, s["positions"][0])))
    return cells


def torch_linear_step(model, token: int, position: int):
    state = model.initial_state(1)
    state["position"] = position
    tokens = torch.tensor([token])
    return lambda: model.step(tokens, state)


def ort_linear_step(model, session, token: int, position: int):
    feed = peer_models.linear_inputs(model, token, position)

    def step():
        _, feed["S"], feed["z"] = session.run(None, feed)
        feed["position"] += 1

    return step


def torch_softmax_step(softmax, feed: dict):
    args = [torch.from_numpy(v) for v in feed.values()]

    def step():
        with torch.no_grad():
            softmax(*args)

    return step


def run_round(cells: list, steps: int, start: int):
    """Runs every cell in turn, from cell `start` on: an untimed step, then
    `steps` steps back to back, each timed on its own, as a stream stepping
    one model runs them (and as tarn_step_bench times tarn). A cell whose step
    exceeds LONG_STEP_MS (a softmax step over a cache far larger than any CPU
    cache) gets one timed step and no warm-up."""
    for k in range(len(cells)):
        cell = cells[(start + k) % len(cells)]
        if not (cell.wall and statistics.median(cell.wall) > LONG_STEP_MS):
            cell.step()
        for _ in range(steps):
            c0, t0 = time.thread_time(), time.perf_counter()
            cell.step()
            cell.wall.append((time.perf_counter() - t0) * 1e3)
            cell.cpu.append((time.thread_time() - c0) * 1e3)
            if cell.wall[-1] > LONG_STEP_MS:
                break


def summarise(wall, cpu) -> dict:
    return {
        "steps_timed": len(wall),
        "ms_per_step_median": statistics.median(wall),
        "ms_per_step_best": min(wall),
        "cpu_ms_per_step_median": statistics.median(cpu),
    }


# -- memory ------------------------------------------------------------------------


def rss_kib() -> dict:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return {"rss_kib": fields.get("VmRSS", -1), "peak_rss_kib": fields.get("VmHWM", -1)}


def measure_memory(args, s: dict, tarn: dict) -> dict:
    """RSS against position: tarn's from its sweep; each Python peer in a
    process of its own (the same script, --memory-child)."""
    memory = {"tarn": tarn["advance"]["at"] + [{"position": "end", "peak_rss_kib": tarn["peak_rss_kib_end"]}]}
    engines = ["torch_linear", "torch_softmax"] + (["ort_linear", "ort_softmax"] if ort is not None else [])
    for engine in engines:
        cmd = [sys.executable, __file__, "--memory-child", engine, "--child-shape", s["name"], "--threads", str(args.threads),
               "--seed", str(args.seed), "--positions", ",".join(map(str, s["positions"]))]  # fmt: skip
        if ort is not None:
            cmd += ["--work-dir", str(s["onnx_linear"].parent)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        memory[engine] = json.loads(out.strip().splitlines()[-1])
        print(f"{s['name']} memory {engine}: " + ", ".join(f"{m['position']}: {m['peak_rss_kib'] / 1024:.0f} MiB" for m in memory[engine]), flush=True)
    return memory


def memory_child(args) -> int:
    """Prints [{position, rss_kib, peak_rss_kib}]: one peer stepped MEMORY_STEPS
    times at each position, in increasing order (so the peak at a position is
    the peak up to it), what it held for the last position freed first."""
    torch.set_num_threads(args.threads)
    spec = shape_spec(args.child_shape)
    config = ModelConfig(**spec["config"])
    model = build_model(config, seed=args.seed).eval()
    token = 3 % config.vocab_size
    engine, work = args.memory_child, Path(args.work_dir or ".")
    session = ort_session(work / f"{args.child_shape}-{engine.split('_')[1]}.onnx", args.threads) if engine.startswith("ort") else None
    softmax = peer_models.SoftmaxStep(model).eval()

    def make_step(p):
        if engine == "torch_linear":
            return torch_linear_step(model, token, p)
        if engine == "ort_linear":
            return ort_linear_step(model, session, token, p)
        feed = peer_models.softmax_inputs(model, token, p, peer_models.random_cache(model, p, seed=p))
        return torch_softmax_step(softmax, feed) if engine == "torch_softmax" else (lambda: session.run(None, feed))

    result = [dict(position=0, **rss_kib())]
    for p in args.positions:
        step = make_step(p)
        for _ in range(MEMORY_STEPS):
            step()
        result.append(dict(position=p, **rss_kib()))
        del step
    print(json.dumps(result))
    return 0


# -- report -------------------------------------------------------------------------


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


# The weights' precision of each engine: the floor it is set against.
WEIGHT_DTYPE = {**{engine: "f32" for engine in ENGINES}, **TARN_REDUCED, "ort_f16": "f16", "ort_int8": "i8"}


def weight_floors(entry: dict) -> dict:
    """{dtype: ms} from each tarn run's own measurement (f32 from "tarn")."""
    floors = {}
    for engine in ["tarn", *TARN_REDUCED]:
        if engine in entry and entry[engine].get("floor_ms"):
            floors.setdefault(WEIGHT_DTYPE[engine], entry[engine]["floor_ms"])
    return floors


def engine_runs(entry: dict, engine: str) -> dict:
    """{position: summary} for one engine."""
    if engine == "tarn" or engine in TARN_REDUCED:
        return {str(p["position"]): p for p in entry[engine]["positions"]} if engine in entry else {}
    return entry["peers"].get(engine, {})


def per_image_seconds(entry: dict, engine: str, key: str) -> float:
    """One image of N steps: the sum over positions 0..N-1 of the step time,
    interpolated linearly between measured positions (constant beyond them)."""
    runs = engine_runs(entry, engine)
    if not runs:
        return None
    positions = sorted(int(p) for p in runs)
    ms = [runs[str(p)][key] for p in positions]
    n = entry["steps_per_image"]
    return float(np.interp(np.arange(n), positions, ms).sum() / 1e3)


def print_reduced(e: dict, first: str):
    """What smaller weights cost in accuracy, and the ratios at equal weight
    precision (each ONNX Runtime form against tarn with as many or more bytes
    per weight)."""
    own = [engine for engine in TARN_REDUCED if engine in e]
    if not own:
        return
    errors = {**{k: e[k]["max_abs_diff_vs_reference_f32"] for k in own}, **e.get("reduced_precision_error", {})}
    print("smaller weights, largest |difference| of logits from the f32 reference: "
          + ", ".join(f"{LABELS[k]} {v:.2e}" for k, v in errors.items())
          + " (tarn vs the reference holding the file's values: "
          + ", ".join(f"{k[len('tarn_'):]} {e[k]['max_abs_diff_vs_reference']:.2e}" for k in own) + ")")
    # ONNX Runtime's CPU provider has no bfloat16 MatMul (its graphs in bf16
    # do not run there), so tarn's bf16 is set against its float16: the same
    # bytes per weight.
    pairs = [("ort_linear", "tarn", "f32"), ("ort_f16", "tarn_f16", "f16"), ("ort_f16", "tarn_bf16", "bf16 (ORT float16)"),
             ("ort_int8", "tarn_i8", "int8"), ("ort_int8", "tarn_i8dot", "int8 (tarn dot products)")]
    cells = []
    for peer, own, label in pairs:
        a, b = engine_runs(e, peer).get(first), engine_runs(e, own).get(first)
        if a is None or b is None:
            continue
        r = {k: a[k] / b[k] for k in ("ms_per_step_median", "ms_per_step_best", "cpu_ms_per_step_median")}
        e.setdefault("ratios_equal_precision", {})[peer if own in ("tarn", "tarn_f16", "tarn_i8") else f"{peer}_vs_{own}"] = r
        cells.append(f"{label} {r['ms_per_step_median']:.2f}x / {r['ms_per_step_best']:.2f}x / {r['cpu_ms_per_step_median']:.2f}x")
    if cells:
        print("ONNX Runtime / tarn at equal weight precision (median / fastest / cpu): " + "; ".join(cells))


def print_report(report: dict, args):
    engines = [e for e in ENGINES if e == "tarn" or ort is not None or not e.startswith("ort")]
    print("\n" + "=" * 100)
    for name, e in report["shapes"].items():
        c = e["config"]
        first = str(e["positions"][0])
        tarn = engine_runs(e, "tarn")[first]
        print(f"\n{name}: {c['num_layers']} layers, d_model {c['d_model']}, {c['num_heads']} heads x {c['d_key']}, d_ff {c['d_ff']}, "
              f"vocab {c['vocab_size']}; batch 1, {args.threads} thread(s); step at position {first}")
        floors = weight_floors(e)
        print(f"{'engine':<36} {'median ms':>9} {'fastest':>8} {'cpu ms':>8}   {'x tarn (median, fastest, cpu)':>30}   "
              f"{'% floor':>7}")
        e["ratios_vs_tarn"] = {}
        for engine in engines + REDUCED:
            run = engine_runs(e, engine).get(first)
            if run is None:
                continue
            ratio = {k: run[k] / tarn[k] for k in ("ms_per_step_median", "ms_per_step_best", "cpu_ms_per_step_median")}
            e["ratios_vs_tarn"][engine] = ratio
            floor = floors.get(WEIGHT_DTYPE[engine])
            e.setdefault("fraction_of_floor", {})[engine] = floor / run["ms_per_step_median"] if floor else None
            print(f"{LABELS[engine]:<36} {run['ms_per_step_median']:>9.3f} {run['ms_per_step_best']:>8.3f} "
                  f"{run['cpu_ms_per_step_median']:>8.3f}   {ratio['ms_per_step_median']:>9.2f}x {ratio['ms_per_step_best']:>8.2f}x "
                  f"{ratio['cpu_ms_per_step_median']:>8.2f}x   "
                  + (f"{100 * floor / run['ms_per_step_median']:>6.0f}%" if floor else f"{'-':>7}"))
        if floors:
            print("% floor: the weight floor of the engine's weight precision (the bytes a tarn step reads at the best read bandwidth\n"
                  "of a buffer that size, measured in this run by tarn_step_bench: "
                  + ", ".join(f"{d} {ms:.3f} ms" for d, ms in floors.items())
                  + ") / the median step; a softmax step also reads its KV cache, which the floor leaves out")
        print(f"checks (largest |difference| of logits): tarn vs reference {e['tarn']['max_abs_diff_vs_reference']:.2e}, "
              + ", ".join(f"{k} {v:.2e}" for k, v in e["checks"].items()))
        print_reduced(e, first)

        print(f"\n{name}: ms per step against position, median (fastest)")
        print(f"{'position':>8} " + " ".join(f"{SHORT[x]:>20}" for x in engines) + f" {'KV cache MiB':>12}")
        for p in e["positions"]:
            cells = []
            for engine in engines:
                run = engine_runs(e, engine).get(str(p))
                cells.append("-" if run is None else f"{run['ms_per_step_median']:.3f} ({run['ms_per_step_best']:.3f})")
            print(f"{p:>8} " + " ".join(f"{x:>20}" for x in cells) + f" {e['kv_cache_bytes_per_position'] * p / 2**20:>12.1f}")
        runs = engine_runs(e, "tarn")
        lo, hi = runs[str(e["positions"][0])], runs[str(e["positions"][-1])]
        e["tarn_flatness"] = {k: hi[k] / lo[k] for k in ("ms_per_step_median", "ms_per_step_best", "cpu_ms_per_step_median")}
        f = e["tarn_flatness"]
        print(f"tarn step at position {e['positions'][-1]} / at {e['positions'][0]}: median {f['ms_per_step_median']:.3f}, "
              f"fastest {f['ms_per_step_best']:.3f}, CPU time {f['cpu_ms_per_step_median']:.3f}")
        if "memory" in e:
            print(f"\n{name}: peak RSS (MiB) against position ({MEMORY_STEPS} steps at each; tarn: one stream advanced, "
                  f"session {e['tarn']['session_bytes'] / 2**20:.2f} MiB)")
            mem_engines = [x for x in engines if x in e["memory"]]
            print(f"{'position':>8} " + " ".join(f"{SHORT[x]:>16}" for x in mem_engines))
            for p in e["positions"]:
                row = []
                for engine in mem_engines:
                    m = next((m for m in e["memory"][engine] if m["position"] == p), None)
                    row.append("-" if m is None else f"{m['peak_rss_kib'] / 1024:.1f}")
                print(f"{p:>8} " + " ".join(f"{x:>16}" for x in row))
            t = [m["peak_rss_kib"] for m in e["memory"]["tarn"]]
            e["tarn_peak_rss_growth_kib"] = max(t) - min(t)
            print(f"tarn peak RSS from position {e['positions'][0]} to the end of timing: {min(t) / 1024:.2f} -> {max(t) / 1024:.2f} MiB "
                  f"(+{e['tarn_peak_rss_growth_kib']} KiB)")

    print("\nseconds per image (fastest / median step), beside the paper's Table 5 CPU column")
    print(f"{'shape':<6} {'steps':>5} " + " ".join(f"{SHORT[x]:>15}" for x in engines) + f" {'paper linear':>13} {'paper softmax':>14}")
    for name, e in report["shapes"].items():
        e["per_image_s"] = {}
        cells = []
        for engine in engines:
            best = per_image_seconds(e, engine, "ms_per_step_best")
            median = per_image_seconds(e, engine, "ms_per_step_median")
            e["per_image_s"][engine] = {"best": best, "median": median}
            cells.append("-" if best is None else f"{best:.2f}/{median:.2f}")
        paper = e["paper_cpu_s_per_image"]
        print(f"{name:<6} {e['steps_per_image']:>5} " + " ".join(f"{x:>15}" for x in cells)
              + f" {fmt(paper['linear'], '.1f'):>13} {fmt(paper['stateful_softmax'], '.1f'):>14}")
    print("(the paper: one image at a time on a CPU of 2020, its own implementations; a linear step costs the same at every "
          "position, a softmax step is summed over the image's positions)")
    print(f"load average (1, 5, 15 min) at start {fmt_load(report['machine']['load_start'])}, at end {fmt_load(report['machine']['load_end'])}")


if __name__ == "__main__":
    sys.exit(main())
