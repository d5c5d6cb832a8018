"""The replica proof (tests/replicas.py): its checks fed broken inputs, each must fire; and
its short form, three replicas over moto and Oxigraph with one SIGKILLed mid-consolidation
(slow: it starts processes; the long form is scripts/replica_proof.py)."""

from __future__ import annotations

from datetime import datetime

import pytest
from replicas import (
    OXIGRAPH,
    Report,
    Write,
    find_lost,
    overlaps,
    promoted_twice,
    promotions,
    prove,
    runs_of,
    stored_twice,
)


def log(*lines: str) -> str:
    return "\n".join(f"2026-12-02 {line}" for line in lines)


A = log(
    "00:00:01,000 INFO cranimem_mcp.replay.consolidator: consolidation started by a:1:x "
    "(timer, token 1)",
    "00:00:02,000 INFO cranimem_mcp.replay.consolidator: promoted by a:1:x: m_1 m_2",
    "00:00:03,000 INFO cranimem_mcp.replay.consolidator: consolidation finished by a:1:x "
    "(timer, token 1)",
)
B_AFTER = log(
    "00:00:04,000 INFO cranimem_mcp.replay.consolidator: consolidation started by b:2:y "
    "(every_n_writes, "
    "token 2)",
    "00:00:05,000 INFO cranimem_mcp.replay.consolidator: promoted by b:2:y: m_3",
    "00:00:06,000 INFO cranimem_mcp.replay.consolidator: consolidation finished by b:2:y "
    "(every_n_writes, "
    "token 2)",
)


def checked(check, *args) -> list[str]:
    report = Report(2, 1, 1)
    check(*args, report)
    return report.violations


def test_runs_one_after_the_other_with_growing_tokens_pass():
    assert checked(overlaps, runs_of(0, A) + runs_of(1, B_AFTER)) == []


def test_a_run_that_starts_while_another_runs_is_an_overlap():
    during = B_AFTER.replace("00:00:04,000", "00:00:02,500")
    (violation,) = checked(overlaps, runs_of(0, A) + runs_of(1, during))
    assert violation.startswith("overlap: replica 1's run started at")


def test_runs_without_a_token_or_with_a_smaller_one_are_violations():
    local = A.replace("token 1", "token None")
    assert "without a token" in checked(overlaps, runs_of(0, local))[0]
    older = B_AFTER.replace("token 2", "token 1")
    assert "token 1 (replica 1" in checked(overlaps, runs_of(0, A) + runs_of(1, older))[0]


def test_a_run_that_never_ends_is_a_violation_unless_its_replica_was_killed():
    cut = "\n".join(A.splitlines()[:2])
    assert "never ended" in checked(overlaps, runs_of(0, cut))[0]
    (run,) = runs_of(0, cut, killed_at=datetime(2026, 12, 2, 0, 0, 2, 500000))
    assert (run.ended, checked(overlaps, [run])) == ("killed", [])


def test_a_memory_in_two_promotions_is_promoted_twice():
    again = B_AFTER.replace("promoted by b:2:y: m_3", "promoted by b:2:y: m_3 m_2")
    assert checked(promoted_twice, promotions({0: A, 1: B_AFTER})) == []
    (violation,) = checked(promoted_twice, promotions({0: A, 1: again}))
    assert violation.startswith("promoted twice: m_2")


ROWS = [
    {"id": "m_1", "scope": "s", "tier": "longterm", "content": "keeps prfac0w0000, prfac0w0000",
     "content_hash": "h1"},
    {"id": "m_2", "scope": "s", "tier": "buffer", "content": "keeps prfac0w0001",
     "content_hash": "h2"},
]  # fmt: skip


def test_an_acknowledged_token_missing_from_the_table_or_another_replica_is_lost():
    writes = [Write(0, "prfac0w0000", 0, True), Write(0, "prfac0w0001", 1, True)]
    listed = {0: {"prfac0w0000", "prfac0w0001"}, 1: {"prfac0w0000", "prfac0w0001"}}
    assert checked(find_lost, writes, ROWS, listed) == []
    dropped = [*writes, Write(1, "prfac1w0000", 0, True), Write(1, "prfac1w0001", 0, False)]
    assert checked(find_lost, dropped, ROWS, listed) == [
        "lost: prfac1w0000 (client 1, replica 0) not in the table",
        "lost: prfac1w0000 (written to replica 0) not listed by replica 1",
    ]  # the unacknowledged prfac1w0001 is no loss
    only_own = {0: {"prfac0w0000"}, 1: {"prfac0w0000", "prfac0w0001"}}
    (violation,) = checked(find_lost, writes, ROWS, only_own)
    assert violation == "lost: prfac0w0001 (written to replica 1) not listed by replica 0"


def test_a_token_in_two_rows_is_stored_twice():
    assert checked(stored_twice, ROWS) == []  # twice in one row's text is one memory
    copy = {**ROWS[0], "id": "m_9"}
    assert set(checked(stored_twice, [*ROWS, copy])) == {
        "stored twice: prfac0w0000 in 2 rows",
        "stored twice: content h1 in 2 live rows of s",
    }


@pytest.mark.slow
@pytest.mark.anyio
async def test_three_replicas_lose_nothing_and_consolidate_one_at_a_time_through_a_kill(
    tmp_path,
):
    """The short form of scripts/replica_proof.py: three `serve --transport http` processes
    over moto (its own process) and Oxigraph, three MCP clients writing at once, then one
    replica SIGKILLed mid-consolidation while they write on."""
    pytest.importorskip("moto")
    if not OXIGRAPH or not __import__("pathlib").Path(OXIGRAPH).exists():
        pytest.skip("the oxigraph server is not installed (the 'sparql' extra)")
    report = await prove(tmp_path, replicas=3, clients=3, writes=6, kill=True, recalls=6)
    assert report.violations == [], report.text()
    assert "killed" in report.figures, report.text()
