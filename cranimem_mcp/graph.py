"""The knowledge graph (paper B.4): typed entities and relations in RDF, with provenance
and time.

Each long-term memory owns one named graph (``memory/<id>``) holding what was extracted
from it: its entities (``rdf:type``, ``rdfs:label``), its relations (predicates under
``rel/``) and triples about the memory itself (scope, when the event happened, when it was
asserted). A fact is the triple; its *support* is the number of active memory graphs that
assert it, its *sources* are those memories. So a repeated fact is reinforced, never
duplicated; re-linking a memory after a crash replaces its graph and cannot count it twice;
forgetting a memory retracts exactly the facts only it supported. A soft-forgotten memory's
graphs move under ``trash/`` and stop counting.

Facts change: when a memory states a new object for a single-valued (functional) relation
of a subject, its ``ends/<id>`` graph records that the old fact's validity ended at the new
memory's event time. Nothing is deleted: the old fact stays, with ``valid_to`` set, and is
current again if the memory that ended it is forgotten or the old object is asserted anew.

Persistence is :class:`~cranimem_mcp.journal.JournaledDataset`. IRIs are built by
percent-encoding; no SPARQL is built from text.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
from rdflib import RDF, RDFS, BNode, Graph, Literal, URIRef

from . import graph_io, temporal
from .errors import StoreError
from .journal import JournaledDataset
from .models import ENTITY_TYPES, Extraction, Fact, Relation
from .naming import predicate_name
from .temporal import Source, Validity
from .vocabulary import (
    BASE,
    REL,
    VOCAB,
    Triple,
    ends_graph_iri,
    entity_iri,
    graph_kind,
    graph_name,
    is_relation,
    memory_graph_iri,
    memory_of,
    parse_time,
    relation_iri,
    scope_base,
    stamp,
    trash_ends_graph_iri,
    trash_graph_iri,
)

logger = logging.getLogger(__name__)

_MEMO_MAX = 200_000  # remembered reads between commits, at most
_MEMO_EDGES_MAX = 4096  # nodes whose relations are remembered between commits, at most


def _record_end(ends: Graph, triple: Triple, when: datetime) -> None:
    """Add to an ``ends`` graph the record that the fact's validity ended ``when``."""
    record = BNode()
    ends.add((record, RDF.type, VOCAB.Supersession))
    ends.add((record, VOCAB.endsSubject, triple[0]))
    ends.add((record, VOCAB.endsPredicate, triple[1]))
    ends.add((record, VOCAB.endsObject, triple[2]))
    ends.add((record, VOCAB.endedAt, stamp(when)))


@dataclass
class LinkStats:
    added: int = 0
    reinforced: int = 0


class GraphStore:
    """The RDF knowledge graph with per-memory provenance. All public methods are async."""

    def __init__(
        self, path: Path | None = None, store: Any = None, memo: bool | None = None
    ) -> None:
        """``path``: the local journaled store's directory; or ``store``, any object with
        JournaledDataset's small interface (``ds``, ``open``, ``put``, ``drop``, ``commit``,
        ``compact``, ``pending``), e.g. :class:`~cranimem_mcp.sparql.SparqlDataset`."""
        self._store = store if store is not None else JournaledDataset(path)
        self._ds = self._store.ds
        self._lock = anyio.Lock()
        # Reads a recall repeats (a fact's validity, an entity's mentions), remembered until
        # the next commit: the dataset changes only in commit, and we are its only writer.
        # A shared SPARQL server can change under us (replicas): no memos unless asked.
        self._memo = store is None if memo is None else memo
        self._memo_validity: dict[Triple, Validity] = {}
        self._memo_mentions: dict[URIRef, int] = {}
        self._memo_labels: dict[URIRef, str] = {}
        self._memo_edges: dict[URIRef, list[tuple[Triple, Validity]]] = {}
        # With memos: the supersession records of the active "ends" graphs, by the fact they
        # end (fact -> graph -> end times), built on first use and kept in step by _commit
        # for the graphs a commit names. Why: finding a fact's ends by scanning every record
        # about its subject grew with the history (supersede was 60% of a write's cost at
        # 1.5k memories, docs/RESULTS.md); this costs what the commit changed.
        self._ends: dict[Triple, dict[str, list[datetime]]] | None = None
        self._ends_of_graph: dict[str, list[Triple]] = {}

    def _commit(self, entries: list[Any]) -> None:
        try:
            self._store.commit(entries)
        finally:
            self._forget_memos()
            if self._ends is not None:
                try:
                    for entry in entries:
                        if graph_kind(entry["graph"]) == "ends":
                            self._index_ends(entry["graph"])
                except Exception:  # an entry of another shape: rebuild on next use
                    self._ends = None
                    raise

    def _ends_index(self) -> dict[Triple, dict[str, list[datetime]]]:
        if self._ends is None:
            self._ends, self._ends_of_graph = {}, {}
            graphs = {graph_name(ctx) for ctx in self._ds.contexts() if graph_kind(ctx) == "ends"}
            for iri in graphs:
                self._index_ends(iri)
        return self._ends

    def _index_ends(self, iri: str) -> None:
        """(Re)read one ends graph into the index."""
        assert self._ends is not None
        for triple in self._ends_of_graph.pop(iri, []):
            by_graph = self._ends.get(triple)
            if by_graph is not None:
                by_graph.pop(iri, None)
                if not by_graph:
                    del self._ends[triple]
        g = self._ds.graph(URIRef(iri))
        ended: list[Triple] = []
        for record in g.subjects(RDF.type, VOCAB.Supersession):
            triple = (
                g.value(record, VOCAB.endsSubject),
                g.value(record, VOCAB.endsPredicate),
                g.value(record, VOCAB.endsObject),
            )
            when = parse_time(g.value(record, VOCAB.endedAt))
            if None in triple or when is None:
                continue
            self._ends.setdefault(triple, {}).setdefault(iri, []).append(when)  # type: ignore[arg-type]
            ended.append(triple)  # type: ignore[arg-type]
        if ended:
            self._ends_of_graph[iri] = ended

    def _forget_memos(self) -> None:
        self._memo_validity.clear()
        self._memo_mentions.clear()
        self._memo_labels.clear()
        self._memo_edges.clear()

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        self._forget_memos()
        self._ends = None
        await self._run(self._store.open)

    async def close(self) -> None:
        async with self._lock:
            if self._store.pending:
                await self._run(self._store.compact)

    async def compact(self) -> None:
        await self._locked(self._store.compact)

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

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _active(ctx: object) -> bool:
        return graph_kind(ctx) == "memory"

    def _edges(self, node: URIRef) -> list[tuple[Triple, Validity]]:
        """The relations (facts) at a node, in or out, with their validity; remembered until
        the next commit (recalls walk from the same popular entities again and again)."""
        found = self._memo_edges.get(node) if self._memo else None
        if found is None:
            found = [
                (triple, self._validity(*triple))
                for pattern in ((node, None, None), (None, None, node))
                for triple in self._active_triples(pattern)
                if is_relation(triple[1])
            ]
            if self._memo:
                if len(self._memo_edges) >= _MEMO_EDGES_MAX:
                    self._memo_edges.clear()
                self._memo_edges[node] = found
        return found

    def _active_triples(self, pattern: tuple[Any, Any, Any]) -> Iterable[Triple]:
        """Each triple matching ``pattern`` that an active memory graph holds, once.

        Why not the quads: an entity many memories mention holds the same triple in each of
        their graphs, and walking every copy made the graph path of a recall 130 ms at 10k
        memories (docs/RESULTS.md). The local store lists each triple once with its graphs;
        a remote store is asked for quads, as before."""
        if not self._memo:
            seen: set[Triple] = set()
            for s, p, o, ctx in self._ds.quads((*pattern, None)):
                if (s, p, o) not in seen and self._active(ctx):
                    seen.add((s, p, o))
                    yield (s, p, o)
            return
        for triple, contexts in self._ds.store.triples(pattern, context=None):
            if any(self._active(c) for c in contexts):
                yield triple

    def _fact_sources(self, s: URIRef, p: URIRef, o: URIRef) -> set[str]:
        return {memory_of(c) for *_t, c in self._ds.quads((s, p, o, None)) if self._active(c)}

    def _validity(self, s: URIRef, p: URIRef, o: URIRef) -> Validity:
        """When and by which memories a fact was stated, and when it was ended."""
        if not self._memo:
            return self._read_validity(s, p, o)
        v = self._memo_validity.get((s, p, o))
        if v is None:
            if len(self._memo_validity) >= _MEMO_MAX:
                self._memo_validity.clear()
            v = self._memo_validity[(s, p, o)] = self._read_validity(s, p, o)
        return v

    def _read_validity(self, s: URIRef, p: URIRef, o: URIRef) -> Validity:
        sources: list[Source] = []
        for *_t, ctx in self._ds.quads((s, p, o, None)):
            if self._active(ctx):
                iri = URIRef(graph_name(ctx))
                g = self._ds.graph(iri)
                asserted = parse_time(g.value(iri, VOCAB.assertedAt))
                observed = parse_time(g.value(iri, VOCAB.observedAt)) or asserted
                if asserted and observed:
                    sources.append(Source(memory_of(ctx), observed, asserted))
        ends: list[datetime] = []
        if self._memo:
            for times in self._ends_index().get((s, p, o), {}).values():
                ends.extend(times)
            return Validity(sources, ends)
        for record, _p, _s, ctx in self._ds.quads((None, VOCAB.endsSubject, s, None)):
            if graph_kind(ctx) != "ends":
                continue
            g = self._ds.graph(URIRef(graph_name(ctx)))
            if (record, VOCAB.endsPredicate, p) in g and (record, VOCAB.endsObject, o) in g:
                when = parse_time(g.value(record, VOCAB.endedAt))
                if when:
                    ends.append(when)
        return Validity(sources, ends)

    def _mentions(self, node: URIRef) -> int:
        """Active memory graphs that type (so mention) this entity node."""
        found = self._memo_mentions.get(node) if self._memo else None
        if found is None:
            if len(self._memo_mentions) >= _MEMO_MAX:
                self._memo_mentions.clear()
            found = sum(
                1 for *_t, c in self._ds.quads((node, RDF.type, None, None)) if self._active(c)
            )
            self._memo_mentions[node] = found
        return found

    def _label(self, node: URIRef) -> str:
        found = self._memo_labels.get(node) if self._memo else None
        if found is None:
            found = unquote(str(node).rsplit("/", 1)[-1])
            for _s, _p, label, _c in self._ds.quads((node, RDFS.label, None, None)):
                found = str(label)
                break
            if len(self._memo_labels) >= _MEMO_MAX:
                self._memo_labels.clear()
            self._memo_labels[node] = found
        return found

    def _graph_triples(self, iri: URIRef) -> list[Triple]:
        return [
            (s, p, o)
            for s, p, o in self._ds.graph(iri).triples((None, None, None))
            if is_relation(p)
        ]

    @staticmethod
    def _triple(scope: str, rel: Relation) -> Triple:
        return (
            entity_iri(scope, rel.subject),
            relation_iri(rel.predicate),
            entity_iri(scope, rel.object),
        )

    def _fact(self, triple: Triple, v: Validity, hops: int = 0) -> Fact:
        s, p, o = triple
        valid_to = v.valid_to
        return Fact(
            subject=self._label(s),
            predicate=str(p)[len(str(REL)) :],
            object=self._label(o),
            support=len(v.sources),
            sources=sorted(src.memory for src in v.sources),
            hops=hops,
            first_seen=min(src.asserted for src in v.sources),
            last_seen=max(src.asserted for src in v.sources),
            valid_from=v.valid_from,
            valid_to=valid_to,
            superseded=v.superseded(datetime.now(UTC)),
        )

    # --- linkage ---------------------------------------------------------------------------

    async def put(
        self,
        scope: str,
        memory_id: str,
        extraction: Extraction,
        asserted_at: datetime,
        observed_at: datetime | None = None,
    ) -> LinkStats:
        """Set the memory's graph to this extraction (idempotent: a re-run after a crash
        replaces it). Entities and relations must already be checked."""
        return await self._locked(
            self._put_sync, scope, memory_id, extraction, asserted_at, observed_at or asserted_at
        )

    def _put_sync(
        self,
        scope: str,
        memory_id: str,
        extraction: Extraction,
        asserted_at: datetime,
        observed_at: datetime,
    ) -> LinkStats:
        iri = memory_graph_iri(scope, memory_id)
        g = Graph()
        g.add((iri, VOCAB.scope, Literal(scope)))
        g.add((iri, VOCAB.memory, Literal(memory_id)))
        g.add((iri, VOCAB.assertedAt, stamp(asserted_at)))
        g.add((iri, VOCAB.observedAt, stamp(observed_at)))
        for ent in extraction.entities:
            node = entity_iri(scope, ent.name)
            type_ = ent.type if ent.type in ENTITY_TYPES else "Other"
            g.add((node, RDF.type, VOCAB[type_]))
            g.add((node, RDFS.label, Literal(" ".join(ent.name.split()))))
        stats = LinkStats()
        for rel in extraction.relations:
            triple = self._triple(scope, rel)
            if triple in g:
                continue
            g.add(triple)
            if self._fact_sources(*triple) - {memory_id}:
                stats.reinforced += 1
            else:
                stats.added += 1
        self._commit([self._store.put(iri, g)])
        return stats

    async def supersede(
        self,
        scope: str,
        memory_id: str,
        relations: list[Relation],
        observed_at: datetime,
        functional: Iterable[str],
        pending: Iterable[tuple[Relation, str, datetime]] = (),
    ) -> list[Fact]:
        """Record what this memory's single-valued relations end: for each (s, p, o) with p
        functional, every other current (s, p, o') valid at ``observed_at`` ends then; if an
        (s, p, o') is newer than the memory, the memory's own fact ends when that began.
        Adds to the memory's ``ends`` graph (idempotent). Returns the facts it ended.
        ``pending`` are (relation, memory id, observed) of memories not linked yet (the
        buffer): their facts count as asserted, so a change is caught before consolidation."""
        functional = set(functional)
        if not any(predicate_name(r.predicate) in functional or r.functional for r in relations):
            return []  # nothing single-valued: nothing to end (most writes)
        return await self._locked(
            self._supersede_sync,
            scope, memory_id, relations, observed_at, functional, list(pending),
        )  # fmt: skip

    def _supersede_sync(
        self,
        scope: str,
        memory_id: str,
        relations: list[Relation],
        observed_at: datetime,
        functional: set[str],
        pending: list[tuple[Relation, str, datetime]],
    ) -> list[Fact]:
        ends_iri = ends_graph_iri(scope, memory_id)
        unlinked: dict[Triple, list[Source]] = defaultdict(list)
        labels: dict[URIRef, str] = {}
        for rel, mid, when in pending:
            if mid == memory_id:
                continue
            triple = self._triple(scope, rel)
            unlinked[triple].append(Source(mid, when, when))
            labels.setdefault(triple[0], rel.subject)
            labels.setdefault(triple[2], rel.object)

        def validity(triple: Triple) -> Validity:
            return self._validity(*triple).including(unlinked.get(triple, ()))

        ends = Graph()
        for triple in self._ds.graph(ends_iri).triples((None, None, None)):
            ends.add(triple)
        recorded = {
            (ends.value(r, VOCAB.endsSubject), ends.value(r, VOCAB.endsPredicate),
             ends.value(r, VOCAB.endsObject))
            for r in ends.subjects(RDF.type, VOCAB.Supersession)
        }  # fmt: skip
        ended: list[Triple] = []
        for rel in relations:
            name = predicate_name(rel.predicate)
            if name not in functional and not rel.functional:
                continue
            new = self._triple(scope, rel)
            s, p = new[:2]
            candidates = {
                (s, p, o)
                for _s, _p, o, ctx in self._ds.quads((s, p, None, None))
                if self._active(ctx) and memory_id != memory_of(ctx)
            } | {t for t in unlinked if t[:2] == (s, p)}
            others = [(old, validity(old)) for old in sorted(candidates) if old != new]
            for fact, when in temporal.supersession(new, others, observed_at):
                if fact not in recorded:  # one end per fact and memory: the first
                    _record_end(ends, fact, when)
                    recorded.add(fact)
                if fact != new:
                    ended.append(fact)
        if len(ends):
            self._commit([self._store.put(ends_iri, ends)])
        facts = []
        for t in dict.fromkeys(ended):
            fact = self._fact(t, validity(t))
            fact.subject = labels.get(t[0], fact.subject)
            fact.object = labels.get(t[2], fact.object)
            facts.append(fact)
        return facts

    async def deactivate(self, scope: str, memory_ids: Iterable[str]) -> int:
        """Soft forget: move the memories' graphs to the trash. Returns facts that lost
        their last support."""
        return await self._locked(self._move_sync, scope, list(memory_ids), True)

    async def activate(self, scope: str, memory_ids: Iterable[str]) -> int:
        """Restore: move the graphs back. Returns facts that regained support."""
        return await self._locked(self._move_sync, scope, list(memory_ids), False)

    def _move_sync(self, scope: str, memory_ids: list[str], to_trash: bool) -> int:
        entries: list[dict] = []
        touched: set[Triple] = set()
        for mid in memory_ids:
            pairs = [
                (memory_graph_iri(scope, mid), trash_graph_iri(scope, mid)),
                (ends_graph_iri(scope, mid), trash_ends_graph_iri(scope, mid)),
            ]
            for active, trashed in pairs:
                src, dst = (active, trashed) if to_trash else (trashed, active)
                g = self._ds.graph(src)
                if len(g) == 0:
                    continue
                touched.update(self._graph_triples(src))
                entries += [self._store.put(dst, g), self._store.drop(src)]
        before = {t: bool(self._fact_sources(*t)) for t in touched}
        self._commit(entries)
        return sum(1 for t in touched if before[t] != bool(self._fact_sources(*t)))

    async def retract(self, scope: str, memory_ids: Iterable[str], purge: bool = False) -> int:
        """Remove the memories' graphs (active and trashed). Returns facts that lost their
        last support. With ``purge`` the store is rewritten so no copy stays on disk."""
        return await self._locked(self._retract_sync, scope, list(memory_ids), purge)

    def _retract_sync(self, scope: str, memory_ids: list[str], purge: bool) -> int:
        entries, touched = [], set()
        for mid in memory_ids:
            for iri in (
                memory_graph_iri(scope, mid),
                trash_graph_iri(scope, mid),
                ends_graph_iri(scope, mid),
                trash_ends_graph_iri(scope, mid),
            ):
                if len(self._ds.graph(iri)):
                    touched.update(self._graph_triples(iri))
                    entries.append(self._store.drop(iri))
        before = {t: bool(self._fact_sources(*t)) for t in touched}
        self._commit(entries)
        if purge:
            self._store.compact()
        return sum(1 for t in touched if before[t] and not self._fact_sources(*t))

    async def orphaned_by(self, scope: str, memory_ids: Iterable[str]) -> int:
        """How many facts would lose their last support if these memories went."""
        return await self._locked(self._orphaned_sync, scope, set(memory_ids))

    def _orphaned_sync(self, scope: str, memory_ids: set[str]) -> int:
        triples = set()
        for mid in memory_ids:
            triples.update(self._graph_triples(memory_graph_iri(scope, mid)))
        return sum(1 for t in triples if self._fact_sources(*t) <= memory_ids)

    async def outdated(
        self,
        scope: str,
        memories: dict[str, tuple[datetime, list[Relation] | None]],
        when: datetime,
    ) -> set[str]:
        """The memories all of whose facts had been superseded by ``when``. Each memory is
        given with its event time and, if it is not linked yet (buffer), its relations."""
        return await self._locked(self._outdated_sync, scope, memories, when)

    def _outdated_sync(
        self,
        scope: str,
        memories: dict[str, tuple[datetime, list[Relation] | None]],
        when: datetime,
    ) -> set[str]:
        out = set()
        for mid, (observed, relations) in memories.items():
            if relations is None:
                triples = self._graph_triples(memory_graph_iri(scope, mid))
            else:
                triples = [self._triple(scope, r) for r in relations]
            facts = [self._validity(*t) for t in triples]
            if temporal.outdated(Source(mid, observed, observed), facts, when):
                out.add(mid)
        return out

    async def has_memory(self, scope: str, memory_id: str) -> bool:
        return await self._locked(
            lambda: len(self._ds.graph(memory_graph_iri(scope, memory_id))) > 0
        )

    # --- reads -----------------------------------------------------------------------------

    async def entities_named(self, scope: str, names: Iterable[str]) -> list[URIRef]:
        """The entity nodes of the scope that these names denote (any case or spacing) and
        that an active memory mentions, each once, in the order of the names."""

        def run() -> list[URIRef]:
            found: dict[URIRef, None] = {}
            for name in names:
                node = entity_iri(scope, name)
                if node not in found and self._mentions(node):
                    found[node] = None
            return list(found)

        return await self._locked(run)

    async def facts(
        self,
        scope: str,
        seeds: list[URIRef],
        hops: int,
        limit: int,
        as_of: datetime | None = None,
    ) -> list[Fact]:
        """Facts reachable from the seeds within ``hops`` (breadth first, best supported
        first within a hop). With ``as_of``, only the facts valid then; without, current
        facts and the superseded ones (flagged) alike."""
        return await self._locked(self._facts_sync, scope, seeds, hops, limit, as_of)

    def _facts_sync(
        self, scope: str, seeds: list[URIRef], hops: int, limit: int, as_of: datetime | None
    ) -> list[Fact]:
        seen_nodes = set(seeds)
        frontier = list(seeds)
        out: dict[Triple, Fact] = {}
        for hop in range(1, hops + 1):
            found: dict[Triple, Validity] = {}
            for node in frontier:
                for triple, v in self._edges(node):
                    if triple in out or triple in found:
                        continue
                    if as_of is None or v.valid_at(as_of):
                        found[triple] = v
            ranked = sorted(
                found.items(), key=lambda kv: (kv[1].valid_to is not None, -len(kv[1].sources))
            )
            next_frontier = []
            for triple, v in ranked:
                if len(out) >= limit:
                    break
                out[triple] = self._fact(triple, v, hop)
                for node in (triple[0], triple[2]):
                    if node not in seen_nodes:
                        seen_nodes.add(node)
                        next_frontier.append(node)
            frontier = next_frontier
            if not frontier or len(out) >= limit:
                break
        return list(out.values())

    async def memory_facts(self, scope: str, memory_ids: Iterable[str]) -> list[Fact]:
        """The facts these memories assert (each once), as :meth:`facts` renders them."""
        return await self._locked(self._memory_facts_sync, scope, list(memory_ids))

    def _memory_facts_sync(self, scope: str, memory_ids: list[str]) -> list[Fact]:
        out: dict[Triple, Fact] = {}
        for memory_id in memory_ids:
            for triple in self._graph_triples(memory_graph_iri(scope, memory_id)):
                if triple not in out:
                    out[triple] = self._fact(triple, self._validity(*triple))
        return list(out.values())

    async def entity_support(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        """For each entity name, how many active memory graphs of the scope mention it."""
        return await self._locked(
            lambda: {name: self._mentions(entity_iri(scope, name)) for name in names}
        )

    async def memories_mentioning(self, scope: str, name: str) -> set[str]:
        """Memories (active or trashed) whose graph mentions the entity."""
        return await self._locked(self._mentioning_sync, scope, name)

    def _mentioning_sync(self, scope: str, name: str) -> set[str]:
        node = entity_iri(scope, name)
        return {
            memory_of(c)
            for *_t, c in self._ds.quads((node, RDF.type, None, None))
            if graph_name(c).startswith(scope_base(scope)) and graph_kind(c) in ("memory", "trash")
        }

    async def provenance(self) -> dict[tuple[str, str], set[str]]:
        """Memory ids per (scope, graph kind) over every non-empty named graph of ours; kinds
        are 'memory', 'ends', 'trash' and 'trash-ends' (for integrity checks)."""
        return await self._locked(self._provenance_sync)

    def _provenance_sync(self) -> dict[tuple[str, str], set[str]]:
        contexts = {graph_name(c) for *_t, c in self._ds.quads((None, None, None, None))}
        out: dict[tuple[str, str], set[str]] = defaultdict(set)
        for iri in contexts:
            parts = iri.removeprefix(BASE + "id/").split("/")
            if iri.startswith(BASE + "id/") and len(parts) == 3:
                out[(unquote(parts[0]), parts[1])].add(parts[2])
        return dict(out)

    async def export_trig(self) -> tuple[str, int]:
        """Every named graph of ours as TriG: one graph per memory (its entities, relations
        and its provenance: scope, memory id, assertedAt, observedAt), the ``ends``
        graphs of superseded facts, and the trash variants. Returns it and its quad count."""
        return await self._locked(self._export_sync)

    def _export_sync(self) -> tuple[str, int]:
        return graph_io.export_trig(self._ds)

    async def import_trig(self, data: str) -> int:
        """Add the named graphs of an export (each replaces a graph of the same name);
        returns the number of quads read. Graphs that are not ours are refused."""
        return await self._locked(self._import_sync, data)

    def _import_sync(self, data: str) -> int:
        graphs, quads = graph_io.parse_trig(data)
        self._commit([self._store.put(URIRef(iri), g) for iri, g in graphs.items()])
        return quads

    async def count_facts(self) -> dict[str, int]:
        """Distinct facts (current or superseded) per scope."""
        return await self._locked(self._count_sync)

    def _count_sync(self) -> dict[str, int]:
        facts: dict[str, set] = defaultdict(set)
        for s, p, o, c in self._ds.quads((None, None, None, None)):
            if is_relation(p) and self._active(c):
                scope = unquote(graph_name(c)[len(BASE + "id/") :].split("/", 1)[0])
                facts[scope].add((s, p, o))
        return {k: len(v) for k, v in facts.items()}

    async def turtle(self, scope: str, max_triples: int) -> str:
        return await self._locked(self._turtle_sync, scope, max_triples)

    def _turtle_sync(self, scope: str, max_triples: int) -> str:
        return graph_io.turtle(self._ds, scope, max_triples)
