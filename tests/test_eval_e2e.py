"""The HotpotQA harness end to end on three hand-written questions (tests/data/hotpotqa_mini.json):
real engine, real MiniLM, both systems, both settings, the results document, the table and the
plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.config import load_settings
from cranimem_mcp.eval.hotpotqa import EvalConfig, run_eval, write_results
from cranimem_mcp.eval.report import markdown_table, plot_results

# Three questions written for this test in HotpotQA's official layout (a JSON list of
# {_id, question, answer, type, level, supporting_facts, context}, 10 paragraphs each, 2 of
# them gold): the test needs no data from outside the checkout. The full HotpotQA files stay
# outside the repository and are read by `cranimem-mcp eval` and the scripts.
DATA = Path(__file__).parent / "data" / "hotpotqa_mini.json"


@pytest.mark.slow  # over ~5 s
@pytest.mark.anyio
async def test_three_questions_through_both_systems(tmp_path: Path, minilm: OnnxEmbedder) -> None:
    # A lighter schedule than the default keeps the test short: 2 injections of 2 distractors.
    cfg = EvalConfig(
        data=DATA, limit=3, seed=0, inject_every=5, noise=2, workdir=tmp_path / "stores"
    )
    rows: list[tuple[str, str, dict]] = []
    results = await run_eval(
        cfg, load_settings(home=tmp_path / "unused"), minilm, on_row=lambda *r: rows.append(r)
    )

    assert results["config"]["questions"] == 3
    assert set(results["systems"]) == {"cranimem", "vanilla"}
    for blocks in results["systems"].values():
        assert set(blocks) == {"clean", "noisy", "noise_drop"}
        for setting in ("clean", "noisy"):
            block = blocks[setting]
            for metric in ("supporting_fact_recall", "context_precision", "distractor_intrusion"):
                assert 0.0 <= block[metric] <= 1.0
            assert block["recall_ms_p50"] > 0 and block["remember_ms_p95"] > 0
        assert blocks["clean"]["distractor_intrusion"] == 0.0  # nothing injected
        drop = blocks["noise_drop"]["answer_recall"]
        assert drop == pytest.approx(
            blocks["clean"]["answer_recall"] - blocks["noisy"]["answer_recall"]
        )

    vanilla, cranimem = results["systems"]["vanilla"], results["systems"]["cranimem"]
    # the fixture's questions are answerable from their gold paragraphs: both systems find them
    for blocks in (vanilla, cranimem):
        assert blocks["clean"]["answer_recall"] == 1.0
    # vanilla keeps every write: 10 paragraphs, plus 2 injections of 2 distractors when noisy
    assert vanilla["clean"]["items_stored"] == 10.0
    assert vanilla["noisy"]["items_stored"] == 14.0
    # the gate keeps (most) distractors out of cranimem's memory
    assert cranimem["noisy"]["items_stored"] < vanilla["noisy"]["items_stored"]
    assert len(rows) == 3 * 2 * 2

    out = tmp_path / "out" / "results.json"
    write_results(results, out)
    assert json.loads(out.read_text())["systems"]["cranimem"]["clean"]
    table = markdown_table(results)
    assert "| cranimem | noise drop |" in table and "| vanilla | noisy |" in table
    pytest.importorskip("matplotlib")
    for png in plot_results(results, tmp_path / "img"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_bench_runs_end_to_end_through_the_cli(tmp_path: Path) -> None:
    """`cranimem-mcp bench` on a tiny size with the constant embedder: every timed write is
    stored (the write path worth timing), recall finds memories, the document is complete."""
    import subprocess
    import sys

    from conftest import server_env

    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "cranimem_mcp.cli", "bench", "--sizes", "300,600", "--ops", "6",
           "--embedder", "constant", "--output", str(out), "--no-plots"]  # fmt: skip
    done = subprocess.run(cmd, env=server_env(tmp_path / "home"), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["memories"] >= size for r, size in zip(rows, (300, 600), strict=True)] == [True] * 2
    for r in rows:
        assert r["writes"] == {"stored": 6, "merged": 0, "rejected": 0}
        assert r["recall_items_mean"] > 0
        assert 0 < r["remember_ms_p50"] <= r["remember_ms_p95"]
        assert r["consolidation_items"] == 6 and r["peak_rss_mb"] > 0
    assert "| constant |" in done.stdout
