"""Facts change only when they change: labelled pairs of writes, judged through the engine.

Each pair (``tests/data/supersession_*.json``) is two writes to a fresh scope: ``first``,
then replay (so its facts are in the graph, as an old fact is), then ``second``. The pair is
judged on what a caller sees:

- **ends**: the second write's result reports a fact of the first as superseded, and recall
  labels it ``previously`` (its fact comes back with ``superseded`` set);
- **keeps**: the second reports no fact of the first as ended and recall labels none of them.

Recall is read before the second write is replayed; ``after_replay`` says what recall labels
once replay ran (it may trash a change stated in a low-utility write, and its ends with it).

A pair may also list ``facts`` that must be current after both writes and ``absent`` ones that
must not be in the graph at all (negation: "we use pnpm workspaces, not yarn" gives no
``not_uses pnpm workspaces``). A pair is right when all of its checks hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.models import Fact

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class Pair:
    id: str
    first: str
    second: str
    expect: str  # "ends" or "keeps"
    facts: tuple[Triple, ...] = ()
    absent: tuple[Triple, ...] = ()


@dataclass
class Outcome:
    pair: Pair
    reported: list[Triple] = field(default_factory=list)  # ended facts of the first write
    previously: list[Triple] = field(default_factory=list)  # the first's facts recall labels
    missing: list[Triple] = field(default_factory=list)  # expected facts not current
    present: list[Triple] = field(default_factory=list)  # facts that should not be there
    after_replay: list[Triple] = field(default_factory=list)  # previously, once replay ran
    rejected: str = ""  # a write the gate rejected (its reason)

    @property
    def right(self) -> bool:
        ends = self.pair.expect == "ends"
        return (
            not self.rejected
            and bool(self.reported) == ends
            and bool(self.previously) == ends
            and not self.missing
            and not self.present
        )

    def describe(self) -> str:
        p = self.pair
        parts = [f"{p.id} expect {p.expect}: {p.first!r} then {p.second!r}"]
        if self.rejected:
            parts.append(f"rejected: {self.rejected}")
        parts.append(f"reported ended {self.reported}, recall previously {self.previously}")
        if self.missing:
            parts.append(f"missing {self.missing}")
        if self.present:
            parts.append(f"wrongly present {self.present}")
        return "; ".join(parts)


def load(path: Path) -> list[Pair]:
    rows = json.loads(path.read_text(encoding="utf-8"))["items"]
    return [
        Pair(
            id=row["id"],
            first=row["first"],
            second=row["second"],
            expect=row["expect"],
            facts=tuple(tuple(t) for t in row.get("facts", ())),  # type: ignore[misc]
            absent=tuple(tuple(t) for t in row.get("absent", ())),  # type: ignore[misc]
        )
        for row in rows
    ]


async def judge(engine: MemoryEngine, pair: Pair, scope: str) -> Outcome:
    """Write the pair to ``scope`` (fresh) and read what the engine says about it."""
    out = Outcome(pair)
    first = await engine.remember(pair.first, scope=scope)
    if first.status == "rejected":
        out.rejected = f"first: {first.reason}"
        return out
    await engine.consolidate(scope)
    second = await engine.remember(pair.second, scope=scope)
    if second.status == "rejected":
        out.rejected = f"second: {second.reason}"
        return out
    out.reported = [
        (f.subject, f.predicate, f.object) for f in second.superseded if first.id in f.sources
    ]
    facts = await _facts(engine, pair.first, scope)
    out.previously = [t for t, f in facts.items() if f.superseded and first.id in f.sources]
    # Replay may trash the second write (a low utility): its ends go to the trash with it.
    await engine.consolidate(scope)
    facts = await _facts(engine, pair.first, scope)
    out.after_replay = [t for t, f in facts.items() if f.superseded and first.id in f.sources]
    if pair.facts or pair.absent:  # read from the graph, so once replay linked the second
        facts |= await _facts(engine, pair.second, scope)
        out.missing = [t for t in pair.facts if t not in facts or facts[t].superseded]
        out.present = [t for t in pair.absent if t in facts]
    return out


async def _facts(engine: MemoryEngine, query: str, scope: str) -> dict[Triple, Fact]:
    recalled = await engine.recall(query, scope=scope, paths=["graph"])
    return {(f.subject, f.predicate, f.object): f for f in recalled.facts}


async def measure(engine: MemoryEngine, pairs: list[Pair], prefix: str = "pair") -> list[Outcome]:
    """Every pair, each in a scope of its own."""
    return [await judge(engine, pair, f"{prefix}-{pair.id}") for pair in pairs]


def accuracy(outcomes: list[Outcome]) -> float:
    return sum(o.right for o in outcomes) / max(1, len(outcomes))
