"""The benchmark's human-readable output: a markdown table and PNG plots (matplotlib, from the
``eval`` extra, imported only when plotting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import metrics

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


def locomo_table(results: dict[str, Any]) -> str:
    """``eval locomo``: one row per system, R@k per category and overall, recall latency."""
    ks = results["config"]["ks"]
    first = next(iter(results["systems"].values()), None)
    cats = first["categories"] if first else {}
    at = " / ".join(f"R@{k}" for k in ks)
    head = ["system"] + [f"{c['name']} ({c['questions']}) {at}" for c in cats.values()]
    within = metrics.head_key(ks)
    head += [f"all ({first['questions'] if first else 0}) {at}"]
    head += [f"all R@{min(ks)} of a recall of {max(ks)}"] if len(ks) > 1 else []
    head += ["recall p50 / p95 ms",
             "wall p50 / p95 ms", "writes stored / merged / rejected", "seconds"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]

    def pair(block: dict[str, Any]) -> str:
        return " / ".join(_cell(block.get(f"recall@{k}"), "{:.3f}") for k in ks)

    for name, s in results["systems"].items():
        w = s["writes"]
        cells = [name] + [pair(c) for c in s["categories"].values()] + [pair(s["overall"])]
        cells += [_cell(s["overall"].get(within), "{:.3f}")] if len(ks) > 1 else []
        cells += [
            " / ".join(_cell(s[f"recall_took_ms_{p}"], "{:.1f}") for p in ("p50", "p95")),
            " / ".join(_cell(s[f"recall_wall_ms_{p}"], "{:.1f}") for p in ("p50", "p95")),
            f"{w.get('stored', 0)} / {w.get('merged', 0)} / {w.get('rejected', 0)}",
            f"{s['seconds']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_locomo(results: dict[str, Any], path: Path) -> Path:
    """R@k per category and overall, one bar per system, one panel per k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = results["config"]["ks"]
    systems = results["systems"]
    names = list(systems)
    first = next(iter(systems.values()))
    groups = [c["name"] for c in first["categories"].values()] + ["all"]
    fig, axes = plt.subplots(1, len(ks), figsize=(6 * len(ks), 3.8), squeeze=False)
    width = 0.8 / max(1, len(names))
    for ax, k in zip(axes[0], ks, strict=True):
        for j, name in enumerate(names):
            s = systems[name]
            values = [c.get(f"recall@{k}") or 0.0 for c in s["categories"].values()]
            values.append(s["overall"].get(f"recall@{k}") or 0.0)
            xs = [i + (j - (len(names) - 1) / 2) * width for i in range(len(groups))]
            bars = ax.bar(xs, values, width, label=name)
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"evidence recall@{k}")
    axes[0][0].legend(loc="upper right", fontsize=8)
    convs = ", ".join(results["config"]["conversations"])
    fig.suptitle(f"LoCoMo ({convs}), {results['config']['questions']} questions")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


LEVELS = (("", "turn"), ("session_", "session"))
SHORT = {
    "temporal-reasoning": "temporal", "knowledge-update": "k-update",
    "single-session-user": "ss-user", "single-session-assistant": "ss-assistant",
    "single-session-preference": "ss-preference",
}  # fmt: skip


def longmemeval_table(results: dict[str, Any]) -> str:
    """``eval longmemeval``: two rows per system (turn and session level), R@k per question
    type and overall; recall latency and writes on the turn row."""
    ks = results["config"]["ks"]
    first = next(iter(results["systems"].values()), None)
    cats = first["categories"] if first else {}
    at = " / ".join(f"R@{k}" for k in ks)
    head = ["system", "level"] + [f"{name} ({c['questions']}) {at}" for name, c in cats.items()]
    head += [f"all ({first['questions'] if first else 0}) {at}"]
    head += [f"all R@{min(ks)} of a recall of {max(ks)}"] if len(ks) > 1 else []
    head += ["recall p50 / p95 ms",
             "wall p50 / p95 ms", "writes stored / merged / rejected", "seconds"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]

    def pair(block: dict[str, Any], level: str) -> str:
        return " / ".join(_cell(block.get(f"{level}recall@{k}"), "{:.3f}") for k in ks)

    for name, s in results["systems"].items():
        w = s["writes"]
        for level, label in LEVELS:
            cells = [name, label] + [pair(c, level) for c in s["categories"].values()]
            cells += [pair(s["overall"], level)]
            if len(ks) > 1:
                cells += [_cell(s["overall"].get(f"{level}{metrics.head_key(ks)}"), "{:.3f}")]
            if level:  # the session row: the same run, its costs are on the turn row
                cells += [""] * 4
            else:
                cells += [
                    " / ".join(_cell(s[f"recall_took_ms_{p}"], "{:.1f}") for p in ("p50", "p95")),
                    " / ".join(_cell(s[f"recall_wall_ms_{p}"], "{:.1f}") for p in ("p50", "p95")),
                    f"{w.get('stored', 0)} / {w.get('merged', 0)} / {w.get('rejected', 0)}",
                    f"{s['seconds']:.0f}",
                ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_longmemeval(results: dict[str, Any], path: Path) -> Path:
    """Turn and session R@k per question type and overall: one bar per system, one panel per
    level and k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = results["config"]["ks"]
    systems = results["systems"]
    names = list(systems)
    first = next(iter(systems.values()))
    groups = [SHORT.get(c, c) for c in first["categories"]] + ["all"]
    fig, axes = plt.subplots(
        len(LEVELS), len(ks), figsize=(7.5 * len(ks), 3.6 * len(LEVELS)), squeeze=False
    )
    width = 0.8 / max(1, len(names))
    for row, (level, label) in zip(axes, LEVELS, strict=True):
        for ax, k in zip(row, ks, strict=True):
            for j, name in enumerate(names):
                s = systems[name]
                key = f"{level}recall@{k}"
                values = [c.get(key) or 0.0 for c in s["categories"].values()]
                values.append(s["overall"].get(key) or 0.0)
                xs = [i + (j - (len(names) - 1) / 2) * width for i in range(len(groups))]
                bars = ax.bar(xs, values, width, label=name)
                ax.bar_label(bars, fmt="%.2f", fontsize=6)
            ax.set_xticks(range(len(groups)), groups, fontsize=7)
            ax.set_ylim(0, 1.08)
            ax.set_title(f"{label}-level recall@{k}")
    axes[0][0].legend(loc="upper right", fontsize=8)
    cfg = results["config"]
    fig.suptitle(
        f"LongMemEval ({Path(cfg['data']).name}): {cfg['questions']} questions, "
        f"{cfg['turns']:,} turns (ss: single-session)"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
