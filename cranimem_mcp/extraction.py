"""The heuristic extractor: the linkage engine's model (paper B.4) when no LLM answers.

A real fallback, not a stub. It reads each sentence's dependency parse (spaCy's small English
pipeline, :mod:`cranimem_mcp.syntax`) and turns clauses into facts: subject-verb-object and
verb-preposition-object with coordination on both sides, copulas ("Tom is my brother",
"Biscuit is a beagle"), possessives and appositions ("my sister Ana", "User's manager is
..."), relative clauses and participles ("which is based in", "directed by"), passives
written active, negation (``not_`` before the predicate: "doesn't like X" never gives
``likes``), and he/she resolved to the last person named. First person and "the user" are
the entity ``User`` (in a transcript turn "Name: ...", the speaker). Canonical predicates
come from a small table of verb lemmas (:data:`VERBS`); any other verb keeps its lemma (and
preposition). Entity types come from a name's role in its facts (what one lives in is a
Location, works at an Organization; a relation word names a Person); the pipeline runs
without its named-entity recogniser (:data:`cranimem_mcp.syntax.EXCLUDED`, for cost), and
the rules read its labels only when it is there.

:data:`DATE`, :data:`FIRST_PERSON` and :func:`proper_spans` are the lexical cues the
heuristic tagger shares; entity names merge by :func:`cranimem_mcp.naming.canonical_name`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from . import syntax
from .models import Entity, Extraction, Relation
from .naming import canonical_name

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


# --- the parse-based extractor --------------------------------------------------------------

# (verb lemma, preposition or None for the direct object) -> canonical predicate.
VERBS: dict[tuple[str, str | None], str] = {
    ("live", "in"): "lives_in",
    ("live", "on"): "lives_in",
    ("reside", "in"): "lives_in",
    ("settle", "in"): "lives_in",
    ("move", "to"): "lives_in",
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
_NOUN_PREPS = {
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
_IDENTITY_ADJ = frozenset(
    (
        "vegetarian vegan pescatarian diabetic celiac coeliac pregnant deaf blind colorblind "
        "colourblind epileptic asthmatic left-handed right-handed retired single divorced widowed "
        "autistic dyslexic"
    ).split()
)
# Verbs whose clause is a wish or plan, not a fact ("wants to move to Berlin").
_IRREALIS = frozenset(
    ("want plan hope intend try consider wish think dream aim might would could should").split()
)
_FIRST = frozenset(("i me my mine myself we us our ours ourselves").split())
_THIRD_PERSON = frozenset(("he she him her his hers they them their").split())
_RELATIVE = frozenset(("which that who whom whose").split())
_SKIP_MODIFIERS = frozenset(
    (
        "new old favorite favourite current former other same own little big first last best "
        "whole recent next previous main usual local preferred liked loved hated disliked used"
    ).split()
)
# Past forms the small parser can read as adjectives ("I preferred espresso": 'preferred' an
# amod of 'espresso'): after a subject pronoun they are the verb.
_PAST_AS_ADJ = {"preferred": "prefer", "liked": "like", "loved": "love", "hated": "hate",
                "disliked": "dislike", "used": "use", "owned": "own", "spoke": "speak"}  # fmt: skip
_NOT_THINGS = frozenset(
    (
        "time day week month year moment way lot thing something anything everything nothing one "
        "bit kind"
    ).split()
)
_ENT_TYPES = {
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
_SKIP_ENTS = frozenset(("CARDINAL ORDINAL QUANTITY PERCENT MONEY TIME").split())
_OBJECT_TYPES = {
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
# "Melanie: I just ..." and "[1:56 pm on 8 May, 2023] Melanie: ..." name the speaker.
_SPEAKER = re.compile(r"^\s*(?:\[[^\]]{0,80}\]\s*)?([A-Z][\w'’\-]*(?: [A-Z][\w'’\-]*)?):\s+")
# A note without a subject is about the user: "Prefers answers in British English."
_SUBJECTLESS_IS = re.compile(
    r"^(?:allergic|intolerant|vegetarian|vegan|based|married|fluent|afraid|lactose)\b", re.I
)
_SUBJECTLESS = re.compile(
    r"^(?:prefers|likes|loves|enjoys|dislikes|hates|uses|lives|works|speaks|wants|needs|"
    r"drinks|eats|avoids|owns|has|is|studies|plays|drives|takes|runs|reads|writes|"
    r"teaches|volunteers|goes|keeps|follows|supports|favou?rs|attends|manages|leads)\b",
    re.I,
)


class _Reader:
    """Facts of one text, sentence by sentence (a new reader per text)."""

    def __init__(self, speaker: str) -> None:
        self.speaker = speaker
        self.entities: dict[str, Entity] = {}
        self.relations: dict[tuple[str, str, str], Relation] = {}
        self.last_person: str | None = None
        self.last_subject: str | None = None
        self.people: set[str] = {canonical_name(speaker)}
        self.last_thing: str | None = None
        self.last_named: str | None = None

    # -- nodes --

    def entity(self, name: str, type_: str) -> str:
        key = canonical_name(name)
        if key and (key not in self.entities or self.entities[key].type == "Other"):
            self.entities[key] = Entity(name=name.strip(), type=type_)  # type: ignore[arg-type]
        return self.entities[key].name if key in self.entities else name

    def relate(self, subject: str | None, predicate: str, obj: str | None) -> None:
        if not subject or not obj or not predicate:
            return
        if canonical_name(subject) == canonical_name(obj):
            return
        self.relations.setdefault(
            (canonical_name(subject), predicate, canonical_name(obj)),
            Relation(subject=subject, predicate=predicate, object=obj),
        )

    def phrase(self, tok: Any) -> str | None:
        """The name a noun token stands for: the longer of its named entity and the noun with
        its compound and adjective modifiers ("green tea", "backend engineer", "Volvo 240")."""
        title = self.title(tok)
        if title is not None:
            return title
        entity = None
        if tok.ent_type_ and tok.ent_type_ not in _SKIP_ENTS:
            ent = next((e for e in tok.doc.ents if e.start <= tok.i < e.end), None)
            if ent is not None:
                words = [t for t in ent if t.dep_ not in ("det", "case") and t.tag_ != "POS"]
                cut = [t.i for t in ent if t.dep_ == "cc" or t.text == ","]
                if cut:  # "Roma and Gravity" is two names
                    lo = max([i + 1 for i in cut if i < tok.i], default=ent.start)
                    hi = min([i for i in cut if i > tok.i], default=ent.end)
                    words = [t for t in words if lo <= t.i < hi]
                if words:
                    entity = tok.doc[words[0].i : words[-1].i + 1]
        if tok.pos_ not in ("NOUN", "PROPN", "NUM", "ADJ", "X", "VERB"):
            return entity.text if entity is not None else None
        if tok.lemma_.lower() in _NOT_THINGS and tok.pos_ == "NOUN" and entity is None:
            return None
        left = tok.i
        for child in sorted(tok.lefts, key=lambda t: -t.i):
            if child.i != left - 1:
                break
            if child.dep_ in ("compound", "amod", "nmod", "npadvmod") and not (
                child.lower_ in _SKIP_MODIFIERS
                or _is_time(child)
                or child.pos_ == "NUM"
                or _is_kin_word(child.lower_)
                or (tok.pos_ == "PROPN" and child.pos_ == "NOUN")  # "app Pebble": a label
            ):
                left = child.i
                for grand in sorted(child.lefts, key=lambda t: -t.i):
                    if grand.i == left - 1 and grand.dep_ in ("compound", "amod"):
                        left = grand.i
            else:
                break
        doc = tok.doc
        while (
            left >= 2
            and doc[left - 1].text == "-"
            and doc[left - 2].dep_ in ("compound", "amod", "npadvmod")
        ):
            left -= 2  # "language-learning app"
        right = tok.i
        for child in sorted(tok.rights, key=lambda t: t.i):
            if (
                child.i == right + 1
                and child.dep_ in ("nummod", "compound")
                and (child.pos_ in ("NUM", "PROPN") or child.like_num)
            ):
                right = child.i
            else:
                break
        if entity is not None and (entity.end - entity.start) >= (right + 1 - left):
            return entity.text
        text = doc[left : right + 1].text
        return text.strip(" .,;:!?\"'") or None

    @staticmethod
    def title(tok: Any) -> str | None:
        """A capitalised name with lower-case joints ("One Hundred Years of Solitude", "Bank
        of America", "Crumb & Co.") around ``tok``, or None."""
        if not tok.text[:1].isupper() or tok.pos_ == "PRON":
            return None
        sent = tok.sent
        offset = tok.idx - sent.start_char
        for m in _TITLE.finditer(sent.text):
            if m.start() <= offset < m.end():
                return m.group().rstrip(",;:") if _TITLE_JOINT.search(m.group()) else None
        return None

    def ref(self, tok: Any) -> str | None:
        """The entity a subject or object token refers to, or None."""
        low = tok.lower_
        if low in _FIRST and tok.pos_ == "PRON":
            return self.person(self.speaker, subject=tok.dep_.startswith("nsubj"))
        if low == "it" and tok.dep_ in ("dobj", "pobj", "nsubj") and tok.pos_ == "PRON":
            return self.last_thing  # "switched to Neovim and now uses it daily"
        if low in ("you", "your", "yours", "it", "its", "this", "that", "there", "these",
                   "those", "what", "something", "someone", "everyone"):  # fmt: skip
            if low in _RELATIVE:
                return self.relative(tok)
            return None
        if low in _THIRD_PERSON:
            return self.last_subject or self.last_person or self.last_named
        if low in _RELATIVE or tok.tag_ in ("WDT", "WP"):
            return self.relative(tok)
        if tok.lemma_.lower() == "user" and tok.pos_ in ("NOUN", "PROPN"):
            return self.person("User", subject=tok.dep_.startswith("nsubj"))
        named = self.named_by(tok)
        if named is not None:
            return named
        if tok.pos_ == "PROPN":
            kin = [
                c for c in tok.lefts if c.dep_ in ("amod", "compound") and _is_kin_word(c.lower_)
            ]
            owner = next((c for c in tok.children if c.dep_ == "poss"), None)
            if kin and owner is not None:
                name = self.person(self.phrase(tok) or tok.text, tok.dep_.startswith("nsubj"))
                self.relate(self.ref(owner), f"has_{kin[0].lower_}", name)
                return name
        if tok.pos_ == "NOUN":
            called = self.called(tok)
            if called is not None:
                return called
        name = self.phrase(tok)
        if name is None:
            return None
        if tok.ent_type_ == "PERSON":
            return self.person(name, subject=tok.dep_.startswith("nsubj"))
        name = self.entity(name, _ENT_TYPES.get(tok.ent_type_, "Other"))
        if tok.pos_ == "PROPN":
            self.last_thing = name
            if tok.dep_ in ("nsubj", "nsubjpass"):
                self.last_named = name  # "Tove Jansson created the Moomins. She was born..."
        return name

    def person(self, name: str, subject: bool = False) -> str:
        name = self.entity(name, "Person")
        self.retype(name, "Person")
        self.last_person = name
        if subject:
            self.last_subject = name
        return name

    def relative(self, tok: Any) -> str | None:
        clause = tok.head
        while clause.dep_ not in ("relcl", "acl") and clause.head.i != clause.i:
            clause = clause.head
        return self.stands_for(clause.head) if clause.dep_ in ("relcl", "acl") else None

    def named_by(self, tok: Any) -> str | None:
        """A relation noun with a possessor and a name ("my sister Ana", "User's project
        Ferrous", "Ana, my sister"): the name, after relating the possessor to it."""
        if tok.pos_ != "NOUN":
            return None
        names = [c for c in tok.children
                 if c.dep_ in ("appos", "compound") and c.i > tok.i and _is_name(c)]  # fmt: skip
        if (
            not names
            and tok.head.pos_ == "PROPN"
            and tok.head.i > tok.i
            and (tok.dep_ == "compound" or tok.lemma_.lower() in _KIN_NOUNS)
            and tok.dep_ in ("compound", "appos")
        ):
            names = [tok.head]
        nxt = tok.doc[tok.i + 1] if tok.i + 1 < len(tok.doc) else None
        if (
            not names
            and nxt is not None
            and nxt.pos_ == "PROPN"
            and nxt.dep_ == tok.dep_
            and (nxt.head.i == tok.head.i and any(c.dep_ == "poss" for c in tok.children))
        ):
            names = [nxt]  # "My girlfriend Chiara speaks": the parser made both subjects
        if not names:
            return None
        owner = next((c for c in tok.children if c.dep_ == "poss"), None)
        if owner is None and names[0].i == tok.head.i:
            owner = next((c for c in tok.head.children if c.dep_ == "poss"), None)
        name_tok = names[0]
        name = self.phrase(name_tok) or name_tok.text
        kin = tok.lemma_.lower() in _KIN_NOUNS and _kin(tok) not in ("dog", "cat", "pet")
        type_ = (
            "Person"
            if kin or name_tok.ent_type_ == "PERSON"
            else _ENT_TYPES.get(name_tok.ent_type_, "Other")
        )
        if type_ == "Person":
            name = self.person(
                name, subject=name_tok.dep_.startswith("nsubj") or tok.dep_.startswith("nsubj")
            )
            if kin:
                self.people.add(canonical_name(name))
        else:
            name = self.entity(name, type_)
        if owner is not None and (_is_kin_word(tok.lemma_.lower()) or _kin(tok) in ("dog", "cat")):
            # "my sister Ana", "my beagle Rex"; not "User's app Pebble" (a label, no fact)
            self.relate(self.ref(owner), f"has_{_kin(tok)}", name)
            if _kin(tok) in ("dog", "cat") and tok.lemma_.lower() not in ("dog", "cat"):
                self.relate(name, "is_a", self.entity(tok.lemma_.lower(), "Other"))
        return name

    # -- clauses --

    def sentence(self, sent: Any) -> None:
        for ent in sent.ents:
            if ent.label_ not in _SKIP_ENTS:
                text = ent.text[4:] if ent.text.lower().startswith("the ") else ent.text
                self.entity(text, _ENT_TYPES.get(ent.label_, "Other"))
                if ent.label_ == "PERSON" and ent.start < sent.end:
                    pass
        for tok in sent:
            if tok.pos_ in ("VERB", "AUX") and tok.dep_ not in ("aux", "auxpass"):
                self.clause(tok)
            elif tok.pos_ == "NOUN":
                self.named_by(tok)
                self.noun_facts(tok)
            elif tok.pos_ == "PROPN":
                self.place_facts(tok)
            if tok.lower_ in _PAST_AS_ADJ and tok.dep_ == "amod" and tok.i > sent.start:
                before = tok.doc[tok.i - 1]
                if before.lower_ in ("'ve", "’ve", "have", "had", "'d") and before.i > sent.start:
                    before = tok.doc[before.i - 1]  # "I've preferred mint tea"
                if (
                    before.pos_ == "PRON"
                    and before.dep_ != "poss"
                    and before.lower_ in (_FIRST | _THIRD_PERSON)
                ):
                    pred = VERBS.get((_PAST_AS_ADJ[tok.lower_], None), _PAST_AS_ADJ[tok.lower_])
                    self.relate(self.ref(before), pred, self.ref(tok.head))
            if tok.text.isdigit() and tok.dep_ == "appos" and tok.head.pos_ == "PROPN":
                self.relate(self.ref(tok.head), "has_age", self.entity(tok.text, "Other"))
            if tok.ent_type_ == "PERSON" and tok.dep_ in ("nsubj", "nsubjpass", "appos", "attr",
                                                          "pobj", "dobj", "conj"):  # fmt: skip
                self.last_person = self.phrase(tok) or self.last_person

    def subjects(self, verb: Any) -> list[Any]:
        subs = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass", "csubj")]
        if not subs:  # "I've preferred": the parser may hang the subject on the auxiliary
            subs = [g for c in verb.children if c.dep_ in ("aux", "auxpass")
                    for g in c.children if g.dep_ in ("nsubj", "nsubjpass")]  # fmt: skip
        if len(subs) == 2 and subs[1].i == subs[0].i + 1 and subs[1].pos_ == "PROPN":
            subs = [subs[0]]  # "My girlfriend Chiara": one subject (named_by reads the name)
        if subs:
            return self.spread(subs)
        if verb.dep_ in ("conj", "xcomp", "advcl", "parataxis") and verb.head.i != verb.i:
            if verb.dep_ in ("conj", "parataxis") or verb.head.pos_ in ("VERB", "AUX"):
                return self.subjects(verb.head)
        if verb.dep_ in ("relcl", "acl") and verb.head.pos_ in ("NOUN", "PROPN", "PRON"):
            return [verb.head]
        return []

    @staticmethod
    def spread(tokens: list[Any]) -> list[Any]:
        """A token and its coordinated siblings ("Ana and Tom", "Vienna and Budapest")."""
        out: list[Any] = []
        todo = list(tokens)
        while todo:
            t = todo.pop(0)
            if t in out:
                continue
            out.append(t)
            todo.extend(c for c in t.children if c.dep_ == "conj" and c.pos_ != "VERB")
        return out

    def irrealis(self, verb: Any) -> bool:
        """Part of a wish, plan, question or condition: no fact."""
        t = verb
        while True:
            if t.lemma_.lower() in _IRREALIS and t.i != verb.i:
                return True
            if any(
                c.dep_ == "aux" and c.lemma_.lower() in _IRREALIS | {"will"} for c in t.children
            ):
                return True
            if any(
                c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for c in t.children
            ):
                return True
            if t.dep_ == "ccomp" and t.head.i != t.i:  # "I hope we move" / "you should know X"
                return t.head.lemma_.lower() in _IRREALIS
            if t.dep_ not in ("xcomp", "conj") or t.head.i == t.i:
                return False
            t = t.head

    def clause(self, verb: Any) -> None:
        if self.irrealis(verb):
            return
        subjects = [s for s in (self.ref(t) for t in self.subjects(verb)
                                if not _is_time(t)) if s]  # fmt: skip
        if verb.lemma_.lower() in ("call", "name") and not passive_marked(verb):
            return  # "a beagle called Biscuit": read by called()
        if (
            verb.dep_ == "acl"
            and verb.tag_ == "VBN"
            and not any(c.dep_ in ("nsubj", "nsubjpass") for c in verb.children)
        ):
            self.participle(verb)
            return
        if not subjects:
            return
        negated = any(c.dep_ == "neg" for c in verb.children)
        neg = "not_" if negated else ""
        lemma = _lemma(verb)
        if lemma == "get" and any(c.dep_ == "aux" and c.lemma_ == "have" for c in verb.children):
            lemma = "have"  # "I've got a Nikon"
        passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children) or (
            verb.tag_ == "VBN" and any(c.dep_ == "agent" for c in verb.children)
        )  # "directed by X and produced by Y": the second verb has only its agent
        if any(
            c.dep_ == "preconj" and c.lower_ == "neither" for t in verb.subtree for c in t.children
        ):
            neg = "not_"  # "eats neither beef nor pork"
        if lemma == "be":
            self.copula(verb, subjects, neg)
            return
        if lemma in ("call", "name") and passive:  # "My dog is called Pretzel"
            for n in (c for c in verb.children if c.dep_ in ("oprd", "attr") and c.pos_ == "PROPN"):
                for st in self.subjects(verb):
                    owner = next((c for c in st.children if c.dep_ == "poss"), None)
                    if owner is not None and st.pos_ == "NOUN":
                        name = self.entity(self.phrase(n) or n.text, "Other")
                        self.relate(self.ref(owner), f"has_{_kin(st)}", name)
            return
        has_object = any(c.dep_ == "dobj" for c in verb.children)
        jobs = [c for c in verb.children if c.dep_ == "dobj" and c.lemma_.lower() in _JOBS]
        if jobs:
            preps = [c for t in (verb, *jobs) for c in t.children if c.dep_ == "prep"]
            for prep in (p for p in preps if p.lower_ in ("at", "with")):
                for place in self.spread([c for c in prep.children if c.dep_ == "pobj"]):
                    for s in subjects:  # "I got a job at Globex"
                        self.relate(s, neg + "works_at", self.ref(place))
            return
        for child in verb.children:
            if (
                child.dep_ in ("dobj", "attr", "oprd")
                or (child.dep_ == "xcomp" and child.pos_ == "NOUN")
            ) and not passive:
                for obj_tok in self.spread([child]):
                    self.direct(verb, lemma, subjects, obj_tok, neg)
            elif child.dep_ == "prep" and has_object and child.lower_ == "for":
                # a purpose ("uses Linear for issue tracking"), not a fact; but "Obsidian
                # for notes and Todoist for tasks" holds a second object
                self.prep(lemma, child, subjects, neg, parallel_only=True)
                continue
            elif child.dep_ == "agent" and passive:
                for obj_tok in self.spread([c for c in child.children if c.dep_ == "pobj"]):
                    agent = self.ref(obj_tok)
                    pred = "works_at" if lemma == "employ" else VERBS.get((lemma, None), lemma)
                    for s in subjects:
                        if lemma == "employ":
                            self.relate(s, neg + pred, agent)
                        else:
                            self.relate(agent, neg + pred, s)
            elif child.dep_ == "prep":
                self.prep(lemma, child, subjects, neg)
            elif child.dep_ == "acomp":
                for adj in self.spread([child]):
                    self.adjective(adj, subjects, neg)
            elif child.dep_ in ("npadvmod", "dobj") and child.like_num and lemma == "turn":
                for s in subjects:  # "Ava just turned 6"
                    self.relate(s, "has_age", self.entity(child.text, "Other"))

    def direct(self, verb: Any, lemma: str, subjects: list[str], obj_tok: Any, neg: str) -> None:
        if _is_time(obj_tok):
            return
        if any(c.dep_ == "neg" for c in obj_tok.children):
            neg = "" if neg else "not_"  # "uses pnpm, not npm"
        elif neg and any(c.lower_ in ("only", "just") for c in obj_tok.children):
            neg = ""  # "doesn't speak French, only English"
        if lemma == "prefer" and obj_tok.lemma_.lower() in _MEDIA:
            for prep in (c for c in obj_tok.children if c.dep_ == "prep" and c.lower_ == "in"):
                for o in self.spread([c for c in prep.children if c.dep_ == "pobj"]):
                    for s in subjects:  # "Prefers replies in Spanish"
                        self.relate(s, neg + "prefers", self.ref(o))
                return
        low = obj_tok.lemma_.lower()
        if lemma == "turn" and obj_tok.like_num:
            for s in subjects:
                self.relate(s, "has_age", self.entity(obj_tok.text, "Other"))
            return
        if low in _JOBS and lemma in (
            "get",
            "start",
            "have",
            "take",
            "land",
            "accept",
            "begin",
            "love",
            "like",
            "hate",
        ):
            for prep in (
                c for c in obj_tok.children if c.dep_ == "prep" and c.lower_ in ("at", "with")
            ):
                for place in self.spread([c for c in prep.children if c.dep_ == "pobj"]):
                    for s in subjects:
                        self.relate(s, "works_at", self.ref(place))
            return
        if lemma in ("have", "get", "adopt") and low in ("allergy",):
            self.allergy(obj_tok, subjects, neg)
            return
        names = [c for c in obj_tok.children if c.dep_ == "conj" and c.pos_ == "PROPN"]
        if lemma in ("have", "get", "adopt", "raise") and names and _is_kin_word(low):
            kin = "child" if low in ("child", "children") else low
            for n in self.spread(names):  # "has two children, Ellie and Finn"
                for s in subjects:
                    self.relate(s, f"{neg}has_{kin}", self.person(self.phrase(n) or n.text))
            return
        named = self.called(obj_tok)
        if lemma in ("have", "get", "adopt", "raise", "rescue") and named is not None:
            for name in self.all_called(obj_tok) or [named]:
                for s in subjects:
                    self.relate(s, f"{neg}has_{_kin(obj_tok)}", name)
            return
        obj = named or self.ref(obj_tok)
        if lemma in _OBJECT_FACTS and obj is not None:
            for s in subjects:  # "Umbrella Labs hired me"
                self.relate(obj, neg + _OBJECT_FACTS[lemma], s)
            return
        if lemma == "have" and any(c.lower_ in _PAST_AS_ADJ for c in obj_tok.lefts):
            return  # "I've preferred mint tea": read as 'preferred', not as having tea
        if lemma in ("have",):
            pred = "owns"
        elif lemma == "join":
            # "joined the chess club" / "joined Soylent Group" (a company's name)
            named = obj_tok.pos_ == "PROPN"
            pred = "member_of" if low in (_GROUPS - {"group", "party", "union"} if named
                                          else _GROUPS) else "works_at"  # fmt: skip
        elif lemma == "stand" and any(c.lower_ in ("ca", "can") for c in verb.children):
            pred, neg = "dislikes", ""
        else:
            pred = VERBS.get((lemma, None), lemma)
        if obj is not None:
            for s in subjects:
                self.relate(s, neg + pred, obj)
        obj_type = _OBJECT_TYPES.get(pred)
        if obj is not None and obj_type:
            self.retype(obj, obj_type)
        # "teaches chemistry at Kyoto University": a preposition the parser hung on the object
        for prep in (c for c in obj_tok.children if c.dep_ == "prep"):
            if prep.lower_ in ("at", "for") and lemma not in ("have",):
                self.prep(lemma, prep, subjects, neg)

    def prep(
        self, lemma: str, prep: Any, subjects: list[str], neg: str, parallel_only: bool = False
    ) -> None:
        word = prep.lower_
        if prep.ent_type_ and prep.ent_type_ not in ("DATE", "TIME"):
            return  # inside a name: "the Pulitzer Prize for Fiction"
        objects = self.spread([c for c in prep.children if c.dep_ == "pobj"])
        for o in list(objects):  # "through ten countries, including Austria and Hungary"
            for inc in (
                c for c in o.children if c.dep_ == "prep" and c.lower_ in ("including", "like")
            ):
                if o in objects:
                    objects.remove(o)
                objects += self.spread([c for c in inc.children if c.dep_ == "pobj"])
        if word == "with" and lemma == "found":
            for o in objects:  # "co-founded Fernway with Dana Liu"
                for dobj in (c for c in prep.head.children if c.dep_ == "dobj"):
                    self.relate(self.ref(o), "founded", self.ref(dobj))
            return
        parallel = bool(objects) and (self.setting(objects[0]) or word == "for")
        for obj_tok in objects:
            if self.setting(obj_tok):
                continue
            if (
                parallel
                and obj_tok.i != objects[0].i
                and any(c.dep_ == "prep" for c in obj_tok.children)
            ):
                # "uses VS Code at work and Emacs at home": Emacs is the verb's object
                for s in subjects:
                    self.relate(s, neg + VERBS.get((lemma, None), lemma), self.ref(obj_tok))
                continue
            if parallel_only:
                continue
            obj = self.ref(obj_tok)
            if word == "as" and lemma in _WORK_VERBS - {"serve"}:
                pred = "is_a"
                # "works as a nurse at St. Mary's": the place hangs on the role
                for inner in (c for c in obj_tok.children if c.dep_ == "prep"):
                    self.prep(lemma, inner, subjects, neg)
            elif word in ("in", "on", "for") and obj_tok.lemma_.lower() in _GROUPS:
                pred = "member_of"
            else:
                pred = VERBS.get((lemma, word), f"{lemma}_{word}")
            if pred == "based_in" and all(self.is_person(s) for s in subjects):
                pred = "lives_in"
            for s in subjects:
                self.relate(s, neg + pred, obj)
            if obj is not None and pred in _OBJECT_TYPES:
                self.retype(obj, _OBJECT_TYPES[pred])

    def setting(self, tok: Any) -> bool:
        """A time or a setting, not a thing: "in March", "on weekends", "in every editor"."""
        return (
            _is_time(tok)
            or tok.lemma_.lower() in _NOT_THINGS
            or tok.lower_ in _SETTINGS
            or any(
                c.dep_ == "det" and c.lower_ in ("every", "each", "all", "any")
                for c in tok.children
            )
        )

    def is_person(self, name: str) -> bool:
        """Known to be a person: the speaker, or named by a relation word ("my colleague
        Sven"); a named-entity label alone is not enough ("Acme Robotics" can read PERSON)."""
        return canonical_name(name) in self.people

    def all_called(self, noun: Any) -> list[str]:
        """ "two cats, Luna and Sol": every name."""
        names = [c for c in noun.children if c.dep_ == "appos" and c.pos_ == "PROPN"]
        return [self.entity(self.phrase(n) or n.text, "Other") for n in self.spread(names)]

    def participle(self, verb: Any) -> None:
        """ "a film directed by X", "a company based in Y", "a beagle called Biscuit"."""
        head = verb.head
        subject = self.stands_for(head)
        lemma = verb.lemma_.lower()
        for child in verb.children:
            if child.dep_ == "agent":
                for a in self.spread([c for c in child.children if c.dep_ == "pobj"]):
                    self.relate(self.ref(a), VERBS.get((lemma, None), lemma), subject)
            elif child.dep_ == "prep":
                self.prep(lemma, child, [subject] if subject else [], "")

    def stands_for(self, noun: Any) -> str | None:
        """A class noun stands for what it is said of: in "Inception is a film directed by
        X", the film is Inception."""
        if noun.dep_ == "attr" and noun.head.lemma_ == "be":
            subs = [c for c in noun.head.children if c.dep_ in ("nsubj", "nsubjpass")]
            if subs:
                return self.ref(subs[0])
        if noun.dep_ == "appos":
            return self.ref(noun.head)
        if noun.dep_ == "nsubj" and noun.head.lemma_ == "be" and noun.pos_ == "NOUN":
            attrs = [c for c in noun.head.children if c.dep_ == "attr" and c.pos_ == "PROPN"]
            if attrs:  # "User's manager is Chen Wei, who reports to ..."
                return self.ref(attrs[0])
        return self.ref(noun)

    def called(self, noun: Any) -> str | None:
        """ "a beagle called Biscuit" / "a cat named Miso": the name (is_a the noun)."""
        for acl in (c for c in noun.children if c.dep_ in ("acl", "relcl", "advcl")):
            if acl.lemma_.lower() in ("call", "name"):
                for n in acl.children:
                    if n.dep_ in ("oprd", "attr", "dobj", "npadvmod") and n.pos_ == "PROPN":
                        name = self.entity(self.phrase(n) or n.text, "Other")
                        cls = self.phrase(noun)
                        if (
                            cls
                            and _kin(noun) in ("dog", "cat")
                            and noun.lemma_ not in ("dog", "cat")
                        ):
                            self.relate(name, "is_a", cls)  # "a beagle called Biscuit"
                        return name
        names = [c for c in noun.children if c.dep_ == "appos" and c.pos_ == "PROPN"]
        if names:
            return self.entity(self.phrase(names[0]) or names[0].text, "Other")
        return None

    def copula(self, verb: Any, subjects: list[str], neg: str) -> None:
        subj_toks = self.subjects(verb)
        for child in verb.children:
            if child.dep_ == "attr":
                for attr in self.spread([child]):
                    self.attribute(attr, subj_toks, subjects, neg)
            elif child.dep_ == "acomp":
                for adj in self.spread([child]):
                    if adj.pos_ in ("NOUN", "PROPN") or self.names_a_value(subj_toks):
                        self.attribute(adj, subj_toks, subjects, neg)  # a mislabelled attr
                    else:
                        self.adjective(adj, subjects, neg)
            elif child.dep_ == "prep":
                word = child.lower_
                for obj_tok in self.spread([c for c in child.children if c.dep_ == "pobj"]):
                    if _is_time(obj_tok):
                        continue
                    if word in ("in", "on", "with") and obj_tok.lemma_.lower() in _GROUPS:
                        pred = "member_of"  # "is in a book club called Chapter Eleven"
                    else:
                        pred = {"in": "located_in", "from": "from",
                                "into": "likes"}.get(word, f"be_{word}")  # fmt: skip
                    for s in subjects:
                        self.relate(s, neg + pred, self.ref(obj_tok))

    @staticmethod
    def names_a_value(subj_toks: list[Any]) -> bool:
        """ "my preferred drink is ...", "my employer is ...": what follows is a name, whatever
        the parser labels it."""
        for st in subj_toks:
            mods = {c.lower_ for c in st.children if c.dep_ in ("amod", "compound")}
            if any(c.dep_ == "poss" for c in st.children) and (
                st.lemma_.lower() in _RELATION_NOUNS
                or mods & {"preferred", "favorite", "favourite"}
            ):
                return True
        return False

    def attribute(self, attr: Any, subj_toks: list[Any], subjects: list[str], neg: str) -> None:
        if attr.text.isdigit() and int(attr.text) < 130:
            if any(c.dep_ == "mark" for c in attr.head.children) or attr.head.dep_ == "advcl":
                return  # "when I was 19"
            for s in subjects:
                self.relate(s, neg + "has_age", self.entity(attr.text, "Other"))
            return
        owner = next((c for c in attr.children if c.dep_ == "poss"), None)
        of = [p for p in attr.children if p.dep_ == "prep" and p.lower_ == "of"]
        if attr.pos_ == "NOUN" and (
            (
                owner is not None
                and (_is_kin_word(attr.lemma_.lower()) or _kin(attr) in ("dog", "cat"))
            )
            or (of and attr.lemma_ in _KIN_NOUNS)
        ):
            # "Tom is my brother" / "Tom is the brother of Ana"
            possessor = self.ref(owner) if owner is not None else None
            if possessor is None and of:
                objs = [c for c in of[0].children if c.dep_ == "pobj"]
                possessor = self.ref(objs[0]) if objs else None
            for s in subjects:
                self.relate(possessor, f"{neg}has_{_kin(attr)}", s)
                if attr.lemma_.lower() in _KIN_NOUNS and _kin(attr) not in ("dog", "cat", "pet"):
                    self.person(s, subject=True)
                    self.people.add(canonical_name(s))
            if attr.lemma_.lower() in _KIN_NOUNS or owner is not None:
                return
        # "My manager is Lena" / "User's manager is Priya Raman" / "User's preferred editor
        # is Helix"
        for st in subj_toks:
            sowner = next((c for c in st.children if c.dep_ == "poss"), None)
            if st.lemma_.lower() == "name" and sowner is not None and sowner.pos_ == "NOUN":
                # "My husband's name is Gabriel" / "partner's name is Hemi"
                owner2 = next((c for c in sowner.children if c.dep_ == "poss"), None)
                who = self.ref(owner2) if owner2 is not None else self.speaker
                name = self.person(self.phrase(attr) or attr.text, subject=True)
                self.people.add(canonical_name(name))
                self.relate(who, f"{neg}has_{_kin(sowner)}", name)
                return
            if st.pos_ != "NOUN" or sowner is None or self.named_by(st) is not None:
                continue
            mods = {c.lower_ for c in st.children if c.dep_ in ("amod", "compound")}
            if mods & {"preferred", "favorite", "favourite"}:
                pred = "prefers" if "preferred" in mods else "likes"
                obj = self.ref(attr) or self.entity(self.phrase(attr) or attr.text, "Other")
                self.relate(self.ref(sowner), neg + pred, obj)
                return
            if attr.pos_ == "PROPN" or st.lemma_.lower() in _RELATION_NOUNS:
                name = self.ref(attr) or self.entity(attr.text, "Other")
                pred = _RELATION_NOUNS.get(st.lemma_.lower(), f"has_{_kin(st)}")
                self.relate(self.ref(sowner), neg + pred, name)
                if name and (attr.ent_type_ in ("PERSON", "") or st.lemma_ in _KIN_NOUNS):
                    self.retype(name, "Person")
                    self.last_person = name
                return
        low = attr.lemma_.lower()
        if low == "fan":
            for c in attr.children:
                if c.dep_ == "compound" and c.pos_ == "PROPN":  # "a huge Arsenal fan"
                    for s in subjects:
                        self.relate(s, neg + "likes", self.ref(c))
        cls = self.phrase(attr)
        if low in ("member", "part", "fan", "one", "kind", "type") or owner is not None:
            cls = None  # "piano is my main instrument": a relation to the owner, not a class
        if cls and not (attr.pos_ == "PRON"):
            for s in subjects:
                self.relate(
                    s,
                    neg + "is_a",
                    self.entity(cls, "Other") if attr.pos_ != "PROPN" else self.ref(attr),
                )
        for prep in (c for c in attr.children if c.dep_ == "prep"):
            key = (attr.lemma_.lower(), prep.lower_)
            for obj_tok in self.spread([c for c in prep.children if c.dep_ == "pobj"]):
                if _is_time(obj_tok):
                    continue
                pred = _NOUN_PREPS.get(key)
                if (
                    pred is None
                    and prep.lower_ in ("in", "near")
                    and obj_tok.ent_type_ in ("GPE", "LOC")
                ):
                    pred = "located_in" if prep.lower_ == "in" else "located_near"
                if pred is None and prep.lower_ in ("at", "for") and obj_tok.ent_type_ == "ORG":
                    pred = "works_at"
                if (
                    pred is None
                    and prep.lower_ in ("in", "with", "for", "on")
                    and (obj_tok.ent_type_ == "ORG" or obj_tok.lemma_.lower() in _GROUPS)
                    and attr.pos_ == "NOUN"
                ):
                    pred = "member_of"  # "a violinist in the Borusan Istanbul Philharmonic"
                if pred:
                    for s in subjects:
                        self.relate(s, neg + pred, self.ref(obj_tok))
        for clause in (c for c in attr.children if c.dep_ in ("acl", "relcl")):
            if clause.tag_ == "VBN" and not any(
                c.dep_.startswith("nsubj") for c in clause.children
            ):
                self.participle(clause)

    def adjective(self, adj: Any, subjects: list[str], neg: str) -> None:
        low = adj.lower_
        preps = [
            c
            for c in adj.children
            if c.dep_ == "prep" and not any(self.setting(o) for o in c.children if o.dep_ == "pobj")
        ]
        for x in (
            c for c in adj.children if c.dep_ == "xcomp" and low in ("allergic", "intolerant")
        ):
            for t in [x, *(c for c in x.children if c.dep_ == "conj")]:
                for s in subjects:  # "allergic to shellfish", parsed as "to shellfish" (a verb)
                    self.relate(
                        s, neg + f"{low}_to", self.entity(self.phrase(t) or t.text, "Other")
                    )
        for prep in preps:
            for obj_tok in self.spread([c for c in prep.children if c.dep_ == "pobj"]):
                pred = {"allergic": "allergic_to", "married": "married_to",
                        "intolerant": "intolerant_to"}.get(low, f"{low}_{prep.lower_}")  # fmt: skip
                for s in subjects:
                    self.relate(s, neg + pred, self.ref(obj_tok))
        if not preps and low in _IDENTITY_ADJ:
            for s in subjects:
                self.relate(s, neg + "is_a", self.entity(low, "Other"))

    def allergy(self, noun: Any, subjects: list[str], neg: str) -> None:
        """ "has a peanut allergy" / "an allergy to cats"."""
        things = [c for c in noun.children if c.dep_ in ("compound", "amod", "nmod")]
        for prep in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "to"):
            things += [c for c in prep.children if c.dep_ == "pobj"]
        for thing in self.spread(things):
            for s in subjects:
                self.relate(
                    s, neg + "allergic_to", self.entity(self.phrase(thing) or thing.text, "Other")
                )

    def place_facts(self, tok: Any) -> None:
        """ "Saginaw, Michigan": the second place contains the first."""
        if (
            tok.ent_type_ == "GPE"
            and tok.dep_ in ("appos", "npadvmod", "conj")
            and (
                tok.head.ent_type_ == "GPE"
                and tok.head.i < tok.i
                and any(t.text == "," for t in tok.doc[tok.head.i : tok.i])
                and tok.dep_ != "conj"
            )
        ):
            self.relate(self.ref(tok.head), "located_in", self.ref(tok))

    def noun_facts(self, noun: Any) -> None:
        """Facts a noun phrase states by itself: "Dev, a data scientist" (is_a), "Moby-Dick,
        a novel by Herman Melville" (wrote)."""
        head_tok = noun.head
        if noun.dep_ == "appos" and noun.lemma_.lower() in _WORKS:
            for by in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "by"):
                for author in (c for c in by.children if c.dep_ == "pobj"):
                    self.relate(self.ref(author), _WORKS[noun.lemma_.lower()], self.ref(head_tok))
        if noun.dep_ == "appos" and (head_tok.pos_ == "PROPN" or head_tok.text[:1].isupper()):
            head = self.ref(head_tok)
            cls = self.phrase(noun)
            if head and cls and noun.lemma_.lower() not in _KIN_NOUNS:
                self.relate(head, "is_a", self.entity(cls, "Other"))
            for prep in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "in"):
                for place in (c for c in prep.children if c.dep_ == "pobj"):
                    if place.ent_type_ in ("GPE", "LOC"):  # "Suwon, a city in South Korea"
                        self.relate(head, "located_in", self.ref(place))
        if noun.lemma_.lower() == "allergy":
            owner = next((c for c in noun.children if c.dep_ == "poss"), None)
            if owner is not None:
                self.allergy(noun, [s for s in [self.ref(owner)] if s], "")

    def retype(self, name: str, type_: str) -> None:
        """A relation's role types its object, over a named-entity label that is only a
        guess ("lives in Lyon": Lyon read as a PERSON) but never over a known person."""
        key = canonical_name(name)
        current = self.entities[key].type if key in self.entities else None
        if current == "Other" or (
            current == "Person" and type_ == "Location" and key not in self.people
        ):
            self.entities[key] = Entity(name=self.entities[key].name, type=type_)  # type: ignore[arg-type]


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
_GROUPS = frozenset(
    (
        "club band team group choir committee league orchestra crew board squad society guild "
        "union party troupe ensemble"
    ).split()
)
# Nouns a preposition names a time or a setting with, not a thing ("on weekends", "at home").
_SETTINGS = frozenset(
    (
        "weekend weekends evening evenings morning mornings night nights afternoon afternoons "
        "home work weekday weekdays summer winter spring autumn fall holiday holidays lunch "
        "breakfast dinner purpose fun living reason while sake"
    ).split()
)
_LEMMAS = {"hates": "hate", "hated": "hate", "hating": "hate", "loves": "love", "uses": "use"}


def _kin(noun: Any) -> str:
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


_TIME_WORD = re.compile(
    rf"(?i:(?:{MONTHS})|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|yesterday|today|tonight|"
    r"tomorrow|weekends?|(?:1[5-9]|20)\d\d|\d{1,2}(?::\d\d)?(?:am|pm)?|\d{1,2}(?:st|nd|rd|th))"
)


def _is_time(tok: Any) -> bool:
    """A date or a time ("in 2016", "in March", "on Thursdays", "until june"): when a fact
    held, never one of its arguments. The named-entity labels when the pipeline has them,
    else the words themselves."""
    return tok.ent_type_ in ("DATE", "TIME") or bool(_TIME_WORD.fullmatch(tok.text))


def _is_name(tok: Any) -> bool:
    """A proper noun, or a capitalised noun the tagger missed ("My cousin Deniz")."""
    return tok.pos_ == "PROPN" or (
        tok.pos_ == "NOUN" and tok.text[:1].isupper() and tok.i > tok.sent.start
    )


def passive_marked(verb: Any) -> bool:
    return any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children)


def _is_kin_word(word: str) -> bool:
    return word in _KIN_NOUNS or (
        word[:4] in ("step", "half") and word[4:].strip("-") in _KIN_NOUNS
    )


def _lemma(tok: Any) -> str:
    low = _LEMMAS.get(tok.lower_, tok.lemma_.lower())
    if low.startswith("co-") or low in ("cofound", "cofounded"):
        low = "found" if "found" in low else low[3:]
    particle = next((c.lower_ for c in tok.children if c.dep_ == "prt"), None)
    return f"{low}_{particle}" if particle else low


# "my employer is X": a relation noun that names a canonical predicate
_RELATION_NOUNS = {"employer": "works_at", "workplace": "works_at", "hometown": "born_in",
                   "birthplace": "born_in", "alma": "studies_at", "school": "studies_at",
                   "university": "studies_at"}  # fmt: skip
# "X hired me": the object is the subject of the canonical fact
_OBJECT_FACTS = {"hire": "works_at", "employ": "works_at", "recruit": "works_at"}

# What a preference for "X in Y" is about: the Y ("answers in British English")
_MEDIA = frozenset(
    (
        "answer reply response explanation message email example code summary note comment doc "
        "documentation output text"
    ).split()
)
_WORKS = {
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
_JOBS = frozenset(("job position internship role post gig placement").split())
_WORK_VERBS = frozenset(("work join start begin intern employ hire volunteer serve").split())

_CAP = r"(?:[A-Z][\w'’\-]*\.?|\d+)"
_TITLE = re.compile(rf"{_CAP}(?:\s+(?:(?:of|the|a|an|&)\s+)*{_CAP})+")
_TITLE_JOINT = re.compile(r"\s(?:of|&)\s")  # not "on": "Acme Robotics on the Atlas project"

_KIN_NOUNS = frozenset(
    (
        "partner wife husband sister brother mother father mom mum dad daughter son friend "
        "colleague boss manager cousin aunt uncle girlfriend boyfriend roommate neighbor "
        "neighbour grandmother grandfather grandma grandpa niece nephew fiancé fiance fiancée "
        "spouse sibling child kid parent mentor coworker teammate doctor dentist therapist "
        "teacher dog cat pet"
    ).split()
)


def utterance(text: str) -> tuple[str, str]:
    """Who says ``text`` and what they say: a transcript turn's speaker ("[date] Ana: ...")
    or the User, and the text without its label (what is parsed)."""
    match = _SPEAKER.match(text)
    if match and match.group(1) not in ("Note", "User", "Update", "Reminder", "Fact", "Todo"):
        return match.group(1), text[match.end() :]
    return "User", text[match.end() :] if match else text


@lru_cache(maxsize=4096)
def extract_one(text: str) -> Extraction:
    """The facts of one memory, from its dependency parse. Remembered per text: a write
    parses its text once, and the consolidation that links it later reads the same result
    (shared: callers must not change it)."""
    speaker, text = utterance(text)
    reader = _Reader(speaker)
    if speaker != "User":
        reader.entity(speaker, "Person")
    doc = syntax.parse(text)
    for sent in doc.sents:
        stripped = sent.text.strip()
        if _SUBJECTLESS.match(stripped) and not any(
            t.dep_ in ("nsubj", "nsubjpass") and t.head.dep_ == "ROOT" and t.i > sent.start
            for t in sent
        ):
            # A note without its subject: read it with one.
            redo = syntax.parse(f"{speaker} {stripped[0].lower()}{stripped[1:]}")
            for s in redo.sents:
                reader.sentence(s)
            continue
        if _SUBJECTLESS_IS.match(stripped):
            redo = syntax.parse(f"{speaker} is {stripped[0].lower()}{stripped[1:]}")
            for s in redo.sents:
                reader.sentence(s)
            continue
        reader.sentence(sent)
    if any(r.subject == speaker or r.object == speaker for r in reader.relations.values()):
        reader.entity(speaker, "Person")
    for rel in reader.relations.values():
        for name in (rel.subject, rel.object):
            if canonical_name(name) not in reader.entities:
                reader.entity(name, "Other")
    return Extraction(
        entities=list(reader.entities.values()), relations=list(reader.relations.values())
    )


class HeuristicExtractor:
    """Facts from each sentence's dependency parse (no LLM)."""

    name = "heuristic"

    async def extract(self, texts: list[str]) -> list[Extraction]:
        return [extract_one(t) for t in texts]
