"""The benchmark's human-readable output: a markdown table and PNG plots (matplotlib, from the
``eval`` extra, imported only when plotting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLUMNS = (
    ("supporting_fact_recall", "SF recall", "{:.3f}"),
    ("answer_recall", "answer recall", "{:.3f}"),
    ("context_precision", "ctx precision", "{:.3f}"),
    ("distractor_intrusion", "intrusion", "{:.3f}"),
    ("f1", "answer F1", "{:.3f}"),
    ("items_stored", "items stored", "{:.1f}"),
    ("gold_lost_gate", "gold lost: gate", "{:.3f}"),
    ("gold_lost_replay", "replay", "{:.3f}"),
    ("gold_lost_retrieval", "retrieval", "{:.3f}"),
    ("remember_ms_p50", "remember p50 ms", "{:.1f}"),
    ("remember_ms_p95", "p95", "{:.1f}"),
    ("recall_ms_p50", "recall p50 ms", "{:.1f}"),
    ("recall_ms_p95", "p95", "{:.1f}"),
    ("consolidate_ms_p50", "consolidate p50 ms", "{:.1f}"),
)
PLOTTED = ("supporting_fact_recall", "answer_recall", "context_precision", "distractor_intrusion")


def _cell(value: Any, fmt: str, signed: bool = False) -> str:
    if value is None:
        return "–"
    return ("{:+" + fmt[2:] if signed else fmt).format(value)


def markdown_table(results: dict[str, Any]) -> str:
    """One row per system and setting, then its noise drop (clean - noisy)."""
    systems = results["systems"]
    present = [
        c for c in COLUMNS
        if any(c[0] in block for s in systems.values() for block in s.values())
    ]  # fmt: skip
    head = "| system | setting | " + " | ".join(c[1] for c in present) + " |"
    rule = "|---|---|" + "---:|" * len(present)
    lines = [head, rule]
    for name, blocks in systems.items():
        for setting in ("clean", "noisy", "noise_drop"):
            block = blocks.get(setting)
            if block is None:
                continue
            signed = setting == "noise_drop"
            cells = [_cell(block.get(key), fmt, signed) for key, _label, fmt in present]
            label = "noise drop" if signed else setting
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_results(results: dict[str, Any], out_dir: Path, prefix: str = "eval_") -> list[Path]:
    """Clean vs noisy bars per system for each quality metric, and latency percentiles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    systems = results["systems"]
    names = list(systems)
    written = []

    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(4.2 * len(PLOTTED), 3.8))
    width = 0.38
    for ax, metric in zip(axes, PLOTTED, strict=True):
        for j, setting in enumerate(("clean", "noisy")):
            values = [(systems[n].get(setting) or {}).get(metric) or 0.0 for n in names]
            xs = [i + (j - 0.5) * width for i in range(len(names))]
            bars = ax.bar(xs, values, width, label=setting, color=("#4c72b0", "#dd8452")[j])
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.set_xticks(range(len(names)), names)
        ax.set_ylim(0, 1.05)
        ax.set_title(metric.replace("_", " "))
    axes[0].legend(loc="upper right", fontsize=8)
    n = results["config"].get("questions")
    fig.suptitle(f"HotpotQA distractor, {n} questions: clean vs noisy write stream")
    fig.tight_layout()
    path = out_dir / f"{prefix}clean_vs_noisy.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(7, 3.8))
    series = [("remember_ms", "remember"), ("recall_ms", "recall")]
    labels, p50, p95 = [], [], []
    for name in names:
        for setting in ("clean", "noisy"):
            block = systems[name].get(setting) or {}
            for key, short in series:
                labels.append(f"{name}\n{setting}\n{short}")
                p50.append(block.get(f"{key}_p50") or 0.0)
                p95.append(block.get(f"{key}_p95") or 0.0)
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], p50, 0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], p95, 0.4, label="p95")
    ax.set_xticks(list(xs), labels, fontsize=6)
    ax.set_ylabel("ms per call")
    ax.set_title("Latency per call (embedding included)")
    ax.legend()
    fig.tight_layout()
    path = out_dir / f"{prefix}latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
