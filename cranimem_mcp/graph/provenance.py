"""The read side of the knowledge graph: what it says about each fact and entity, and on
whose word. A fact's *sources* are the active memory graphs that state it (with when each
memory says it was observed and when it was written); its *validity* adds the end records
held against it in the active ``ends`` graphs; an entity's *mentions* are the active memory
graphs that type it. The walk from seed entities (the graph path of recall) reads these.

:class:`Provenance` reads a dataset it does not write. What it reads a recall repeats is
remembered until :meth:`Provenance.changed`, which the store calls after every commit: the
dataset changes only in a commit, and the store is its only writer. A shared SPARQL server
can change under us (replicas): there the store's own reads (``SparqlProvenance``) keep
what they read only while the server's generation holds.

Recall and consolidation ask for what they need of many nodes or facts at once
(:meth:`Provenance.edges_of`, :meth:`~Provenance.validities`, ...): here each is the loop
over the single read, which costs no round trip in memory; a remote store answers each
with one query.

An end record (``cm:Supersession``: ``endsSubject``, ``endsPredicate``, ``endsObject``,
``endedAt``) is written by :func:`record_end` and read here and nowhere else; the rules that
decide them are in :mod:`cranimem_mcp.temporal`.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from rdflib import RDF, RDFS, BNode, Dataset, Graph, URIRef

from cranimem_mcp.graph.delta import Delta, delta
from cranimem_mcp.graph.vocabulary import (
    BASE,
    REL,
    VOCAB,
    Triple,
    entity_iri,
    graph_kind,
    graph_name,
    is_relation,
    memory_graph_iri,
    memory_of,
    parse_time,
    scope_base,
    stamp,
)
from cranimem_mcp.models import MAX_FACT_SOURCES, Fact
from cranimem_mcp.temporal import Source, Validity

_MEMO_MAX = 200_000  # remembered reads between commits, at most
_MEMO_EDGES_MAX = 4096  # nodes whose relations are remembered between commits, at most


def _asserted_then_id(source: Source) -> tuple[datetime, str]:
    return source.asserted, source.memory


def record_end(ends: Graph, triple: Triple, when: datetime) -> None:
    """Add to an ``ends`` graph the record that the fact's validity ended ``when``."""
    record = BNode()
    ends.add((record, RDF.type, VOCAB.Supersession))
    ends.add((record, VOCAB.endsSubject, triple[0]))
    ends.add((record, VOCAB.endsPredicate, triple[1]))
    ends.add((record, VOCAB.endsObject, triple[2]))
    ends.add((record, VOCAB.endedAt, stamp(when)))


def ended_facts(ends: Graph) -> set[tuple[Any, Any, Any]]:
    """The facts an ``ends`` graph holds a record against (a part may be ``None`` in a
    damaged record: it matches no fact)."""
    return {
        (ends.value(r, VOCAB.endsSubject), ends.value(r, VOCAB.endsPredicate),
         ends.value(r, VOCAB.endsObject))
        for r in ends.subjects(RDF.type, VOCAB.Supersession)
    }  # fmt: skip


class Provenance:
    """Sources, validity, mentions and labels read from ``ds``; remembered with ``memo``."""

    def __init__(self, ds: Dataset, memo: bool) -> None:
        self._ds = ds
        self._memo = memo
        self._memo_validity: dict[Triple, Validity] = {}
        self._memo_mentions: dict[URIRef, int] = {}
        self._memo_labels: dict[URIRef, str] = {}
        self._memo_edges: dict[URIRef, list[Triple]] = {}  # relations an active graph holds
        # With memos: the end records of the active "ends" graphs, by the fact they end
        # (fact -> graph -> end times), built on first use and kept in step by changed()
        # for the graphs a commit names. Why: finding a fact's ends by scanning every record
        # about its subject grew with the history (supersede took 41 s of every 500 writes at
        # 1.5k memories, 79 s at 3k, docs/RESULTS.md); this costs what the commit changed.
        self._ends: dict[Triple, dict[str, list[datetime]]] | None = None
        self._ends_of_graph: dict[str, list[Triple]] = {}
        # With memos: each memory graph's (observed, asserted) times, read once and dropped
        # by changed() for the graphs a commit names. Why: a fact many memories state read
        # both times from each of their graphs on every validity read (two store reads per
        # source: 1,500 sources for a common fact at 10k memories).
        self._times: dict[str, tuple[datetime, datetime] | None] = {}
        # With memos: relations whose holding a commit may have changed, by node, checked at
        # the node's next edges() (see changed()).
        self._recheck: dict[URIRef, set[Triple]] = {}

    def reset(self) -> None:
        """Forget everything, the ends index too (the dataset was opened anew)."""
        self.drop_memos()
        self._ends = None
        self._times.clear()

    def changing(self, entries: list[Any]) -> list[list[Triple]] | None:
        """Before a commit of these entries: what their graphs hold now (with memos), for
        :meth:`changed`. Why: every write forgot every memo, so each recall after a write
        read again the facts of the entities most memories mention (tens of thousands of
        quads for the user's own node at 10k memories)."""
        if not self._memo:
            return None
        try:
            return [self._content(entry["graph"]) for entry in entries]
        except Exception:  # an entry of another shape: changed() forgets everything
            return None

    def _content(self, iri: str) -> list[Triple]:
        return list(self._ds.graph(URIRef(iri)).triples((None, None, None)))

    def changed(self, entries: list[Any], before: list[list[Triple]] | None = None) -> None:
        """After a commit (or a failed one) of these entries: forget what the memos hold
        that the graphs it named could change (:mod:`~cranimem_mcp.graph.delta`, from what
        they held ``before``, from :meth:`changing`, and hold now; everything without it),
        re-read the ``ends`` graphs it named."""
        if before is None:
            self.drop_memos()
        else:
            try:
                self._forget_delta(delta([*before, *(self._content(e["graph"]) for e in entries)]))
            except Exception:  # an entry of another shape
                self.drop_memos()
        try:
            for entry in entries:
                self._times.pop(entry["graph"], None)
        except Exception:  # an entry of another shape: forget them all
            self._times.clear()
            raise
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

    # --- reads of many at once -------------------------------------------------------------
    # What a recall hop or a consolidation step needs, asked for all its nodes or facts in
    # one call. Here each is the loop over the single read (in memory a read costs no round
    # trip, and the memos above serve repeats); a remote store answers each in one request
    # (SparqlProvenance in cranimem_mcp/graph/sparql.py).

    remote = False  # begin() asks nothing of a server: the memos last until a commit

    def begin(self) -> None:
        """A store operation starts (nothing to do here: the memos last until a commit)."""

    def edges_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, list[tuple[Triple, Validity]]]:
        return {node: self.edges(node) for node in nodes}

    def validities(self, triples: Iterable[Triple]) -> dict[Triple, Validity]:
        return {t: self.validity(*t) for t in triples}

    def sources_of(self, triples: Iterable[Triple]) -> dict[Triple, set[str]]:
        return {t: self.sources(*t) for t in triples}

    def mentions_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, int]:
        return {node: self.mentions(node) for node in nodes}

    def labels_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, str]:
        return {node: self.label(node) for node in nodes}

    def triples_of(self, iris: Iterable[URIRef]) -> dict[URIRef, list[Triple]]:
        """The relations each named graph holds."""
        return {iri: self.graph_triples(iri) for iri in iris}

    def holding(self, iris: Iterable[URIRef]) -> list[URIRef]:
        """The named graphs among these that hold a triple."""
        return [iri for iri in iris if len(self._ds.graph(iri))]

    def stated(self, pairs: Iterable[tuple[URIRef, URIRef]]) -> dict[tuple, list[tuple]]:
        """For each (subject, predicate): (object, memory id) per active memory graph that
        states a value."""
        return {
            (s, p): [
                (o, memory_of(ctx))
                for _s, _p, o, ctx in self._ds.quads((s, p, None, None))
                if self.active(ctx)
            ]
            for s, p in pairs
        }

    def holders(self, pairs: Iterable[tuple[URIRef, URIRef]]) -> dict[tuple, list[tuple]]:
        """For each (predicate, object): (subject, memory id) per active memory graph that
        states it."""
        return {
            (p, o): [
                (s, memory_of(ctx))
                for s, _p, _o, ctx in self._ds.quads((None, p, o, None))
                if self.active(ctx)
            ]
            for p, o in pairs
        }

    def related(self, pairs: Iterable[tuple[URIRef, URIRef]]) -> dict[tuple, list[tuple]]:
        """For each (subject, object): (predicate, memory id) per active memory graph that
        relates them."""
        return {
            (s, o): [
                (p, memory_of(ctx))
                for _s, p, _o, ctx in self._ds.quads((s, None, o, None))
                if self.active(ctx) and is_relation(p)
            ]
            for s, o in pairs
        }

    def drop_memos(self) -> None:
        """Drop what is remembered (the dataset changed)."""
        self._memo_validity.clear()
        self._memo_mentions.clear()
        self._memo_labels.clear()
        self._memo_edges.clear()
        self._recheck.clear()

    def _forget_delta(self, d: Delta) -> None:
        """Drop the validity of every fact the delta names, the mentions and labels of its
        nodes; mark its relations for a check at the nodes whose relations are remembered
        (a hub's hundreds of relations are not read again for the one a write added)."""
        for fact in d.facts:
            self._memo_validity.pop(fact, None)
        for node in d.typed:
            self._memo_mentions.pop(node, None)
        for node in d.labelled:
            self._memo_labels.pop(node, None)
        for node, relations in d.relations_at().items():
            if node in self._memo_edges:
                self._recheck.setdefault(node, set()).update(relations)

    @staticmethod
    def active(ctx: object) -> bool:
        """Whether a quad's graph is an active memory graph (not ends, not trash)."""
        return graph_kind(ctx) == "memory"

    def edges(self, node: URIRef) -> list[tuple[Triple, Validity]]:
        """The relations (facts) at a node, in or out, with their validity. Which relations
        an active graph holds is remembered (recalls walk from the same popular entities
        again and again), what a commit may have changed checked again (changed())."""
        if not self._memo:
            return [(t, self.validity(*t)) for t in self._relations_at(node)]
        found = self._memo_edges.get(node)
        if found is None:
            self._recheck.pop(node, None)
            found = self._relations_at(node)
            if len(self._memo_edges) >= _MEMO_EDGES_MAX:
                self._memo_edges.clear()
                self._recheck.clear()
            self._memo_edges[node] = found
        else:
            recheck = self._recheck.pop(node, None)
            if recheck:
                found = [t for t in found if t not in recheck]
                found += [t for t in recheck if next(iter(self._active_triples(t)), None)]
                self._memo_edges[node] = found
        return [(t, self.validity(*t)) for t in found]

    def _relations_at(self, node: URIRef) -> list[Triple]:
        return [
            triple
            for pattern in ((node, None, None), (None, None, node))
            for triple in self._active_triples(pattern)
            if is_relation(triple[1])
        ]

    def _active_triples(self, pattern: tuple[Any, Any, Any]) -> Iterable[Triple]:
        """Each triple matching ``pattern`` that an active memory graph holds, once.

        Why not the quads: an entity many memories mention holds the same triple in each of
        their graphs, and walking every copy made the graph path of a recall 130 ms at 10k
        memories (docs/RESULTS.md). The local store lists each triple once with its graphs;
        a remote store is asked for quads, as before."""
        if not self._memo:
            seen: set[Triple] = set()
            for s, p, o, ctx in self._ds.quads((*pattern, None)):
                if (s, p, o) not in seen and self.active(ctx):
                    seen.add((s, p, o))
                    yield (s, p, o)
            return
        held = getattr(self._ds.store, "triples_held", None)  # OxMemory's: the same, faster
        if held is not None:
            yield from held(pattern, self.active)
            return
        for triple, contexts in self._ds.store.triples(pattern, context=None):
            if any(self.active(c) for c in contexts):
                yield triple

    def sources(self, s: URIRef, p: URIRef, o: URIRef) -> set[str]:
        return {memory_of(g) for g in self._graphs_of((s, p, o)) if self.active(g)}

    def _graphs_of(self, pattern: tuple[Any, Any, Any]) -> Iterable[str]:
        """The name of the graph of each quad that matches ``pattern``: from the store when it
        lists them (``OxMemory.graph_names``: a third of the cost of reading the quads
        through rdflib, for the thousands of copies of an entity's type or a common fact)."""
        names = getattr(self._ds.store, "graph_names", None)
        if names is not None:
            return names(pattern)  # type: ignore[no-any-return]
        return (graph_name(c) for *_t, c in self._ds.quads((*pattern, None)))

    def validity(self, s: URIRef, p: URIRef, o: URIRef) -> Validity:
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
        for name in self._graphs_of((s, p, o)):
            if self.active(name):
                times = self._memory_times(name)
                if times is not None:
                    sources.append(Source(memory_of(name), *times))
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

    def _memory_times(self, iri: str) -> tuple[datetime, datetime] | None:
        """A memory graph's (observed, asserted) times; ``None`` without an asserted time."""
        if self._memo and iri in self._times:
            return self._times[iri]
        g = self._ds.graph(URIRef(iri))
        asserted = parse_time(g.value(URIRef(iri), VOCAB.assertedAt))
        observed = parse_time(g.value(URIRef(iri), VOCAB.observedAt)) or asserted
        times = (observed, asserted) if asserted and observed else None
        if self._memo:
            if len(self._times) >= _MEMO_MAX:
                self._times.clear()
            self._times[iri] = times
        return times

    def mentions(self, node: URIRef) -> int:
        """Active memory graphs that type (so mention) this entity node."""
        found = self._memo_mentions.get(node) if self._memo else None
        if found is None:
            if len(self._memo_mentions) >= _MEMO_MAX:
                self._memo_mentions.clear()
            found = sum(1 for g in self._graphs_of((node, RDF.type, None)) if self.active(g))
            self._memo_mentions[node] = found
        return found

    def label(self, node: URIRef) -> str:
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

    def graph_triples(self, iri: URIRef) -> list[Triple]:
        return [
            (s, p, o)
            for s, p, o in self._ds.graph(iri).triples((None, None, None))
            if is_relation(p)
        ]

    def fact(self, triple: Triple, v: Validity, hops: int = 0) -> Fact:
        s, p, o = triple
        valid_to = v.valid_to
        return Fact(
            subject=self.label(s),
            predicate=str(p)[len(str(REL)) :],
            object=self.label(o),
            support=len(v.sources),
            # A fact thousands of memories state listed them all: 1,500 ids (48 KB) in one
            # recall's answer at 10k memories, each source's memory fetched by the inspector.
            sources=[
                src.memory
                for src in heapq.nlargest(MAX_FACT_SOURCES, v.sources, key=_asserted_then_id)
            ],
            hops=hops,
            first_seen=min(src.asserted for src in v.sources),
            last_seen=max(src.asserted for src in v.sources),
            valid_from=v.valid_from,
            valid_to=valid_to,
            superseded=v.superseded(datetime.now(UTC)),
        )

    def walk(
        self, seeds: list[URIRef], hops: int, limit: int, as_of: datetime | None
    ) -> list[Fact]:
        """Facts reachable from the seeds within ``hops`` (breadth first, best supported
        first within a hop); with ``as_of``, only those valid then."""
        seen_nodes = set(seeds)
        frontier = list(seeds)
        out: dict[Triple, tuple[Validity, int]] = {}  # the facts taken, at their hop
        for hop in range(1, hops + 1):
            found: dict[Triple, Validity] = {}
            edges = self.edges_of(frontier)  # one read per hop, for the whole frontier
            for node in frontier:
                for triple, v in edges[node]:
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
                out[triple] = (v, hop)
                for node in (triple[0], triple[2]):
                    if node not in seen_nodes:
                        seen_nodes.add(node)
                        next_frontier.append(node)
            frontier = next_frontier
            if not frontier or len(out) >= limit:
                break
        self.labels_of({n: None for t in out for n in (t[0], t[2])})  # one read for all
        return [self.fact(t, v, hop) for t, (v, hop) in out.items()]

    def memory_facts(self, scope: str, memory_ids: list[str]) -> list[Fact]:
        by_graph = self.triples_of(memory_graph_iri(scope, mid) for mid in memory_ids)
        triples = list(dict.fromkeys(t for found in by_graph.values() for t in found))
        validity = self.validities(triples)
        self.labels_of({n: None for t in triples for n in (t[0], t[2])})
        return [self.fact(t, validity[t]) for t in triples]

    def mentioning(self, scope: str, name: str) -> set[str]:
        node = entity_iri(scope, name)
        return {
            memory_of(c)
            for *_t, c in self._ds.quads((node, RDF.type, None, None))
            if graph_name(c).startswith(scope_base(scope)) and graph_kind(c) in ("memory", "trash")
        }

    def graphs(self) -> dict[tuple[str, str], set[str]]:
        """Memory ids per (scope, graph kind) over every non-empty named graph of ours."""
        contexts = {graph_name(c) for *_t, c in self._ds.quads((None, None, None, None))}
        out: dict[tuple[str, str], set[str]] = defaultdict(set)
        for iri in contexts:
            parts = iri.removeprefix(BASE + "id/").split("/")
            if iri.startswith(BASE + "id/") and len(parts) == 3:
                out[(unquote(parts[0]), parts[1])].add(parts[2])
        return dict(out)

    def count_facts(self) -> dict[str, int]:
        facts: dict[str, set] = defaultdict(set)
        for s, p, o, c in self._ds.quads((None, None, None, None)):
            if is_relation(p) and self.active(c):
                scope = unquote(graph_name(c)[len(BASE + "id/") :].split("/", 1)[0])
                facts[scope].add((s, p, o))
        return {k: len(v) for k, v in facts.items()}
