"""Speaker-centred recall: a query naming a speaker of a conversation searches without the
name, the speaker's own turns first. Real stores, the real MiniLM, through a real MCP client
where the behaviour is the user's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from conftest import connected

from cranimem_mcp.buffer.working_set import Entry, ScopeSet
from cranimem_mcp.conversation import speakers
from cranimem_mcp.conversation.ranking import ConversationRanker
from cranimem_mcp.conversation.rerank import Rerank
from cranimem_mcp.conversation.transcript import speaker
from cranimem_mcp.models import Fact, RecallItem
from cranimem_mcp.recall.context import render
from cranimem_mcp.recall.ranking import HybridRanker

pytestmark = pytest.mark.anyio

KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}
# These tests isolate the speaker focus and the ranking's order: each turn keeps its own
# vector. (Embedded with the turn before it, Ann's "Thanks! My kids went to a football camp"
# takes on Bob's "I wish I could relax like you do" and ranks first: tests/test_threads.py.)
OWN_VECTORS = {"thread_turns": False}
WHEN = datetime(2023, 5, 8, tzinfo=UTC)
STAMP = "[1:56 pm on 8 May, 2023]"
# Bob names Ann in every turn; Ann speaks of herself in the first person.
CONVERSATION = [
    f"{STAMP} Bob: Ann, how do you relax after a long week at work?",
    f"{STAMP} Ann: I paint watercolours by the lake, it calms me down.",
    f"{STAMP} Bob: Ann, relaxing sounds great, I wish I could relax like you do.",
    f"{STAMP} Ann: Thanks! My kids went to a football camp this summer.",
    f"{STAMP} Bob: Ann, do you ever relax with your kids on weekends?",
    f"{STAMP} Ann: We mostly go hiking in the hills together.",
]


def _entry(n: int, content: str, tier: str = "buffer") -> Entry:
    return Entry(f"m{n}", tier, content, f"h{n}", WHEN, WHEN, n)


def _mirror(entries: list[Entry]) -> ScopeSet:
    mirrored = ScopeSet(dim=2)
    for e in entries:
        mirrored.put(e, [1.0, 0.0])
    return mirrored


def test_a_name_heading_too_few_memories_is_not_a_speaker():
    entries = [_entry(i, text) for i, text in enumerate(CONVERSATION)]
    entries.append(_entry(9, "Arthur's Magazine: Arthur's Magazine was a literary periodical."))
    mirrored = _mirror(entries)
    found = speakers.focus("What does Ann's family do to relax?", mirrored.speakers(3))
    assert found is not None
    assert found.names == {"Ann"}
    assert found.query == "What does family do to relax?"
    assert found.turns == {"m1", "m3", "m5"}
    # A paragraph ("Title: text") has no speaker: its store is searched as it is.
    assert speakers.focus("When did Arthur's Magazine start?", mirrored.speakers(1)) is None
    # Nor is a conversation one speaker's: Ann's turns alone are no conversation.
    anns = _mirror([_entry(i, t) for i, t in enumerate(CONVERSATION) if "Ann:" in t])
    assert speakers.focus("What does Ann's family do to relax?", anns.speakers(1)) is None


def test_a_query_of_nothing_but_a_name_is_searched_as_it_is():
    said = _mirror([_entry(i, text) for i, text in enumerate(CONVERSATION)]).speakers(3)
    assert speakers.focus("Ann?", said) is None
    assert speakers.focus("What about Annabel?", said) is None  # a whole word only


def test_the_working_set_keeps_each_speakers_live_turns_as_memories_come_and_go():
    mirrored = _mirror([_entry(i, text) for i, text in enumerate(CONVERSATION)])
    assert mirrored.speakers(3) == {"Ann": {"m1", "m3", "m5"}, "Bob": {"m0", "m2", "m4"}}
    mirrored.remove("m4")  # forgotten for good
    mirrored.put(_entry(2, CONVERSATION[2], tier="trash"), [1.0, 0.0])  # to the trash
    mirrored.put(_entry(3, CONVERSATION[3], tier="longterm"), [1.0, 0.0])  # promoted
    assert mirrored.speakers(1) == {"Ann": {"m1", "m3", "m5"}, "Bob": {"m0"}}
    assert mirrored.speakers(3) == {"Ann": {"m1", "m3", "m5"}}
    mirrored.put(_entry(7, f"{STAMP} Bob: Ann, relaxing again?", tier="buffer"), [1.0, 0.0])
    assert mirrored.speakers(1)["Bob"] == {"m0", "m7"}


@pytest.mark.parametrize("working_set_rows", [100_000, 0])  # mirrored, and LanceDB's query
async def test_the_store_names_the_same_speakers_mirrored_or_not(open_engine, working_set_rows):
    episodic = {"working_set_rows": working_set_rows}
    async with open_engine(gating=KEEP_ALL, episodic=episodic) as engine:
        stored = []
        for text in CONVERSATION:
            stored.append((await engine.remember(text, "chat")).id)
        await engine.forget([stored[0]], scope="chat")
        said = await engine.episodic.speakers("chat", 3)
        assert said == {"Ann": frozenset(stored[1::2])}
        assert (await engine.episodic.speakers("chat", 2))["Bob"] == frozenset(stored[2::2])


@pytest.mark.parametrize("working_set_rows", [100_000, 0])  # mirrored, and LanceDB's query
async def test_the_hybrid_search_among_given_ids_returns_only_them(open_engine, working_set_rows):
    episodic = {"working_set_rows": working_set_rows}
    async with open_engine(gating=KEEP_ALL, episodic=episodic) as engine:
        for text in CONVERSATION:
            await engine.remember(text, "chat")
        entries = await engine.episodic.live_rows("chat", ("buffer", "longterm"))
        anns = {e.id for e in entries if speaker(e.content) == "Ann"}
        vec = (await engine.embedder.embed(["relax after work"]))[0]
        hits = await engine.episodic.hybrid(
            "chat", vec, "relax after work", ("buffer", "longterm"), 10, among=anns
        )
        assert {h.entry.id for h in hits} == anns
        everyone = await engine.episodic.hybrid(
            "chat", vec, "relax after work", ("buffer", "longterm"), 10
        )
        assert everyone[0].entry.id not in anns  # Bob's "relax" turns lead without it


@pytest.mark.parametrize("speaker_turns", [3, 0])
async def test_a_question_about_a_speaker_finds_what_they_said_first(open_engine, speaker_turns):
    retrieval = {"speaker_turns": speaker_turns}
    async with connected(
        open_engine, gating=KEEP_ALL, retrieval=retrieval, episodic=OWN_VECTORS
    ) as (client, _e):
        for text in CONVERSATION:
            result = await client.call_tool("remember", {"content": text, "scope": "chat"})
            assert not result.is_error, result.content
        result = await client.call_tool(
            "recall", {"query": "How does Ann relax?", "scope": "chat", "k": 1}
        )
        assert not result.is_error, result.content
        first = result.structured_content["items"][0]["content"]
        if speaker_turns:  # the default: Ann's own answer, not Bob's questions naming her
            assert first == CONVERSATION[1]
        else:
            assert first != CONVERSATION[1]


async def test_with_its_rules_off_the_conversation_ranker_ranks_as_the_plain_one(open_engine):
    """The engine picks the plain ranker when no conversation rule is on; the conversation
    ranker with every rule off ranks as it does (the seam changes no ranking)."""
    async with open_engine(gating=KEEP_ALL, episodic=OWN_VECTORS) as engine:
        for text in [*CONVERSATION, "Note: the backups run nightly at 02:00."]:
            await engine.remember(text, scope="chat")
        plain = HybridRanker(engine.episodic)
        off = ConversationRanker(engine.episodic, 0, Rerank(), Rerank())
        query = "How does Ann relax with her kids?"
        (qvec,) = await engine.embedder.embed([query])
        for tiers in [("buffer", "longterm"), ("buffer", "longterm", "trash")]:
            for as_of in [None, WHEN]:
                args = ("chat", query, qvec, 4, as_of, tiers)
                assert await off.focus("chat", query, tiers) is None
                ranked = await plain.rank(*args, None)
                assert len(ranked) == 4
                assert ranked == await off.rank(*args, None)


async def _write_conversation(client) -> None:
    for text in CONVERSATION:
        result = await client.call_tool("remember", {"content": text, "scope": "chat"})
        assert not result.is_error, result.content


async def test_a_recall_lists_its_memories_in_the_order_it_ranked_them(open_engine):
    """Ann's own answer ranks first (as at k=1 above); Bob's turns beside it join the
    ranking after it though their cosine to the query is higher ("relax" is in each). The
    items and the context block list them in the ranking's order, each with the score that
    ranked it: no item shows more than the one above it (before, Bob's turns showed their
    higher cosine below Ann's answer)."""
    async with connected(open_engine, gating=KEEP_ALL, episodic=OWN_VECTORS) as (client, _e):
        await _write_conversation(client)
        result = await client.call_tool(
            "recall", {"query": "How does Ann relax?", "scope": "chat", "k": 6}
        )
        assert not result.is_error, result.content
        items = result.structured_content["items"]
        assert items[0]["content"] == CONVERSATION[1]
        assert {it["content"] for it in items[1:]} >= {CONVERSATION[0], CONVERSATION[2]}
        scores = [it["score"] for it in items]
        assert scores == sorted(scores, reverse=True)
        context = result.structured_content["context"]
        lines = [ln for ln in context.splitlines() if ln.startswith("[") and "[fact" not in ln]
        # The block leaves out what scores under retrieval.min_score (0.1) or a fifth of the
        # best (context_ratio); the items keep it. What it shows is the items' head, in their
        # order, with their scores.
        least = max(0.1, 0.2 * scores[0])
        shown = [(it["id"], f"{it['score']:.2f}") for it in items if it["score"] >= least]
        assert shown
        assert [tuple(ln.split()[1:3]) for ln in lines] == shown


def test_the_context_block_keeps_the_ranking_facts_after_it_outdated_memories_last():
    def item(n: int, score: float, superseded: bool = False) -> RecallItem:
        return RecallItem(
            id=f"m{n}", path="recent", content=f"memory {n}", score=score, created_at=WHEN,
            tier="buffer", superseded=superseded,
        )  # fmt: skip

    def fact(obj: str, score: float, sources: list[str]) -> Fact:
        return Fact(subject="Ann", predicate="likes", object=obj, support=1, sources=sources,
                    score=score)  # fmt: skip

    items = [item(1, 0.2), item(2, 0.6, superseded=True), item(3, 0.5), item(4, 0.4)]
    # A fact bears on the query when a memory read states it (tea), or it scores at least the
    # best current memory (jazz); golf does neither and is left out.
    found = [fact("tea", 0.3, ["m3"]), fact("jazz", 0.7, []), fact("golf", 0.45, ["m9"])]
    context, kept, facts = render(items, found, 4000)
    order = [ln.split()[1] for ln in context.splitlines() if ln.startswith("[recent")]
    assert order == ["m1", "m3", "m4", "m2"]
    assert [it.id for it in kept] == ["m1", "m3", "m4", "m2"]
    assert [f.object for f in facts] == ["jazz", "tea"]
    assert context.index("jazz") < context.index("tea") < context.index("memory 2")
    assert context.index("memory 4") < context.index("jazz")
    assert "golf" not in context


async def test_a_recall_across_scopes_keeps_each_scopes_ranking(open_engine):
    """The ranking of the test above, with another scope in the recall: the scopes merge by
    score (each scope's ranking is by score), Ann's answer still before Bob's turns beside
    it."""
    async with connected(open_engine, gating=KEEP_ALL, episodic=OWN_VECTORS) as (client, _e):
        await _write_conversation(client)
        other = "I relax with yoga and a long walk on Sundays."
        result = await client.call_tool("remember", {"content": other, "scope": "notes"})
        assert not result.is_error, result.content
        result = await client.call_tool(
            "recall", {"query": "How does Ann relax?", "k": 6, "all_scopes": True}
        )
        assert not result.is_error, result.content
        items = result.structured_content["items"]
        assert {it["scope"] for it in items} == {"chat", "notes"}
        chat = [it for it in items if it["scope"] == "chat"]
        assert chat[0]["content"] == CONVERSATION[1]
        scores = [it["score"] for it in items]
        assert scores == sorted(scores, reverse=True)


async def test_a_query_naming_a_speaker_is_embedded_with_its_search_in_one_call(
    open_engine, minilm, monkeypatch
):
    """The query (for the graph path and the trash notice) and the query without the name
    (for the episodic search) go to the model together: one call, not two (~8.5 against
    ~12 ms a recall here: docs/RESULTS.md)."""
    async with open_engine(gating=KEEP_ALL, episodic=OWN_VECTORS) as engine:
        for text in CONVERSATION:
            await engine.remember(text, scope="chat")
        calls: list[list[str]] = []
        model = minilm.embed_sync
        monkeypatch.setattr(minilm, "embed_sync", lambda texts: calls.append(texts) or model(texts))
        result = await engine.recall("How does Ann unwind?", scope="chat", k=1)
        assert calls == [["How does Ann unwind?", "How does unwind?"]]
        assert result.items[0].content == CONVERSATION[1]
