"""Replay selection (paper B.3): which buffer items become long-term memories.

ReplayScore(m) = BaseUtility(m) * (1 + alpha * FreqBonus(m)). FreqBonus in [0, 1] counts
repetition: the item's entities mentioned again elsewhere in the buffer or already in the
graph, exact repeats merged into it, and recalls that returned it, capped at ``freq_cap``.
Items scoring above tau_consolidation are promoted; the others go to the trash with their
score and the reason. A pinned item (the user asked to remember it) is always
promoted. The decision is a pure function of the rows, so it can be previewed
(``dry_run``) and re-run after a crash with the same outcome.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cranimem_mcp.models import Decision, Memory
from cranimem_mcp.naming import canonical_name


@dataclass(frozen=True)
class ReplayParams:
    tau_consolidation: float
    alpha: float
    freq_cap: int


def freq_bonus(entity_repeats: int, merges: int, accesses: int, cap: int) -> float:
    return min(1.0, (entity_repeats + merges + accesses) / cap)


def replay_score(base_utility: float, bonus: float, alpha: float) -> float:
    return base_utility * (1.0 + alpha * bonus)


def entity_counts(rows: Sequence[Memory]) -> Counter[str]:
    """How many buffer items mention each (canonical) entity."""
    counts: Counter[str] = Counter()
    for row in rows:
        counts.update({canonical_name(e) for e in row.entities or []})
    return counts


def decide(
    rows: Sequence[Memory],
    *,
    buffer_counts: Mapping[str, int],
    graph_support: Mapping[str, int],
    params: ReplayParams,
) -> list[Decision]:
    decisions = []
    for row in rows:
        names = {canonical_name(e) for e in row.entities or []}
        repeats = sum(max(0, buffer_counts.get(n, 0) - 1) + graph_support.get(n, 0) for n in names)
        merges = max(0, int(row.frequency or 1) - 1)
        accesses = int(row.access_count or 0)
        bonus = freq_bonus(repeats, merges, accesses, params.freq_cap)
        base = float(row.base_utility or 0.0)
        score = replay_score(base, bonus, params.alpha)
        detail = (
            f"base {base:.3f} x (1 + {params.alpha:g} x bonus {bonus:.2f} "
            f"[entity repeats {repeats}, merges {merges}, recalls {accesses}]) = {score:.3f}"
        )
        if row.pinned:
            decision, reason = "promote", f"pinned ({detail})"
        elif score > params.tau_consolidation:
            decision, reason = "promote", f"{detail} > tau {params.tau_consolidation:.3f}"
        else:
            decision, reason = "trash", f"{detail} <= tau {params.tau_consolidation:.3f}"
        decisions.append(
            Decision(id=row.id, replay_score=round(score, 4), decision=decision, reason=reason)
        )
    return decisions
