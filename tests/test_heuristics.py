"""The heuristic tagger and extractor are a real fallback, not stubs."""

from __future__ import annotations

import pytest

from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.gate.tagger import HeuristicTagger
from cranimem_mcp.naming import canonical_name

pytestmark = pytest.mark.anyio
GOAL = "Help the user plan their trip to Japan in May"


async def test_concrete_constraint_ranks_above_small_talk():
    tagger = HeuristicTagger()
    constraint = await tagger.tag("I am allergic to shellfish, so no seafood please.", GOAL, 0.8)
    small_talk = await tagger.tag("haha nice, thanks!", GOAL, 0.8)
    assert constraint.utility.base > small_talk.utility.base + 0.1
    assert constraint.utility.importance > small_talk.utility.importance
    assert constraint.tagged_by == "heuristic"


async def test_surprise_is_novelty():
    tagger = HeuristicTagger()
    novel = await tagger.tag("I moved to Lisbon in March.", GOAL, 0.9)
    stale = await tagger.tag("I moved to Lisbon in March.", GOAL, 0.1)
    assert novel.utility.surprise == pytest.approx(0.9)
    assert stale.utility.surprise == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("text", "keep", "kind"),
    [
        ("I am allergic to shellfish.", True, "constraint"),
        ("I prefer window seats on trains.", True, "preference"),
        ("We are planning to visit Kyoto next spring.", True, "plan"),
        ("Never book red-eye flights for me.", True, "constraint"),
        ("Stock markets fell sharply after the announcement.", False, "noise"),
        ("lol that meme is hilarious", False, "noise"),
    ],
)
async def test_second_look_judgement(text, keep, kind):
    judgement = await HeuristicTagger().judge(text, GOAL)
    assert (judgement.keep, judgement.kind) == (keep, kind)


async def test_extractor_finds_typed_entities_and_personal_fact_relations():
    (x,) = await HeuristicExtractor().extract(["I live in Paris and work at Acme Robotics."])
    types = {canonical_name(e.name): e.type for e in x.entities}
    assert types["paris"] == "Location"
    assert types["acme robotics"] == "Organization"
    triples = {(r.subject, r.predicate, r.object) for r in x.relations}
    assert ("User", "lives_in", "Paris") in triples
    assert ("User", "works_at", "Acme Robotics") in triples


async def test_extractor_relates_co_occurring_entities_by_their_verb_phrase():
    (x,) = await HeuristicExtractor().extract(["Acme Robotics is based in Berlin."])
    assert [(r.subject, r.predicate, r.object) for r in x.relations] == [
        ("Acme Robotics", "based_in", "Berlin")
    ]


def test_canonical_names_merge_case_and_whitespace():
    assert canonical_name("Osaka") == canonical_name(" osaka ") == canonical_name("OSAKA")
