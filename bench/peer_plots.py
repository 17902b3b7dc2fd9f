"""PNG plots of bench/peers.py's report (matplotlib, Debian python3-matplotlib)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "tarn": ("tarn (linear)", "tab:green", "o"),
    "torch_linear": ("PyTorch eager, linear recurrent", "tab:blue", "s"),
    "ort_linear": ("ONNX Runtime, linear recurrent", "tab:purple", "D"),
    "torch_softmax": ("PyTorch eager, softmax + KV cache", "tab:red", "^"),
    "ort_softmax": ("ONNX Runtime, softmax + KV cache", "tab:orange", "v"),
}


def runs_of(entry: dict, engine: str) -> dict:
    if engine == "tarn":
        return {p["position"]: p for p in entry["tarn"]["positions"]}
    return {int(p): r for p, r in entry["peers"].get(engine, {}).items()}


def position_axis(ax, positions):
    ax.set_xscale("log", base=2)
    ax.set_xticks(positions)
    ax.set_xticklabels([f"{p:,}" for p in positions])
    ax.minorticks_off()


def sweep_shape(report: dict) -> tuple:
    name = next(iter(report["shapes"]))
    return name, report["shapes"][name]


def subtitle(report: dict) -> str:
    m = report["machine"]
    return f"batch 1, {report['threads']} thread(s); {m['cpu']}, shared (load {m['load_start'][0]:.1f})"


def plot_step_time(report: dict, path: Path) -> Path:
    name, e = sweep_shape(report)
    fig, ax = plt.subplots(figsize=(8, 5))
    for engine, (label, color, marker) in STYLE.items():
        runs = runs_of(e, engine)
        if not runs:
            continue
        ps = sorted(runs)
        ax.plot(ps, [runs[p]["ms_per_step_median"] for p in ps], color=color, marker=marker, label=label + " (median)")
        ax.plot(ps, [runs[p]["ms_per_step_best"] for p in ps], color=color, linestyle=":", linewidth=1, label="_fastest")
    position_axis(ax, e["positions"])
    ax.set_yscale("log")
    ax.set_xlabel("position in the sequence (cache length for softmax)")
    ax.set_ylabel("ms per step")
    ax.set_title(f"Time per step against position, {name} shape\n{subtitle(report)}; dotted: fastest step", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_memory(report: dict, path: Path) -> Path:
    name, e = sweep_shape(report)
    fig, ax = plt.subplots(figsize=(8, 5))
    for engine, (label, color, marker) in STYLE.items():
        points = [m for m in e["memory"].get(engine, []) if isinstance(m["position"], int) and m["position"] > 0]
        if not points:
            continue
        ax.plot([m["position"] for m in points], [m["peak_rss_kib"] / 1024 for m in points], color=color, marker=marker, label=label)
    ps = e["positions"]
    ax.plot(ps, [e["kv_cache_bytes_per_position"] * p / 2**20 for p in ps], color="grey", linestyle="--", label="the KV cache's own bytes")
    position_axis(ax, ps)
    ax.set_yscale("log")
    ax.set_xlabel("position in the sequence")
    ax.set_ylabel("peak RSS of the process, MiB")
    ax.set_title(f"Memory against position, {name} shape\n{subtitle(report)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_per_image(report: dict, path: Path) -> Path:
    names = list(report["shapes"])
    bars = [(engine, label, color) for engine, (label, color, _) in STYLE.items()]
    bars += [("paper_linear", "paper, linear (CPU)", "lightgrey"), ("paper_softmax", "paper, stateful-softmax (CPU)", "dimgrey")]
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / len(bars)
    for i, (key, label, color) in enumerate(bars):
        values = []
        for name in names:
            e = report["shapes"][name]
            if key.startswith("paper"):
                v = e["paper_cpu_s_per_image"]["linear" if key == "paper_linear" else "stateful_softmax"]
            else:
                v = (e["per_image_s"].get(key) or {}).get("best")
            values.append(v or 0)
        xs = [j + (i - len(bars) / 2 + 0.5) * width for j in range(len(names))]
        bars_drawn = ax.bar(xs, values, width, color=color, label=label)
        ax.bar_label(bars_drawn, labels=[f"{v:.3g}" if v else "" for v in values], fontsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{n} ({report['shapes'][n]['steps_per_image']} steps)" for n in names])
    ax.set_yscale("log")
    ax.set_ylabel("seconds per image (fastest steps)")
    ax.set_title(f"One image, pixel by pixel\n{subtitle(report)}", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(report: dict, directory: Path) -> list:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [plot_step_time(report, directory / "peers_step_time.png"), plot_per_image(report, directory / "peers_per_image.png")]
    if "memory" in sweep_shape(report)[1]:
        paths.append(plot_memory(report, directory / "peers_memory.png"))
    return paths
