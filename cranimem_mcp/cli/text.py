"""The command line's text renderings of results: what ``list``, ``remember``, ``forget``,
``restore``, ``goal``, ``check``, ``consolidate`` and ``stats`` print without ``--json``.
Pure functions from a result model to a string; they print nothing and import nothing of
ours, so the dispatch in :mod:`.cli` alone decides what reaches stdout."""

from __future__ import annotations

from typing import Any


def page_text(page: Any) -> str:
    """One line per memory: id, tier, when it entered the tier, the start of its text."""
    lines = []
    for m in page.items:
        text = " ".join(m.content.split())
        text = text if len(text) <= 70 and not m.truncated else text[:67] + "..."
        when = m.tier_changed_at or m.created_at
        lines.append(f"{m.id}  {m.tier:<8}  {when:%Y-%m-%d %H:%M}  {text}")
    where = f"{page.scope}, {page.tier or 'all tiers'}"
    if not page.items:
        return f"no memories at offset {page.offset} ({where}: {page.total} in all)"
    shown = f"{page.offset + 1}-{page.offset + len(page.items)} of {page.total} ({where})"
    more = f"; next page: --offset {page.next_offset}" if page.next_offset is not None else ""
    return "\n".join([*lines, shown + more])


def remember_text(r: Any) -> str:
    if r.status == "rejected":
        return f"rejected, not stored: {r.reason}"
    redacted = f" [redacted: {', '.join(r.redacted)}]" if r.redacted else ""
    return f"{r.status} {r.id}{redacted}: {r.reason}"


def forget_text(r: Any) -> str:
    verb = "would forget" if r.dry_run else "forgot"
    already = f"; already in the trash: {' '.join(r.unchanged)}" if r.unchanged else ""
    return (
        f"{verb} {r.forgotten} ({'hard' if r.hard else 'soft'}); "
        f"facts removed: {r.facts_removed}; ids: {' '.join(r.ids)}{already}"
    )


def restore_text(r: Any) -> str:
    return f"restored {r.restored}: {' '.join(r.ids)}"


def goal_text(r: Any) -> str:
    return f"goal of {r.scope}: {r.goal}"


def check_text(problems: list[str]) -> str:
    return "\n".join(problems) if problems else "ok: the stores agree"


def _aligned(pairs: list[tuple[str, str]], indent: str = "") -> list[str]:
    width = max((len(k) for k, _ in pairs), default=0)
    return [f"{indent}{k + ':':{width + 1}}  {v}" for k, v in pairs]


def stats_text(r: Any) -> str:
    """``stats`` for a reader: aligned ``key: value`` lines, one block per scope."""
    pairs = [("data directory", r.data_dir)]
    # models holds each role ("embedder") and why it was chosen ("embedder_reason", which
    # names the choice too); a reason may come without its role ("default_gate_reason").
    roles = dict.fromkeys(k.removesuffix("_reason") for k in r.models)
    for role in roles:
        value = r.models.get(f"{role}_reason") or r.models.get(role, "")
        pairs.append((role.replace("_", " "), value))
    if r.fallbacks:
        pairs.append(("fallbacks", ", ".join(f"{k} {n}" for k, n in r.fallbacks.items())))
    lines = _aligned(pairs)
    for s in r.scopes:
        scope = [
            ("goal", s.goal),
            ("buffer", f"{s.buffer_size}/{s.buffer_capacity}"),
            ("long-term", str(s.longterm)),
            ("trash", str(s.trash)),
            ("facts", str(s.facts)),
            ("rejected writes", str(s.rejected_writes)),
        ]
        c = s.last_consolidation
        if c is not None:
            when = f" at {c.finished_at:%Y-%m-%d %H:%M:%S}" if c.finished_at else ""
            scope.append((
                "last consolidation",
                f"replayed {c.replayed}: promoted {c.promoted}, pruned {c.pruned}"
                f" ({c.trigger}{when})",
            ))  # fmt: skip
        lines += ["", f"scope {s.scope}", *_aligned(scope, "  ")]
    if not r.scopes:
        lines += ["", "no scopes yet"]
    return "\n".join(lines)


def report_text(r: Any) -> str:
    lines = [
        f"replayed {r.replayed}: promoted {r.promoted}, pruned {r.pruned}, "
        f"facts added {r.triples_added}, reinforced {r.triples_reinforced} ({r.took_ms:.0f} ms)"
    ]
    lines += [f"  {d.decision:8} {d.id}  {d.reason}" for d in r.decisions]
    return "\n".join(lines)
