"""The heuristic tagger: the gate's model (paper B.1) when no LLM answers.

A real fallback, not a stub. It scores importance from specificity cues (numbers, dates,
proper nouns, first-person preferences, constraints and plans), surprise as novelty against
the scope's memories, and emotion from a small lexicon; its second look keeps first-person
and directive statements that a bare cosine gate would lose.
"""

from __future__ import annotations

import re

from cranimem_mcp.extraction import linkage
from cranimem_mcp.extraction.extractor import DATE, FIRST_PERSON, proper_spans
from cranimem_mcp.models import Judgement, Tagging, Utility

# --- lexical cues -------------------------------------------------------------------------

_PREFERENCE = re.compile(
    r"\b(prefer|prefers|like|likes|love|loves|hate|hates|dislike|dislikes|favou?rite|"
    r"rather|enjoy|enjoys|can't stand)\b",
    re.I,
)
_CONSTRAINT = re.compile(
    r"\b(allergic|allergy|intoleran\w*|vegetarian|vegan|halal|kosher|can't|cannot|"
    r"can not|don't|do not|never|must|mustn't|need|needs|require|requires|avoid|only|"
    r"no more than|at most|at least|budget|wheelchair|deadline)\b",
    re.I,
)
_PLAN = re.compile(
    r"\b(plan|plans|planning|going to|gonna|will|intend|want|wants|schedule|scheduled|"
    r"book|booked|trip|meeting|appointment|moving|moved|move)\b",
    re.I,
)
_DIRECTIVE = re.compile(
    r"^\s*(please|remember|always|never|don't|do not|make sure|note that|from now on|call me|"
    r"use|avoid|keep)\b",
    re.I,
)
_GOAL_CHANGE = re.compile(
    r"\b(new goal|let's switch|switch to|instead|change of plans?|from now on)\b", re.I
)
_PERSONAL_FACT = re.compile(
    r"\b(i|my|we|our)\b.{0,40}\b(live|lives|work|works|am|is|was|have|has|use|uses|born|"
    r"birthday|moved|name)\b",
    re.I,
)
_SMALL_TALK = re.compile(
    r"\b(lol|lmao|haha+|hehe|hi|hello|hey|thanks|thank you|ok|okay|cool|nice|wow|meme|"
    r"weather|bye|good morning|good night)\b",
    re.I,
)
_NUMBER = re.compile(r"\b\d+([.,:]\d+)?(st|nd|rd|th|%|am|pm)?\b", re.I)
_EMOTION_WORDS = {
    "love": 0.6,
    "hate": 0.7,
    "afraid": 0.7,
    "scared": 0.7,
    "fear": 0.6,
    "angry": 0.7,
    "furious": 0.8,
    "happy": 0.5,
    "sad": 0.6,
    "excited": 0.6,
    "worried": 0.6,
    "anxious": 0.6,
    "stressed": 0.6,
    "upset": 0.6,
    "thrilled": 0.6,
    "terrified": 0.8,
    "allergic": 0.5,
    "allergy": 0.5,
    "hurt": 0.6,
    "pain": 0.6,
    "died": 0.8,
    "death": 0.8,
    "sick": 0.5,
    "ill": 0.5,
    "urgent": 0.5,
    "important": 0.4,
    "please": 0.2,
    "never": 0.3,
    "wonderful": 0.4,
    "terrible": 0.6,
    "awful": 0.6,
    "disappointed": 0.6,
    "grateful": 0.4,
    "miss": 0.4,
    "hilarious": 0.3,
    "lovely": 0.3,
    "proud": 0.5,
    "wedding": 0.5,
    "birthday": 0.4,
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*|\d[\d.,:]*")


# Facts about the user the parse can state ("I relocated to Helsinki in 2019", "Tyrell Corp
# hired me"): a durable relation with the user as its subject.
_PERSONAL_PREDICATES = {"lives_in", "works_at", "studies_at", "born_in", "prefers", "likes",
                        "dislikes", "allergic_to", "speaks", "uses", "owns", "married_to",
                        "member_of", "is_a", "has_age", "plays"}  # fmt: skip


def _states_a_personal_fact(text: str) -> bool:
    for rel in linkage.quick(text).relations:
        predicate = rel.predicate.removeprefix("not_")
        if rel.subject == "User" and (
            predicate in _PERSONAL_PREDICATES or predicate.startswith("has_")
        ):
            return True
    return False


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


# --- tagger -------------------------------------------------------------------------------


class HeuristicTagger:
    """Goal-aware utility tags and the gate's second look, without an LLM."""

    name = "heuristic"

    async def judge(self, content: str, goal: str) -> Judgement:
        text = content.strip()
        first_person = bool(FIRST_PERSON.search(text))
        if _GOAL_CHANGE.search(text) and first_person:
            return Judgement(keep=True, kind="goal_change", reason="the user changes the goal")
        if first_person and _CONSTRAINT.search(text):
            return Judgement(keep=True, kind="constraint", reason="a first-person constraint")
        if first_person and _PREFERENCE.search(text):
            return Judgement(keep=True, kind="preference", reason="a first-person preference")
        if first_person and _PLAN.search(text):
            return Judgement(keep=True, kind="plan", reason="a first-person plan")
        if _DIRECTIVE.search(text) and len(_WORD.findall(text)) >= 3:
            return Judgement(keep=True, kind="command", reason="a directive to the assistant")
        if _PERSONAL_FACT.search(text) or _states_a_personal_fact(text):
            return Judgement(keep=True, kind="fact", reason="a first-person fact about the user")
        return Judgement(keep=False, kind="noise", reason="off-goal and not about the user")

    async def tag(self, content: str, goal: str, novelty: float) -> Tagging:
        utility = Utility.of(importance(content, goal), _clamp(novelty), emotion(content))
        return Tagging(utility=utility, tagged_by=self.name)


def importance(content: str, goal: str = "") -> float:
    """Specificity: concrete user constraints and facts score high, small talk low."""
    words = _WORD.findall(content)
    score = 0.2
    first_person = bool(FIRST_PERSON.search(content))
    if first_person and (_CONSTRAINT.search(content) or _PREFERENCE.search(content)):
        score += 0.35
    elif first_person and (_PLAN.search(content) or _PERSONAL_FACT.search(content)):
        score += 0.25
    elif _DIRECTIVE.search(content):
        score += 0.25
    if DATE.search(content) or _NUMBER.search(content):
        score += 0.15
    proper = len(proper_spans(content))
    score += min(0.3, 0.12 * proper)
    if len(words) >= 8:
        score += 0.1
    goal_words = {w.lower() for w in _WORD.findall(goal) if len(w) > 3}
    if goal_words and goal_words & {w.lower() for w in words}:
        score += 0.1
    if _SMALL_TALK.search(content) and len(words) < 12:
        score -= 0.3
    if len(words) < 3:
        score -= 0.15
    return _clamp(score)


def emotion(content: str) -> float:
    words = [w.lower().strip("'’") for w in _WORD.findall(content)]
    hits = sorted((_EMOTION_WORDS[w] for w in words if w in _EMOTION_WORDS), reverse=True)
    score = 0.1 + (hits[0] if hits else 0.0) + 0.1 * len(hits[1:3])
    score += 0.1 * min(2, content.count("!"))
    return _clamp(score)
