"""The heuristic extractor: the linkage engine's model (paper B.4) when no LLM answers.

A real fallback, not a stub. It finds proper-noun spans, dates and the common personal-fact
patterns (lives in, works at, prefers, is allergic to, uses), and relates entities that
co-occur in a sentence by the verb phrase between them. :func:`canonical_name` is the merge
key of an entity everywhere (graph nodes, replay's entity counts, forget by entity).
"""

from __future__ import annotations

import re

from .models import Entity, Extraction, Relation

# Shared with the tagger (cranimem_mcp.heuristics).
FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us)\b", re.I)
MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
DATE = re.compile(
    rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})(?:\s+\d{{4}})?|"
    rf"(?:in|on|by|until|since)\s+(?:{MONTHS})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+\d{{4}})?|"
    rf"(?:19|20)\d{{2}})\b"
)

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


def proper_spans(sentence: str) -> list[tuple[int, int, str]]:
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
    if DATE.fullmatch(name) or re.fullmatch(rf"(?:{MONTHS})", name):
        return "Date"
    if words and (words[-1] in _ORG_SUFFIX or words[0] in _ORG_SUFFIX):
        return "Organization"
    if words and (set(words) & _EVENT_WORDS):
        return "Event"
    prev = before.lower().split()[-3:]
    if prev and prev[-1] in {"use", "uses", "using", "with"} and not FIRST_PERSON.search(name):
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
        for m in DATE.finditer(sentence):
            date = re.sub(r"^(in|on|by|until|since)\s+", "", m.group(), flags=re.I)
            start = m.end() - len(date)
            add_entity(date, "Date")
            found.append((start, m.end(), date))
        for start, end, name in proper_spans(sentence):
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
