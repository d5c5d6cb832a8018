"""Copulas, attributes and appositions: the facts of "X is Y" and of noun phrases.

"Tom is my brother" (the owner has_brother Tom), "Biscuit is a beagle" (is_a), "User's
manager is Priya" and "my preferred editor is Helix" (a relation noun or a preference names
the predicate), "I'm 34" (has_age), "I'm vegetarian" and "allergic to shellfish"
(adjectives), "is in a book club" (member_of), and the facts a noun phrase states by itself:
"Dev, a data scientist" (is_a), "Moby-Dick, a novel by Herman Melville" (wrote), "Saginaw,
Michigan" (located_in). The functions take the text's
:class:`~cranimem_mcp.extraction.discourse.Discourse` and add to it.
"""

from __future__ import annotations

from typing import Any

from cranimem_mcp.extraction.discourse import Discourse, acronym, polarity, spread
from cranimem_mcp.extraction.lexicon import (
    GROUPS,
    IDENTITY_ADJ,
    KIN_NOUNS,
    NOUN_PREPS,
    RELATION_NOUNS,
    WORKS,
    is_kin_word,
    is_name,
    is_time,
    is_time_word,
    kin_of,
    misread_name,
)
from cranimem_mcp.extraction.verb_frames import (
    allergy,
    participle,
    setting,
    subjects_of,
    technical,
)
from cranimem_mcp.naming import canonical_name

# What "my <noun> is X" names as the owner's job title.
JOB_NOUNS = frozenset(("title", "role", "position", "designation"))
STUDENTS = frozenset(("student", "undergrad", "undergraduate", "postdoc", "freshman",
                      "sophomore", "junior", "senior", "candidate"))  # fmt: skip


# Who is at a place without working there ("a patient at St. Mary's").
NOT_STAFF = frozenset(("member", "regular", "fan", "customer", "patient", "guest", "client",
                       "visitor", "resident", "tourist", "passenger"))  # fmt: skip


def copula_subjects(verb: Any) -> list[Any]:
    """A copula's subject tokens, "the name of X" read as X ("The name of my cat is Miso")."""
    return [named_thing(t) or t for t in subjects_of(verb)]


def named_thing(tok: Any) -> Any | None:
    """The noun that "the name of <noun>" names ("my dog", "a volcanic island"), else None.
    "X is the name of my dog" says what "X is my dog" says; "my dog's name" is read as is."""
    if tok.lemma_.lower() != "name" or tok.pos_ != "NOUN":
        return None
    if any(c.dep_ == "poss" for c in tok.children):
        return None
    of = next((p for p in tok.children if p.dep_ == "prep" and p.lower_ == "of"), None)
    obj = next((c for c in of.children if c.dep_ == "pobj"), None) if of is not None else None
    return obj if obj is not None and obj.pos_ == "NOUN" else None


def copula(d: Discourse, verb: Any, subjects: list[str], neg: str) -> None:
    """ "X is Y", "X is allergic to Y", "X is in Y": the attributes, adjectives and prepositions of
    a copula."""
    subj_toks = copula_subjects(verb)
    for child in verb.children:
        if child.dep_ == "attr":
            for attr in spread([child]):
                attribute(d, named_thing(attr) or attr, subj_toks, subjects, polarity(attr, neg))
        elif child.dep_ == "npadvmod" and is_time(child) and schedules(subj_toks):
            # "The deploy day is now Thursday": the parser reads the day as an adverb
            scheduled(d, subj_toks, child, polarity(child, neg))
        elif child.dep_ == "acomp" and (age := years_old(child)):
            for s in subjects:  # "I'm 34 years old"
                d.relate(s, neg + "has_age", d.entity(age, "Other"))
        elif child.dep_ == "acomp":
            for adj in spread([child]):
                if adj.pos_ in ("NOUN", "PROPN") or misread_name(adj) or names_a_value(subj_toks):
                    attribute(d, adj, subj_toks, subjects, polarity(adj, neg))  # a mislabelled attr
                else:
                    adjective(d, adj, subjects, polarity(adj, neg))
        elif child.dep_ == "prep":
            word = child.lower_
            for obj_tok in spread([c for c in child.children if c.dep_ == "pobj"]):
                if is_time(obj_tok):
                    continue
                if word in ("in", "on", "with") and obj_tok.lemma_.lower() in GROUPS:
                    pred = "member_of"  # "is in a book club called Chapter Eleven"
                else:
                    pred = {"in": "located_in", "from": "from",
                            "into": "likes"}.get(word, f"be_{word}")  # fmt: skip
                for s in subjects:
                    d.relate(s, neg + pred, d.ref(obj_tok))


def years_old(adj: Any) -> str | None:
    """The number of "34 years old", else None."""
    if adj.lemma_.lower() != "old":
        return None
    for years in (c for c in adj.children if c.dep_ == "npadvmod" and c.lemma_ == "year"):
        for n in years.children:
            if n.dep_ == "nummod" and n.text.isdigit() and int(n.text) < 130:
                return n.text
    return None


def names_a_value(subj_toks: list[Any]) -> bool:
    """ "my preferred drink is ...", "my employer is ...": what follows is a name, whatever
    the parser labels it."""
    for st in subj_toks:
        mods = {c.lower_ for c in st.children if c.dep_ in ("amod", "compound")}
        if any(c.dep_ == "poss" for c in st.children) and (
            st.lemma_.lower() in RELATION_NOUNS or mods & {"preferred", "favorite", "favourite"}
        ):
            return True
    return False


def attribute(d: Discourse, attr: Any, subj_toks: list[Any], subjects: list[str], neg: str) -> None:
    """What "X is <attr>" says: an age, a relation to an owner ("my brother"), a value of a
    relation noun ("my employer"), a class (is_a) and the prepositions on it."""
    if is_time(attr) and schedules(subj_toks):
        scheduled(d, subj_toks, attr, neg)
        return
    if (amount := measure(attr)) and subj_toks and all(_a_measured(t) for t in subj_toks):
        # "The API rate limit is 100 requests per minute", "The batch size is 64": the
        # thing's one value at a time (it was "limit is_a requests", "batch size has_age 64")
        for t in subj_toks:
            thing = d.entity(d.phrase(t) or t.text, "Other")
            d.relate(thing, neg + "has_value", d.entity(amount, "Other"), changed=not neg)
        return
    if attr.text.isdigit() and int(attr.text) < 130 and not _a_thing(subj_toks):
        if any(c.dep_ == "mark" for c in attr.head.children) or attr.head.dep_ == "advcl":
            return  # "when I was 19"
        for s in subjects:
            d.relate(s, neg + "has_age", d.entity(attr.text, "Other"))
        return
    owner = next((c for c in attr.children if c.dep_ == "poss"), None)
    of = [p for p in attr.children if p.dep_ == "prep" and p.lower_ == "of"]
    if attr.pos_ == "NOUN" and (
        (owner is not None and (is_kin_word(attr.lemma_.lower()) or kin_of(attr) in ("dog", "cat")))
        or (of and attr.lemma_ in KIN_NOUNS)
    ):
        # "Tom is my brother" / "Tom is the brother of Ana"
        possessor = d.ref(owner) if owner is not None else None
        if possessor is None and of:
            objs = [c for c in of[0].children if c.dep_ == "pobj"]
            possessor = d.ref(objs[0]) if objs else None
        for s in subjects:
            d.relate(possessor, f"{neg}has_{kin_of(attr)}", s)
            if attr.lemma_.lower() in KIN_NOUNS and kin_of(attr) not in ("dog", "cat", "pet"):
                d.person(s, subject=True)
                d.people.add(canonical_name(s))
        if attr.lemma_.lower() in KIN_NOUNS or owner is not None:
            return
    # "My manager is Lena" / "User's manager is Priya Raman" / "User's preferred editor
    # is Helix"
    for st in subj_toks:
        sowner = next(
            (c for part in _with_misread(st) for c in part.children if c.dep_ == "poss"), None
        )
        if st.lemma_.lower() == "name" and sowner is not None and sowner.pos_ == "NOUN":
            # "My husband's name is Gabriel" / "partner's name is Hemi"
            owner2 = next((c for c in sowner.children if c.dep_ == "poss"), None)
            who = d.ref(owner2) if owner2 is not None else d.speaker
            name = d.person(d.phrase(attr) or attr.text, subject=True)
            d.people.add(canonical_name(name))
            d.relate(who, f"{neg}has_{kin_of(sowner)}", name)
            return
        if st.pos_ != "NOUN" or sowner is None or d.named_by(st) is not None:
            continue
        mods = {c.lower_ for c in st.children if c.dep_ in ("amod", "compound")}
        # "My new dentist is ...", "My partner is now ...": the old value has ended.
        changed = "new" in mods or any(
            c.dep_ == "advmod" and c.lower_ == "now" for c in attr.head.children
        )
        if mods & {"preferred", "favorite", "favourite"}:
            obj = d.ref(attr) or d.entity(d.phrase(attr) or attr.text, "Other")
            if "preferred" in mods or st.tag_ != "NN":
                # "my preferred editor" (prefers); "my favourite bands are ..." (likes)
                pred = "prefers" if "preferred" in mods else "likes"
                d.relate(d.ref(sowner), neg + pred, obj)
            else:  # "My favourite band is Wilco": one favourite band at a time
                pred = f"has_favorite_{_role(st)}"
                d.relate(d.ref(sowner), neg + pred, obj, changed=not neg)
            return
        if st.lemma_.lower() in JOB_NOUNS and sowner.pos_ == "PRON":
            # "My job title is data analyst", "My role is tech lead": one at a time
            title = d.entity(d.phrase(attr) or attr.text, "Other")
            d.relate(d.ref(sowner), neg + "has_job_title", title)
            return
        if _a_value(attr) and not is_kin_word(st.lemma_.lower()):
            # "My phone number is 555-0199", "My email is jane@example.com": the owner's,
            # as written (it was "(phone number, is_a, 555)")
            if not _continues_a_value(attr):  # "07700 900123": read with "07700"
                relation = "_".join((d.phrase(st) or st.lemma_).lower().split())
                value = d.entity(_written(attr), "Other")
                d.relate(d.ref(sowner), f"{neg}has_{relation}", value)
            return
        if attr.pos_ == "PROPN" or st.lemma_.lower() in RELATION_NOUNS:
            name = d.ref(attr) or d.entity(attr.text, "Other")
            pred = _relation_to(st)
            d.relate(d.ref(sowner), neg + pred, name, changed=changed and not neg)
            if name and (attr.ent_type_ in ("PERSON", "") or st.lemma_ in KIN_NOUNS):
                d.retype(name, "Person")
                d.last_person = name
            return
    low = attr.lemma_.lower()
    if low == "fan":
        for c in attr.children:
            if c.dep_ == "compound" and c.pos_ == "PROPN":  # "a huge Arsenal fan"
                for s in subjects:
                    d.relate(s, neg + "likes", d.ref(c))
    cls = d.phrase(attr)
    if low in ("member", "part", "fan", "one", "kind", "type") or owner is not None:
        cls = None  # "piano is my main instrument": a relation to the owner, not a class
    if cls and is_name(attr) and subj_toks and all(_a_role(t) for t in subj_toks):
        # "The tech lead is Priya": Priya is the tech lead, not the other way round; "the
        # staging database": the one at a time (is_the), unless the role is relative
        for t in subj_toks:
            pred = "is_the" if one_holder(t) else "is_a"
            d.relate(d.ref(attr), neg + pred, d.entity(d.phrase(t) or t.text, "Other"))
        return
    if cls and not (attr.pos_ == "PRON"):
        # "Omar is the new tech lead": the role's one holder; "Tom is a teacher": a class; "I'm
        # a senior developer now": a class that changed (it ends the junior developer)
        pred = "is_the" if attr.pos_ != "PROPN" and one_holder(attr) else "is_a"
        now = any(c.dep_ == "advmod" and c.lower_ == "now" for c in attr.head.children)
        for s in subjects:
            d.relate(
                s,
                neg + pred,
                d.entity(cls, "Other") if attr.pos_ != "PROPN" else d.ref(attr),
                changed=now and pred == "is_a" and attr.pos_ != "PROPN" and not neg,
            )
    for prep in (c for c in attr.children if c.dep_ == "prep"):
        key = (attr.lemma_.lower(), prep.lower_)
        for obj_tok in spread([c for c in prep.children if c.dep_ == "pobj"]):
            if is_time(obj_tok):
                continue
            pred = NOUN_PREPS.get(key)
            if (
                pred is None
                and prep.lower_ in ("in", "near")
                and obj_tok.ent_type_ in ("GPE", "LOC")
            ):
                pred = "located_in" if prep.lower_ == "in" else "located_near"
            if (
                pred is None
                and prep.lower_ in ("at", "for")
                and attr.pos_ == "NOUN"
                and (
                    obj_tok.ent_type_ == "ORG"
                    or (_first_person(subj_toks) and is_name(obj_tok) and not obj_tok.ent_type_)
                )
                and attr.lemma_.lower() not in NOT_STAFF
            ):
                # "I'm a nurse at St. Mary's Hospital": without the recogniser, a capitalised
                # name, only in the first person (prose capitalises too much: "a bridge at
                # Sutliff", "screened at the Toronto International Film Festival")
                pred = "studies_at" if attr.lemma_.lower() in STUDENTS else "works_at"
            if (
                pred is None
                and prep.lower_ in ("in", "with", "for", "on")
                and (obj_tok.ent_type_ == "ORG" or obj_tok.lemma_.lower() in GROUPS)
                and attr.pos_ == "NOUN"
            ):
                pred = "member_of"  # "a violinist in the Borusan Istanbul Philharmonic"
            if pred:
                for s in subjects:
                    d.relate(s, neg + pred, d.ref(obj_tok))
    for clause in (c for c in attr.children if c.dep_ in ("acl", "relcl")):
        if clause.tag_ == "VBN" and not any(c.dep_.startswith("nsubj") for c in clause.children):
            participle(d, clause)


def misread_role(d: Discourse, noun: Any) -> None:
    """ "Our new team lead is Kenji": the small parser reads "team" as the subject of a noun
    "lead" and "is Kenji" as a clause of its own (no fact at all); read as the copula it is,
    the owner's ``has_team_lead``."""
    if noun.dep_ != "ROOT":
        return
    subj = next((c for c in noun.children if c.dep_ == "nsubj" and c.pos_ == "NOUN"), None)
    be = next((c for c in noun.children if c.dep_ == "ccomp" and c.lemma_ == "be"), None)
    if subj is None or be is None or subj.i + 1 != noun.i:
        return
    attr = next((c for c in be.children if c.dep_ == "attr" and c.pos_ == "PROPN"), None)
    owner = next((c for c in subj.children if c.dep_ == "poss"), None)
    if attr is None or owner is None:
        return
    neg = "not_" if any(c.dep_ == "neg" for c in be.children) else ""
    changed = any(c.dep_ == "amod" and c.lower_ == "new" for c in subj.children)
    name = d.ref(attr) or d.entity(attr.text, "Other")
    d.relate(d.ref(owner), f"{neg}has_{subj.lower_}_{noun.lower_}", name,
             changed=changed and not neg)  # fmt: skip
    d.retype(name, "Person")
    d.last_person = name


def _relation_to(noun: Any) -> str:
    """The owner's relation a noun names: "employer" works_at, "tech lead" has_tech_lead."""
    return RELATION_NOUNS.get(noun.lemma_.lower(), f"has_{_role(noun)}")


def _role(noun: Any) -> str:
    """The relation a role noun names, with the nouns before it ("product owner", "tech
    lead", "piano teacher": not "owner", "lead", "teacher")."""
    return "_".join([*(c.lower_ for c in _with_misread(noun)[1:]), kin_of(noun)])


def _with_misread(noun: Any) -> list[Any]:
    """``noun`` and the nouns of its compound, among them one the small parser read as its
    subject ("Our team lead is not Kenji": "team" the subject of "lead", "Our" on "team")."""
    return [noun, *(c for c in noun.children if c.pos_ == "NOUN" and c.i < noun.i and (
        c.dep_ == "compound" or (c.dep_ == "nsubj" and c.i + 1 == noun.i)))]  # fmt: skip


def _a_role(tok: Any) -> bool:
    """A common noun with "the" and no owner ("the tech lead", "the staging DB"; "the
    project's owner" not)."""
    return (
        (tok.pos_ == "NOUN" or (acronym(tok) and any(c.dep_ == "compound" for c in tok.children)))
        and any(c.dep_ == "det" and c.lower_ == "the" for c in tok.children)
        and not any(c.dep_ == "poss" for c in tok.children)
    )


# Modifiers that make "the X" one of several, or not the current one ("the first
# engineer", "the former tech lead", "the same database").
NOT_ONE_HOLDER = frozenset(("first", "last", "next", "previous", "former", "old", "ex",
                            "same", "other", "only", "main", "best", "worst"))  # fmt: skip


def one_holder(tok: Any) -> bool:
    """A role one thing holds at a time: a singular common noun with "the", no owner and
    nothing that makes it relative to something else ("the tech lead", "the staging
    database"; not "the capital of France", "the largest city", "the first engineer", "the
    one who ...")."""
    return (
        _a_role(tok)
        and tok.tag_ in ("NN", "NNP")
        and not any(c.dep_ in ("prep", "relcl", "acl", "appos", "poss") for c in tok.children)
        and not any(
            c.dep_ in ("amod", "compound")
            and (c.tag_ in ("JJS", "JJR", "RBS") or c.lower_ in NOT_ONE_HOLDER)
            for c in tok.children
        )
    )


# Verbs that give a thing a new value, a new holder or a new place ("was upgraded to
# Postgres 16", "raised the limit to 500 requests a minute", "moved the office to Braga").
CHANGES_TO = frozenset(("upgrade", "downgrade", "raise", "lower", "increase", "decrease",
                        "reduce", "bump", "set", "change", "switch", "move", "migrate", "cut",
                        "extend", "update", "relocate"))  # fmt: skip


def changed_to(d: Discourse, verb: Any) -> bool:
    """A thing's new value, holder or place, stated by a verb of change with "to": "The rate
    limit was raised to 500 requests a minute" (has_value), "The staging database was upgraded
    to Postgres 16" (Postgres 16 is_the staging database), "We moved the office to Braga"
    (office located_in Braga); each ends the old one. Moved to software, or migrated or
    switched to anything, it uses it ("We moved the API from Flask to FastAPI": uses FastAPI,
    move_from Flask). Whether it read one."""
    preps = [c for c in verb.children if c.dep_ == "prep"]
    preps += [c for p in preps if p.lower_ == "from" for c in p.children if c.dep_ == "prep"]
    to = [o for c in preps if c.lower_ == "to" for o in c.children if o.dep_ == "pobj"]
    left = [o for c in preps if c.lower_ == "from" for o in c.children if o.dep_ == "pobj"]
    passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children)
    things = [c for c in verb.children if c.dep_ == "dobj" and _a_thing_named(c)] or (
        [t for t in subjects_of(verb) if _a_thing_named(t)] if passive else []
    )
    if not things and schedules(subjects_of(verb)):
        things = subjects_of(verb)  # "The deploy day changed to Friday"
    if len(to) != 1 or not things:
        return False
    # "migrated the backend from Django": the parser may hang "from" on the thing
    left += [o for t in things for c in t.children if c.dep_ == "prep" and c.lower_ == "from"
             for o in c.children if o.dep_ == "pobj"]  # fmt: skip
    (new,) = to
    lemma = verb.lemma_.lower()
    read = False
    for thing_tok in things:
        if is_time(new) and schedules([thing_tok]):
            scheduled(d, [thing_tok], new, "", changed=True)  # "The deploy day moved to Friday"
            read = True
            continue
        thing = d.entity(d.phrase(thing_tok) or thing_tok.text, "Other")
        if lemma in ("migrate", "switch") or (
            lemma == "move" and (technical(new) or any(technical(o) for o in left))
        ):
            # "We moved the API from Flask to FastAPI": the thing's new tool, the old one left
            d.relate(thing, "uses", d.ref(new))
            for old in left:
                d.relate(thing, f"{lemma}_from", d.ref(old))
        elif lemma in ("move", "relocate") and not is_time(new):
            d.relate(thing, "located_in", d.ref(new), changed=True)
        elif amount := measure(new):
            d.relate(thing, "has_value", d.entity(amount, "Other"), changed=True)
        elif is_name(new) and one_holder(thing_tok):
            d.relate(d.ref(new), "is_the", thing)
        else:
            continue
        read = True
    return read


def _a_thing_named(tok: Any) -> bool:
    """A thing a verb of change moves: a common noun, or a definite acronym the parser tags as
    a name ("The cache TTL was lowered to 1 minute"; not "Priya was moved to ...")."""
    return tok.pos_ == "NOUN" or (
        tok.pos_ == "PROPN" and any(c.dep_ == "det" and c.lower_ == "the" for c in tok.children)
    )


# Who takes a role and who leaves one: "Omar took over as tech lead", "Ana resigned as CTO".
TAKES_ROLE = frozenset(("take_over", "step_in", "step_up", "start", "replace", "succeed"))
LEAVES_ROLE = frozenset(("step_down", "resign", "step_back", "quit", "retire"))


def role_change(d: Discourse, verb: Any, lemma: str, subjects: list[str]) -> bool:
    """A role changing hands: "Omar replaced Priya as my manager" (the owner's new manager,
    the old one ended), "Omar took over as tech lead" (Omar is_the tech lead), "Priya stepped
    down as tech lead" (no longer), "Sam and I broke up" (a departure: the partner relation
    ends). Whether it read one."""
    if lemma == "step" and any(c.dep_ in ("advmod", "prt") and c.lower_ == "down"
                               for c in verb.children):  # fmt: skip
        lemma = "step_down"
    if lemma == "break_up" and len(subjects) >= 2:
        # the speaker first: the partner relation is theirs ("Sam and I broke up")
        first = next((s for s in subjects if s == d.speaker), subjects[0])
        for other in (s for s in subjects if s != first):
            d.relate(first, "break_up_with", other)
        return True
    if lemma not in TAKES_ROLE | LEAVES_ROLE:
        return False
    roles = [
        o
        for c in verb.children
        if c.dep_ == "prep" and c.lower_ == "as"
        for o in c.children
        if o.dep_ == "pobj" and o.pos_ in ("NOUN", "PROPN") and not _indefinite(o)
    ]
    if not roles:
        return False
    for role in roles:
        owner = next((c for c in role.children if c.dep_ == "poss"), None)
        for holder in subjects:
            if owner is not None:  # "as my manager": the owner's relation
                pred = _relation_to(role)
                if lemma in LEAVES_ROLE:
                    d.relate(d.ref(owner), "not_" + pred, holder)
                else:
                    d.relate(d.ref(owner), pred, holder, changed=True)
            else:  # "as tech lead": the role's one holder
                name = d.entity(d.phrase(role) or role.text, "Other")
                d.relate(holder, ("not_" if lemma in LEAVES_ROLE else "") + "is_the", name)
    return True


def _indefinite(tok: Any) -> bool:
    """ "a junior developer": a class, not the one holder of a role."""
    return any(t.dep_ == "det" and t.lower_ in ("a", "an") for t in tok.children)


# The nouns of a when that is a thing's value, with what makes them one ("the deploy day",
# "standup time", "our release date"; not "the time", "that day").
SCHEDULE_NOUNS = frozenset(("day", "time", "date", "hour", "deadline", "slot"))


def schedules(subj_toks: list[Any]) -> bool:
    """Subjects that are each a noun of a when with a modifier ("the deploy day")."""
    return bool(subj_toks) and all(
        t.pos_ == "NOUN"
        and t.lemma_.lower() in SCHEDULE_NOUNS
        and any(c.dep_ in ("compound", "nmod") for c in t.children)
        for t in subj_toks
    )


def scheduled(
    d: Discourse, subj_toks: list[Any], when: Any, neg: str, changed: bool = False
) -> None:
    """ "The deploy day is Tuesday", "Standup time is 9:30", "The deploy day is now Thursday":
    the thing's one value at a time (``has_value``; "now", or a verb of change, ends the old
    one). A date or a clock time is otherwise when a fact held, never its object."""
    verb = when.head
    changed = changed or any(c.dep_ == "advmod" and c.lower_ == "now" for c in verb.children)
    value = when.doc[when.left_edge.i : when.right_edge.i + 1].text.strip(" .,;:!?")
    for t in subj_toks:
        words = [c for c in t.lefts if c.dep_ in ("compound", "nmod", "amod")]
        name = " ".join(w.text for w in [*words, t])
        d.relate(
            d.entity(name, "Other"), neg + "has_value", d.entity(value, "Other"),
            changed=changed and not neg,
        )  # fmt: skip


# Who "the <noun> is 34" gives an age ("The patient is 64"), besides kin and pets.
AGED = frozenset(("man", "woman", "boy", "girl", "baby", "toddler", "teen", "teenager",
                  "patient", "puppy", "kitten", "horse", "guy", "lady", "person", "owner",
                  "founder", "author", "artist", "singer", "actor", "actress", "player",
                  "student", "customer", "client", "user", "applicant", "candidate"))  # fmt: skip


def measure(tok: Any) -> str | None:
    """The amount a copula's complement states, as written ("100 requests per minute", "25
    MB", "64"), else None: a number, or a noun a number counts; not a name with its version
    ("Postgres 15"), a date ("March 3") or a clock time."""
    if tok.like_num or tok.pos_ == "NUM":
        span = [tok]
    elif any(
        c.dep_ == "nummod" and (c.like_num or c.pos_ == "NUM") and c.i < tok.i  # "Postgres 15"
        for c in tok.children
    ):
        span = list(tok.subtree)
    else:
        return None
    if any(is_time_word(t.text) for t in span if not t.like_num) or any(
        ":" in t.text or t.lower_ in ("am", "pm") for t in span
    ):
        return None
    text = tok.doc[span[0].i : span[-1].i + 1].text.strip(" .,;:!?")
    return text or None


def _a_measured(tok: Any) -> bool:
    """A definite thing that has a value, not an age ("the batch size", "the API rate limit";
    not "the patient", "the dog")."""
    low = tok.lemma_.lower()
    return (
        _a_role(tok)
        and not is_kin_word(low)
        and kin_of(tok) not in ("dog", "cat", "pet")
        and (low not in AGED)
    )


def _first_person(subj_toks: list[Any]) -> bool:
    return any(st.pos_ == "PRON" and st.lower_ in ("i", "we") for st in subj_toks)


def _a_thing(subj_toks: list[Any]) -> bool:
    """A subject that has no age: a possessed noun other than a person or a pet ("my
    apartment number is 42")."""
    return any(
        st.pos_ == "NOUN"
        and any(c.dep_ == "poss" for c in st.children)
        and not is_kin_word(st.lemma_.lower())
        and kin_of(st) not in ("dog", "cat", "pet")
        for st in subj_toks
    )


def _a_value(tok: Any) -> bool:
    """A number, an address or a code, not a word or a date: what a noun like "number" or
    "email" is."""
    if any(is_time(t) and not t.text.isdigit() for t in tok.subtree):
        return False  # "My birthday is March 3rd": a date is a fact's time, not its object
    # digits, not a number word ("New York's 3rd District is one of 63")
    return any(ch.isdigit() for ch in tok.text) or tok.like_email or tok.like_url


def _continues_a_value(tok: Any) -> bool:
    """A number right after another one, a space apart ("07700 900123")."""
    doc = tok.doc
    return tok.i > 0 and doc[tok.i - 1].like_num and doc[tok.i - 1].whitespace_ == " "


def _written(tok: Any) -> str:
    """The token as the text writes it, with what is glued to it ("555-0199") and the
    numbers that follow it a space apart ("07700 900123"), without the sentence's closing
    punctuation."""
    doc, text = tok.doc, tok.doc.text
    last = tok.i
    while last + 1 < len(doc) and doc[last + 1].like_num and doc[last].whitespace_ == " ":
        last += 1
    start, end = tok.idx, doc[last].idx
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end].rstrip(".,;:!?)\"'").lstrip("(\"'") or tok.text


def adjective(d: Discourse, adj: Any, subjects: list[str], neg: str) -> None:
    """ "X is <adj>": "allergic to", "married to", an identity ("vegetarian")."""
    low = adj.lower_
    preps = [
        c
        for c in adj.children
        if c.dep_ == "prep" and not any(setting(o) for o in c.children if o.dep_ == "pobj")
    ]
    for x in (c for c in adj.children if c.dep_ == "xcomp" and low in ("allergic", "intolerant")):
        for t in [x, *(c for c in x.children if c.dep_ == "conj")]:
            for s in subjects:  # "allergic to shellfish", parsed as "to shellfish" (a verb)
                d.relate(s, neg + f"{low}_to", d.entity(d.phrase(t) or t.text, "Other"))
    for prep in preps:
        for obj_tok in spread([c for c in prep.children if c.dep_ == "pobj"]):
            pred = {"allergic": "allergic_to", "married": "married_to",
                    "intolerant": "intolerant_to"}.get(low, f"{low}_{prep.lower_}")  # fmt: skip
            for s in subjects:
                d.relate(s, neg + pred, d.ref(obj_tok))
    if not preps and low in IDENTITY_ADJ:
        for s in subjects:
            d.relate(s, neg + "is_a", d.entity(low, "Other"))


def noun_facts(d: Discourse, noun: Any) -> None:
    """Facts a noun phrase states by itself: "Dev, a data scientist" (is_a), "Moby-Dick,
    a novel by Herman Melville" (wrote)."""
    head_tok = noun.head
    if noun.dep_ == "appos" and any(
        t.dep_ == "neg" for t in noun.doc[min(head_tok.i, noun.i) + 1 : noun.i]
    ):
        return  # "on Tuesdays, not Fridays": a contrast, not a second name for the first
    if noun.dep_ == "appos" and noun.lemma_.lower() in WORKS:
        for by in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "by"):
            for author in (c for c in by.children if c.dep_ == "pobj"):
                d.relate(d.ref(author), WORKS[noun.lemma_.lower()], d.ref(head_tok))
    if noun.dep_ == "appos" and (head_tok.pos_ == "PROPN" or head_tok.text[:1].isupper()):
        head = d.ref(head_tok)
        cls = d.phrase(noun)
        if head and cls and noun.lemma_.lower() not in KIN_NOUNS:
            d.relate(head, "is_a", d.entity(cls, "Other"))
        for prep in (c for c in noun.children if c.dep_ == "prep" and c.lower_ == "in"):
            for place in (c for c in prep.children if c.dep_ == "pobj"):
                if place.ent_type_ in ("GPE", "LOC"):  # "Suwon, a city in South Korea"
                    d.relate(head, "located_in", d.ref(place))
    if noun.lemma_.lower() == "allergy":
        owner = next((c for c in noun.children if c.dep_ == "poss"), None)
        if owner is not None:
            allergy(d, noun, [s for s in [d.ref(owner)] if s], "")


def place_facts(d: Discourse, tok: Any) -> None:
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
        d.relate(d.ref(tok.head), "located_in", d.ref(tok))
