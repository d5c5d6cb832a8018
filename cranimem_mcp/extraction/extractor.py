"""The heuristic extractor: the linkage engine's model (paper B.4) when no LLM answers.

A real fallback, not a stub. It reads each sentence's dependency parse (spaCy's small English
pipeline, :mod:`cranimem_mcp.extraction.syntax`) and turns clauses into facts: subject-verb-object
and
verb-preposition-object with coordination on both sides, copulas ("Tom is my brother",
"Biscuit is a beagle"), possessives and appositions ("my sister Ana", "User's manager is
..."), relative clauses and participles ("which is based in", "directed by"), passives
written active, negation (``not_`` before the predicate: "doesn't like X" never gives
``likes``), and he/she resolved to the last person named. First person and "the user" are
the entity ``User`` (in a turn "[date] Name: ...", the speaker). Canonical predicates
come from a small table of verb lemmas (:data:`VERBS`); any other verb keeps its lemma (and
preposition). Entity types come from a name's role in its facts (what one lives in is a
Location, works at an Organization; a relation word names a Person); the pipeline runs
without its named-entity recogniser (:data:`cranimem_mcp.extraction.syntax.EXCLUDED`, for cost), and
the rules read its labels only when it is there.

This module reads a text: the speaker, subjectless notes, and each sentence's clauses handed
to their readers, :mod:`~cranimem_mcp.extraction.verb_frames` (verbs and their objects) and
:mod:`~cranimem_mcp.extraction.copulas` (copulas, attributes, appositions), which add to the text's
:class:`~cranimem_mcp.extraction.discourse.Discourse` (its entities, facts and what its pronouns
refer
to); the words they know are in :mod:`~cranimem_mcp.extraction.lexicon`. :data:`DATE`,
:data:`FIRST_PERSON` and :func:`proper_spans` are the lexicon's cues the heuristic tagger
shares, importable from here; entity names merge by
:func:`cranimem_mcp.naming.canonical_name`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from cranimem_mcp.conversation import transcript
from cranimem_mcp.extraction import syntax
from cranimem_mcp.extraction.copulas import (
    CHANGES_TO,
    adjective,
    changed_to,
    copula,
    copula_subjects,
    misread_role,
    noun_facts,
    place_facts,
    role_change,
    schedules,
)
from cranimem_mcp.extraction.discourse import Discourse, polarity, spread
from cranimem_mcp.extraction.lexicon import (
    DATE,
    ENT_TYPES,
    FIRST_PERSON,
    FIRST_PRONOUNS,
    JOBS,
    PAST_AS_ADJ,
    SKIP_ENTS,
    THIRD_PRONOUNS,
    VERBS,
    is_time,
    kin_of,
    passive_marked,
    proper_spans,
    verb_lemma,
)
from cranimem_mcp.extraction.verb_frames import (
    direct,
    generic_condition,
    irrealis,
    participle,
    preposition,
    setting,
    subjects_of,
)
from cranimem_mcp.models import Extraction
from cranimem_mcp.naming import canonical_name

__all__ = [
    "DATE",
    "FIRST_PERSON",
    "HeuristicExtractor",
    "extract_one",
    "proper_spans",
    "utterance",
]

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


# Words that state a change: with one of them, a preference ends the one it replaces.
_CHANGE = re.compile(
    r"\b(?:now|these days|nowadays|since|starting (?:in|from)|started|anymore|any more|"
    r"no longer|switched|instead|new|moved|from now on|changed)\b",
    re.IGNORECASE,
)
CHANGES_END = frozenset({"prefers"})
SELDOM = frozenset({"rarely", "seldom", "hardly", "barely", "scarcely"})


def sentence(d: Discourse, sent: Any) -> None:
    """One sentence's facts: each verb's clause, each noun phrase's own facts, and the
    named people "he" and "she" may refer to next."""
    for ent in sent.ents:
        if ent.label_ not in SKIP_ENTS:
            text = ent.text[4:] if ent.text.lower().startswith("the ") else ent.text
            d.entity(text, ENT_TYPES.get(ent.label_, "Other"))
            if ent.label_ == "PERSON" and ent.start < sent.end:
                pass
    for tok in sent:
        if tok.pos_ in ("VERB", "AUX") and tok.dep_ not in ("aux", "auxpass"):
            clause(d, tok)
        elif tok.pos_ == "NOUN":
            d.named_by(tok)
            noun_facts(d, tok)
            misread_role(d, tok)
        elif tok.pos_ == "PROPN":
            place_facts(d, tok)
        if tok.lower_ in PAST_AS_ADJ and tok.dep_ == "amod" and tok.i > sent.start:
            before = tok.doc[tok.i - 1]
            if before.lower_ in ("'ve", "’ve", "have", "had", "'d") and before.i > sent.start:
                before = tok.doc[before.i - 1]  # "I've preferred mint tea"
            if (
                before.pos_ == "PRON"
                and before.dep_ != "poss"
                and before.lower_ in (FIRST_PRONOUNS | THIRD_PRONOUNS)
            ):
                pred = VERBS.get((PAST_AS_ADJ[tok.lower_], None), PAST_AS_ADJ[tok.lower_])
                d.relate(d.ref(before), pred, d.ref(tok.head))
        if tok.text.isdigit() and tok.dep_ == "appos" and tok.head.pos_ == "PROPN":
            d.relate(d.ref(tok.head), "has_age", d.entity(tok.text, "Other"))
        if tok.ent_type_ == "PERSON" and tok.dep_ in ("nsubj", "nsubjpass", "appos", "attr",
                                                      "pobj", "dobj", "conj"):  # fmt: skip
            d.last_person = d.phrase(tok) or d.last_person


def clause(d: Discourse, verb: Any) -> None:
    """A verb's clause, handed to the reader of its kind: a copula, a participle, a verb
    frame; nothing for a wish or a plan. A state in the past ("I lived in Berlin", "My first
    manager was Karen") ends no current value, nor does a denial limited to a time, a place or
    a manner ("I don't speak Spanish at work"): their facts are marked ``functional`` False.
    "I used to live in Boston" is a denial of the present, and still ends Boston."""
    before = set(d.relations)
    _clause(d, verb)
    past, limited = past_state(verb), limited_denial(verb)
    for key in d.relations.keys() - before:
        rel = d.relations[key]
        denial = rel.predicate.startswith("not_")
        if rel.functional is None and ((past and not denial) or (limited and denial)):
            rel.functional = False  # ends nothing ("I used to live in Boston" still does)


# Verbs of a state, which in the past tense say what held then, not a change.
STATES = frozenset(("be", "live", "work", "stay", "reside", "base", "manage", "date"))


def past_state(verb: Any) -> bool:
    """A state verb in the simple past or the pluperfect ("lived", "was", "had worked", "was
    based"), or after "used to"; not the present perfect ("I've lived in Seoul")."""
    if verb_lemma(verb) not in STATES:
        return False
    if verb.dep_ == "xcomp" and verb.head.lower_ == "used":
        return True
    aux = [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
    if any(c.lower_ in ("have", "has", "'ve", "’ve") for c in aux):
        return False
    return verb.tag_ == "VBD" or any(c.tag_ == "VBD" for c in aux)


# Adverbs that leave a denial whole ("I really don't like sushi", "not ... anymore").
WHOLE = frozenset(
    "really honestly definitely certainly actually totally absolutely literally anymore longer "
    "all ever yet simply just generally personally strictly entirely".split()
)


def limited_denial(verb: Any) -> bool:
    """A denial limited to a time, a place, a purpose or a manner ("I don't drink coffee after
    3pm", "I don't speak Spanish at work", "I don't play tennis competitively"): it says
    nothing of the fact without the limit, so it ends no fact."""
    if not any(c.dep_ == "neg" for c in verb.children):
        return False
    has_object = any(c.dep_ == "dobj" for c in verb.children)
    for c in verb.children:
        if c.dep_ == "prep" and c.lower_ not in ("of", "instead"):
            objs = [o for o in c.children if o.dep_ == "pobj"]
            if has_object or any(setting(o) for o in objs):
                return True
        if (
            c.dep_ == "advmod"
            and c.lower_ not in WHOLE
            and (c.lower_.endswith("ly") or c.lower_ in ("often", "always", "much", "everywhere"))
        ):
            return True
    return False


def _clause(d: Discourse, verb: Any) -> None:
    if irrealis(verb):
        if generic_condition(verb):  # "When Ana travels, she ...": who "she" is
            for t in subjects_of(verb):
                d.ref(t)
        return
    if any(
        t.dep_ == "advmod" and t.lower_ in SELDOM
        for c in verb.children
        if c.dep_ == "advmod"
        for t in (c, *c.children)
    ):
        return  # "I rarely drink alcohol", "hardly ever": neither "drinks" nor "never drinks"
    if verb.dep_ == "xcomp" and any(c.dep_ == "neg" for c in verb.head.children):
        return  # "I don't like running in the rain": no run_in rain
    toks = copula_subjects(verb) if verb_lemma(verb) == "be" else subjects_of(verb)
    subjects = [s for s in (d.ref(t) for t in toks if not is_time(t)) if s]
    if verb.lemma_.lower() in ("call", "name") and not passive_marked(verb):
        return  # "a beagle called Biscuit": read by called()
    if (
        verb.dep_ == "acl"
        and verb.tag_ == "VBN"
        and not any(c.dep_ in ("nsubj", "nsubjpass") for c in verb.children)
    ):
        participle(d, verb)
        return
    if not subjects and not schedules(toks):  # "The deploy day is ...": a thing by its day
        return
    contrast = contrasted(verb)
    negated = any(
        c.dep_ == "neg" and (contrast is None or c.i != contrast.i) for c in verb.children
    )
    neg = "not_" if negated or no_longer(verb) else ""
    lemma = verb_lemma(verb)
    if lemma == "get" and any(c.dep_ == "aux" and c.lemma_ == "have" for c in verb.children):
        lemma = "have"  # "I've got a Nikon"
    passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children) or (
        verb.tag_ == "VBN" and any(c.dep_ == "agent" for c in verb.children)
    )  # "directed by X and produced by Y": the second verb has only its agent
    if any(
        c.dep_ in ("preconj", "det") and c.lower_ == "neither"
        for t in verb.subtree
        for c in t.children
    ):
        neg = "not_"  # "eats neither beef nor pork", "Neither Ana nor Tom likes sushi"
    if lemma == "be":
        copula(d, verb, subjects, neg)
        return
    if not neg and lemma in CHANGES_TO and changed_to(d, verb):
        return
    if not neg and role_change(d, verb, lemma, subjects):
        return
    if lemma in ("call", "name") and passive:  # "My dog is called Pretzel"
        for n in (c for c in verb.children if c.dep_ in ("oprd", "attr") and c.pos_ == "PROPN"):
            for st in subjects_of(verb):
                owner = next((c for c in st.children if c.dep_ == "poss"), None)
                if owner is not None and st.pos_ == "NOUN":
                    name = d.entity(d.phrase(n) or n.text, "Other")
                    d.relate(d.ref(owner), f"has_{kin_of(st)}", name)
        return
    has_object = any(c.dep_ == "dobj" for c in verb.children)
    jobs = [c for c in verb.children if c.dep_ == "dobj" and c.lemma_.lower() in JOBS]
    if jobs:
        preps = [c for t in (verb, *jobs) for c in t.children if c.dep_ == "prep"]
        for prep in (p for p in preps if p.lower_ in ("at", "with")):
            for place in spread([c for c in prep.children if c.dep_ == "pobj"]):
                for s in subjects:  # "I got a job at Globex"; "I quit my job at Acme"
                    left = {"quit": "quit", "leave": "leave", "lose": "leave"}.get(lemma)
                    d.relate(s, (neg + left) if left else (neg + "works_at"), d.ref(place))
        return
    for child in verb.children:
        if child.dep_ in ("npadvmod", "dobj") and child.like_num and lemma == "turn":
            for s in subjects:  # "Ava just turned 6", "I turned 35 today"
                d.relate(s, neg + "has_age", d.entity(child.text, "Other"))
        elif (
            child.dep_ in ("dobj", "attr", "oprd")
            or (child.dep_ == "xcomp" and child.pos_ == "NOUN")
            or (not has_object and bare_object(verb, lemma, child))
        ) and not passive:
            against = contrast is not None and child.i > contrast.i  # "..., not Docker"
            said = ("" if neg else "not_") if against else neg
            for obj_tok in spread([child]):
                direct(d, verb, lemma, subjects, obj_tok, polarity(obj_tok, said))
        elif child.dep_ == "prep" and has_object and child.lower_ == "for":
            # a purpose ("uses Linear for issue tracking"), not a fact; but "Obsidian
            # for notes and Todoist for tasks" holds a second object
            preposition(d, lemma, child, subjects, neg, parallel_only=True)
            continue
        elif child.dep_ == "agent" and passive:
            for obj_tok in spread([c for c in child.children if c.dep_ == "pobj"]):
                agent = d.ref(obj_tok)
                pred = "works_at" if lemma == "employ" else VERBS.get((lemma, None), lemma)
                for s in subjects:
                    if lemma == "employ":
                        d.relate(s, neg + pred, agent)
                    else:
                        d.relate(agent, neg + pred, s)
        elif (
            child.dep_ == "prep"
            and child.lower_ == "of"
            and child.i
            and child.nbor(-1).lower_ == "instead"
        ):
            for obj_tok in spread([c for c in child.children if c.dep_ == "pobj"]):
                # "use Vitest instead of Jest": the object not chosen
                direct(d, verb, lemma, subjects, obj_tok, "" if neg else "not_")
        elif child.dep_ == "prep" and not (neg and has_object):
            # "We don't use Docker Compose in production": the denial is of the object; the
            # place is where, not a second thing denied ("not_use_in production")
            preposition(d, lemma, child, subjects, neg)
        elif child.dep_ == "acomp":
            for adj in spread([child]):
                adjective(d, adj, subjects, neg)


def contrasted(verb: Any) -> Any | None:
    """The "not" of "We use Podman now, not Docker": hung on the verb by the parser, after an
    object of it, it denies the object after it, not the verb (None: no such "not")."""
    objects = [c.i for c in verb.children if c.dep_ == "dobj"]
    return next(
        (c for c in verb.children
         if c.dep_ == "neg" and c.i > verb.i and any(verb.i < o < c.i for o in objects)),
        None,
    )  # fmt: skip


def no_longer(verb: Any) -> bool:
    """ "I no longer work at Acme", "I'm no longer vegetarian" (the "no" hangs on "longer",
    not on the verb), "I stopped working at Acme", "I used to live in Boston": the clause
    denies what it names now (a "used to" state held once; what is stored is that it is
    over, the memory's text keeps the rest)."""
    if verb.dep_ == "xcomp" and verb.tag_ == "VBG" and verb_lemma(verb.head) in ("stop", "quit"):
        return True
    if (
        verb.dep_ == "xcomp"
        and verb.head.lower_ == "used"
        and verb.head.tag_ == "VBD"  # "a lamp is used to illuminate": no "used to"
        and not any(c.dep_ in ("auxpass", "nsubjpass", "dobj") for c in verb.head.children)
        and any(c.dep_ == "nsubj" for c in verb.head.children)  # "a term used to refer": no
        and any(c.dep_ == "aux" and c.lower_ == "to" for c in verb.children)
    ):
        return True
    heads = [verb, *(c for c in verb.children if c.dep_ in ("acomp", "attr"))]
    return any(
        c.dep_ == "advmod" and c.lower_ == "longer" and any(g.lower_ == "no" for g in c.children)
        for h in heads
        for c in h.children
    )


# Verbs whose object the small parser reads as an adverb or a verb when it is one bare word
# at the end of the clause ("I hate cilantro": an adverb; "I can't eat gluten": a verb).
_BARE_OBJECT_VERBS = frozenset(
    "like love enjoy adore prefer hate dislike detest loathe eat drink avoid".split()
)


# Adverbs of time that may close such a clause ("I don't like running anymore").
_TRAILING = frozenset("anymore now again either too".split())


def bare_object(verb: Any, lemma: str, child: Any) -> bool:
    """The one word right after a verb that takes an object, nothing hanging on it and the
    clause ending there: an object the parser tagged as something else; a gerund is the
    activity ("I enjoy hiking", "I hate flying")."""
    if lemma not in _BARE_OBJECT_VERBS or child.i != verb.i + 1:
        return False
    deps = ("xcomp", "advmod", "acomp", "ccomp", "advcl")
    if child.dep_ not in deps or child.pos_ not in ("VERB", "ADJ"):
        return False
    if any(
        c.dep_ not in ("cc", "conj") and c.lower_ not in _TRAILING for c in child.children
    ):  # "... and olives": spread; "running anymore": the activity, no longer done
        return False
    end = child.right_edge.i + 1
    return end >= len(child.doc) or child.doc[end].is_punct or child.doc[end].is_sent_start


def utterance(text: str) -> tuple[str, str]:
    """Who says ``text`` and what they say: a transcript turn's speaker ("[8 May, 2023] Ana:
    ...") or the User, and the text without its stamp, speaker or label (what is parsed): a
    note's label ("Note:", "Decision:") is nobody (:mod:`cranimem_mcp.conversation.transcript`)."""
    who, said = transcript.utterance(text)
    return who or "User", said


@lru_cache(maxsize=4096)
def extract_one(text: str) -> Extraction:
    """The facts of one memory, from its dependency parse. Remembered per text: a write
    parses its text once, and the consolidation that links it later reads the same result
    (shared: callers must not change it)."""
    speaker, text = utterance(text)
    reader = Discourse(speaker)
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
                sentence(reader, s)
            continue
        if _SUBJECTLESS_IS.match(stripped):
            redo = syntax.parse(f"{speaker} is {stripped[0].lower()}{stripped[1:]}")
            for s in redo.sents:
                sentence(reader, s)
            continue
        sentence(reader, sent)
    if any(r.subject == speaker or r.object == speaker for r in reader.relations.values()):
        reader.entity(speaker, "Person")
    for rel in reader.relations.values():
        for name in (rel.subject, rel.object):
            if canonical_name(name) not in reader.entities:
                reader.entity(name, "Other")
    relations = list(reader.relations.values())
    if _CHANGE.search(text):
        # A stated change ("these days", "since 2019", "I switched to") ends the old value of
        # a preference, which is many-valued otherwise: "I prefer metric units for recipes"
        # leaves "I prefer dark mode" alone (docs/RESULTS.md, "Facts change only when...").
        relations = [
            r.model_copy(update={"functional": True}) if r.predicate in CHANGES_END else r
            for r in relations
        ]
    return Extraction(entities=list(reader.entities.values()), relations=relations)


class HeuristicExtractor:
    """Facts from each sentence's dependency parse (no LLM)."""

    name = "heuristic"

    async def extract(self, texts: list[str]) -> list[Extraction]:
        return [extract_one(t) for t in texts]
