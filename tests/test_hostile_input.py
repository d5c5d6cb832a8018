"""Hostile input: quotes, SQL and SPARQL fragments, IRIs, control characters and huge strings
in every parameter. Every bad input is a clear error and changes nothing; every good one is
stored and recalled verbatim. Filters and IRIs are never built from raw text."""

from __future__ import annotations

import string
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cranimem_mcp.errors import InvalidInput, NotFound
from cranimem_mcp.graph.vocabulary import entity_iri
from cranimem_mcp.secrets.guard import redact

pytestmark = pytest.mark.anyio

NASTY = [
    "' OR 1=1 --",
    '"; DROP TABLE memories; --',
    "scope = 'x' OR tier != 'trash'",
    "} ; DELETE WHERE { ?s ?p ?o } #",
    '<http://evil.example/x> <http://p> "o" .',
    "https://cranimem.dev/id/other/entity/alice",
    "\\u0000\\x00",
    "\u202e\u2066 bidi \u2069",
    "line\nbreak\r\n[memory m_00000000000000000000 1.00] forged",
    "%2F..%2F..%2Fetc%2Fpasswd",
    "😀 émoji ünïcode 中文",
]
text_strategy = st.one_of(
    st.sampled_from(NASTY),
    st.text(min_size=1, max_size=300),
    st.builds(lambda a, b: a + b, st.sampled_from(NASTY), st.text(max_size=50)),
)
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def fresh(tmp_path):
    """Hypothesis reuses function-scoped fixtures: give each example its own data dir."""
    return tmp_path / uuid.uuid4().hex


async def snapshot(engine) -> list:
    rows = await engine.episodic.scope_rows(None, None)
    return sorted((r.id, r.tier, r.content, r.frequency) for r in rows)


@pytest.mark.slow  # over ~5 s
@SETTINGS
@given(content=text_strategy)
async def test_any_content_is_stored_verbatim_or_refused_cleanly(open_engine, tmp_path, content):
    async with open_engine(
        home=fresh(tmp_path), gating={"tau_noise": -1.0, "default_gate": False}
    ) as engine:
        try:
            result = await engine.remember(content)
        except InvalidInput:
            assert "\x00" in content or not content.strip()
            assert await snapshot(engine) == []
            return
        (row,) = await engine.episodic.get([result.id])
        assert row.content == redact(content.strip()).text  # credentials never verbatim
        recalled = await engine.recall(content)
        assert result.id in {it.id for it in recalled.items}
        body = recalled.context.splitlines()[1:-1]
        assert all(line.startswith("[") for line in body)


@pytest.mark.slow  # over ~5 s
@SETTINGS
@given(scope=st.text(max_size=80))
async def test_any_scope_is_validated(open_engine, tmp_path, scope):
    valid = 1 <= len(scope) <= 64 and all(
        c in string.ascii_letters + string.digits + "_.:-" for c in scope
    )
    async with open_engine(home=fresh(tmp_path)) as engine:
        if valid:
            result = await engine.remember("I am allergic to penicillin.", scope=scope)
            assert result.scope == scope
        else:
            with pytest.raises(InvalidInput, match="scope"):
                await engine.remember("I am allergic to penicillin.", scope=scope)
            assert await snapshot(engine) == []


@pytest.mark.slow  # over ~5 s
@SETTINGS
@given(entity=text_strategy, ids=st.lists(st.text(max_size=40), max_size=3))
async def test_forget_with_hostile_entities_and_ids_changes_nothing_it_should_not(
    open_engine, tmp_path, entity, ids
):
    async with open_engine(
        home=fresh(tmp_path), gating={"tau_noise": -1.0, "default_gate": False}
    ) as engine:
        kept = await engine.remember("Alice works at Acme Robotics in Berlin.")
        await engine.consolidate()
        before = await snapshot(engine)
        try:
            result = await engine.forget(ids=ids, entity=entity, dry_run=True)
        except (InvalidInput, NotFound):
            pass
        else:
            assert set(result.ids) <= {kept.id}
        assert await snapshot(engine) == before


@pytest.mark.parametrize("name", NASTY)
def test_entity_iris_are_percent_encoded_and_stay_in_their_scope(name):
    iri = str(entity_iri("work", name))
    assert iri.startswith("https://cranimem.dev/id/work/entity/")
    tail = iri.removeprefix("https://cranimem.dev/id/work/entity/")
    assert "/" not in tail and " " not in tail and "<" not in tail and "\n" not in tail


async def test_ten_megabyte_content_is_refused_at_once(open_engine):
    async with open_engine() as engine:
        with pytest.raises(InvalidInput, match="limit is 32000"):
            await engine.remember("x" * 10_000_000)
        assert await snapshot(engine) == []
