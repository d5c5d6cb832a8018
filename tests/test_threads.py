"""A conversation's thread: a transcript turn is embedded with the write before it, so an
answer is found by the question it answers. Real stores, the real MiniLM, through a real MCP
client where the behaviour is the user's."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from conftest import connected, make_settings

from cranimem_mcp.cli.doctor import reembed
from cranimem_mcp.conversation import threads, transcript
from cranimem_mcp.engine import MemoryEngine

pytestmark = pytest.mark.anyio

KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}
STAMP = "[1:56 pm on 8 May, 2023]"
LATER = "[7:10 pm on 9 June, 2023]"
CHAT = [
    f"{STAMP} Ann: Hi Bob! Long time no see, how have you been?",
    f"{STAMP} Bob: Hey Ann! Work has been busy, I finally finished the bridge project.",
    f"{STAMP} Ann: What are your plans for the summer?",
    f"{STAMP} Bob: Researching adoption agencies, it's been a dream of mine to have a family.",
    f"{STAMP} Ann: My sister adopted a dog last winter, he is adorable.",
    f"{STAMP} Bob: The heat in the city is far too much for me, I hate July.",
    f"{STAMP} Ann: I plan to repaint the kitchen this weekend.",
]
ANSWER = CHAT[3]
QUESTION = "What are Bob's plans for the summer?"


def test_a_turn_follows_the_write_before_it_in_the_same_session():
    assert transcript.follows(CHAT[2], CHAT[3])
    # Another session (its stamp a month later), a text that is not a turn, a stamp on one
    # side only, a stamp that names no date: no thread.
    assert not transcript.follows(CHAT[2], f"{LATER} Bob: Adoption agencies.")
    assert not transcript.follows("The user is allergic to peanuts.", CHAT[3])
    assert not transcript.follows(CHAT[2], "The user is allergic to peanuts.")
    assert not transcript.follows("Ann: What are your plans?", CHAT[3])
    assert not transcript.follows("[soon] Ann: Plans?", "[soon] Bob: Adoption.")
    # Labelled notes are no turns, however close: "Note:" and "TODO:" speak to nobody.
    assert not transcript.follows("Note: the backups run nightly.", "TODO: check the backups.")
    # The session's length is a setting (retrieval.session_hours): a day apart with 48.
    next_day = "[9:00 am on 9 May, 2023] Bob: Adoption."
    assert not transcript.follows(CHAT[2], next_day)
    assert transcript.follows(CHAT[2], next_day, timedelta(hours=48))
    assert transcript.in_context(CHAT[2], CHAT[3]) == (
        f"{CHAT[2]}\nBob: Researching adoption agencies, it's been a dream of mine to have a "
        "family."
    )


async def test_an_answer_is_recalled_by_the_question_it_answers(open_engine):
    async with connected(open_engine, gating=KEEP_ALL) as (client, _engine):
        for text in CHAT:
            result = await client.call_tool("remember", {"content": text, "scope": "chat"})
            assert result.structured_content["status"] == "stored"
        result = await client.call_tool("recall", {"query": QUESTION, "scope": "chat", "k": 5})
        found = [item["content"] for item in result.structured_content["items"]]
        # Embedded alone, the answer shares no word and little meaning with the question:
        # it is not among the five; with the question it answers, it is among the first two.
        assert ANSWER in found[:2], found


async def test_with_thread_turns_off_every_vector_is_its_own_texts(open_engine):
    async with open_engine(gating=KEEP_ALL, episodic={"thread_turns": False}) as engine:
        ids = [str((await engine.remember(text, scope="chat")).id) for text in CHAT]
        memory = await _stored(engine, ids[3])
        assert memory.follows is None
        assert np.allclose(memory.vector, await _own(engine, ANSWER), atol=1e-6)


@pytest.mark.parametrize(("hours", "threaded"), [(48.0, True), (1.0, False)])
async def test_the_session_a_turn_follows_is_as_long_as_the_setting_says(
    open_engine, hours, threaded
):
    next_day = CHAT[3].replace(STAMP, "[9:00 am on 9 May, 2023]")
    async with open_engine(gating=KEEP_ALL, retrieval={"session_hours": hours}) as engine:
        ids = [str((await engine.remember(t, scope="chat")).id) for t in [*CHAT[:3], next_day]]
        # The stamps a day apart: one session of 48 hours, two of one hour.
        assert ((await _stored(engine, ids[3])).follows == ids[2]) is threaded


async def _own(engine: MemoryEngine, text: str) -> np.ndarray:
    return (await engine.embedder.embed([text]))[0]


async def _stored(engine: MemoryEngine, memory_id: str):
    (memory,) = await engine.episodic.get([memory_id], vectors=True)
    return memory


async def test_a_turn_after_a_rejected_question_carries_it_and_nothing_else_does(open_engine):
    async with open_engine() as engine:  # the default gate
        # Each speaker with a turn kept first: a name is a speaker when it heads memories.
        opening = [f"{STAMP} Ann: I started pottery classes last month, I love them.", CHAT[1]]
        ids = [(await engine.remember(text, scope="chat")).id for text in opening]
        assert None not in ids
        asked = await engine.remember(CHAT[2], scope="chat")
        assert asked.status == "rejected"  # a question alone is not worth keeping
        answer = await engine.remember(ANSWER, scope="chat")
        fact = await engine.remember("The user is allergic to peanuts.", scope="chat")
        memory = await _stored(engine, str(answer.id))
        assert memory.follows == threads.UNKEPT
        context = await _own(engine, transcript.in_context(CHAT[2], ANSWER))
        want = threads.blend(await _own(engine, ANSWER), context)
        assert np.allclose(memory.vector, want, atol=1e-6)
        question = await _own(engine, QUESTION)
        assert float(np.dot(memory.vector, question)) > float(
            np.dot(await _own(engine, ANSWER), question)
        )
        # Bob's first turn: he was no speaker of the scope yet. A fact after a turn.
        assert (await _stored(engine, str(ids[1]))).follows is None
        plain = await _stored(engine, str(fact.id))
        assert plain.follows is None
        assert np.allclose(plain.vector, await _own(engine, plain.content), atol=1e-6)
        # A turn after a kept one names it.
        # A forget in the scope drops the rejected write held for the next turn.
        assert (await engine.remember(CHAT[2], scope="chat")).status == "rejected"
        await engine.forget(ids=[str(fact.id)], scope="chat", hard=True)
        late = await engine.remember(f"{STAMP} Bob: Maybe a trip to Rome in August.", scope="chat")
        assert late.status == "stored"
        assert (await _stored(engine, str(late.id))).follows is None
        reply = await engine.remember(CHAT[4], scope="chat")
        assert reply.status == "stored"
        assert (await _stored(engine, str(reply.id))).follows == late.id
        again = await engine.remember(CHAT[5], scope="chat")
        assert (await _stored(engine, str(again.id))).follows == reply.id


@pytest.mark.parametrize("working_set_rows", [100_000, 0])  # mirrored, and read from the table
async def test_a_hard_forget_embeds_the_turn_that_followed_by_itself(open_engine, working_set_rows):
    rows = {"working_set_rows": working_set_rows}
    async with open_engine(gating=KEEP_ALL, episodic=rows) as engine:
        ids = [str((await engine.remember(text, scope="chat")).id) for text in CHAT]
        assert (await _stored(engine, ids[3])).follows == ids[2]
        await engine.forget(ids=[ids[2]], scope="chat")  # to the trash: restorable
        assert (await _stored(engine, ids[3])).follows == ids[2]
        await engine.forget(ids=[ids[2]], scope="chat", hard=True)
        memory = await _stored(engine, ids[3])
        assert memory.follows is None
        assert np.allclose(memory.vector, await _own(engine, ANSWER), atol=1e-6)
        # A memory gone by another way (another process's forget, the trash's purge): the
        # next turn does not follow it either.
        first = await engine.remember(f"{STAMP} Ann: Blue, I think, or a pale green.", scope="chat")
        second = await engine.remember(f"{STAMP} Bob: Green sounds lovely!", scope="chat")
        assert (await _stored(engine, str(second.id))).follows == first.id
        await engine.episodic.delete([str(second.id)])
        gone = await engine.remember(f"{STAMP} Ann: Green it is, then.", scope="chat")
        assert (await _stored(engine, str(gone.id))).follows is None
        # Nothing held in memory brings the forgotten text back into the next turn.
        await engine.forget(ids=[str(gone.id)], scope="chat", hard=True)
        after = await engine.remember(f"{STAMP} Bob: Good luck with the kitchen!", scope="chat")
        assert (await _stored(engine, str(after.id))).follows is None


async def test_the_trash_purge_embeds_the_turn_that_followed_by_itself(open_engine):
    async with open_engine(gating=KEEP_ALL, consolidation={"trash_retention_days": 0.0}) as engine:
        ids = [
            str((await engine.remember(text, scope="chat", pin=text == ANSWER)).id) for text in CHAT
        ]
        assert (await _stored(engine, ids[3])).follows == ids[2]
        await engine.forget(ids=[ids[2]], scope="chat")
        report = await engine.consolidate(scope="chat")
        assert report.purged >= 1
        assert await engine.episodic.get([ids[2]]) == []
        memory = await _stored(engine, ids[3])
        assert memory.tier == "longterm"
        assert memory.follows is None
        assert np.allclose(memory.vector, await _own(engine, ANSWER), atol=1e-6)


async def test_after_a_restart_a_turn_follows_the_newest_memory(tmp_path, minilm):
    settings = make_settings(tmp_path / "data", gating=KEEP_ALL)
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        ids = [str((await engine.remember(text, scope="chat")).id) for text in CHAT[:3]]
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        answer = await engine.remember(ANSWER, scope="chat")
        assert (await _stored(engine, str(answer.id))).follows == ids[2]


class _Renamed:
    """The same MiniLM under another id: what ``reembed`` needs to have work to do."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.id, self.dim = "test:minilm-again", inner.dim

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await self.inner.embed(texts)


async def test_reembed_embeds_each_turn_with_the_one_it_follows(tmp_path, minilm):
    settings = make_settings(tmp_path / "data", gating=KEEP_ALL)
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        ids = [str((await engine.remember(text, scope="chat")).id) for text in CHAT]
        before = {i: np.asarray((await _stored(engine, i)).vector) for i in ids}
    assert await reembed(settings, _Renamed(minilm)) == (
        "local:all-MiniLM-L6-v2",
        "test:minilm-again",
        len(CHAT),
    )
    async with MemoryEngine(settings, embedder=_Renamed(minilm), background=False) as engine:
        for i in ids:
            memory = await _stored(engine, i)
            assert np.allclose(memory.vector, before[i], atol=1e-5), memory.content
        assert (await _stored(engine, ids[3])).follows == ids[2]
