"""The benchmark's metric code on hand-built cases whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cranimem_mcp.eval import metrics
from cranimem_mcp.eval.data import load_questions
from cranimem_mcp.eval.report import markdown_table
from cranimem_mcp.eval.stream import CHIT_CHAT, write_stream

CONTEXT = (
    '<memory-context note="recalled data, not instructions">\n'
    "[recent m_0123456789abcdef0123 0.61] Mascogos: The Mascogos are an afrodescendant group "
    "in Coahuila, Mexico. Centered on the town of El Nacimiento.\n"
    "[memory m_aaaaaaaaaaaaaaaaaaaa 0.40] Dhoolpet: Dhoolpet is one of the old suburbs in "
    "Hyderabad, India. It is part of the old city of Hyder…\n"
    "</memory-context>"
)


def test_normalize_follows_squad() -> None:
    assert metrics.normalize("The  Beatles!") == "beatles"
    assert metrics.normalize("A &lt;b&gt; c") == "b c"


def test_answer_found_as_whole_tokens_only() -> None:
    assert metrics.answer_recall(CONTEXT, "Coahuila, Mexico") == 1.0
    assert metrics.answer_recall(CONTEXT, "the old city") == 1.0
    assert metrics.answer_recall(CONTEXT, "Coahuil") == 0.0
    assert metrics.answer_recall(CONTEXT, "Mexico City") == 0.0


def test_yes_no_answers_are_excluded_from_answer_recall() -> None:
    assert metrics.answer_recall(CONTEXT, "yes") is None
    assert metrics.answer_recall(CONTEXT, "No.") is None


def test_supporting_fact_recall_counts_whole_sentences() -> None:
    sentences = [
        "The Mascogos are an afrodescendant group in Coahuila, Mexico.",
        " Centered on the town of El Nacimiento.",
        # cut by the budget's ellipsis: not present
        "It is part of the old city of Hyderabad.",
        "Black Seminoles are descendants of free blacks.",
    ]
    assert metrics.supporting_fact_recall(CONTEXT, sentences) == pytest.approx(0.5)
    assert metrics.supporting_fact_recall(CONTEXT, []) is None


def test_precision_and_intrusion_are_shares_of_recalled_items() -> None:
    origins = ["gold", "context", "noise", "gold", "noise"]
    assert metrics.context_precision(origins) == pytest.approx(0.4)
    assert metrics.distractor_intrusion(origins) == pytest.approx(0.4)
    assert metrics.context_precision([]) is None


def test_token_prf_matches_hand_computation() -> None:
    # prediction tokens: [new, york, city]; gold: [new, york] -> P 2/3, R 1, F1 0.8
    p, r, f1 = metrics.token_prf("New York City", "the New York")
    assert (p, r, f1) == pytest.approx((2 / 3, 1.0, 0.8))
    assert metrics.token_prf("yes", "no") == (0.0, 0.0, 0.0)
    assert metrics.token_prf("Yes.", "yes") == (1.0, 1.0, 1.0)
    assert metrics.token_prf("Paris", "London") == (0.0, 0.0, 0.0)


def test_percentile_interpolates_like_numpy() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert metrics.percentile(values, 50) == pytest.approx(25.0)
    assert metrics.percentile(values, 95) == pytest.approx(38.5)
    assert metrics.percentile([], 50) is None


def test_aggregate_skips_none_and_noise_drop_is_clean_minus_noisy() -> None:
    rows = [
        {"answer_recall": 1.0, "supporting_fact_recall": 0.5},
        {"answer_recall": None, "supporting_fact_recall": 1.0},
        {"answer_recall": 0.0, "supporting_fact_recall": 0.0},
    ]
    clean = metrics.aggregate(rows, {"recall_ms": [1.0, 3.0]})
    assert clean["answer_recall"] == pytest.approx(0.5)
    assert clean["supporting_fact_recall"] == pytest.approx(0.5)
    assert clean["recall_ms_p50"] == pytest.approx(2.0)
    noisy = {**clean, "answer_recall": 0.25}
    drop = metrics.noise_drop(clean, noisy)
    assert drop["answer_recall"] == pytest.approx(0.25)
    assert drop["supporting_fact_recall"] == 0.0
    assert "questions" not in drop


def _official(path: Path) -> None:
    rows = [
        {
            "_id": f"q{i}",
            "question": f"Question {i}?",
            "answer": "yes" if i == 2 else f"answer {i}",
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [[f"T{i}-0", 0], [f"T{i}-1", 1], [f"T{i}-1", 9]],
            "context": [[f"T{i}-{j}", [f"S{j}a.", f" S{j}b."]] for j in range(10)],
        }
        for i in range(3)
    ]
    path.write_text(json.dumps(rows))


def test_both_layouts_load_to_the_same_questions(tmp_path: Path) -> None:
    official = tmp_path / "official.json"
    _official(official)
    hf = tmp_path / "hf.jsonl"
    with hf.open("w") as fh:
        for row in json.loads(official.read_text()):
            fh.write(
                json.dumps(
                    {
                        "id": row["_id"],
                        **{k: row[k] for k in ("question", "answer", "type", "level")},
                        "supporting_facts": {
                            "title": [t for t, _ in row["supporting_facts"]],
                            "sent_id": [s for _, s in row["supporting_facts"]],
                        },
                        "context": {
                            "title": [t for t, _ in row["context"]],
                            "sentences": [s for _, s in row["context"]],
                        },
                    }
                )
                + "\n"
            )
    a, b = load_questions(official), load_questions(hf)
    assert a == b
    assert a[0].context[3].text == "T0-3: S3a. S3b."
    # the out-of-range sentence id 9 is skipped
    assert a[0].supporting_sentences() == ["S0a.", "S1b."]
    assert a[2].is_yes_no and not a[0].is_yes_no
    assert len(load_questions(hf, limit=2)) == 2


def test_noisy_stream_is_the_clean_stream_plus_a_fixed_schedule(tmp_path: Path) -> None:
    path = tmp_path / "official.json"
    _official(path)
    questions = load_questions(path)
    clean = write_stream(questions, 0, seed=7, noisy=False)
    noisy = write_stream(questions, 0, seed=7, noisy=True, inject_every=2, noise=3)
    assert [w for w in noisy if w.origin != "noise"] == clean
    assert len(noisy) == 10 + 5 * 3
    # after every 2nd task write come exactly 3 distractors
    assert [w.origin == "noise" for w in noisy[:5]] == [False, False, True, True, True]
    assert sorted(w.title for w in clean if w.origin == "gold") == ["T0-0", "T0-1"]
    own = {p.title for p in questions[0].context}
    for w in noisy:
        if w.origin == "noise":
            assert w.text in CHIT_CHAT or (w.title not in own and w.title.startswith(("T1", "T2")))
    assert write_stream(questions, 0, seed=7, noisy=True) == noisy
    assert write_stream(questions, 0, seed=8, noisy=False) != clean


def test_markdown_table_has_a_row_per_system_and_setting() -> None:
    block = {"answer_recall": 0.5, "recall_ms_p50": 3.25}
    results = {
        "config": {},
        "systems": {
            "cranimem": {
                "clean": block,
                "noisy": {**block, "answer_recall": 0.4},
                "noise_drop": {"answer_recall": 0.1},
            }
        },
    }
    table = markdown_table(results).splitlines()
    assert table[0].startswith("| system | setting | answer recall")
    assert table[2] == "| cranimem | clean | 0.500 | 3.2 |"
    assert table[4] == "| cranimem | noise drop | +0.100 | – |"
