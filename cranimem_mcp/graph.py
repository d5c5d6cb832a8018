"""The knowledge graph (paper B.4): typed entities and relations in RDF, with provenance.

Each long-term memory owns one named graph holding what was extracted from it: its entities
(``rdf:type``, ``rdfs:label``), its relations (predicates under ``rel/``) and a few triples
about the memory itself (scope, time asserted). A fact is the triple; its *support* is the
number of active memory graphs that assert it, its *sources* are those memories. So a
repeated fact is reinforced, never duplicated; re-linking a memory after a crash replaces its
graph and cannot count it twice; forgetting a memory retracts exactly the facts only it
supported. A soft-forgotten memory's graph moves under ``trash/`` and stops counting.

Storage: rdflib's in-memory ``Dataset``, persisted as an N-Quads snapshot plus an append-only
journal of absolute graph states (fsync'd per entry). Replaying the journal over any earlier
snapshot yields the same state, so a crash between the two is harmless. A hard forget rewrites
the snapshot and empties the journal, so removed text is in no file (the Oxigraph store keeps
removed strings in its dictionary; see the README). IRIs are built by percent-encoding; no
SPARQL is built from text.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

import anyio
from rdflib import RDF, RDFS, XSD, Dataset, Graph, Literal, Namespace, URIRef

from .errors import StoreError
from .heuristics import canonical_name
from .models import ENTITY_TYPES, Extraction, Fact

logger = logging.getLogger(__name__)

BASE = "https://cranimem.dev/"
VOCAB = Namespace(BASE + "ns#")
REL = Namespace(BASE + "rel/")
_PRED_RE = re.compile(r"[^a-z0-9_]+")


def scope_base(scope: str) -> str:
    return f"{BASE}id/{quote(scope, safe='')}/"


def entity_iri(scope: str, name: str) -> URIRef:
    return URIRef(scope_base(scope) + "entity/" + quote(canonical_name(name), safe=""))


def memory_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "memory/" + memory_id)


def trash_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "trash/" + memory_id)


def predicate_name(raw: str) -> str:
    name = _PRED_RE.sub("_", raw.strip().lower()).strip("_")[:64]
    return name or "related_to"


def _memory_id(graph_iri: object) -> str:
    return _iri(graph_iri).rsplit("/", 1)[-1]


def _iri(ctx: object) -> str:
    """A quad's context comes back as a Graph or as its IRI, depending on the call."""
    return str(getattr(ctx, "identifier", ctx))


@dataclass
class LinkStats:
    added: int = 0
    reinforced: int = 0


@dataclass
class _Agg:
    sources: set[str] = field(default_factory=set)
    last_seen: datetime | None = None


class GraphStore:
    """The RDF knowledge graph with per-memory provenance. All public methods are async."""

    COMPACT_EVERY = 500

    def __init__(self, path: Path) -> None:
        self._dir = path
        self._snapshot = path / "graph.nq"
        self._journal = path / "journal.jsonl"
        self._ds = Dataset()
        self._lock = anyio.Lock()
        self._journal_lines = 0

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        await self._run(self._open_sync)

    def _open_sync(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._snapshot.exists():
            self._ds.parse(self._snapshot, format="nquads")
        if self._journal.exists():
            with self._journal.open("r", encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        # Only the last line can be torn by a crash; nothing after it was acked.
                        logger.warning("graph journal: ignoring torn line %d", lineno)
                        break
                    self._apply(entry)
                    self._journal_lines += 1

    async def close(self) -> None:
        async with self._lock:
            if self._journal_lines:
                await self._run(self._compact_sync)

    async def _run(self, fn, *args):  # type: ignore[no-untyped-def]
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"graph store operation failed: {exc}") from exc

    async def _locked(self, fn, *args):  # type: ignore[no-untyped-def]
        async with self._lock:
            return await self._run(fn, *args)

    # --- journal ---------------------------------------------------------------------------

    def _apply(self, entry: dict) -> None:
        iri = URIRef(entry["graph"])
        self._ds.remove_graph(iri)
        if entry["op"] == "put" and entry.get("nt"):
            self._ds.graph(iri).parse(data=entry["nt"], format="nt")

    def _log(self, entries: list[dict]) -> None:
        for entry in entries:
            self._apply(entry)
        with self._journal.open("a", encoding="utf-8") as fh:
            for entry in entries:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(self._journal, 0o600)
        self._journal_lines += len(entries)
        if self._journal_lines >= self.COMPACT_EVERY:
            self._compact_sync()

    def _compact_sync(self) -> None:
        """Write the whole dataset as a fresh snapshot, then empty the journal."""
        tmp = self._snapshot.with_suffix(".nq.tmp")
        data = self._ds.serialize(format="nquads", encoding="utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._snapshot)
        empty = self._journal.with_suffix(".tmp")
        fd = os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        os.replace(empty, self._journal)
        dir_fd = os.open(self._dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._journal_lines = 0

    async def compact(self) -> None:
        await self._locked(self._compact_sync)

    # --- helpers ---------------------------------------------------------------------------

    def _active(self, ctx: Graph | URIRef) -> bool:
        iri = _iri(ctx)
        return "/memory/" in iri and iri.startswith(BASE + "id/")

    def _fact_sources(self, s: URIRef, p: URIRef, o: URIRef) -> set[str]:
        return {
            _memory_id(ctx)
            for _s, _p, _o, ctx in self._ds.quads((s, p, o, None))
            if self._active(ctx)
        }

    def _mentions(self, node: URIRef) -> int:
        """Active memory graphs that type (so mention) this entity node."""
        return sum(1 for *_t, c in self._ds.quads((node, RDF.type, None, None)) if self._active(c))

    def _label(self, node: URIRef) -> str:
        for _s, _p, label, _c in self._ds.quads((node, RDFS.label, None, None)):
            return str(label)
        return unquote(str(node).rsplit("/", 1)[-1])

    def _graph_triples(self, iri: URIRef) -> list[tuple[URIRef, URIRef, URIRef]]:
        return [
            (s, p, o)
            for s, p, o in self._ds.graph(iri).triples((None, None, None))
            if str(p).startswith(str(REL))
        ]

    # --- linkage ---------------------------------------------------------------------------

    async def put(
        self, scope: str, memory_id: str, extraction: Extraction, asserted_at: datetime
    ) -> LinkStats:
        """Set the memory's graph to this extraction (idempotent: a re-run after a crash
        replaces it). Entities and relations must already be checked."""
        return await self._locked(self._put_sync, scope, memory_id, extraction, asserted_at)

    def _put_sync(
        self, scope: str, memory_id: str, extraction: Extraction, asserted_at: datetime
    ) -> LinkStats:
        iri = memory_graph_iri(scope, memory_id)
        g = Graph()
        g.add((iri, VOCAB.scope, Literal(scope)))
        g.add((iri, VOCAB.memory, Literal(memory_id)))
        g.add((iri, VOCAB.assertedAt, Literal(asserted_at.isoformat(), datatype=XSD.dateTime)))
        for ent in extraction.entities:
            node = entity_iri(scope, ent.name)
            type_ = ent.type if ent.type in ENTITY_TYPES else "Other"
            g.add((node, RDF.type, VOCAB[type_]))
            g.add((node, RDFS.label, Literal(" ".join(ent.name.split()))))
        stats = LinkStats()
        for rel in extraction.relations:
            triple = (
                entity_iri(scope, rel.subject),
                REL[predicate_name(rel.predicate)],
                entity_iri(scope, rel.object),
            )
            if triple in g:
                continue
            g.add(triple)
            others = self._fact_sources(*triple) - {memory_id}
            if others:
                stats.reinforced += 1
            else:
                stats.added += 1
        self._log([{"op": "put", "graph": str(iri), "nt": g.serialize(format="nt", encoding=None)}])
        return stats

    async def deactivate(self, scope: str, memory_ids: Iterable[str]) -> int:
        """Soft forget: move the memories' graphs to the trash. Returns facts that lost
        their last support."""
        return await self._locked(self._move_sync, scope, list(memory_ids), True)

    async def activate(self, scope: str, memory_ids: Iterable[str]) -> int:
        """Restore: move the graphs back. Returns facts that regained support."""
        return await self._locked(self._move_sync, scope, list(memory_ids), False)

    def _move_sync(self, scope: str, memory_ids: list[str], to_trash: bool) -> int:
        entries: list[dict] = []
        touched: set[tuple] = set()
        for mid in memory_ids:
            active, trashed = memory_graph_iri(scope, mid), trash_graph_iri(scope, mid)
            src, dst = (active, trashed) if to_trash else (trashed, active)
            g = self._ds.graph(src)
            if len(g) == 0:
                continue
            touched.update(self._graph_triples(src) if to_trash else [])
            nt = g.serialize(format="nt", encoding=None)
            entries += [
                {"op": "put", "graph": str(dst), "nt": nt},
                {"op": "drop", "graph": str(src)},
            ]
            if not to_trash:
                touched.update(self._graph_triples(src))
        before = {t: bool(self._fact_sources(*t)) for t in touched}
        if entries:
            self._log(entries)
        after = {t: bool(self._fact_sources(*t)) for t in touched}
        return sum(1 for t in touched if before[t] != after[t])

    async def retract(self, scope: str, memory_ids: Iterable[str], purge: bool = False) -> int:
        """Remove the memories' graphs (active and trashed). Returns facts that lost their
        last support. With ``purge`` the store is rewritten so no copy stays on disk."""
        return await self._locked(self._retract_sync, scope, list(memory_ids), purge)

    def _retract_sync(self, scope: str, memory_ids: list[str], purge: bool) -> int:
        entries, touched = [], set()
        for mid in memory_ids:
            for iri in (memory_graph_iri(scope, mid), trash_graph_iri(scope, mid)):
                if len(self._ds.graph(iri)):
                    touched.update(self._graph_triples(iri))
                    entries.append({"op": "drop", "graph": str(iri)})
        before = {t: bool(self._fact_sources(*t)) for t in touched}
        if entries:
            self._log(entries)
        if purge:
            self._compact_sync()
        return sum(1 for t in touched if before[t] and not self._fact_sources(*t))

    async def orphaned_by(self, scope: str, memory_ids: Iterable[str]) -> int:
        """How many facts would lose their last support if these memories went."""
        return await self._locked(self._orphaned_sync, scope, set(memory_ids))

    def _orphaned_sync(self, scope: str, memory_ids: set[str]) -> int:
        triples = set()
        for mid in memory_ids:
            triples.update(self._graph_triples(memory_graph_iri(scope, mid)))
        return sum(1 for t in triples if self._fact_sources(*t) <= memory_ids)

    async def has_memory(self, scope: str, memory_id: str) -> bool:
        return await self._locked(
            lambda: len(self._ds.graph(memory_graph_iri(scope, memory_id))) > 0
        )

    # --- reads -----------------------------------------------------------------------------

    async def link(self, scope: str, text: str, max_words: int = 5) -> list[URIRef]:
        """Entity nodes of the scope named in ``text`` (any 1-5 word span, any case)."""
        return await self._locked(self._link_sync, scope, text, max_words)

    def _link_sync(self, scope: str, text: str, max_words: int) -> list[URIRef]:
        words = re.findall(r"[\w'’&\-.]+", text)
        words = [w.strip(".") for w in words]
        found: dict[URIRef, None] = {}
        for n in range(max_words, 0, -1):
            for i in range(len(words) - n + 1):
                span = " ".join(words[i : i + n])
                for candidate in (span, re.sub(r"'s$", "", span)):
                    node = entity_iri(scope, candidate)
                    if any(
                        self._active(c)
                        for _s, _p, _o, c in self._ds.quads((node, RDF.type, None, None))
                    ):
                        found[node] = None
        return list(found)

    async def facts(self, scope: str, seeds: list[URIRef], hops: int, limit: int) -> list[Fact]:
        """Facts reachable from the seeds within ``hops`` (breadth first, best supported
        first within a hop)."""
        return await self._locked(self._facts_sync, scope, seeds, hops, limit)

    def _facts_sync(self, scope: str, seeds: list[URIRef], hops: int, limit: int) -> list[Fact]:
        seen_nodes = set(seeds)
        frontier = list(seeds)
        out: dict[tuple, tuple[int, _Agg]] = {}
        for hop in range(1, hops + 1):
            found: dict[tuple, _Agg] = defaultdict(_Agg)
            for node in frontier:
                for pattern in ((node, None, None, None), (None, None, node, None)):
                    for s, p, o, ctx in self._ds.quads(pattern):
                        if not str(p).startswith(str(REL)) or not self._active(ctx):
                            continue
                        if (s, p, o) in out:
                            continue
                        agg = found[(s, p, o)]
                        agg.sources.add(_memory_id(ctx))
                        when = self._asserted_at(ctx)
                        if when and (agg.last_seen is None or when > agg.last_seen):
                            agg.last_seen = when
            ranked = sorted(found.items(), key=lambda kv: -len(kv[1].sources))
            next_frontier = []
            for triple, agg in ranked:
                if len(out) >= limit:
                    break
                out[triple] = (hop, agg)
                for node in (triple[0], triple[2]):
                    if node not in seen_nodes:
                        seen_nodes.add(node)
                        next_frontier.append(node)
            frontier = next_frontier
            if not frontier or len(out) >= limit:
                break
        return [
            Fact(
                subject=self._label(s),
                predicate=str(p)[len(str(REL)) :],
                object=self._label(o),
                support=len(agg.sources),
                sources=sorted(agg.sources),
                hops=hop,
                last_seen=agg.last_seen,
            )
            for (s, p, o), (hop, agg) in out.items()
        ]

    def _asserted_at(self, ctx: object) -> datetime | None:
        iri = URIRef(_iri(ctx))
        for value in self._ds.graph(iri).objects(iri, VOCAB.assertedAt):
            try:
                return datetime.fromisoformat(str(value))
            except ValueError:
                return None
        return None

    async def entity_support(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        """For each entity name, how many active memory graphs of the scope mention it."""
        return await self._locked(self._support_sync, scope, list(names))

    def _support_sync(self, scope: str, names: list[str]) -> dict[str, int]:
        out = {}
        for name in names:
            node = entity_iri(scope, name)
            out[name] = sum(
                1
                for _s, _p, _o, c in self._ds.quads((node, RDF.type, None, None))
                if self._active(c)
            )
        return out

    async def memories_mentioning(self, scope: str, name: str) -> set[str]:
        """Memories (active or trashed) whose graph mentions the entity."""
        return await self._locked(self._mentioning_sync, scope, name)

    def _mentioning_sync(self, scope: str, name: str) -> set[str]:
        node = entity_iri(scope, name)
        prefix = scope_base(scope)
        return {
            _memory_id(c)
            for _s, _p, _o, c in self._ds.quads((node, RDF.type, None, None))
            if _iri(c).startswith(prefix)
        }

    async def count_facts(self) -> dict[str, int]:
        """Distinct current facts per scope."""
        return await self._locked(self._count_sync)

    def _count_sync(self) -> dict[str, int]:
        facts: dict[str, set] = defaultdict(set)
        for s, p, o, c in self._ds.quads((None, None, None, None)):
            if str(p).startswith(str(REL)) and self._active(c):
                scope = unquote(_iri(c)[len(BASE + "id/") :].split("/", 1)[0])
                facts[scope].add((s, p, o))
        return {k: len(v) for k, v in facts.items()}

    async def turtle(self, scope: str, max_triples: int) -> str:
        return await self._locked(self._turtle_sync, scope, max_triples)

    def _turtle_sync(self, scope: str, max_triples: int) -> str:
        g = Graph()
        g.bind("cm", VOCAB)
        g.bind("rel", REL)
        g.bind("e", Namespace(scope_base(scope) + "entity/"))
        prefix = scope_base(scope) + "memory/"
        for s, p, o, c in self._ds.quads((None, None, None, None)):
            if len(g) >= max_triples:
                break
            if _iri(c).startswith(prefix) and not str(s).startswith(prefix):
                g.add((s, p, o))
        return g.serialize(format="turtle")
