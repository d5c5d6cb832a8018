"""Time in memory: when a fact held, when an event happened, how weight decays.

- :class:`Validity`: a fact's sources (when each memory says it was observed) and the ends
  recorded against it. A fact is valid at *t* if some source asserted it by *t* and no end
  came after that source and by *t*; so a fact asserted anew after it was ended is current
  again.
- :func:`supersession`: what stating a new value of a single-valued relation ends. Each
  other value still valid then ends then; a value that only begins later ends the new one
  when it begins (a memory of 2016 read after one of 2020).
- :data:`DEPARTURES`: a departure from a thing ends its subject's current facts with it;
  a denial ("not_uses yarn") ends the fact it denies, single-valued or not.
- :func:`outdated`: a memory is outdated when it states facts and none of them is valid any
  more ("In 2014 I moved to Oslo", once the user moved on).
- :func:`observed_at`: the event time a text states ("in March 2021", "on 2024-05-03"),
  else ``None`` (the caller uses the write time).
- :func:`decay`: the weight left after ``age`` with a half-life; the paper's "selective
  forgetting via importance weighting and temporal decay", made concrete.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

F = TypeVar("F", bound=Hashable)  # a fact, as its store names it (the graph: a triple)


@dataclass(frozen=True)
class Source:
    """A memory that states the fact: when it says the fact was observed, when written."""

    memory: str
    observed: datetime
    asserted: datetime


@dataclass(frozen=True)
class Validity:
    """A fact's sources and the ends recorded against it. Immutable, so a store may hand
    out the one it remembers; :meth:`including` gives a copy with more sources."""

    sources: tuple[Source, ...] = ()
    ends: tuple[datetime, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "ends", tuple(self.ends))

    def including(self, sources: Iterable[Source]) -> Validity:
        """This validity with the given sources added, except those of memories already
        among its sources (a memory states a fact once)."""
        known = {s.memory for s in self.sources}
        extra = []
        for s in sources:
            if s.memory not in known:
                known.add(s.memory)
                extra.append(s)
        return Validity(self.sources + tuple(extra), self.ends) if extra else self

    def valid_at(self, when: datetime) -> bool:
        return any(
            s.observed <= when and not any(s.observed < e <= when for e in self.ends)
            for s in self.sources
        )

    @property
    def latest(self) -> datetime:
        return max(s.observed for s in self.sources)

    @property
    def valid_from(self) -> datetime:
        """The start of the latest period of validity."""
        cut = max((e for e in self.ends if e <= self.latest), default=None)
        return min(s.observed for s in self.sources if cut is None or s.observed >= cut)

    @property
    def valid_to(self) -> datetime | None:
        """``None`` while open-ended, else the first end after the latest source (which may
        lie ahead: "I move to Berlin in June" ends "lives in Paris" then)."""
        after = [e for e in self.ends if e > self.latest]
        return min(after) if after else None

    def superseded(self, now: datetime) -> bool:
        end = self.valid_to
        return end is not None and end <= now


def supersession(
    new: F, others: Iterable[tuple[F, Validity]], at: datetime
) -> list[tuple[F, datetime]]:
    """The ends a memory records when it states ``new`` at ``at`` for a single-valued
    relation whose other values, with their validity, are ``others``: each other value
    valid at ``at`` ends at ``at``; each one not valid then but stated after ``at`` ends
    ``new`` at its first source after ``at`` (the stored fact is newer than the memory).
    Values without sources, and ``new`` itself, end nothing. In the order of ``others``; a
    store records one end per fact and memory, the first."""
    ends: list[tuple[F, datetime]] = []
    for fact, v in others:
        if fact == new or not v.sources:
            continue
        if v.valid_at(at):
            ends.append((fact, at))
        elif later := [s.observed for s in v.sources if s.observed > at]:
            ends.append((new, min(later)))
    return ends


# Roles one thing holds at a time ("The tech lead is Priya": (Priya, is_the, tech lead)): a new
# holder ends the old one's fact, as a new value ends a single-valued relation's old value.
ONE_HOLDER = frozenset({"is_the"})


# What a subject uses, runs or moved to: one version of a thing at a time ("We upgraded to
# Python 3.12" ends "We use Python 3.10"; "uses Python" and "uses Node 20" are other things).
VERSIONED = frozenset(
    {"uses", "run", "run_on", "be_on", "target", "upgrade_to", "switch_to", "migrate_to",
     "move_to", "update_to", "bump_to", "downgrade_to"}
)  # fmt: skip
_VERSION = re.compile(r"^(.*?[^\W\d_])\s*v?(\d+(?:\.\d+)*)$")


def version_of(name: str) -> tuple[str, str] | None:
    """The name and version of a versioned thing: ("python", "3.12") for "Python 3.12",
    ("node", "20") for "Node v20"; None for a name that does not end on a version ("Python",
    "Route 66 Diner")."""
    m = _VERSION.match(" ".join(name.split()))
    return (m[1].strip().lower(), m[2]) if m else None


@dataclass(frozen=True)
class Kind:
    """A kind of thing its subject holds one of at a time: the predicates that state it, and
    the value this fact holds ("Python" at "3.12"; the "developer" that is "senior")."""

    predicates: frozenset[str]
    name: str
    value: str
    read: Callable[[str], tuple[str, str] | None]

    def other(self, label: str) -> bool:
        """Whether an object named ``label`` is another value of the same kind."""
        found = self.read(label)
        return found is not None and found[0] == self.name and found[1] != self.value


def kind_of(predicate: str, name: str, functional: bool | None) -> Kind | None:
    """The kind a fact holds one value of, if any: a version of a thing used ("uses Python
    3.12"), or a class stated as changed ("I'm a senior developer now": its head noun)."""
    if predicate in VERSIONED and (found := version_of(name)):
        return Kind(VERSIONED, found[0], found[1], version_of)
    if predicate == "is_a" and functional is True and (found := _headed(name)):
        return Kind(frozenset({"is_a"}), found[0], found[1], _headed)
    return None


def _headed(name: str) -> tuple[str, str] | None:
    """("developer", "senior developer") for "senior developer": a class by its head noun."""
    words = name.lower().split()
    return (words[-1], " ".join(words)) if words else None


# A departure from a thing ("I switched from vim", "we migrated from Postgres", "I left
# Hooli") ends what its subject had with that thing ("uses vim", "works at Hooli"): these are
# the predicates the extractor gives such verbs. A change of tool or place ends any fact with
# it; "leave" and "quit" only a place, a job, a membership or a habit ("I left Noor a
# message" ends no friendship).
DEPARTURES = frozenset(
    {"switch_from", "migrate_from", "move_from", "move_off", "change_from", "upgrade_from",
     "downgrade_from", "leave", "quit", "replace", "ditch", "abandon", "drop", "give_up",
     "sell", "break_up_with"}
)  # fmt: skip
_LEFT_ONLY = frozenset(
    {"works_at", "lives_in", "based_in", "located_in", "member_of", "studies_at", "plays_for",
     "attends", "uses", "drink", "eat", "smoke", "play", "plays"}
)  # fmt: skip
# What a narrower departure ends: the rest ("switch from", "migrate from") end any fact.
_ENDS_ONLY = {
    "leave": _LEFT_ONLY,
    "quit": _LEFT_ONLY,
    "drop": _LEFT_ONLY,  # "We dropped Jira"; not "I dropped Tom at school"'s friendship
    "give_up": _LEFT_ONLY,
    "sell": frozenset({"owns"}),
    "break_up_with": frozenset(
        {
            "has_partner",
            "has_girlfriend",
            "has_boyfriend",
            "dates",
            "date",
            "married_to",
            "has_wife",
            "has_husband",
        }
    ),  # fmt: skip
}
# Facts of the past that no departure ends: "I moved from Leeds" leaves "born in Leeds".
LASTING = frozenset({"born_in", "from", "grow_up_in", "grew_up_in", "studied_at", "visit"})


def ended_by_departure(departure: str, predicate: str) -> bool:
    """Whether a departure (one of :data:`DEPARTURES`) from an object ends its subject's fact
    with this predicate."""
    if predicate in DEPARTURES or predicate in LASTING or predicate.startswith("not_"):
        return False
    return departure not in _ENDS_ONLY or predicate in _ENDS_ONLY[departure]


def outdated(source: Source, facts: Sequence[Validity], when: datetime) -> bool:
    """Whether the memory of ``source`` is outdated at ``when``: it states at least one fact
    and none of them is valid then. The memory counts as a source of each of its facts
    (one not linked into the graph yet is not among their sources)."""
    return bool(facts) and not any(v.including([source]).valid_at(when) for v in facts)


MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}  # fmt: skip
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
# "2023-05-28", "2023-05-28T03:17", and LongMemEval's "2023/05/28 (Sun) 03:17"
_ISO = re.compile(r"\b(\d{4})[-/](\d{2})[-/](\d{2})(?:(?:[T ]|\s+\(\w{3}\)\s+)(\d{2}):(\d{2}))?")
_MDY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_MY = re.compile(rf"\b(?:in|since|from|during|by)?\s*({_MONTH})\.?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_Y = re.compile(
    r"(?:\b(?:in|since|from|during|back in|in the year)\s+|^\W*)((?:19|20)\d{2})\b(?!\s*%)", re.I
)  # "in 2016", "since 2016", and a year that opens the text ("2016 was the year I moved")


def observed_at(text: str) -> datetime | None:
    """The first explicit date in ``text`` (UTC midnight), or ``None``."""
    candidates: list[tuple[int, datetime]] = []
    try:
        if m := _ISO.search(text):
            hour, minute = int(m.group(4) or 0), int(m.group(5) or 0)
            d = datetime(int(m[1]), int(m[2]), int(m[3]), hour, minute, tzinfo=UTC)
            candidates.append((m.start(), d))
        if m := _MDY.search(text):
            d = datetime(int(m[3]), MONTHS[m[1].lower()], int(m[2]), tzinfo=UTC)
            candidates.append((m.start(), d))
        if m := _DMY.search(text):
            d = datetime(int(m[3]), MONTHS[m[2].lower()], int(m[1]), tzinfo=UTC)
            candidates.append((m.start(), d))
        # Where the month or year itself stands, not the words or brackets before it: the
        # year of "[2023-11-14 22:14] ..." is no earlier than the date it is part of.
        if m := _MY.search(text):
            candidates.append(
                (m.start(1), datetime(int(m[2]), MONTHS[m[1].lower()], 1, tzinfo=UTC))
            )
        if m := _Y.search(text):
            candidates.append((m.start(1), datetime(int(m[1]), 1, 1, tzinfo=UTC)))
    except ValueError:  # "February 30th": not a date
        return None
    if not candidates:
        return None
    # The most specific match at the earliest position: day beats month beats year.
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1]


def decay(age: timedelta, half_life_days: float) -> float:
    """Weight left after ``age``: 1.0 now, 0.5 after one half-life. No decay if <= 0."""
    if half_life_days <= 0:
        return 1.0
    days = max(0.0, age.total_seconds() / 86400)
    return 0.5 ** (days / half_life_days)
