"""Export and import: a data directory as two standard files.

``memories.jsonl``: the first line is a header (format version, the embedder that filled the
store, the scopes' goals and turn counters); every other line is one memory with every
column of the episodic table, its vector included. Vectors are kept because re-embedding
is slow and, with another embedder, would not reproduce the same recall; the content is
always there too, so an import into a store with a different embedder re-embeds it (and
says so).

``graph.trig``: the knowledge graph as TriG, one named graph per memory (``.../memory/<id>``)
holding the facts extracted from it and, about the graph itself, its provenance (scope,
memory id, when it was asserted, when the event happened), plus the ``ends`` graphs that
record superseded facts and the trash variants. Any RDF tool or SPARQL engine reads it.

An import goes into an empty data directory only, so the result is exactly the export:
the same ids, tiers, vectors and graphs, hence the same recall results.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from cranimem_mcp.conversation import threads
from cranimem_mcp.errors import ConfigError, InvalidInput
from cranimem_mcp.models import MEMORY_FIELDS, Memory

logger = logging.getLogger(__name__)

FORMAT = "cranimem-export"
VERSION = 1
MEMORIES = "memories.jsonl"
GRAPH = "graph.trig"
_TIMES = ("created_at", "observed_at", "last_access", "tier_changed_at")


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot encode {type(value).__name__}")


def _decode(line: dict[str, Any]) -> Memory:
    """A memory of an export line. A column the line lacks (an export made before the column
    existed) is null, as in the table; keys that are no column are ignored."""
    for key in _TIMES:
        if line.get(key) is not None:
            when = datetime.fromisoformat(line[key])
            line[key] = when if when.tzinfo else when.replace(tzinfo=UTC)
    return Memory(**{name: line.get(name) for name in MEMORY_FIELDS})


async def export(engine: Any, out: Path) -> dict[str, int]:
    """Write ``memories.jsonl`` and ``graph.trig`` of the engine's stores into ``out``."""
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    rows = await engine.episodic.rows(where=None, vectors=True)
    rows.sort(key=lambda m: (m.scope, m.created_at, m.turn or 0))
    header = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "embedder": engine.state.embedder,
        "goals": engine.state.goals,
        "turns": engine.state.turns,
    }
    with (out / MEMORIES).open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(header, ensure_ascii=False) + "\n")
        for memory in rows:
            line = memory.columns()
            line["vector"] = [float(x) for x in memory.vector]
            if memory.windows is not None:
                line["windows"] = np.asarray(memory.windows, dtype=np.float32).tolist()
            fh.write(json.dumps(line, ensure_ascii=False, default=_encode) + "\n")
    trig, quads = await engine.graph.export_trig()
    (out / GRAPH).write_text(trig, encoding="utf-8")
    logger.info("exported %d memories to %s", len(rows), out)
    return {"memories": len(rows), "quads": quads}


def _read(src: Path) -> tuple[dict[str, Any], list[Memory]]:
    try:
        with (src / MEMORIES).open(encoding="utf-8") as fh:
            header = json.loads(fh.readline())
            rows = [_decode(json.loads(line)) for line in fh if line.strip()]
    except FileNotFoundError as exc:
        raise InvalidInput(f"{src} holds no {MEMORIES}: is it an export?") from exc
    except ValueError as exc:
        raise InvalidInput(f"{src / MEMORIES} is not a valid export: {exc}") from exc
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise InvalidInput(f"{src / MEMORIES} is not a {FORMAT} version {VERSION} file")
    return header, rows


async def import_into(engine: Any, src: Path) -> dict[str, int]:
    """Load an export into the engine's stores, which must be empty."""
    header, rows = _read(src)
    if await engine.episodic.count() or sum((await engine.graph.count_facts()).values()):
        raise ConfigError(f"{engine.home} already holds memories: import into an empty one")
    known = header.get("embedder") or {}
    if known.get("id") != engine.embedder.id or int(known.get("dim", 0)) != engine.embedder.dim:
        logger.warning(
            "the export was embedded by %s; re-embedding %d memories with %s",
            known.get("id"), len(rows), engine.embedder.id,
        )  # fmt: skip
        # A turn is embedded with the one it follows, as the write path did (:mod:`.threads`).
        vectors = await threads.embed_all(engine.embedder, rows, engine.settings.episodic.windows)
        rows = threads.reembedded(rows, vectors, rows)
    for start in range(0, len(rows), 1000):
        await engine.episodic.add(rows[start : start + 1000])
    graph = src / GRAPH
    quads = (
        await engine.graph.import_trig(graph.read_text(encoding="utf-8")) if graph.exists() else 0
    )
    engine.state.goals.update(header.get("goals") or {})
    for scope, turn in (header.get("turns") or {}).items():
        engine.state.turns[scope] = max(int(turn), engine.state.turns.get(scope, 0))
    await engine.save_state()
    logger.info("imported %d memories and %d quads from %s", len(rows), quads, src)
    return {"memories": len(rows), "quads": quads}
