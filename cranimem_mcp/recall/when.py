"""The time a query asks about: "in March", "on October 13, 2023", "5 days ago", "last
weekend", "in 2019".

Recall lends the memories of events in that time part of their score (``retrieval.date_boost``):
"How many doctor's appointments did I go to in March?" is about what happened in March, and
the turns that tell it were said then. A relative time is read against the moment the
question is asked about (``as_of``), else now; a month without a year is that month of any
year (a boost, not a filter: a memory of another time can still rank first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cranimem_mcp.temporal import MONTHS


@dataclass(frozen=True)
class Window:
    """A span of time a query names: ``start`` <= t < ``end``, or, with ``month`` set, that
    month of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def holds(self, when: datetime) -> bool:
        if self.month is not None:
            return when.month == self.month
        assert self.start is not None and self.end is not None
        return self.start <= when < self.end


_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = re.compile(
    rf"\b(?:on\s+)?({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+((?:19|20)\d{{2}}))?\b", re.I
)
_IN_MONTH = re.compile(
    rf"\b(?:in|during|since|early|late|mid-?)\s+({_MONTH})\b(?:\s+((?:19|20)\d{{2}}))?", re.I
)
_IN_YEAR = re.compile(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", re.I)
_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|ten)\s+(day|week|month)s?\s+ago\b", re.I
)
_LAST = re.compile(r"\b(yesterday|last\s+(?:week|weekend|month|year))\b", re.I)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "ten": 10}  # fmt: skip


def asked_when(query: str, reference: datetime) -> Window | None:
    """The span of time ``query`` names, read against ``reference`` (when it is asked), or
    None: it names none."""
    ref = reference.astimezone(UTC)
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    if m := _DAY.search(query):
        month, date = MONTHS[m[1].lower()], int(m[2])
        if 1 <= date <= 31:
            try:
                if m[3]:
                    start = datetime(int(m[3]), month, date, tzinfo=UTC)
                    return Window(start - timedelta(days=1), start + timedelta(days=2))
            except ValueError:  # "February 30"
                return None
            return Window(month=month)
    if m := _IN_MONTH.search(query):
        month = MONTHS[m[1].lower()]
        if not m[2]:
            return Window(month=month)
        start = datetime(int(m[2]), month, 1, tzinfo=UTC)
        end = datetime(start.year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
        return Window(start, end)
    if m := _AGO.search(query):
        n = int(m[1]) if m[1].isdigit() else _COUNTS[m[1].lower()]
        unit = m[2].lower()
        days = n * {"day": 1, "week": 7, "month": 30}[unit]
        slack = {"day": 2, "week": 4, "month": 10}[unit]
        at = day - timedelta(days=days)
        return Window(at - timedelta(days=slack), at + timedelta(days=slack + 1))
    if m := _LAST.search(query):
        what = m[1].lower().split()[-1]
        if what == "yesterday":
            return Window(day - timedelta(days=2), day)
        if what == "weekend":  # the Saturday and Sunday before this week, a day either side
            saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7)
            return Window(saturday - timedelta(days=1), saturday + timedelta(days=3))
        span = {"week": 7, "month": 31, "year": 366}[what]
        return Window(day - timedelta(days=2 * span), day)
    if m := _IN_YEAR.search(query):
        year = int(m[1])
        return Window(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    return None
