"""Heuristic tagger and extractor: the pipeline's models when no LLM answers.

They are a real fallback, not a stub. The tagger scores importance from specificity cues
(numbers, dates, proper nouns, first-person preferences, constraints and plans), surprise as
novelty against the scope's memories, and emotion from a small lexicon; its second look keeps
first-person and directive statements that a bare cosine gate would lose. The extractor finds
proper-noun spans, dates and the common personal-fact patterns (lives in, works at, prefers,
is allergic to, uses), and relates entities that co-occur in a sentence by the verb phrase
between them.
"""

from __future__ import annotations

import re

from .models import Entity, Extraction, Judgement, Relation, Tagging, Utility

# --- shared lexical cues ------------------------------------------------------------------

_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us)\b", re.I)
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
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DATE = re.compile(
    rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})(?:\s+\d{{4}})?|"
    rf"(?:in|on|by|until|since)\s+(?:{_MONTHS})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+\d{{4}})?|"
    rf"(?:19|20)\d{{2}})\b"
)
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


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


# --- tagger -------------------------------------------------------------------------------


class HeuristicTagger:
    """Goal-aware utility tags and the gate's second look, without an LLM."""

    name = "heuristic"

    async def judge(self, content: str, goal: str) -> Judgement:
        text = content.strip()
        first_person = bool(_FIRST_PERSON.search(text))
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
        if _PERSONAL_FACT.search(text):
            return Judgement(keep=True, kind="fact", reason="a first-person fact about the user")
        return Judgement(keep=False, kind="noise", reason="off-goal and not about the user")

    async def tag(self, content: str, goal: str, novelty: float) -> Tagging:
        utility = Utility.of(importance(content, goal), _clamp(novelty), emotion(content))
        return Tagging(utility=utility, tagged_by=self.name)


def importance(content: str, goal: str = "") -> float:
    """Specificity: concrete user constraints and facts score high, small talk low."""
    words = _WORD.findall(content)
    score = 0.2
    first_person = bool(_FIRST_PERSON.search(content))
    if first_person and (_CONSTRAINT.search(content) or _PREFERENCE.search(content)):
        score += 0.35
    elif first_person and (_PLAN.search(content) or _PERSONAL_FACT.search(content)):
        score += 0.25
    elif _DIRECTIVE.search(content):
        score += 0.25
    if _DATE.search(content) or _NUMBER.search(content):
        score += 0.15
    proper = len(_proper_spans(content))
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


# --- extractor ----------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_SPAN_WORD = re.compile(r"[A-Z][\w'’&\-]*(?:\.\d+)?|[A-Z]{2,}\d*")
_CONNECTORS = {"of", "de", "la", "van", "von", "der", "del", "da", "du", "y", "&"}
_STOP_INITIAL = {
    "The",
    "A",
    "An",
    "I",
    "I'm",
    "I've",
    "I'd",
    "I'll",
    "My",
    "We",
    "Our",
    "It",
    "Its",
    "This",
    "That",
    "These",
    "Those",
    "He",
    "She",
    "They",
    "His",
    "Her",
    "Their",
    "You",
    "Your",
    "Please",
    "Never",
    "Always",
    "Book",
    "Remember",
    "Note",
    "Make",
    "Use",
    "Avoid",
    "Keep",
    "In",
    "On",
    "At",
    "For",
    "From",
    "To",
    "With",
    "And",
    "But",
    "Or",
    "If",
    "When",
    "Where",
    "What",
    "Who",
    "Why",
    "How",
    "Which",
    "Yes",
    "No",
    "Also",
    "Then",
    "So",
    "After",
    "Before",
    "There",
    "Here",
    "Today",
    "Tomorrow",
    "Yesterday",
    "Unit",
    "Each",
    "Every",
    "All",
    "Some",
    "Let's",
    "Don't",
    "Do",
    "Does",
    "Did",
    "Is",
    "Are",
    "Was",
    "Were",
    "Be",
    "Can",
    "Could",
    "Should",
    "Would",
    "Will",
    "Mix",
    "Add",
    "Tell",
    "Call",
    "Send",
    "Buy",
    "Ok",
    "Okay",
    "Hi",
    "Hello",
    "Hey",
    "Thanks",
    "As",
    "By",
    "Since",
    "Until",
    "Not",
    "Now",
    "Just",
    "One",
    "Two",
}
_ORG_SUFFIX = {
    "inc",
    "inc.",
    "corp",
    "corporation",
    "ltd",
    "llc",
    "gmbh",
    "ag",
    "sa",
    "labs",
    "lab",
    "robotics",
    "systems",
    "university",
    "bank",
    "company",
    "co",
    "group",
    "technologies",
    "foundation",
    "institute",
    "college",
    "school",
    "hospital",
    "airlines",
    "studios",
    "press",
    "agency",
    "ministry",
    "council",
    "club",
    "team",
    "fc",
    "records",
    "software",
    "industries",
}
_EVENT_WORDS = {
    "marathon",
    "conference",
    "festival",
    "summit",
    "wedding",
    "meetup",
    "olympics",
    "championship",
    "cup",
    "war",
    "election",
    "concert",
}
_KIN = (
    "partner|wife|husband|sister|brother|mother|father|mom|mum|dad|daughter|son|friend|"
    "colleague|boss|manager|cousin|aunt|uncle|girlfriend|boyfriend|roommate|neighbou?r|"
    "cat|dog|doctor|dentist|teacher"
)
_KIN_RE = re.compile(rf"\b(?i:my)\s+({_KIN})\s+([A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)")
_DETERMINERS = {"the", "a", "an", "also", "now", "currently", "still", "really", "just", "then"}

# Canonical names for the common personal-fact patterns (so supersession works without an LLM).
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:also\s+)?(?:now\s+)?(?:lives?|living|has lived|live)\s+in$"), "lives_in"),
    (re.compile(r"^(?:just\s+)?(?:moved|relocated|move)\s+to$"), "lives_in"),
    (re.compile(r"^(?:is\s+|am\s+)?(?:based|headquartered|located|situated)\s+in$"), "based_in"),
    (re.compile(r"^(?:works?|working|worked)\s+(?:at|for)$"), "works_at"),
    (re.compile(r"^(?:is\s+|am\s+)?employed\s+(?:at|by)$"), "works_at"),
    (re.compile(r"^(?:joined)$"), "works_at"),
    (re.compile(r"^(?:prefers?|preferred)$"), "prefers"),
    (re.compile(r"^(?:is\s+|am\s+|'m\s+)?allergic\s+to$"), "is_allergic_to"),
    (re.compile(r"^(?:uses?|using)$"), "uses"),
    (re.compile(r"^(?:was\s+)?born\s+in$"), "born_in"),
    (re.compile(r"^(?:is\s+)?(?:in|part of)$"), "located_in"),
]
# First-person patterns whose object may be a lower-case noun phrase ("tea", "shellfish").
_FIRST_PERSON_FACTS = re.compile(
    r"\b(?:i|we|and)\s+(?:am\s+|'m\s+)?(?:also\s+|now\s+|still\s+|just\s+)?"
    r"(live in|lives in|moved to|work at|work for|prefer|am allergic to|'m allergic to|"
    r"allergic to|use|was born in)\s+"
    r"(?:(?:the|a|an|my)\s+)?"
    r"([\w'’\-]+(?:\s+(?!(?:and|or|over|but|because|with|as|for|in|at|on|to|from|since|"
    r"these|this|that|those|now|nowadays|lately|today|tonight|anymore|instead|too|again|"
    r"every|so|then|when|very|really|though|actually)\b)"
    r"[\w'’\-]+){0,3})",
    re.I,
)


def canonical_name(name: str) -> str:
    """The merge key of an entity: 'Osaka', 'osaka' and ' Osaka ' are one node."""
    return " ".join(name.replace("’", "'").split()).strip(" .,;:!?\"'()[]{}").casefold()


def _proper_spans(sentence: str) -> list[tuple[int, int, str]]:
    """Runs of capitalised words (with connectors like 'of'); a lone sentence-initial word
    counts only when it is not a common function word."""
    tokens = list(re.finditer(r"[\w'’&\-]+(?:\.\d+)*", sentence))
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i].group()
        if _SPAN_WORD.fullmatch(tok):
            j = i
            while j + 1 < len(tokens):
                nxt = tokens[j + 1].group()
                gap = sentence[tokens[j].end() : tokens[j + 1].start()]
                if gap.strip():
                    break
                if _SPAN_WORD.fullmatch(nxt) or re.fullmatch(r"\d[\d.]*", nxt):
                    j += 1
                elif (
                    nxt in _CONNECTORS
                    and j + 2 < len(tokens)
                    and _SPAN_WORD.fullmatch(tokens[j + 2].group())
                ):
                    j += 2
                else:
                    break
            start, end = tokens[i].start(), tokens[j].end()
            text = sentence[start:end]
            initial = i == 0 or sentence[: tokens[i].start()].strip() in ("", '"', "(")
            if initial and j == i and tok in _STOP_INITIAL:
                pass
            elif initial and tok in _STOP_INITIAL:
                start = tokens[i + 1].start()
                spans.append((start, end, sentence[start:end]))
            else:
                spans.append((start, end, text))
            i = j + 1
        else:
            i += 1
    return [s for s in spans if s[2] not in _STOP_INITIAL]


def _entity_type(name: str, before: str, sentence: str) -> str:
    words = name.lower().split()
    if _DATE.fullmatch(name) or re.fullmatch(rf"(?:{_MONTHS})", name):
        return "Date"
    if words and (words[-1] in _ORG_SUFFIX or words[0] in _ORG_SUFFIX):
        return "Organization"
    if words and (set(words) & _EVENT_WORDS):
        return "Event"
    prev = before.lower().split()[-3:]
    if prev and prev[-1] in {"use", "uses", "using", "with"} and not _FIRST_PERSON.search(name):
        return "Tool"
    if prev and prev[-1] in {"project"}:
        return "Project"
    if prev and prev[-1] in {"at", "for", "joined"} and re.search(r"\bwork", before.lower()):
        return "Organization"
    if prev and prev[-1] in {"in", "to", "from", "near", "visit", "visiting", "of"}:
        return "Location"
    if re.search(rf"\bmy\s+({_KIN})\s*$", before, re.I):
        return "Person"
    if len(words) in (2, 3) and all(w[:1].isalpha() for w in words):
        return "Person"
    after = sentence.lower()
    if re.search(rf"\b{re.escape(name.lower())}\s+(works|lives|said|is a|was a|and i)\b", after):
        return "Person"
    return "Other"


_PRONOUNS = {"i", "we", "you", "he", "she", "they", "me", "my", "our", "your", "his", "her", "its"}


def _predicate(between: str) -> str | None:
    words = [w for w in re.findall(r"[a-z'’]+", between.lower()) if w not in _DETERMINERS]
    phrase = " ".join(words)
    if not words or re.search(r"[,;:()]", between):
        return None
    for pattern, name in _PATTERNS:
        if pattern.match(phrase):
            return name
    # A pronoun between two names means the words belong to another clause ("2012 I work at").
    if len(words) > 4 or _PRONOUNS & set(words) or "and" in words:
        return None
    return "_".join(words)


def extract_one(text: str) -> Extraction:
    entities: dict[str, Entity] = {}
    relations: dict[tuple[str, str, str], Relation] = {}

    def add_entity(name: str, type_: str) -> str:
        key = canonical_name(name)
        if key and (key not in entities or entities[key].type == "Other"):
            entities[key] = Entity(name=name.strip(), type=type_)  # type: ignore[arg-type]
        return entities[key].name if key in entities else name

    def relate(subject: str, predicate: str, obj: str) -> None:
        if canonical_name(subject) == canonical_name(obj) or not predicate:
            return
        relations.setdefault(
            (canonical_name(subject), predicate, canonical_name(obj)),
            Relation(subject=subject, predicate=predicate, object=obj),
        )

    for sentence in _SENTENCE.split(text):
        if not sentence.strip():
            continue
        found: list[tuple[int, int, str]] = []
        for m in _DATE.finditer(sentence):
            date = re.sub(r"^(in|on|by|until|since)\s+", "", m.group(), flags=re.I)
            start = m.end() - len(date)
            add_entity(date, "Date")
            found.append((start, m.end(), date))
        for start, end, name in _proper_spans(sentence):
            if any(s <= start < e or s < end <= e for s, e, _ in found):
                continue
            add_entity(name, _entity_type(name, sentence[:start], sentence))
            found.append((start, end, name))
        user_mentioned = bool(re.search(r"\b(i|i'm|my|me)\b", sentence, re.I))
        for m in _KIN_RE.finditer(sentence):
            person = add_entity(m.group(2), "Person")
            relate("User", f"has_{m.group(1).lower()}", person)
        for m in _FIRST_PERSON_FACTS.finditer(sentence):
            if m.group().lower().startswith("and") and not user_mentioned:
                continue  # "... and work at X" counts only in a first-person sentence
            verb = " ".join(m.group(1).lower().replace("’", "'").split())
            predicate = _predicate(verb.replace("'m ", "").replace("am ", "")) or "related_to"
            obj = m.group(2).strip(" .,;:!?")
            span = next((f for f in found if f[0] == m.start(2)), None)
            obj = span[2] if span else obj
            if predicate == "lives_in":
                type_ = "Location"
            elif predicate == "works_at":
                type_ = "Organization"
            elif predicate == "uses":
                type_ = "Tool"
            else:
                type_ = "Preference"
            obj = add_entity(obj, type_ if not span else entities[canonical_name(obj)].type)
            relate("User", predicate, obj)
            if predicate == "uses":
                rest = sentence[m.end(2) :]
                for extra in re.finditer(r"^\s*(?:,|and)\s+([A-Z][\w'’\-]*)", rest):
                    relate("User", "uses", add_entity(extra.group(1), "Tool"))
        if user_mentioned and relations:
            add_entity("User", "Person")
        found.sort()
        for (_s1, e1, a), (s2, _e2, b) in zip(found, found[1:], strict=False):
            predicate = _predicate(sentence[e1:s2])
            dated = "Date" in (entities[canonical_name(a)].type, entities[canonical_name(b)].type)
            if predicate is not None and not dated:
                relate(a, predicate, b)
            elif s2 - e1 < 120 and not dated:
                # Why not dates: a date is when something happened (the memory's event time),
                # not a thing related to the names around it.
                relate(a, "related_to", b)
    return Extraction(entities=list(entities.values()), relations=list(relations.values()))


class HeuristicExtractor:
    """Proper-noun entities, personal-fact patterns and co-occurrence relations."""

    name = "heuristic"

    async def extract(self, texts: list[str]) -> list[Extraction]:
        return [extract_one(t) for t in texts]
