"""``eval locomo``: the protocol's reading of a conversation, evidence recall@k computed by hand
on a scripted memory, and the harness end to end on a synthetic conversation
(tests/data/locomo_mini.json, written for these tests in LoCoMo's layout; the real LoCoMo data
is CC BY-NC and stays outside the checkout)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.config import load_settings
from cranimem_mcp.eval import metrics
from cranimem_mcp.eval.locomo import (
    Conversation,
    RunConfig,
    evidence_ids,
    load_conversations,
    run_conversation,
    run_locomo,
    summarise,
)
from cranimem_mcp.eval.report import locomo_table
from cranimem_mcp.eval.through_mcp import Recalled

DATA = Path(__file__).parent / "data" / "locomo_mini.json"
DEV = Path(__file__).parent.parent.parent / "shared" / "data" / "locomo_dev2.json"


def test_evidence_ranks_are_one_based_first_containing_memory() -> None:
    found = ["[x] A: hello there", "[x] B: I like tea. [image: a cup]", "[x] B: I like tea."]
    assert metrics.evidence_ranks(found, ["B: I like tea.", "A: hello", "C: absent"]) == [
        2,
        1,
        None,
    ]
    assert metrics.evidence_ranks([], ["anything"]) == [None]


def test_recall_at_k_counts_only_evidence_within_the_top_k() -> None:
    assert metrics.recall_at_k([1, None], 5) == 0.5
    assert metrics.recall_at_k([3, 7], 5) == 0.5
    assert metrics.recall_at_k([3, 7], 10) == 1.0
    assert metrics.recall_at_k([6], 5) == 0.0
    assert metrics.recall_at_k([], 5) is None


def test_malformed_evidence_ids_are_normalised() -> None:
    assert evidence_ids(["D:11:26", "D30:05", "D8:6; D9:17", "D1:3"]) == [
        "D11:26", "D30:5", "D8:6", "D9:17", "D1:3",
    ]  # fmt: skip


def test_the_protocol_reads_turns_and_questions() -> None:
    (conv,) = load_conversations(DATA)
    assert conv.sample_id == "mini-1" and len(conv.turns) == 8
    assert conv.turns[0] == (
        "D1:1",
        "[10:00 am on 3 March, 2023] Mira: I just adopted a grey rabbit named Pepper from the "
        "animal shelter!",
    )
    assert conv.turns[4][1].endswith(" [image: a grey rabbit next to a cable]")
    # category 5 is left out; a question with no evidence, or whose evidence names no turn, is
    # counted as skipped
    assert [q.category for q in conv.questions] == [4, 1, 2, 3]
    assert conv.skipped == 2
    assert conv.questions[1].evidence == ("D1:3", "D2:3")
    assert conv.questions[2].evidence == ("D1:2",)
    assert [q.id for q in conv.questions] == ["mini-1/0", "mini-1/1", "mini-1/2", "mini-1/3"]
    assert len(load_conversations(DATA, limit=2)[0].questions) == 2


class ScriptedMemory:
    """A memory whose recalls are fixed in advance: (question, k) -> turns returned."""

    def __init__(self, conv: Conversation, plan: dict[tuple[int, int], list[str]]) -> None:
        texts = conv.texts
        by_question = {q.text: i for i, q in enumerate(conv.questions)}
        self._plan = {key: [texts[d] for d in ids] for key, ids in plan.items()}
        self._index = by_question
        self.settled = False

    async def remember(self, text: str) -> str:
        return "rejected" if "cello teacher" in text else "stored"

    async def settle(self) -> None:
        self.settled = True

    async def recall(self, query: str, k: int) -> Recalled:
        return Recalled(self._plan[(self._index[query], k)][:k], 1.5)


@pytest.mark.anyio
async def test_recall_at_k_per_category_matches_a_hand_computation() -> None:
    (conv,) = load_conversations(DATA)
    plan = {
        # q0 (single-hop, D1:1): second at k=5, sixth at k=10 (found at 5 and at 10, but not
        # in the first five of the recall of 10)
        (0, 5): ["D2:1", "D1:1", "D1:2"],
        (0, 10): ["D2:1", "D2:2", "D2:3", "D2:4", "D1:2", "D1:1"],
        # q1 (multi-hop, D1:3 + D2:3): one of two at k=5, both at k=10 (D2:3 at rank 7)
        (1, 5): ["D1:3", "D1:1", "D1:2", "D1:4", "D2:1"],
        (1, 10): ["D1:3", "D1:1", "D1:2", "D1:4", "D2:1", "D2:2", "D2:3"],
        # q2 (temporal, D1:2): never found
        (2, 5): ["D2:2"], (2, 10): ["D2:2", "D2:4"],
        # q3 (open-domain, D1:4 + D2:4): D2:4 only, at both k
        (3, 5): ["D2:4"], (3, 10): ["D2:4"],
    }  # fmt: skip
    memory = ScriptedMemory(conv, plan)
    timings: dict[str, list[float]] = {
        "recall_took_ms": [],
        "recall_wall_ms": [],
        "remember_ms": [],
    }
    writes: Counter[str] = Counter()
    rows = await run_conversation(memory, conv, (5, 10), timings, writes)
    assert memory.settled
    assert [r["ranks"] for r in rows] == [
        {"5": [2], "10": [6]},
        {"5": [1, None], "10": [1, 7]},
        {"5": [None], "10": [None]},
        {"5": [None, 1], "10": [None, 1]},
    ]
    s = summarise(rows, (5, 10), timings, writes, 2.0)
    cats = s["categories"]
    assert (cats["4"]["recall@5"], cats["4"]["recall@10"]) == (1.0, 1.0)
    assert (cats["1"]["recall@5"], cats["1"]["recall@10"]) == (0.5, 1.0)
    assert (cats["2"]["recall@5"], cats["2"]["recall@10"]) == (0.0, 0.0)
    assert (cats["3"]["recall@5"], cats["3"]["recall@10"]) == (0.5, 0.5)
    # overall: the mean over questions, (1 + 0.5 + 0 + 0.5) / 4 and (1 + 1 + 0 + 0.5) / 4;
    # the first five of the recall of 10: (0 + 0.5 + 0 + 0.5) / 4
    assert s["overall"] == {"recall@5": 0.5, "recall@10": 0.625, "recall@5_of_10": 0.25}
    assert s["writes"] == {"calls": 8, "rejected": 1, "stored": 7}
    assert s["recall_took_ms_p50"] == 1.5 and len(timings["recall_wall_ms"]) == 8
    assert s["evidence_rejected"] == 0.0  # the rejected turn (D2:2) is no question's evidence


@pytest.mark.slow  # the engine loads spaCy and writes for real: ~10 s
@pytest.mark.anyio
async def test_both_systems_on_the_synthetic_conversation(
    tmp_path: Path, minilm: OnnxEmbedder
) -> None:
    cfg = RunConfig(data=DATA, workdir=tmp_path / "stores")
    results = await run_locomo(cfg, load_settings(home=tmp_path / "unused"), minilm)
    assert results["config"]["questions"] == 4 and results["config"]["questions_skipped"] == 2
    assert set(results["systems"]) == {"cranimem", "vanilla"}
    assert results["systems"]["vanilla"]["writes"] == {"calls": 8, "stored": 8}
    # eight turns and k >= 5: every system that keeps the evidence finds most of it
    assert results["systems"]["vanilla"]["overall"]["recall@10"] == 1.0
    rows = results["questions"]
    assert len(rows) == 8
    for row in rows:
        for k in ("5", "10"):
            assert len(row["ranks"][k]) == len(row["evidence"])
            assert row[f"recall@{k}"] == metrics.recall_at_k(row["ranks"][k], int(k))
    table = locomo_table(results)
    assert table.count("\n") == 3 and "| vanilla | " in table


@pytest.mark.slow  # spawns the CLI, which spawns `serve` for the MCP run
def test_cli_writes_the_document_and_mcp_recalls_as_the_engine(tmp_path: Path) -> None:
    from conftest import server_env

    out = tmp_path / "out" / "locomo.json"
    cmd = [sys.executable, "-m", "cranimem_mcp.cli", "eval", "locomo", "--data", str(DATA),
           "--json", str(out), "--plot", str(tmp_path / "locomo.png"), "--system", "cranimem",
           "--through-mcp"]  # fmt: skip
    done = subprocess.run(cmd, env=server_env(tmp_path / "home"), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert list(doc["systems"]) == ["cranimem", "cranimem-mcp"]
    for s in doc["systems"].values():
        assert set(s["categories"]) == {"1", "2", "3", "4"}
        assert {"recall@5", "recall@10"} <= set(s["overall"])
        assert s["recall_took_ms_p50"] > 0 and s["recall_wall_ms_p95"] > 0
        assert s["writes"]["calls"] == 8 and s["seconds"] > 0
    assert doc["systems"]["cranimem-mcp"]["questions_differing_from_cranimem"] == 0
    row = doc["questions"][0]
    assert {"system", "question_id", "category", "evidence", "ranks", "recall@5"} <= set(row)
    # stdout is the table and nothing else; the progress bar went to stderr
    assert done.stdout.splitlines()[0].startswith("| system |")
    assert len(done.stdout.splitlines()) == 4
    if (tmp_path / "locomo.png").exists():  # matplotlib (the eval extra) is installed
        assert (tmp_path / "locomo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not DEV.exists(), reason="../shared/data/locomo_dev2.json is not here")
def test_the_dev_conversations_give_the_documented_question_count() -> None:
    conversations = load_conversations(DEV)
    assert [c.sample_id for c in conversations] == ["conv-26", "conv-30"]
    assert [len(c.turns) for c in conversations] == [419, 369]
    assert sum(len(c.questions) for c in conversations) == 231  # docs/RESULTS.md
    assert sum(c.skipped for c in conversations) == 2  # two category 1-4 questions have no evidence
