"""``eval longmemeval``: the protocol's reading of an instance, turn- and session-level recall@k
computed by hand on a scripted memory, the BM25 baseline's scores by hand, and the command
end to end on a synthetic instance written here in the data README's layout (the real
LongMemEval dev file stays outside the checkout)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cranimem_mcp.eval import metrics
from cranimem_mcp.eval.bm25 import BM25
from cranimem_mcp.eval.longmemeval import (
    CATEGORIES,
    Instance,
    load_instances,
    memory_text,
    run_instance,
    summarise,
)
from cranimem_mcp.eval.report import longmemeval_table
from cranimem_mcp.eval.through_mcp import Recalled
from cranimem_mcp.models import MAX_CONTENT

DEV = Path(__file__).parent.parent.parent / "shared" / "data" / "longmemeval_s_dev40.json"

FILLER, DOCTOR, BIKE = "2023/05/20 (Sat) 09:00", "2023/05/21 (Sun) 11:54", "2023/06/02 (Fri) 18:30"
INSTANCE = {
    "id": "mini-lme",
    "sessions": [
        {"id": "sharegpt_filler_1", "orig_index": 0, "date": FILLER, "turns": [
            {"id": "D1:1", "speaker": "user", "text": "Can you suggest a recipe for banana bread?"},
            {"id": "D1:2", "speaker": "assistant",
             "text": "Mash three ripe bananas, mix in flour, sugar and butter, bake an hour."},
            {"id": "D1:3", "speaker": "user", "text": "Thanks, that sounds great. "},
            {"id": "D1:4", "speaker": "assistant", "text": "Enjoy your baking!"},
        ]},
        {"id": "answer_doctor_1", "orig_index": 1, "date": DOCTOR, "turns": [
            {"id": "D2:1", "speaker": "user",
             "text": "I just got back from my dermatologist, Dr. Patel, about a rash."},
            {"id": "D2:2", "speaker": "assistant", "text": "I hope the rash clears up soon."},
            {"id": "D2:3", "speaker": "user", "text": "She prescribed a cream twice a day."},
            {"id": "D2:4", "speaker": "assistant", "text": "Apply it thinly, keep it dry."},
        ]},
        {"id": "answer_bike_2", "orig_index": 2, "date": BIKE, "turns": [
            {"id": "D3:1", "speaker": "user", "text": "Today I bought a blue Trek road bike."},
            {"id": "D3:2", "speaker": "assistant", "text": "A road bike suits long rides."},
            {"id": "D3:3", "speaker": "user", "text": "I saw Dr. Patel again for a follow-up."},
            {"id": "D3:4", "speaker": "assistant", "text": "Good that you followed up."},
        ]},
    ],
    "questions": [
        {"question_id": "q-doctor", "question": "How many times did I see Dr. Patel?",
         "answer": "twice", "evidence": ["D2:1", "D3:3"], "category": "multi-session",
         "question_date": "2023/06/10 (Sat) 10:00", "abstention": False,
         "evidence_sessions": ["answer_doctor_1", "answer_bike_2"]},
        # Two answer sessions, one turn marked: the session without a marked turn still counts
        # (as in the dev file's first instance).
        {"question_id": "q-bike", "question": "Did I buy my bike before or after the rash?",
         "answer": "after", "evidence": ["D3:1"], "category": "temporal-reasoning",
         "question_date": "2023/06/10 (Sat) 10:00", "abstention": False,
         "evidence_sessions": ["answer_bike_2", "answer_doctor_1"]},
        {"question_id": "q-cat_abs", "question": "What is my cat's name?", "answer": "unknown",
         "evidence": [], "category": "single-session-user",
         "question_date": "2023/06/10 (Sat) 10:00", "abstention": True, "evidence_sessions": []},
    ],
}  # fmt: skip


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "lme_mini.json"
    path.write_text(json.dumps([INSTANCE]), encoding="utf-8")
    return path


def test_the_protocol_reads_turns_sessions_and_questions(data: Path) -> None:
    (inst,) = load_instances(data)
    assert inst.id == "mini-lme" and len(inst.turns) == 12
    assert inst.turns[4].text == (
        "[2023/05/21 (Sun) 11:54] user: I just got back from my dermatologist, Dr. Patel, about "
        "a rash."
    )
    assert inst.turns[4].session == "answer_doctor_1"
    assert inst.turns[2].text.endswith("sounds great.")  # stripped, as the engine stores it
    # the abstention question has no evidence turn: skipped, not scored
    assert [q.id for q in inst.questions] == ["q-doctor", "q-bike"] and inst.skipped == 1
    assert inst.questions[1].evidence == ("D3:1",)
    assert inst.questions[1].sessions == ("answer_bike_2", "answer_doctor_1")
    assert load_instances(data, limit=0) == [] and load_instances(data, per_type=0) == []
    assert load_instances(data, per_type=1) == [inst]
    assert len(memory_text(BIKE, "assistant", "x" * 40_000)) == MAX_CONTENT


def test_session_ranks_take_the_best_rank_of_any_turn_of_the_session() -> None:
    found = ["[d1] user: a", "[d2] user: b", "[d1] assistant: c", "[d3] user: d"]
    sessions = [["[d1] user: z", "[d1] assistant: c"], ["[d2] user: b"], ["[d9] user: q"]]
    assert metrics.session_ranks(found, sessions) == [3, 2, None]
    assert metrics.recall_at_k(metrics.session_ranks(found, sessions), 2) == 1 / 3
    assert metrics.session_ranks([], [["x"]]) == [None]


class ScriptedMemory:
    """A memory whose recalls are fixed in advance: (question, k) -> turn ids returned."""

    def __init__(self, inst: Instance, plan: dict[tuple[int, int], list[str]]) -> None:
        texts = inst.texts()
        self._plan = {key: [texts[t] for t in ids] for key, ids in plan.items()}
        self._index = {q.text: i for i, q in enumerate(inst.questions)}
        self.written: list[str] = []
        self.settled = False

    async def remember(self, text: str) -> str:
        self.written.append(text)
        return "rejected" if "sounds great" in text else "stored"

    async def settle(self) -> None:
        self.settled = True

    async def recall(self, query: str, k: int) -> Recalled:
        return Recalled(self._plan[(self._index[query], k)][:k], 2.5)


@pytest.mark.anyio
async def test_turn_and_session_recall_match_a_hand_computation(data: Path) -> None:
    (inst,) = load_instances(data)
    plan = {
        # q-doctor (D2:1, D3:3; sessions doctor, bike). At 5: no evidence turn, but a turn of
        # each evidence session (D2:2 second, D3:2 fourth). At 10: D2:1 first, D3:3 seventh.
        (0, 5): ["D1:1", "D2:2", "D1:2", "D3:2", "D1:4"],
        (0, 10): ["D2:1", "D1:1", "D1:2", "D1:3", "D1:4", "D3:4", "D3:3"],
        # q-bike (D3:1; sessions bike, doctor). At 5: only the doctor session. At 10: D3:1
        # tenth, the bike session ninth (D3:2), the doctor session first.
        (1, 5): ["D2:1", "D2:3", "D1:1"],
        (1, 10): ["D2:1", "D2:3", "D1:1", "D1:2", "D1:3", "D1:4", "D2:2", "D2:4", "D3:2", "D3:1"],
    }
    memory = ScriptedMemory(inst, plan)
    timings: dict[str, list[float]] = {
        "recall_took_ms": [], "recall_wall_ms": [], "remember_ms": [],
    }  # fmt: skip
    writes: Counter[str] = Counter()
    rows = await run_instance(memory, inst, (5, 10), timings, writes)
    assert memory.settled and memory.written == [t.text for t in inst.turns]
    assert [(r["ranks"], r["session_ranks"]) for r in rows] == [
        ({"5": [None, None], "10": [1, 7]}, {"5": [2, 4], "10": [1, 6]}),
        ({"5": [None], "10": [10]}, {"5": [None, 1], "10": [9, 1]}),
    ]
    assert [(r["recall@5"], r["recall@10"]) for r in rows] == [(0.0, 1.0), (0.0, 1.0)]
    assert [(r["session_recall@5"], r["session_recall@10"]) for r in rows] == [
        (1.0, 1.0),
        (0.5, 1.0),
    ]
    s = summarise(rows, (5, 10), timings, writes, 3.0)
    cats = s["categories"]
    assert list(cats)[:3] == ["multi-session", "temporal-reasoning", "knowledge-update"]
    assert cats["multi-session"] == {
        "questions": 1, "recall@5": 0.0, "recall@10": 1.0,
        "session_recall@5": 1.0, "session_recall@10": 1.0,
    }  # fmt: skip
    assert cats["temporal-reasoning"]["session_recall@5"] == 0.5
    assert cats["knowledge-update"]["questions"] == 0
    assert cats["knowledge-update"]["recall@5"] is None
    # overall: the mean over questions; the first five of the recall of 10 hold D2:1 of
    # q-doctor's two turns and neither q-bike turn, and one of the two sessions of each
    assert s["overall"] == {
        "recall@5": 0.0, "recall@10": 1.0, "session_recall@5": 0.75, "session_recall@10": 1.0,
        "recall@5_of_10": 0.25, "session_recall@5_of_10": 0.5,
    }  # fmt: skip
    assert s["writes"] == {"calls": 12, "rejected": 1, "stored": 11}
    assert s["evidence_rejected"] == 0.0
    assert s["recall_took_ms_p50"] == 2.5 and len(timings["remember_ms"]) == 12
    table = longmemeval_table({"config": {"ks": [5, 10]}, "systems": {"scripted": s}})
    assert "| scripted | turn | 0.000 / 1.000 |" in table
    assert "| scripted | session | 1.000 / 1.000 | 0.500 / 1.000 |" in table


def test_bm25_scores_as_the_okapi_formula() -> None:
    index = BM25()
    for text in ("the cat sat", "the dog sat on the mat", "cats and dogs", "the cat"):
        index.add(text)
    # "cat": documents 0 and 3 (not "cats": no stemming). N = 4, n = 2, avgdl = 14 / 4
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    expected = {
        i: idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length / 3.5)) for i, length in ((0, 3), (3, 2))
    }
    assert index.scores("cat") == pytest.approx(expected)
    assert [i for i, _ in index.top("cat", 5)] == [3, 0]  # the shorter text first
    # "sat mat": the text holding both words first; a text sharing no word is never returned
    assert [i for i, _ in index.top("sat mat", 10)] == [1, 0]
    assert index.top("sat mat", 1)[0][0] == 1
    assert index.top("zebra", 3) == [] and BM25().top("cat", 3) == []


@pytest.mark.slow  # spawns the CLI (which loads the engine) and a `serve` for the MCP run
def test_cli_runs_the_three_systems_and_mcp_recalls_as_the_engine(
    tmp_path: Path, data: Path
) -> None:
    from conftest import server_env

    out = tmp_path / "out" / "lme.json"
    cmd = [sys.executable, "-m", "cranimem_mcp.cli", "eval", "longmemeval", "--data", str(data),
           "--json", str(out), "--plot", str(tmp_path / "lme.png"), "--through-mcp"]  # fmt: skip
    done = subprocess.run(cmd, env=server_env(tmp_path / "home"), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert list(doc["systems"]) == ["cranimem", "vanilla", "bm25", "cranimem-mcp"]
    assert doc["config"]["questions"] == 2 and doc["config"]["questions_skipped"] == 1
    assert doc["config"]["max_chars"] == 200_000
    for name, s in doc["systems"].items():
        assert s["categories"]["multi-session"]["questions"] == 1, name
        assert len(s["categories"]) == 6
        assert {"recall@10", "session_recall@5", "session_recall@5_of_10"} <= set(s["overall"])
        assert s["writes"]["calls"] == 12 and s["seconds"] >= 0
    for name in ("vanilla", "bm25"):
        assert doc["systems"][name]["writes"] == {"calls": 12, "stored": 12}
    assert doc["systems"]["cranimem-mcp"]["questions_differing_from_cranimem"] == 0
    rows = doc["questions"]
    assert len(rows) == 8
    for row in rows:
        for k in ("5", "10"):
            assert row[f"recall@{k}"] == metrics.recall_at_k(row["ranks"][k], int(k))
            assert row[f"session_recall@{k}"] == metrics.recall_at_k(
                row["session_ranks"][k], int(k)
            )
    # BM25 finds both Dr. Patel turns: they alone hold the question's rarest words
    doctor = next(r for r in rows if r["system"] == "bm25" and r["question_id"] == "q-doctor")
    assert sorted(doctor["ranks"]["10"]) == [1, 2]
    # stdout is the table and nothing else: a header, a rule, two rows per system
    lines = done.stdout.splitlines()
    assert lines[0].startswith("| system | level |") and len(lines) == 2 + 2 * 4
    if (tmp_path / "lme.png").exists():  # matplotlib (the eval extra) is installed
        assert (tmp_path / "lme.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_a_system_that_has_no_conversation_memory(data: Path) -> None:
    from cranimem_mcp.cli.main import main

    assert main(["eval", "longmemeval", "--data", str(data), "--system", "no-gate"]) == 2


@pytest.mark.skipif(not DEV.exists(), reason="../shared/data/longmemeval_s_dev40.json is not here")
def test_the_dev_file_gives_the_documented_counts() -> None:
    instances = load_instances(DEV)
    questions = [q for i in instances for q in i.questions]
    assert len(instances) == 40 and sum(i.skipped for i in instances) == 0
    assert sum(len(i.turns) for i in instances) == 19_795
    assert sum(len(q.evidence) for q in questions) == 70
    assert Counter(q.category for q in questions) == {
        "multi-session": 11, "temporal-reasoning": 11, "knowledge-update": 6,
        "single-session-user": 5, "single-session-assistant": 4, "single-session-preference": 3,
    }  # fmt: skip
    # the stratified subset: the first two of each type, in the file's order
    subset = load_instances(DEV, per_type=2)
    assert Counter(i.questions[0].category for i in subset) == dict.fromkeys(CATEGORIES, 2)
    assert [i.id for i in subset] == [i.id for i in instances if i in subset]
    # every evidence turn lies in one of its question's evidence sessions
    for inst in instances:
        session_of = {t.id: t.session for t in inst.turns}
        for q in inst.questions:
            assert {session_of[e] for e in q.evidence} <= set(q.sessions)
