"""The secrets guard in the engine: no credential reaches a file under the data directory, a
log line, the trash, the journal, a recall or a model, pinned or not (canary tests)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio
CANARIES = json.loads((Path(__file__).parent / "data" / "secret_canaries.json").read_text())
SECRETS = CANARIES["secrets"]


def leaks(secret: str, text: str) -> bool:
    """Whether ``text`` holds ``secret``; an all-digit secret ("4921") only as a number of its
    own, not inside a float's digits (a result's scores: seen in CI) or a hex id."""
    if secret.isdigit():
        return re.search(rf"(?<![0-9a-f.]){secret}(?![0-9a-f])", text) is not None
    return secret in text


def _values() -> list[str]:
    return [v for c in SECRETS for v in c["secret"]]


# Short values (a PIN, a CVV) occur by chance in binary pages, in memory ids (m_...4921...)
# and in scores (0.8264): those are searched as whole tokens in text, not as bytes.
SHORT = 6


def _mentions(text: str, values: list[str]) -> list[str]:
    return [v for v in values if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w])", text)]


def _in_bytes(value: str, data: bytes) -> bool:
    """``value`` in a file; a short one not as a group of a hex id or UUID (LanceDB's
    transaction files are named and keyed by UUIDs: "...-4c21-8305-..." was seen in CI) nor
    inside a float's digits."""
    if len(value) >= SHORT:
        return value.encode() in data
    pattern = rb"(?<![0-9A-Za-z.\-])" + re.escape(value.encode()) + rb"(?![0-9A-Za-z\-])"
    return re.search(pattern, data) is not None


def _files_holding(home: Path, values: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits = [v for v in values if _in_bytes(v, data)]
            if hits:
                found[str(path.relative_to(home))] = hits
    return found


@pytest.mark.slow  # over ~5 s
async def test_no_canary_reaches_disk_logs_trash_or_recall(open_engine, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "data"
    values = _values()
    async with open_engine(home=home) as engine:
        ids = []
        for n, canary in enumerate(SECRETS):
            # pin and tags and goal do not bypass the guard
            pin = n % 2 == 0
            tags = [canary["text"]] if len(canary["text"]) <= 64 else []
            result = await engine.remember(canary["text"], pin=pin, tags=tags)
            if pin:  # the others may be rejected by the gate: fine, as long as nothing leaks
                assert result.status in ("stored", "merged"), (canary["text"], result.reason)
            assert result.redacted, canary["text"]
            for label in canary["labels"]:
                assert label in result.redacted, (canary["text"], result.redacted)
            assert not any(leaks(v, result.model_dump_json()) for v in canary["secret"])
            if result.id:
                ids.append(result.id)
        await engine.set_goal(f"Keep {SECRETS[0]['text']}", "other")
        recalled = await engine.recall("token key password PIN webhook", k=50, max_chars=200_000)
        assert "[redacted" in recalled.context
        text = "\n".join(
            [recalled.context, *(i.content for i in recalled.items), *map(str, recalled.facts)]
        )
        assert not _mentions(text, values)
        await engine.consolidate()
        live = [r.id for r in await engine.episodic.scope_rows("default", ("longterm",))]
        assert live
        await engine.forget(ids=live[: len(live) // 2])  # into the trash (replay trashed some)
        await engine.wait_idle()
        rows = await engine.episodic.scope_rows(None, None)  # every tier, the trash included
        stored = "\n".join(
            str(getattr(r, k))
            for r in rows
            for k in ("content", "tags", "goal", "source", "gate_reason")
        )
        assert not _mentions(stored, values)
    assert not _files_holding(home, [v for v in values if len(v) >= SHORT])
    texts = [p.read_text(errors="replace") for p in home.rglob("*.json")] + [
        p.read_text(errors="replace") for p in (home / "graph").rglob("*") if p.is_file()
    ]
    assert not _mentions("\n".join(texts), values)  # state, goals, the graph and its journal
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert not _mentions(logged, values)


async def test_reject_mode_stores_nothing(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home, gating={"secrets": "reject"}) as engine:
        canary = SECRETS[0]
        result = await engine.remember(canary["text"], pin=True)
        assert result.status == "rejected" and result.gate == "secrets"
        assert canary["labels"][0] in result.reason
        assert not any(v in result.reason for v in canary["secret"])
        assert await engine.episodic.scope_rows(None, None) == []
    assert not _files_holding(home, _values())


async def test_a_redacted_memory_keeps_what_matters(open_engine):
    async with open_engine() as engine:
        token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        result = await engine.remember(f"The CI uses the user's GitHub token {token}.")
        assert result.status == "stored"
        (row,) = await engine.episodic.get([result.id])
        assert token not in row.content
        assert "[redacted GitHub token]" in row.content
        assert "CI" in row.content


async def test_a_placeholder_becomes_no_fact(open_engine):
    """ "My card number is [redacted card number]" once gave (card number, is_a, redacted card
    number); the graph holds no placeholder, the memory still says what it was."""
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        result = await engine.remember("My card number is 4111 1111 1111 1111.", pin=True)
        assert result.redacted == ["card number"]
        assert (await engine.consolidate()).promoted == 1
        trig, _ = await engine.graph.export_trig()
        assert "redacted" not in trig.lower() and "memory" in trig.lower()


async def test_clean_text_is_stored_unchanged(open_engine):
    async with open_engine() as engine:
        for item in CANARIES["clean"][:20]:
            result = await engine.remember(item["text"], pin=True)
            assert result.redacted == []
            (row,) = await engine.episodic.get([result.id])
            assert row.content == item["text"].strip() or row.content == item["text"]
