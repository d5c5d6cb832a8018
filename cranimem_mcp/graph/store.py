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

:class:`GraphStore` is the writer: it owns the lock and the commits. Its reads (a fact's
sources and validity, an entity's mentions, the walk from seeds) are
:class:`~cranimem_mcp.graph.provenance.Provenance`'s; the rules of time it applies (what a new
value ends, when a memory is outdated) are :mod:`~cranimem_mcp.temporal`'s, the names
:mod:`~cranimem_mcp.graph.vocabulary`'s, TriG and Turtle :mod:`~cranimem_mcp.graph.rdf_io`'s.
Where the named graphs live is a :class:`QuadStore` the engine picks and hands in: the local
:class:`~cranimem_mcp.graph.journal.JournaledDataset` or a SPARQL server's
:class:`~cranimem_mcp.graph.sparql.SparqlDataset`. IRIs are built by percent-encoding; no
SPARQL is built from text.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import anyio
from rdflib import RDF, RDFS, Dataset, Graph, Literal, URIRef

from cranimem_mcp import temporal
from cranimem_mcp.errors import StoreError
from cranimem_mcp.graph import rdf_io as graph_io
from cranimem_mcp.graph.provenance import Provenance, ended_facts, record_end
from cranimem_mcp.graph.vocabulary import (
    REL,
    VOCAB,
    Triple,
    ends_graph_iri,
    entity_iri,
    memory_graph_iri,
    relation_iri,
    stamp,
    trash_ends_graph_iri,
    trash_graph_iri,
)
from cranimem_mcp.models import ENTITY_TYPES, Extraction, Fact, Relation
from cranimem_mcp.naming import predicate_name
from cranimem_mcp.temporal import Source, Validity

logger = logging.getLogger(__name__)


class _Reading:
    """A :meth:`GraphStore.reading` in progress: its store, and whether it still lasts (a
    task started within copies the context variable, not the block's end)."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.lasts = True


_reading: ContextVar[_Reading | None] = ContextVar("cranimem_graph_reading", default=None)


@dataclass
class LinkStats:
    added: int = 0
    reinforced: int = 0


class QuadStore(Protocol):
    """Where the graph's named graphs live and how a change reaches them: whole named graphs
    put or dropped in one commit. Implemented by the local
    :class:`~cranimem_mcp.graph.journal.JournaledDataset` (rdflib over pyoxigraph, a snapshot
    and a journal) and :class:`~cranimem_mcp.graph.sparql.SparqlDataset` (a SPARQL server);
    the engine picks one by ``graph.store``. Not thread-safe: :class:`GraphStore` serialises
    the calls."""

    ds: Dataset  # what the reads see
    pending: int  # changes a compaction would fold in (0: nothing to compact)

    def open(self) -> None: ...
    def close(self) -> None: ...
    def put(self, iri: URIRef, graph: Graph) -> dict[str, Any]: ...
    def drop(self, iri: URIRef) -> dict[str, Any]: ...
    def commit(self, entries: list[dict[str, Any]]) -> None: ...
    def compact(self) -> None: ...

    def provenance(self, ds: Dataset, memo: bool) -> Provenance:
        """The graph's reads (``memo``: keep what was read, where the store can)."""
        ...


class GraphStore:
    """The RDF knowledge graph with per-memory provenance. All public methods are async."""

    def __init__(self, store: QuadStore, memo: bool = True) -> None:
        """``store``: where the named graphs live (:class:`QuadStore`). ``memo``: the reads
        keep memos (the local store's; a SPARQL server's reads keep their own while its
        generation holds)."""
        self._store = store
        self._ds = self._store.ds
        self._lock = anyio.Lock()
        self._reads = store.provenance(self._ds, memo)

    def _commit(self, entries: list[Any]) -> None:
        before = self._reads.changing(entries)
        try:
            self._store.commit(entries)
        finally:
            self._reads.changed(entries, before)

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        self._reads.reset()
        await self._run(self._store.open)

    async def close(self) -> None:
        # First, before any checkpoint (the engine's close may already be cancelled here).
        self._store.close()  # SparqlDataset: its connections
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
        checked = self._within_reading()
        async with self._lock:
            return await self._run(self._operation, checked, fn, *args)

    def _within_reading(self) -> bool:
        current = _reading.get()
        return current is not None and current.store is self and current.lasts

    def _operation(self, checked: bool, fn, *args):  # type: ignore[no-untyped-def]
        if not checked:
            self._reads.begin()  # over SPARQL: is what was read still the server's state?
        return fn(*args)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """The operations this task runs within share one check that what the store's reads
        keep is current (over SPARQL: one query for the server's generation, instead of one
        per operation), made here. So what they read is the store as it was when the block
        began, or newer: a replica reads everything committed before, by any replica. A
        recall's graph operations run in one; in memory it costs nothing."""
        if not self._reads.remote or self._within_reading():
            yield
            return
        async with self._lock:
            await self._run(self._reads.begin)
        block = _Reading(self)
        token = _reading.set(block)
        try:
            yield
        finally:
            block.lasts = False
            _reading.reset(token)

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _triple(scope: str, rel: Relation) -> Triple:
        return (
            entity_iri(scope, rel.subject),
            relation_iri(rel.predicate),
            entity_iri(scope, rel.object),
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
        triples = [self._triple(scope, rel) for rel in extraction.relations]
        sources = self._reads.sources_of(dict.fromkeys(triples))
        for triple in triples:
            if triple in g:
                continue
            g.add(triple)
            if sources[triple] - {memory_id}:
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
        A denial ("not_works_at", "I no longer work at Acme"; "not_uses yarn") ends the fact
        it denies if it holds then; a departure ("switch_from vim", "leave Hooli":
        :data:`~cranimem_mcp.temporal.DEPARTURES`) ends the subject's current facts with that
        object. Adds to the memory's ``ends`` graph (idempotent).
        Returns the facts it ended.
        ``pending`` are (relation, memory id, observed) of memories not linked yet (the
        buffer): their facts count as asserted, so a change is caught before consolidation."""
        functional = set(functional)
        if not any(ends_something(r, functional) for r in relations):
            return []  # nothing single-valued, no denial, no departure: nothing to end (most)
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
            return self._reads.validity(*triple).including(unlinked.get(triple, ()))

        ends = Graph()
        for triple in self._ds.graph(ends_iri).triples((None, None, None)):
            ends.add(triple)
        recorded = ended_facts(ends)
        ended: list[Triple] = []
        # A class is many-valued: a changed one ends only its own kind (_other_versions).
        single = [
            self._triple(scope, rel)
            for rel in relations
            if single_valued(rel, functional) and predicate_name(rel.predicate) != "is_a"
        ]
        # "I no longer work at Acme" (not_works_at) ends "works_at Acme", if it holds then;
        # "we use pnpm, not yarn" ends "uses yarn": a denial ends its fact, many-valued or not,
        # unless it is limited ("I don't speak Spanish at work": functional False).
        denied = [
            self._triple(scope, rel.model_copy(update={"predicate": p.removeprefix("not_")}))
            for rel in relations
            if (p := predicate_name(rel.predicate)).startswith("not_")
            and rel.functional is not False
        ]
        # "We migrated from Postgres to MySQL" ends "uses Postgres": whatever the subject had
        # with what it left (not what stays true: "born in Leeds").
        left = {
            (t[0], t[2]): p
            for rel in relations
            if (p := predicate_name(rel.predicate)) in temporal.DEPARTURES
            for t in [self._triple(scope, rel)]
        }

        def ends_on_leaving(pair: tuple[URIRef, URIRef], p: URIRef) -> bool:
            return temporal.ended_by_departure(left[pair], str(p).removeprefix(str(REL)))

        for (s, o), values in self._reads.related(left).items():
            denied += [
                (s, p, o) for p, mid in values if mid != memory_id and ends_on_leaving((s, o), p)
            ]
        denied += [
            t for t in unlinked if (t[0], t[2]) in left and ends_on_leaving((t[0], t[2]), t[1])
        ]
        denied = list(dict.fromkeys(denied))
        stated = self._reads.stated(dict.fromkeys(t[:2] for t in single))
        candidates_of = {
            (s, p): {(s, p, o) for o, mid in values if mid != memory_id}
            | {t for t in unlinked if t[:2] == (s, p)}
            for (s, p), values in stated.items()
        }
        # "Omar is now the tech lead" ends "Priya is_the tech lead": one holder at a time
        held = [
            self._triple(scope, rel)
            for rel in relations
            if predicate_name(rel.predicate) in temporal.ONE_HOLDER
        ]
        holders_of = {
            (p, o): {(s, p, o) for s, mid in values if mid != memory_id}
            | {t for t in unlinked if t[1:] == (p, o)}
            for (p, o), values in self._reads.holders(dict.fromkeys(t[1:] for t in held)).items()
        }
        versions_of = self._other_versions(scope, memory_id, relations, unlinked, labels)
        self._reads.validities(
            {
                t: None
                for c in (*candidates_of.values(), *holders_of.values(), *versions_of.values())
                for t in c
            }
        )
        self._reads.validities(dict.fromkeys(denied))
        for fact in denied:
            if validity(fact).valid_at(observed_at) and fact not in recorded:
                record_end(ends, fact, observed_at)
                recorded.add(fact)
                ended.append(fact)
        for new, candidates in [
            *((t, candidates_of[t[:2]]) for t in single),
            *((t, holders_of[t[1:]]) for t in held),
            *versions_of.items(),
        ]:
            others = [(old, validity(old)) for old in sorted(candidates) if old != new]
            for fact, when in temporal.supersession(new, others, observed_at):
                if fact not in recorded:  # one end per fact and memory: the first
                    record_end(ends, fact, when)
                    recorded.add(fact)
                if fact != new:
                    ended.append(fact)
        if len(ends):
            self._commit([self._store.put(ends_iri, ends)])
        facts = []
        ended = list(dict.fromkeys(ended))
        self._reads.validities(ended)
        self._reads.labels_of({n: None for t in ended for n in (t[0], t[2])})
        for t in ended:
            fact = self._reads.fact(t, validity(t))
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
                touched.update(self._reads.graph_triples(src))
                entries += [self._store.put(dst, g), self._store.drop(src)]
        before = self._reads.sources_of(touched)
        self._commit(entries)
        after = self._reads.sources_of(touched)
        return sum(1 for t in touched if bool(before[t]) != bool(after[t]))

    async def retract(self, scope: str, memory_ids: Iterable[str], purge: bool = False) -> int:
        """Remove the memories' graphs (active and trashed). Returns facts that lost their
        last support. With ``purge`` the store is rewritten so no copy stays on disk."""
        return await self._locked(self._retract_sync, scope, list(memory_ids), purge)

    def _retract_sync(self, scope: str, memory_ids: list[str], purge: bool) -> int:
        iris = [
            name(scope, mid)
            for mid in memory_ids
            for name in (memory_graph_iri, trash_graph_iri, ends_graph_iri, trash_ends_graph_iri)
        ]
        held = self._reads.holding(iris)
        entries = [self._store.drop(iri) for iri in iris if iri in held]
        touched = {t for found in self._reads.triples_of(held).values() for t in found}
        before = self._reads.sources_of(touched)
        self._commit(entries)
        if purge:
            self._store.compact()
        after = self._reads.sources_of(touched)
        return sum(1 for t in touched if before[t] and not after[t])

    async def orphaned_by(self, scope: str, memory_ids: Iterable[str]) -> int:
        """How many facts would lose their last support if these memories went."""
        return await self._locked(self._orphaned_sync, scope, set(memory_ids))

    def _orphaned_sync(self, scope: str, memory_ids: set[str]) -> int:
        by_graph = self._reads.triples_of(memory_graph_iri(scope, mid) for mid in memory_ids)
        sources = self._reads.sources_of({t for found in by_graph.values() for t in found})
        return sum(1 for found in sources.values() if found <= memory_ids)

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
        linked = self._reads.triples_of(
            memory_graph_iri(scope, mid) for mid, (_o, rels) in memories.items() if rels is None
        )
        triples_of = {
            mid: linked[memory_graph_iri(scope, mid)] if relations is None
            else [self._triple(scope, r) for r in relations]
            for mid, (_observed, relations) in memories.items()
        }  # fmt: skip
        validity = self._reads.validities({t: None for ts in triples_of.values() for t in ts})
        out = set()
        for mid, (observed, _relations) in memories.items():
            facts = [validity[t] for t in triples_of[mid]]
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
            nodes = list(dict.fromkeys(entity_iri(scope, name) for name in names))
            mentions = self._reads.mentions_of(nodes)
            return [node for node in nodes if mentions[node]]

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
        return await self._locked(self._reads.walk, seeds, hops, limit, as_of)

    async def memory_facts(self, scope: str, memory_ids: Iterable[str]) -> list[Fact]:
        """The facts these memories assert (each once), as :meth:`facts` renders them."""
        return await self._locked(self._reads.memory_facts, scope, list(memory_ids))

    async def entity_support(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        """For each entity name, how many active memory graphs of the scope mention it."""

        def run() -> dict[str, int]:
            nodes = {name: entity_iri(scope, name) for name in names}
            mentions = self._reads.mentions_of(dict.fromkeys(nodes.values()))
            return {name: mentions[node] for name, node in nodes.items()}

        return await self._locked(run)

    async def memories_mentioning(self, scope: str, name: str) -> set[str]:
        """Memories (active or trashed) whose graph mentions the entity."""
        return await self._locked(self._reads.mentioning, scope, name)

    async def provenance(self) -> dict[tuple[str, str], set[str]]:
        """Memory ids per (scope, graph kind) over every non-empty named graph of ours; kinds
        are 'memory', 'ends', 'trash' and 'trash-ends' (for integrity checks)."""
        return await self._locked(self._reads.graphs)

    async def export_trig(self) -> tuple[str, int]:
        """Every named graph of ours as TriG: one graph per memory (its entities, relations
        and its provenance: scope, memory id, assertedAt, observedAt), the ``ends``
        graphs of superseded facts, and the trash variants. Returns it and its quad count."""
        return await self._locked(graph_io.export_trig, self._ds)

    async def import_trig(self, data: str) -> int:
        """Add the named graphs of an export (each replaces a graph of the same name);
        returns the number of quads read. Graphs that are not ours are refused."""
        return await self._locked(self._import_sync, data)

    def _import_sync(self, data: str) -> int:
        graphs, quads = graph_io.parse_trig(data)
        self._commit([self._store.put(URIRef(iri), g) for iri, g in graphs.items()])
        return quads

    def _other_versions(
        self,
        scope: str,
        memory_id: str,
        relations: list[Relation],
        unlinked: dict[Triple, list[Source]],
        labels: dict[URIRef, str],
    ) -> dict[Triple, set[Triple]]:
        """For each relation of this memory that is one of a kind of thing held one at a time
        (:func:`~cranimem_mcp.temporal.kind_of`: a version of a thing used, "We upgraded to
        Python 3.12"; a changed class, "I'm a senior developer now"), its subject's other
        facts of that kind ("uses Python 3.10", "is_a junior developer")."""
        kinds = {
            self._triple(scope, rel): kind
            for rel in relations
            if (kind := temporal.kind_of(predicate_name(rel.predicate), rel.object, rel.functional))
        }
        if not kinds:
            return {}
        families = {p for kind in kinds.values() for p in kind.predicates}
        pairs = {(t[0], relation_iri(p)): None for t in kinds for p in sorted(families)}
        facts = {
            (s, p, o)
            for (s, p), values in self._reads.stated(pairs).items()
            for o, mid in values
            if mid != memory_id
        }
        facts |= {t for t in unlinked if str(t[1]).removeprefix(str(REL)) in families}
        named = {
            **self._reads.labels_of({t[2]: None for t in facts if t[2] not in labels}),
            **labels,
        }
        others: dict[Triple, set[Triple]] = {}
        for new, kind in kinds.items():
            others[new] = {
                old
                for old in facts
                if old[0] == new[0]
                and str(old[1]).removeprefix(str(REL)) in kind.predicates
                and kind.other(named.get(old[2], ""))
            }
        return others

    async def count_facts(self) -> dict[str, int]:
        """Distinct facts (current or superseded) per scope."""
        return await self._locked(self._reads.count_facts)

    async def turtle(self, scope: str, max_triples: int) -> str:
        return await self._locked(graph_io.turtle, self._ds, scope, max_triples)


def single_valued(rel: Relation, functional: set[str] | frozenset[str]) -> bool:
    """Whether ``rel`` replaces its subject's other value: marked so by the extractor ("my
    new dentist"), or by its predicate unless the extractor said not ("I lived in Berlin":
    a past state)."""
    if rel.functional is not None:
        return rel.functional
    return predicate_name(rel.predicate) in functional


def ends_something(rel: Relation, functional: set[str] | frozenset[str]) -> bool:
    """Whether stating ``rel`` may end a fact: a single-valued relation (by its predicate or
    marked by the extractor), a denial, a departure, a role's new holder, or a new version of
    a thing used."""
    p = predicate_name(rel.predicate)
    return (
        single_valued(rel, functional)
        or (p.startswith("not_") and rel.functional is not False)
        or p in temporal.DEPARTURES
        or p in temporal.ONE_HOLDER
        or temporal.kind_of(p, rel.object, rel.functional) is not None
    )
