"""Verb frames: the facts a verb states about its subjects.

Subject-verb-object and verb-preposition-object, with coordination on both sides ("Ana and
Tom live in Vienna and Budapest"), passives written active ("directed by X": X directed),
participles ("a company based in Y"), jobs ("got a job at Globex": works_at) and allergies.
The predicate is the :data:`cranimem_mcp.extraction.lexicon.VERBS` entry for the verb and its
preposition,
or the lemma itself; a negated verb gives ``not_`` before the predicate. A clause that is a
wish, plan, question or condition (:func:`irrealis`) states no fact, and a time or a setting
(:func:`setting`: "in March", "on weekends") is never an argument. The functions take the
text's :class:`~cranimem_mcp.extraction.discourse.Discourse` and add to it.
"""

from __future__ import annotations

import re
from typing import Any

from cranimem_mcp.extraction.discourse import Discourse, set_against, spread
from cranimem_mcp.extraction.lexicon import (
    GROUPS,
    IRREALIS,
    JOBS,
    MEDIA,
    NOT_THINGS,
    OBJECT_FACTS,
    OBJECT_TYPES,
    PAST_AS_ADJ,
    SETTINGS,
    VERBS,
    WORK_VERBS,
    is_kin_word,
    is_time,
    kin_of,
)


def subjects_of(verb: Any) -> list[Any]:
    """The subject tokens of a verb, coordinated ones included; a verb without its own takes its
    head's ("works at Acme and lives in Oslo"), a relative clause its noun."""
    subs = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass", "csubj")]
    if not subs:  # "I've preferred": the parser may hang the subject on the auxiliary
        subs = [g for c in verb.children if c.dep_ in ("aux", "auxpass")
                for g in c.children if g.dep_ in ("nsubj", "nsubjpass")]  # fmt: skip
    if len(subs) == 2 and subs[1].i == subs[0].i + 1 and subs[1].pos_ == "PROPN":
        subs = [subs[0]]  # "My girlfriend Chiara": one subject (named_by reads the name)
    if subs:
        return spread(subs)
    if verb.dep_ in ("conj", "xcomp", "advcl", "parataxis") and verb.head.i != verb.i:
        if verb.dep_ in ("conj", "parataxis") or verb.head.pos_ in ("VERB", "AUX"):
            return subjects_of(verb.head)
    if verb.dep_ in ("relcl", "acl") and verb.head.pos_ in ("NOUN", "PROPN", "PRON"):
        return [verb.head]
    return []


def irrealis(verb: Any) -> bool:
    """Part of a wish, plan, question or condition: no fact."""
    t = verb
    while True:
        if t.lemma_.lower() in IRREALIS and t.i != verb.i:
            return True
        if any(c.dep_ == "aux" and c.lemma_.lower() in IRREALIS | {"will"} for c in t.children):
            return True
        if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for c in t.children):
            return True
        if t.dep_ == "advcl" and generic_condition(t):
            return True
        if t.dep_ == "ccomp" and t.head.i != t.i:  # "I hope we move" / "you should know X"
            return t.head.lemma_.lower() in IRREALIS
        if t.dep_ not in ("xcomp", "conj") or t.head.i == t.i:
            return False
        t = t.head


def generic_condition(verb: Any) -> bool:
    """A clause of "whenever", or of "when" in the present tense: a condition, not an event
    ("login fails when the email has a plus sign"). "When I lived in Paris" happened."""
    words = {c.lower_ for c in verb.children if c.dep_ in ("mark", "advmod")}
    if "whenever" in words:
        return True
    return "when" in words and verb.tag_ in ("VBZ", "VBP")


def contrasts(obj_tok: Any) -> list[Any]:
    """What "X, not Y" sets against an object: Y, however the parser hung the "not" (on Y as
    an apposition of X: "uses pnpm, not npm"; on X, with Y elsewhere: "drinks oat milk, not
    dairy")."""
    out = [c for c in obj_tok.children if c.dep_ == "appos" and set_against(c)]
    doc = obj_tok.doc
    for c in obj_tok.children:
        after = doc[c.i + 1] if c.i + 1 < len(doc) else None
        if c.dep_ == "neg" and c.i > obj_tok.i and after is not None:
            if after.pos_ in ("NOUN", "PROPN") and after not in out:
                out.append(after)
    return out


def instead(tok: Any) -> bool:
    """A coordinated object after "instead of" or "rather than": the one not chosen."""
    if tok.dep_ != "conj":
        return False
    doc = tok.doc
    return any(
        c.dep_ == "cc"
        and c.lower_ in ("of", "than")
        and c.i < tok.i
        and c.i > 0
        and doc[c.i - 1].lower_ in ("instead", "rather")
        for c in tok.head.children
    )


def direct(
    d: Discourse, verb: Any, lemma: str, subjects: list[str], obj_tok: Any, neg: str
) -> None:
    """A verb and one of its objects: the canonical fact, or what the object says by itself (a
    job's place, a pet's name, an allergy)."""
    if is_time(obj_tok):
        return
    if any(c.dep_ == "neg" and c.i < obj_tok.i for c in obj_tok.children) or instead(obj_tok):
        # "doesn't use npm but pnpm" read at "not npm"; "uses Vitest instead of Jest"
        neg = "" if neg else "not_"
    elif neg and any(c.lower_ in ("only", "just") for c in obj_tok.children):
        neg = ""  # "doesn't speak French, only English"
    if lemma == "prefer" and obj_tok.lemma_.lower() in MEDIA:
        for prep in (c for c in obj_tok.children if c.dep_ == "prep" and c.lower_ == "in"):
            for o in spread([c for c in prep.children if c.dep_ == "pobj"]):
                for s in subjects:  # "Prefers replies in Spanish"
                    d.relate(s, neg + "prefers", d.ref(o))
            return
    low = obj_tok.lemma_.lower()
    if lemma == "turn" and obj_tok.like_num:
        for s in subjects:
            d.relate(s, "has_age", d.entity(obj_tok.text, "Other"))
        return
    if low in JOBS and lemma in (
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
            for place in spread([c for c in prep.children if c.dep_ == "pobj"]):
                for s in subjects:
                    d.relate(s, "works_at", d.ref(place))
        return
    if lemma in ("have", "get", "adopt") and low in ("allergy",):
        allergy(d, obj_tok, subjects, neg)
        return
    names = [c for c in obj_tok.children if c.dep_ == "conj" and c.pos_ == "PROPN"]
    if lemma in ("have", "get", "adopt", "raise") and names and is_kin_word(low):
        kin = "child" if low in ("child", "children") else low
        for n in spread(names):  # "has two children, Ellie and Finn"
            for s in subjects:
                d.relate(s, f"{neg}has_{kin}", d.person(d.phrase(n) or n.text))
        return
    named = d.called(obj_tok)
    if lemma in ("have", "get", "adopt", "raise", "rescue") and named is not None:
        for name in d.all_called(obj_tok) or [named]:
            for s in subjects:
                d.relate(s, f"{neg}has_{kin_of(obj_tok)}", name)
        return
    obj = named or d.ref(obj_tok)
    if lemma in OBJECT_FACTS and obj is not None:
        for s in subjects:  # "Umbrella Labs hired me"
            d.relate(obj, neg + OBJECT_FACTS[lemma], s)
        return
    if lemma == "have" and any(c.lower_ in PAST_AS_ADJ for c in obj_tok.lefts):
        return  # "I've preferred mint tea": read as 'preferred', not as having tea
    if lemma in ("have",):
        pred = "owns"
    elif lemma == "join":
        # "joined the chess club" / "joined Soylent Group" (a company's name)
        named = obj_tok.pos_ == "PROPN"
        pred = "member_of" if low in (GROUPS - {"group", "party", "union"} if named
                                      else GROUPS) else "works_at"  # fmt: skip
    elif lemma == "stand" and any(c.lower_ in ("ca", "can") for c in verb.children):
        pred, neg = "dislikes", ""
    else:
        pred = VERBS.get((lemma, None), lemma)
    if obj is not None:
        for s in subjects:
            d.relate(s, neg + pred, obj)
        for other in contrasts(obj_tok):  # "uses pnpm, not npm"
            for s in subjects:
                d.relate(s, ("" if neg else "not_") + pred, d.ref(other))
    obj_type = OBJECT_TYPES.get(pred)
    if obj is not None and obj_type:
        d.retype(obj, obj_type)
    # "teaches chemistry at Kyoto University": a preposition the parser hung on the object
    for prep in (c for c in obj_tok.children if c.dep_ == "prep"):
        if prep.lower_ in ("at", "for") and lemma not in ("have",):
            # "for" a purpose, as on the verb: "prefers imperial units for body weight" gave
            # (User, prefer_for, body weight)
            preposition(d, lemma, prep, subjects, neg, parallel_only=prep.lower_ == "for")


def preposition(
    d: Discourse, lemma: str, prep: Any, subjects: list[str], neg: str, parallel_only: bool = False
) -> None:
    """A verb and one of its prepositions ("lives in Oslo", "works as a nurse at St. Mary's");
    ``parallel_only``: only the objects that parallel the verb's own ("Obsidian for notes and
    Todoist for tasks")."""
    word = prep.lower_
    if prep.ent_type_ and prep.ent_type_ not in ("DATE", "TIME"):
        return  # inside a name: "the Pulitzer Prize for Fiction"
    objects = spread([c for c in prep.children if c.dep_ == "pobj"])
    for o in list(objects):  # "through ten countries, including Austria and Hungary"
        for inc in (
            c for c in o.children if c.dep_ == "prep" and c.lower_ in ("including", "like")
        ):
            if o in objects:
                objects.remove(o)
            objects += spread([c for c in inc.children if c.dep_ == "pobj"])
    if word == "with" and lemma == "found":
        for o in objects:  # "co-founded Fernway with Dana Liu"
            for dobj in (c for c in prep.head.children if c.dep_ == "dobj"):
                d.relate(d.ref(o), "founded", d.ref(dobj))
        return
    if word == "from" and lemma in _CHANGES:
        # "moved from the UK to Canada": the parser hangs "to" on "from"
        for to in (c for c in prep.children if c.dep_ == "prep" and c.lower_ == "to"):
            preposition(d, lemma, to, subjects, neg)
    parallel = bool(objects) and (setting(objects[0]) or word == "for")
    for obj_tok in objects:
        if setting(obj_tok):
            continue
        if (
            parallel
            and obj_tok.i != objects[0].i
            and any(c.dep_ == "prep" for c in obj_tok.children)
        ):
            # "uses VS Code at work and Emacs at home": Emacs is the verb's object
            for s in subjects:
                d.relate(s, neg + VERBS.get((lemma, None), lemma), d.ref(obj_tok))
            continue
        if parallel_only:
            continue
        obj = d.ref(obj_tok)
        if word == "as" and lemma in WORK_VERBS - {"serve"}:
            pred = "is_a"
            # "works as a nurse at St. Mary's": the place hangs on the role
            for inner in (c for c in obj_tok.children if c.dep_ == "prep"):
                preposition(d, lemma, inner, subjects, neg)
        elif word in ("in", "on", "for") and obj_tok.lemma_.lower() in GROUPS:
            pred = "member_of"
        else:
            pred = VERBS.get((lemma, word), f"{lemma}_{word}")
        if pred == "works_at" and obj_tok.lemma_.lower() in OFFICES:
            pred = "based_in"  # "I'm working at the Boulder office": where, not the employer
            for employer in _office_of(obj_tok):  # "Google's London office"
                for s in subjects:
                    d.relate(s, neg + "works_at", d.ref(employer))
        if (
            pred == "based_in"
            and all(d.is_person(s) for s in subjects)
            and obj_tok.lemma_.lower() not in WORKPLACES
        ):
            pred = "lives_in"  # "I'm based in Toronto"; "in the Lisbon office" is no home
        moved = pred == "lives_in" and lemma in ("move", "relocate")
        verb = prep.head.head if prep.head.dep_ == "prep" else prep.head
        if moved and any(c.dep_ == "dobj" for c in verb.children):
            pred, moved = f"{lemma}_{word}", False  # "We moved the database to AWS": not us
        elif moved and any(technical(t) for t in (obj_tok, *_moved_from(verb))):
            pred, moved = "uses", False  # "We moved from yarn to pnpm": a switch, not a home
        if moved and not any(_someone(d, s) for s in subjects):
            pred = "located_in"  # "Our office moved to Manchester"
        for s in subjects:
            # a move ends where the subject was, a person's home or an office's place
            d.relate(s, neg + pred, obj, changed=(moved or lemma == "promote") and not neg)
        if obj is not None and pred in OBJECT_TYPES:
            d.retype(obj, OBJECT_TYPES[pred])


_CHANGES = frozenset(("move", "relocate", "switch", "migrate", "change"))


def _office_of(office: Any) -> list[Any]:
    """Whose office it is: "Google's London office", "the Denver office of Stripe"."""
    owners = [c for c in office.children if c.dep_ == "poss" and c.pos_ == "PROPN"]
    for of in (c for c in office.children if c.dep_ == "prep" and c.lower_ == "of"):
        owners += [c for c in of.children if c.dep_ == "pobj" and c.pos_ == "PROPN"]
    return owners


def _moved_from(verb: Any) -> list[Any]:
    """What "moved from X" left: the objects of the verb's "from"."""
    froms = [c for c in verb.children if c.dep_ == "prep" and c.lower_ == "from"]
    return [o for f in froms for o in spread([c for c in f.children if c.dep_ == "pobj"])]


# Where one works, not lives ("I'm based in the Lisbon office").
WORKPLACES = frozenset(("office", "hq", "headquarters", "branch", "site", "campus", "lab",
                        "studio", "plant", "factory", "warehouse", "store", "hub", "team",
                        "department", "clinic", "hospital", "school"))  # fmt: skip

# A workplace that is no employer's name ("at the Boulder office"; a hospital may be).
OFFICES = frozenset(("office", "hq", "headquarters", "branch", "site", "campus"))

# Places people write as acronyms ("I moved to the UK", "We relocated to LA").
PLACE_ACRONYMS = frozenset(
    "US USA UK UAE EU NYC LA SF DC NZ HK KSA PRC ROK DRC NSW BC NL DE".split()
)


def technical(tok: Any) -> bool:
    """A name written as software and services are, never as places: inner capitals
    ("CircleCI", "GraphQL"), a dot or a digit inside ("Fly.io", "k8s"), an acronym other
    than a place's ("AWS", "REST"; not "UK") or a lowercase name ("pnpm")."""
    text = tok.text
    return (
        bool(re.search(r"[a-z][A-Z]|\w[.]\w|[A-Za-z]\d", text))
        or (len(text) >= 2 and text.isupper() and text.isalpha() and text not in PLACE_ACRONYMS)
        or (tok.pos_ == "PROPN" and text.islower())
    )


def _someone(d: Discourse, name: str) -> bool:
    """A person, a relative or anyone named ("Anna"), not a thing ("office")."""
    return d.is_person(name) or name[:1].isupper() or is_kin_word(name.lower().split()[-1])


def setting(tok: Any) -> bool:
    """A time or a setting, not a thing: "in March", "on weekends", "in every editor"."""
    return (
        is_time(tok)
        or tok.lemma_.lower() in NOT_THINGS
        or tok.lower_ in SETTINGS
        or any(
            c.dep_ == "det" and c.lower_ in ("every", "each", "all", "any") for c in tok.children
        )
    )


def participle(d: Discourse, verb: Any) -> None:
    """ "a film directed by X", "a company based in Y", "a beagle called Biscuit"."""
    head = verb.head
    subject = d.stands_for(head)
    lemma = verb.lemma_.lower()
    for child in verb.children:
        if child.dep_ == "agent":
            for a in spread([c for c in child.children if c.dep_ == "pobj"]):
                d.relate(d.ref(a), VERBS.get((lemma, None), lemma), subject)
        elif child.dep_ == "prep":
            preposition(d, lemma, child, [subject] if subject else [], "")


def allergy(d: Discourse, noun: Any, subjects: list[str], neg: str) -> None:
    """ "has a peanut allergy" / "an allergy to cats"."""
    things = [c for c in noun.children if c.dep_ in ("compound", "amod", "nmod")]
    for prep in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "to"):
        things += [c for c in prep.children if c.dep_ == "pobj"]
    for thing in spread(things):
        for s in subjects:
            d.relate(s, neg + "allergic_to", d.entity(d.phrase(thing) or thing.text, "Other"))
