"""What one text has said so far, and what its words refer to (the heuristic extractor's state).

A :class:`Discourse` is made per text and read sentence by sentence. It holds the entities
and facts found so far, keyed by :func:`cranimem_mcp.naming.canonical_name` (an entity is
stored once, its type refined from "Other" by the role it plays; a fact is stored once per
subject, predicate and object), and the discourse state that resolves references: "he"/"she"
to the last person named, "it" to the last thing, "which"/"who" to the noun its clause hangs
on, first person and "the user" to the speaker. :meth:`Discourse.ref` turns a subject or object
token into the entity it names, reading on the way the facts a noun phrase carries by itself
("my sister Ana": has_sister; "a beagle called Biscuit": is_a).
"""

from __future__ import annotations

from typing import Any

from cranimem_mcp.extraction.lexicon import (
    ENT_TYPES,
    FIRST_PRONOUNS,
    KIN_NOUNS,
    NOT_THINGS,
    RELATIVE_PRONOUNS,
    SKIP_ENTS,
    SKIP_MODIFIERS,
    THIRD_PRONOUNS,
    TITLE,
    TITLE_JOINT,
    is_kin_word,
    is_name,
    is_time,
    kin_of,
    misread_name,
)
from cranimem_mcp.models import Entity, Relation
from cranimem_mcp.naming import canonical_name


def acronym(tok: Any) -> bool:
    """An upper-case word of two to five letters ("DB", "API", "CLI")."""
    return 2 <= len(tok.text) <= 5 and tok.text.isalpha() and tok.text.isupper()


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


class Discourse:
    """Entities and facts of one text, sentence by sentence (a new one per text)."""

    def __init__(self, speaker: str) -> None:
        self.speaker = speaker
        self.entities: dict[str, Entity] = {}
        self.relations: dict[tuple[str, str, str], Relation] = {}
        self.last_person: str | None = None
        self.last_subject: str | None = None
        self.people: set[str] = {canonical_name(speaker)}
        self.last_thing: str | None = None
        self.last_named: str | None = None

    def entity(self, name: str, type_: str) -> str:
        key = canonical_name(name)
        if key and (key not in self.entities or self.entities[key].type == "Other"):
            self.entities[key] = Entity(name=name.strip(), type=type_)  # type: ignore[arg-type]
        return self.entities[key].name if key in self.entities else name

    def relate(
        self, subject: str | None, predicate: str, obj: str | None, changed: bool = False
    ) -> None:
        """Add a relation; ``changed`` when the sentence says its value is a new one ("my new
        dentist is ...", "my partner is now ..."): it ends the old value (functional)."""
        if not subject or not obj or not predicate:
            return
        if canonical_name(subject) == canonical_name(obj):
            return
        self.relations.setdefault(
            (canonical_name(subject), predicate, canonical_name(obj)),
            Relation(
                subject=subject,
                predicate=predicate,
                object=obj,
                functional=True if changed else None,
            ),
        )

    def person(self, name: str, subject: bool = False) -> str:
        name = self.entity(name, "Person")
        self.retype(name, "Person")
        self.last_person = name
        if subject:
            self.last_subject = name
        return name

    def retype(self, name: str, type_: str) -> None:
        """A relation's role types its object, over a named-entity label that is only a
        guess ("lives in Lyon": Lyon read as a PERSON) but never over a known person."""
        key = canonical_name(name)
        current = self.entities[key].type if key in self.entities else None
        if current == "Other" or (
            current == "Person" and type_ == "Location" and key not in self.people
        ):
            self.entities[key] = Entity(name=self.entities[key].name, type=type_)  # type: ignore[arg-type]

    def is_person(self, name: str) -> bool:
        """Known to be a person: the speaker, or named by a relation word ("my colleague
        Sven"); a named-entity label alone is not enough ("Acme Robotics" can read PERSON)."""
        return canonical_name(name) in self.people

    def phrase(self, tok: Any) -> str | None:
        """The name a noun token stands for: the longer of its named entity and the noun with
        its compound and adjective modifiers ("green tea", "backend engineer", "Volvo 240")."""
        title = self.title(tok)
        if title is not None:
            return title
        entity = None
        if tok.ent_type_ and tok.ent_type_ not in SKIP_ENTS:
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
        if tok.pos_ not in ("NOUN", "PROPN", "NUM", "ADJ", "X", "VERB") and not misread_name(tok):
            return entity.text if entity is not None else None
        if tok.lemma_.lower() in NOT_THINGS and tok.pos_ == "NOUN" and entity is None:
            return None
        left = tok.i
        for child in sorted(tok.lefts, key=lambda t: -t.i):
            if child.right_edge.i == left - 1 and _possessive_name(tok, child):
                left = child.left_edge.i  # "St. Mary's Hospital": one name
                continue
            if child.i != left - 1:
                break
            if child.dep_ in ("compound", "amod", "nmod", "npadvmod") and not (
                child.lower_ in SKIP_MODIFIERS
                or is_time(child)
                or child.pos_ == "NUM"
                or is_kin_word(child.lower_)
                or (tok.pos_ == "PROPN" and child.pos_ == "NOUN" and not acronym(tok))
                # "app Pebble": a label; "staging DB", "billing API": one name
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
        if tok.dep_ != "poss" and tok.pos_ == "PROPN" and _ends_in_s(tok):
            right = tok.i + 1  # "Nando's", "Macy's": a name that ends in 's, not an owner
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
        for m in TITLE.finditer(sent.text):
            if m.start() <= offset < m.end():
                return m.group().rstrip(",;:") if TITLE_JOINT.search(m.group()) else None
        return None

    def ref(self, tok: Any) -> str | None:
        """The entity a subject or object token refers to, or None."""
        low = tok.lower_
        if low in FIRST_PRONOUNS and tok.pos_ == "PRON":
            return self.person(self.speaker, subject=tok.dep_.startswith("nsubj"))
        if low == "it" and tok.dep_ in ("dobj", "pobj", "nsubj") and tok.pos_ == "PRON":
            return self.last_thing  # "switched to Neovim and now uses it daily"
        if low in ("you", "your", "yours", "it", "its", "this", "that", "there", "these",
                   "those", "what", "something", "someone", "everyone"):  # fmt: skip
            if low in RELATIVE_PRONOUNS:
                return self.relative(tok)
            return None
        if low in THIRD_PRONOUNS:
            return self.last_subject or self.last_person or self.last_named
        if low in RELATIVE_PRONOUNS or tok.tag_ in ("WDT", "WP"):
            return self.relative(tok)
        if tok.lemma_.lower() == "user" and tok.pos_ in ("NOUN", "PROPN"):
            return self.person("User", subject=tok.dep_.startswith("nsubj"))
        named = self.named_by(tok)
        if named is not None:
            return named
        if tok.pos_ == "PROPN":
            kin = [c for c in tok.lefts if c.dep_ in ("amod", "compound") and is_kin_word(c.lower_)]
            owner = next((c for c in tok.children if c.dep_ == "poss"), None)
            if kin and owner is not None:
                name = self.person(self.phrase(tok) or tok.text, tok.dep_.startswith("nsubj"))
                self.relate(self.ref(owner), f"has_{kin[0].lower_}", name)
                return name
        if tok.pos_ == "NOUN":
            called = self.called(tok)
            if called is not None:
                return called
            theirs = self.relative_of(tok)
            if theirs is not None:
                return theirs
        name = self.phrase(tok)
        if name is None:
            return None
        if tok.ent_type_ == "PERSON":
            return self.person(name, subject=tok.dep_.startswith("nsubj"))
        name = self.entity(name, ENT_TYPES.get(tok.ent_type_, "Other"))
        if tok.pos_ == "PROPN":
            self.last_thing = name
            if tok.dep_ in ("nsubj", "nsubjpass"):
                self.last_named = name  # "Tove Jansson created the Moomins. She was born..."
        return name

    def relative_of(self, tok: Any) -> str | None:
        """A named person's unnamed relative ("Sam's sister"), as one node of its own: it was
        "sister", the node of the speaker's sister too, whose home it then ended."""
        owner = next((c for c in tok.children if c.dep_ == "poss"), None)
        if (
            owner is None
            or owner.pos_ != "PROPN"
            or owner.lemma_.lower() == "user"
            or not is_kin_word(tok.lemma_.lower())
        ):
            return None
        whose = self.phrase(owner)
        name = self.phrase(tok)
        if not whose or not name:
            return None
        return self.person(f"{whose}'s {name}", subject=tok.dep_.startswith("nsubj"))

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
                 if c.dep_ in ("appos", "compound") and c.i > tok.i and is_name(c)]  # fmt: skip
        if (
            not names
            and tok.head.pos_ == "PROPN"
            and tok.head.i > tok.i
            and (tok.dep_ == "compound" or tok.lemma_.lower() in KIN_NOUNS)
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
        kin = tok.lemma_.lower() in KIN_NOUNS and kin_of(tok) not in ("dog", "cat", "pet")
        type_ = (
            "Person"
            if kin or name_tok.ent_type_ == "PERSON"
            else ENT_TYPES.get(name_tok.ent_type_, "Other")
        )
        if type_ == "Person":
            name = self.person(
                name, subject=name_tok.dep_.startswith("nsubj") or tok.dep_.startswith("nsubj")
            )
            if kin:
                self.people.add(canonical_name(name))
        else:
            name = self.entity(name, type_)
        if owner is not None and (is_kin_word(tok.lemma_.lower()) or kin_of(tok) in ("dog", "cat")):
            # "my sister Ana", "my beagle Rex"; not "User's app Pebble" (a label, no fact)
            self.relate(self.ref(owner), f"has_{kin_of(tok)}", name)
            if kin_of(tok) in ("dog", "cat") and tok.lemma_.lower() not in ("dog", "cat"):
                self.relate(name, "is_a", self.entity(tok.lemma_.lower(), "Other"))
        return name

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
                            and kin_of(noun) in ("dog", "cat")
                            and noun.lemma_ not in ("dog", "cat")
                        ):
                            self.relate(name, "is_a", cls)  # "a beagle called Biscuit"
                        return name
        names = _appositive_names(noun)
        if names:
            return self.entity(self.phrase(names[0]) or names[0].text, "Other")
        return None

    def all_called(self, noun: Any) -> list[str]:
        """ "two cats, Luna and Sol": every name."""
        names = _appositive_names(noun)
        return [self.entity(self.phrase(n) or n.text, "Other") for n in spread(names)]

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


def _possessive_name(tok: Any, child: Any) -> bool:
    """A proper name owned by a proper name ("St. Mary's Hospital", "Joe's Diner"): the
    owner is part of the name, as "Ana's dog" (a common noun) is not."""
    return (
        child.dep_ == "poss"
        and tok.pos_ == "PROPN"
        and child.pos_ == "PROPN"
        and all(t.pos_ in ("PROPN", "PART", "PUNCT") for t in child.subtree)
        and any(c.dep_ == "case" for c in child.children)
    )


def _ends_in_s(tok: Any) -> bool:
    """ "at Nando's.": an 's with nothing after it it could own ("the Discovery Institute's
    campaign" is an owner the parser misread)."""
    doc, after = tok.doc, tok.i + 2
    if not any(c.dep_ == "case" and c.i == tok.i + 1 and c.lower_ in ("'s", "’s")
               for c in tok.rights):  # fmt: skip
        return False
    return after >= len(doc) or not (
        doc[after].pos_ in ("NOUN", "PROPN", "ADJ", "NUM") or doc[after].is_quote
    )  # "Madonna's "Like a Prayer"": an owner too


def _appositive_names(noun: Any) -> list[Any]:
    """The names in apposition to a noun; "not npm" is no name of "pnpm" but its contrast."""
    return [c for c in noun.children if c.dep_ == "appos" and c.pos_ == "PROPN"
            and not set_against(c)]  # fmt: skip


def negated(tok: Any) -> bool:
    """A "not" before the token, hung on it ("not npm")."""
    return any(c.dep_ == "neg" and c.i < tok.i for c in tok.children)


def asserted_instead(tok: Any) -> bool:
    """What a denial puts in place of what it denies: "not vegan but vegetarian", "isn't a
    doctor but a nurse", "don't drink coffee but tea" (a coordinated word after "but"), "I'm
    not vegan, just vegetarian" (after "just", "only", "rather", "instead"). Said, not denied."""
    if tok.dep_ == "conj" and any(
        c.dep_ == "cc" and c.lower_ == "but" and tok.head.i < c.i < tok.i
        for c in (*tok.head.children, *tok.children)
    ):
        return True
    return any(
        c.dep_ in ("advmod", "cc", "preconj") and c.lower_ in INSTEAD_WORDS and c.i < tok.i
        for c in tok.children
    )


INSTEAD_WORDS = frozenset({"but", "just", "only", "rather", "instead"})


def polarity(tok: Any, neg: str) -> str:
    """The polarity of a complement ``tok`` of a clause of polarity ``neg`` ("not_" or ""):
    "no" before it denies it ("I have no pets", "no cats or dogs"); a denied clause's
    complement that the sentence puts in place of the denied one is said ("not vegan, just
    vegetarian", "no car but a bike")."""
    denied = neg or ("not_" if _after_no(tok) else "")
    return "" if denied and asserted_instead(tok) else denied


def _after_no(tok: Any) -> bool:
    """``tok``, or the word it is coordinated with, has the determiner "no"."""
    while True:
        if any(c.dep_ == "det" and c.lower_ == "no" for c in tok.children):
            return True
        if tok.dep_ != "conj" or tok.head.i == tok.i:
            return False
        tok = tok.head


def set_against(tok: Any) -> bool:
    """An apposition that contrasts with its head, not names it: "..., not npm", "...,
    only Linux" (whatever the "not" or "only" hangs on)."""
    before = tok.doc[tok.i - 1] if tok.i else None
    return negated(tok) or (
        before is not None and before.lower_ in ("not", "never", "only", "just")
    )
