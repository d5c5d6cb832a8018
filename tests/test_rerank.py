"""Re-scoring of the episodic candidates: neighbouring turns and named speakers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cranimem_mcp.buffer.records import Hit
from cranimem_mcp.buffer.working_set import Entry
from cranimem_mcp.conversation.rerank import Rerank, rerank, speaker
from cranimem_mcp.conversation.speakers import focus, named

DAY1 = datetime(2023, 5, 8, tzinfo=UTC)


def _entry(turn: int, content: str, when: datetime = DAY1) -> Entry:
    return Entry(f"m{turn}", "buffer", content, f"h{turn}", when, when, turn)


def _hit(entry: Entry, fused: float) -> Hit:
    return Hit(entry, similarity=fused, fused=fused)


def test_a_transcript_turn_names_its_speaker_after_the_stamp():
    assert speaker("[1:56 pm on 8 May, 2023] Caroline: I went to the group.") == "Caroline"
    assert speaker("[8 May, 2023] Mary Ann: hello") == "Mary Ann"
    assert speaker("I moved to Oslo: it was cold") is None  # "I" would be a speaker, not a name
    assert speaker("the plan: move") is None
    # Without a stamp that names a date, a word before a colon is a label, never a speaker.
    assert speaker("Mary Ann: hello") is None
    assert speaker("Note: the backups run nightly.") is None
    assert speaker("[soon] Ann: hello") is None


def test_a_query_names_a_speaker_as_a_whole_word_only():
    known = ["Mel", "Caroline"]
    assert named("What do Mel's kids like?", known) == {"Mel": "Mel"}
    assert named("What did Melanie paint?", known) == {}


def test_a_query_names_a_speaker_by_a_short_name_that_begins_only_theirs():
    known = ["Melanie", "Caroline", "Andrew"]
    assert named("What do Mel's kids like?", known) == {"Melanie": "Mel"}
    assert named("Did Caro and Melanie meet?", known) == {"Caroline": "Caro", "Melanie": "Melanie"}
    # Not a sentence's first word, not a word of two letters, not one that begins two names.
    assert named("And what did Mel say?", known) == {"Melanie": "Mel"}
    assert named("Is it so? And then?", known) == {}
    assert named("What did Ca say?", known) == {}
    assert named("What do Mel's kids like?", ["Melanie", "Melvin"]) == {}
    said = {"Melanie": {"m1", "m2"}, "Caroline": {"m3"}}
    found = focus("How long have Mel and her husband been married?", said)
    assert found is not None
    assert found.names == {"Melanie"}
    assert found.query == "How long have and her husband been married?"
    assert found.turns == {"m1", "m2"}


def test_the_turn_after_a_strong_hit_is_lent_part_of_its_score():
    question = _entry(1, "[8 May, 2023] Ann: How was the camping trip with the kids?")
    reply = _entry(2, "[8 May, 2023] Bob: They loved the forest.")
    far = _entry(7, "[8 May, 2023] Bob: The weather was nice.")
    ranked = rerank(
        [_hit(question, 0.9), _hit(far, 0.2)],
        [question, reply, far],
        set(),
        Rerank(neighbour_weight=0.3),
    )
    assert [e.id for e, _s in ranked] == ["m1", "m2", "m7"]  # the reply joins, above far
    assert ranked[1][1] > 0.2


def test_a_turn_of_another_session_is_not_a_neighbour():
    hit = _entry(1, "[8 May, 2023] Ann: How was the camping trip?")
    next_session = _entry(2, "[8 May, 2023] Bob: Hi again!", DAY1 + timedelta(days=3))
    ranked = rerank([_hit(hit, 0.9)], [hit, next_session], set(), Rerank(neighbour_weight=0.3))
    assert [e.id for e, _s in ranked] == ["m1"]


def test_the_speaker_the_query_names_is_lifted_over_one_who_only_addresses_them():
    addressed = _entry(1, "[8 May, 2023] Bob: Thanks, Ann! Great kids.")
    spoken = _entry(5, "[8 May, 2023] Ann: We went hiking, they loved it.")
    hits = [_hit(addressed, 0.6), _hit(spoken, 0.55)]
    off = rerank(hits, [addressed, spoken], {"Ann"}, Rerank())
    on = rerank(hits, [addressed, spoken], {"Ann"}, Rerank(speaker_boost=0.1))
    assert [e.id for e, _s in off] == ["m1", "m5"]
    assert [e.id for e, _s in on] == ["m5", "m1"]
