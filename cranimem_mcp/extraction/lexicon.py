"""The extractor's lexicon: the words the heuristic extractor knows, and the word classes it
tests tokens against.

Two kinds of entry. Surface cues read from the raw text without a parse and shared with the
heuristic tagger (:mod:`cranimem_mcp.gate.tagger`): :data:`FIRST_PERSON`, :data:`DATE` and
:func:`proper_spans`. And the tables the clause readers look words up in: :data:`VERBS` maps
a verb lemma and its preposition to a canonical predicate (any other verb keeps its lemma),
relation nouns ("sister", "employer") name predicates, role predicates type their objects
(:data:`OBJECT_TYPES`), and a few word classes (kin, times, settings, groups, jobs) with the
token tests over them (:func:`is_time`, :func:`kin_of`, ...). Data, no state: extending the
extractor's vocabulary is an edit here only.
"""

from __future__ import annotations

import re
from typing import Any

# --- surface cues, read without a parse -----------------------------------------------------

# Shared with the tagger (cranimem_mcp.gate.tagger).
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
_SPAN_WORD = re.compile(r"[A-Z][\w'’&\-]*(?:\.\d+)?|[A-Z]{2,}\d*")
_CONNECTORS = frozenset(("of de la van von der del da du y &").split())
_STOP_INITIAL = frozenset(
    (
        "The A An I I'm I've I'd I'll My We Our It Its This That These Those He She They His Her "
        "Their You Your Please Never Always Book Remember Note Make Use Avoid Keep In On At For "
        "From To With And But Or If When Where What Who Why How Which Yes No Also Then So After "
        "Before There Here Today Tomorrow Yesterday Unit Each Every All Some Let's Don't Do Does "
        "Did Is Are Was Were Be Can Could Should Would Will Mix Add Tell Call Send Buy Ok Okay Hi "
        "Hello Hey Thanks As By Since Until Not Now Just One Two"
    ).split()
)


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


# --- what words say to the clause readers ------------------------------------------------

# (verb lemma, preposition or None for the direct object) -> canonical predicate.
VERBS: dict[tuple[str, str | None], str] = {
    ("live", "in"): "lives_in",
    ("live", "on"): "lives_in",
    ("reside", "in"): "lives_in",
    ("settle", "in"): "lives_in",
    ("move", "to"): "lives_in",
    ("promote", "to"): "has_job_title",
    ("relocate", "to"): "lives_in",
    ("work", "at"): "works_at",
    ("work", "for"): "works_at",
    ("intern", "at"): "works_at",
    ("study", "at"): "studies_at",
    ("attend", None): "studies_at",
    ("bear", "in"): "born_in",
    ("base", "in"): "based_in",
    ("headquarter", "in"): "based_in",
    ("locate", "in"): "located_in",
    ("situate", "in"): "located_in",
    ("write", "in"): "written_in",
    ("code", "in"): "written_in",
    ("build", "with"): "uses",
    ("marry", "to"): "married_to",
    ("marry", None): "married_to",
    ("speak", None): "speaks",
    ("use", None): "uses",
    ("prefer", None): "prefers",
    ("like", None): "likes",
    ("love", None): "likes",
    ("enjoy", None): "likes",
    ("adore", None): "likes",
    ("dislike", None): "dislikes",
    ("hate", None): "dislikes",
    ("detest", None): "dislikes",
    ("loathe", None): "dislikes",
    ("own", None): "owns",
    ("drive", None): "owns",
    ("manage", None): "manages",
    ("lead", None): "manages",
    ("supervise", None): "manages",
    ("found", None): "founded",
    ("cofound", None): "founded",
    ("co-found", None): "founded",
    ("write", None): "wrote",
    ("direct", None): "directed",
    ("create", None): "created",
    ("play", None): "plays",
    ("play", "for"): "member_of",
    ("start", "at"): "works_at",
    ("begin", "at"): "works_at",
}
# "can't stand X", "is a fan of X", "is a member of X", ...: (noun, preposition) -> predicate
NOUN_PREPS = {
    ("member", "of"): "member_of",
    ("part", "of"): "member_of",
    ("fan", "of"): "likes",
    ("student", "at"): "studies_at",
    ("student", "of"): "studies_at",
    ("employee", "at"): "works_at",
    ("employee", "of"): "works_at",
    ("native", "of"): "born_in",
}
# Adjectives that state what someone is ("I'm vegetarian" is_a vegetarian).
IDENTITY_ADJ = frozenset(
    (
        "vegetarian vegan pescatarian diabetic celiac coeliac pregnant deaf blind colorblind "
        "colourblind epileptic asthmatic left-handed right-handed retired single divorced widowed "
        "autistic dyslexic"
    ).split()
)
# Verbs whose clause is a wish or plan, not a fact ("wants to move to Berlin").
IRREALIS = frozenset(
    ("want plan hope intend try consider wish think dream aim might would could should").split()
)
FIRST_PRONOUNS = frozenset(("i me my mine myself we us our ours ourselves").split())
THIRD_PRONOUNS = frozenset(("he she him her his hers they them their").split())
RELATIVE_PRONOUNS = frozenset(("which that who whom whose").split())
SKIP_MODIFIERS = frozenset(
    (
        "new old favorite favourite current former other same own little big first last best "
        "whole recent next previous main usual local preferred liked loved hated disliked used"
    ).split()
)
# Past forms the small parser can read as adjectives ("I preferred espresso": 'preferred' an
# amod of 'espresso'): after a subject pronoun they are the verb.
PAST_AS_ADJ = {"preferred": "prefer", "liked": "like", "loved": "love", "hated": "hate",
                "disliked": "dislike", "used": "use", "owned": "own", "spoke": "speak"}  # fmt: skip
NOT_THINGS = frozenset(
    (
        "time day week month year moment way lot thing something anything everything nothing one "
        "bit kind none nobody idea clue"
    ).split()
)
ENT_TYPES = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "DATE": "Date",
    "TIME": "Date",
    "EVENT": "Event",
    "PRODUCT": "Tool",
}
SKIP_ENTS = frozenset(("CARDINAL ORDINAL QUANTITY PERCENT MONEY TIME").split())
OBJECT_TYPES = {
    "lives_in": "Location",
    "born_in": "Location",
    "located_in": "Location",
    "based_in": "Location",
    "works_at": "Organization",
    "studies_at": "Organization",
    "member_of": "Organization",
    "uses": "Tool",
    "written_in": "Tool",
    "prefers": "Preference",
    "likes": "Preference",
    "dislikes": "Preference",
}
# "my employer is X": a relation noun that names a canonical predicate
RELATION_NOUNS = {"employer": "works_at", "workplace": "works_at", "hometown": "born_in",
                   "birthplace": "born_in", "alma": "studies_at", "school": "studies_at",
                   "university": "studies_at"}  # fmt: skip
# "X hired me": the object is the subject of the canonical fact
OBJECT_FACTS = {"hire": "works_at", "employ": "works_at", "recruit": "works_at"}
# What a preference for "X in Y" is about: the Y ("answers in British English")
MEDIA = frozenset(
    (
        "answer reply response explanation message email example code summary note comment doc "
        "documentation output text"
    ).split()
)
WORKS = {
    "novel": "wrote",
    "book": "wrote",
    "poem": "wrote",
    "play": "wrote",
    "song": "wrote",
    "memoir": "wrote",
    "story": "wrote",
    "film": "directed",
    "movie": "directed",
    "documentary": "directed",
    "album": "created",
    "painting": "created",
    "opera": "wrote",
    "symphony": "wrote",
    "series": "created",
    "game": "created",
}
JOBS = frozenset(("job position internship role post gig placement").split())
WORK_VERBS = frozenset(("work join start begin intern employ hire volunteer serve").split())
GROUPS = frozenset(
    (
        "club band team group choir committee league orchestra crew board squad society guild "
        "union party troupe ensemble"
    ).split()
)
# Nouns a preposition names a time or a setting with, not a thing ("on weekends", "at home").
SETTINGS = frozenset(
    (
        "weekend weekends evening evenings morning mornings night nights afternoon afternoons "
        "home work weekday weekdays summer winter spring autumn fall holiday holidays lunch "
        "breakfast dinner purpose fun living reason while sake"
    ).split()
)
KIN_NOUNS = frozenset(
    (
        "partner wife husband sister brother mother father mom mum dad daughter son friend "
        "colleague boss manager cousin aunt uncle girlfriend boyfriend roommate neighbor "
        "neighbour grandmother grandfather grandma grandpa niece nephew fiancé fiance fiancée "
        "spouse sibling child kid parent mentor coworker teammate doctor dentist therapist "
        "teacher dog cat pet"
    ).split()
)
_DOGS = frozenset(
    (
        "puppy inu shiba akita samoyed pomeranian maltese cockapoo labradoodle goldendoodle spitz "
        "retriever labrador lab poodle corgi terrier spaniel husky collie shepherd bulldog "
        "dachshund pug chihuahua beagle greyhound whippet boxer rottweiler doberman schnauzer "
        "sheepdog mutt pup shih malamute setter pointer hound"
    ).split()
)
_CATS = frozenset(
    ("kitten kitty tabby siamese persian ragdoll sphynx tomcat bengal calico").split()
)
_LEMMAS = {"hates": "hate", "hated": "hate", "hating": "hate", "loves": "love", "uses": "use"}
_CAP = r"(?:[A-Z][\w'’\-]*\.?|\d+)"
TITLE = re.compile(rf"{_CAP}(?:\s+(?:(?:of|the|a|an|&)\s+)*{_CAP})+")
TITLE_JOINT = re.compile(r"\s(?:of|&)\s")  # not "on": "Acme Robotics on the Atlas project"
_TIME_WORD = re.compile(
    rf"(?i:(?:{MONTHS})|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|yesterday|today|tonight|"
    r"tomorrow|weekends?|(?:1[5-9]|20)\d\d|\d{1,2}(?::\d\d)?(?:am|pm)?|\d{1,2}(?:st|nd|rd|th))"
)


# --- token tests -------------------------------------------------------------------------


def kin_of(noun: Any) -> str:
    """The relation a noun names: the word itself ("brother-in-law" whole), a breed as its
    animal."""
    low = noun.lemma_.lower()
    doc = noun.doc
    if doc[noun.i + 1 : noun.i + 4].text.replace(" ", "") == "-in-":
        return f"{low}_in_law"
    if low in _DOGS or noun.lower_ in _DOGS:
        return "dog"
    if low in _CATS or noun.lower_ in _CATS:
        return "cat"
    return low


def is_time(tok: Any) -> bool:
    """A date or a time ("in 2016", "in March", "on Thursdays", "until june"): when a fact
    held, never one of its arguments. The named-entity labels when the pipeline has them,
    else the words themselves."""
    return tok.ent_type_ in ("DATE", "TIME") or bool(_TIME_WORD.fullmatch(tok.text))


def is_time_word(text: str) -> bool:
    """A word of a date or a clock time ("March", "Fridays", "3rd", "9am"; a bare number too)."""
    return bool(_TIME_WORD.fullmatch(text))


def is_name(tok: Any) -> bool:
    """A proper noun, or a capitalised noun the tagger missed ("My cousin Deniz"), or a
    capitalised word it took for punctuation ("The CI provider is CircleCI")."""
    return (
        tok.pos_ == "PROPN"
        or (tok.pos_ == "NOUN" and tok.text[:1].isupper() and tok.i > tok.sent.start)
        or misread_name(tok)
    )


def misread_name(tok: Any) -> bool:
    """A capitalised word the small tagger took for punctuation or a symbol ("CircleCI")."""
    return tok.pos_ in ("PUNCT", "SYM", "X") and tok.text[:1].isupper() and tok.text.isalnum()


def passive_marked(verb: Any) -> bool:
    return any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children)


def is_kin_word(word: str) -> bool:
    return word in KIN_NOUNS or (word[:4] in ("step", "half") and word[4:].strip("-") in KIN_NOUNS)


def verb_lemma(tok: Any) -> str:
    low = _LEMMAS.get(tok.lower_, tok.lemma_.lower())
    if low.startswith("co-") or low in ("cofound", "cofounded"):
        low = "found" if "found" in low else low[3:]
    particle = next((c.lower_ for c in tok.children if c.dep_ == "prt"), None)
    return f"{low}_{particle}" if particle else low
