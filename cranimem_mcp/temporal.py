"""Time in memory: when a fact held, when an event happened, how weight decays.

- :class:`Validity`: a fact's sources (when each memory says it was observed) and the ends
  recorded against it. A fact is valid at *t* if some source asserted it by *t* and no end
  came after that source and by *t*; so a fact asserted anew after it was ended is current
  again.
- :func:`observed_at`: the event time a text states ("in March 2021", "on 2024-05-03"),
  else ``None`` (the caller uses the write time).
- :func:`decay`: the weight left after ``age`` with a half-life; the paper's "selective
  forgetting via importance weighting and temporal decay", made concrete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


@dataclass
class Source:
    memory: str
    observed: datetime
    asserted: datetime


@dataclass
class Validity:
    sources: list[Source] = field(default_factory=list)
    ends: list[datetime] = field(default_factory=list)

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


_MONTHS = {
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
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?")
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
            d = datetime(int(m[3]), _MONTHS[m[1].lower()], int(m[2]), tzinfo=UTC)
            candidates.append((m.start(), d))
        if m := _DMY.search(text):
            d = datetime(int(m[3]), _MONTHS[m[2].lower()], int(m[1]), tzinfo=UTC)
            candidates.append((m.start(), d))
        if m := _MY.search(text):
            candidates.append(
                (m.start(), datetime(int(m[2]), _MONTHS[m[1].lower()], 1, tzinfo=UTC))
            )
        if m := _Y.search(text):
            candidates.append((m.start(), datetime(int(m[1]), 1, 1, tzinfo=UTC)))
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
