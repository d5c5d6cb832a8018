"""A long text cut into passages of whole sentences (cranimem_mcp/backends/passages.py), each
passage read by the embedder by itself, and a memory's score lifted by its best passage."""

from __future__ import annotations

import numpy as np
import pytest

from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.backends.passages import SHARE, WORDS, passages, said, scored, sentences

pytestmark = pytest.mark.anyio

ASKED = (
    "I'm looking for some advice on keeping an older dog comfortable through the winter. "
    "He sleeps a lot more than he used to, and he's slower on the stairs in the morning. "
    "Do you think a heated mat would help, or is it better to keep the whole room warm? "
    "I've also read that some supplements can help with stiff joints, but I'm not sure "
    "which ones are safe to give every day, or how long they take to work. He is twelve "
    "now and still loves his walks. "
)
DETAIL = "By the way, I got him an orthopedic memory foam bed from Petco three weeks ago."


def test_a_short_text_is_one_passage():
    assert passages("I live in Lyon. I work at Acme.") == []
    assert passages("") == []


def test_passages_are_whole_sentences_of_at_most_forty_words_in_order():
    text = " ".join(f"Sentence number {i} has exactly seven words." for i in range(15))
    cut = passages(text)
    assert len(cut) == 3  # 105 words: 5 sentences (35 words) a passage
    assert all(len(p.split()) <= WORDS for p in cut)
    assert " ".join(cut) == text  # nothing lost, nothing cut mid-sentence, in order
    assert all(p.endswith("words.") for p in cut)


def test_a_sentence_longer_than_a_passage_is_one_by_itself():
    long_one = " ".join(["word"] * 60) + "."
    cut = passages(f"A short start. {long_one} A short end.")
    assert cut == ["A short start.", long_one, "A short end."]


def test_a_passage_is_of_what_is_said_without_the_stamp_or_who_says_it():
    """The memory's own vector reads a turn's stamp and speaker, or a note's label; its
    passages read what is said (a stamp's date words in the first passage only dilute it)."""
    assert said("[7:55 pm on 9 June, 2023] Caroline: Yeah, I'm lucky.") == "Yeah, I'm lucky."
    assert said("[2023/05/28 (Sun) 21:28] user: I'm looking for a bed.") == "I'm looking for a bed."
    assert said("Meeting notes: Tom owns the release.") == "Tom owns the release."
    assert said("I went to the store: apples, pears.") == "I went to the store: apples, pears."
    turn = "[2023/05/28 (Sun) 21:28] user: " + ASKED + DETAIL
    assert passages(turn) == passages(ASKED + DETAIL)


def test_line_breaks_and_quotes_end_sentences():
    text = 'She said "fine." Then we left!\n- first item\n- second item'
    assert sentences(text) == ['She said "fine."', "Then we left!", "- first item", "- second item"]


async def test_each_passage_of_a_long_text_gets_its_own_vector():
    """A turn of ~110 words fits the model's 256 word pieces: read whole, the detail said in
    passing is a small part of its vector; its passage's own vector is close to a question
    about it. A short text has no further vectors."""
    embedder = OnnxEmbedder()
    long_text = ASKED + DETAIL
    cut = passages(long_text)
    assert len(cut) == 4 and cut[-1].endswith(DETAIL)
    (short_rows, long_rows) = await embedder.embed_windows(["I live in Lyon.", long_text], 8)
    assert short_rows.shape == (1, embedder.dim)
    assert long_rows.shape == (5, embedder.dim)  # its vector, then its four passages
    whole = await embedder.embed([long_text])
    assert np.array_equal(long_rows[0], whole[0])  # the memory's vector is unchanged
    query = (await embedder.embed(["When did I buy the dog bed?"]))[0]
    assert long_rows[4] @ query > long_rows[0] @ query + 0.1
    assert np.allclose(np.linalg.norm(long_rows, axis=1), 1.0, atol=1e-5)


async def test_the_passages_kept_are_the_first_ones_up_to_the_limit():
    embedder = OnnxEmbedder()
    text = " ".join(f"Paragraph {i} talks about topic {i} at some length here." for i in range(60))
    rows = (await embedder.embed_windows([text], 4))[0]
    assert rows.shape == (4, embedder.dim)
    first = passages(text)[0]
    assert np.allclose(rows[1], (await embedder.embed([first]))[0], atol=1e-5)


def test_a_better_passage_lifts_a_memory_by_a_share_of_its_lead_and_a_worse_one_not_at_all():
    assert scored(0.4, 0.8) == pytest.approx(0.4 + SHARE * 0.4)
    assert scored(0.4, 0.3) == pytest.approx(0.4)
    lifted = scored(np.array([0.2, 0.5]), np.array([0.6, 0.1]))
    assert np.allclose(lifted, [0.2 + SHARE * 0.4, 0.5])
    assert 0 < SHARE < 1  # a passage never counts for the whole memory
