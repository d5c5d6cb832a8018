"""A narrated tour of the whole pipeline on a fresh store, with no Ollama needed:
goal, gated writes (kept and rejected, with reasons), consolidation (promotions and a prune to
the trash), a two-hop recall answered from the graph, a forget, and a restore that brings the
memory back into recall."""

from __future__ import annotations

from collections.abc import Callable

from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine

GOAL = "Help the user plan their trip to Japan in May"
WRITES = [
    "We land at Narita airport on May 3rd and leave from Osaka on May 17th.",
    "I am allergic to shellfish, so no seafood restaurants please.",
    "NASA released new photos from the Mars rover today.",
    "My budget for hotels is about 150 dollars a night.",
    "lol that meme is hilarious",
    "My friend Kenji works at Hoshino Resorts.",
    "Hoshino Resorts is based in Karuizawa.",
    "Stock markets fell sharply after the central bank announcement.",
    "I prefer ryokans with private onsen over big chain hotels.",
    # Kept by the gate (close to the ryokan preference), but vague and adding nothing new:
    # its replay score stays under tau_consolidation, so replay prunes it to the trash.
    "A ryokan would be nice.",
    "I am allergic to shellfish, so no seafood restaurants please.",
]
FORGET_QUERY = "What can't I eat?"
QUESTION = "Where is the company that Kenji works for based?"


async def run_demo(settings: Settings, say: Callable[[str], None]) -> None:
    def rule(title: str) -> None:
        say("")
        say(f"== {title} " + "=" * max(0, 70 - len(title)))

    say("cranimem-mcp demo: the CraniMem pipeline on a temporary data directory")
    say(f"data directory: {settings.home}")
    async with MemoryEngine(settings, background=False) as engine:
        rule("1. Goal")
        await engine.set_goal(GOAL)
        say(f"goal of scope 'default': {GOAL}")
        say("(loading the MiniLM embedder on first use takes a few seconds)")

        rule("2. Writes go through the gate")
        written: dict[str, str] = {}
        for text in WRITES:
            r = await engine.remember(text)
            if r.id is not None:
                written.setdefault(r.id, text)
            mark = {"stored": "KEEP ", "merged": "MERGE", "rejected": "DROP "}[r.status]
            say(f"{mark} {text}")
            say(f"      {r.reason}")
            if r.utility is not None and r.status == "stored":
                u = r.utility
                say(
                    f"      utility: importance {u.importance:.2f}, surprise {u.surprise:.2f},"
                    f" emotion {u.emotion:.2f} -> base {u.base:.2f}; id {r.id}"
                )

        rule("3. Consolidation: replay, promote to the graph or prune to the trash")
        report = await engine.consolidate()
        say(
            f"replayed {report.replayed}: promoted {report.promoted}, pruned {report.pruned}; "
            f"facts added {report.triples_added}, reinforced {report.triples_reinforced}"
        )
        for d in report.decisions:
            say(f"  {d.decision:8} {d.id}: {d.reason}")
        for d in report.decisions:
            if d.decision == "trash":
                say(f"pruned to the trash (restorable, purged after the retention period): "
                    f"{written[d.id]!r}")  # fmt: skip

        rule("4. Dual-path recall (two hops through the graph)")
        say(f"query: {QUESTION}")
        result = await engine.recall(QUESTION, max_chars=900)
        say(result.context)
        say(f"({len(result.items)} memories, {len(result.facts)} facts, {result.took_ms:.0f} ms)")

        rule("5. Forget and restore")
        f = await engine.forget(entity="shellfish")
        say(f"forget entity 'shellfish': {f.forgotten} memory to the trash, "
            f"{f.facts_removed} fact retracted")  # fmt: skip
        after = await engine.recall(FORGET_QUERY, max_chars=400)
        say(f"recall {FORGET_QUERY!r} now:")
        say(after.context)
        r = await engine.restore(f.ids)
        say(f"restored {r.restored}: {' '.join(r.ids)}")
        back = await engine.recall(FORGET_QUERY, max_chars=400)
        returned = set(r.ids) <= {it.id for it in back.items}
        say(f"recall {FORGET_QUERY!r} again: "
            + ("the memory is back" if returned else "not among the results"))  # fmt: skip
        say(back.context)

        rule("6. Stats")
        stats = await engine.stats()
        for s in stats.scopes:
            say(
                f"scope {s.scope}: buffer {s.buffer_size}/{s.buffer_capacity}, long-term "
                f"{s.longterm}, trash {s.trash}, facts {s.facts}, rejected writes "
                f"{s.rejected_writes}"
            )
        roles = ("embedder", "tagger", "extractor")
        say("models: " + ", ".join(f"{k} {stats.models[k]}" for k in roles if k in stats.models))
    say("")
    say("done. Point an MCP client at `cranimem-mcp serve` to use it for real.")
