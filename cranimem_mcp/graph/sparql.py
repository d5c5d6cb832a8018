"""The knowledge graph in any SPARQL 1.1 server, through rdflib's ``SPARQLUpdateStore``.

:class:`SparqlDataset` offers the small interface :class:`~cranimem_mcp.graph.store.GraphStore`
uses of :class:`~cranimem_mcp.graph.journal.JournaledDataset`: a ``ds`` to read with
``quads``/``graph``, and ``put``/``drop``/``commit`` to write whole named graphs. So the
graph's domain logic is the same on both backends; only where the quads live changes.

Reads become SPARQL queries in which every bound value is an RDF term serialised by rdflib
(``VALUES`` bindings and ``n3()``), never caller text. A commit is one SPARQL update request
(``DROP SILENT GRAPH`` then ``INSERT DATA`` per graph), which the server applies as one
transaction. Blank nodes are skolemised before they are sent: a server's blank-node labels
are only stable within one result set, and the supersession records are read back across
several queries. The server is the durable store, so there is no journal and nothing to
compact.

The graph's reads are :class:`SparqlProvenance`'s: what a recall hop or a consolidation
step asks of many nodes or facts (their facts with sources and end records, mentions,
labels) is one query, answered as SPARQL JSON results (read by
:mod:`~cranimem_mcp.graph.sparql_client`, which also sends the commits, over kept-alive
connections). Each commit also sets a new *generation* (a random token in a graph of its
own), and the reads are kept while it holds: a replica's next operation (or next recall,
whose graph operations share one check: ``GraphStore.reading``) sees another's commit. A
writer that changes our graphs on the server without going through SparqlDataset must set
it too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from rdflib import RDF, RDFS, Dataset, Graph, Literal, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

from cranimem_mcp.errors import ConfigError, LeaseLost
from cranimem_mcp.graph.lease import current_fence, fenced_update
from cranimem_mcp.graph.provenance import Provenance
from cranimem_mcp.graph.sparql_client import SparqlClient
from cranimem_mcp.graph.vocabulary import BASE, REL, VOCAB, Triple, memory_of, parse_time
from cranimem_mcp.temporal import Source, Validity

logger = logging.getLogger(__name__)

_QUADS = "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"


class _RemoteDataset(Dataset):
    """A Dataset over a SPARQL store whose reads span the named graphs and never write."""

    def graph(self, identifier: Any = None, base: Any = None) -> Graph:  # type: ignore[override]
        # rdflib's Dataset.graph would send CREATE GRAPH (an error when it exists).
        return Graph(store=self.store, identifier=identifier)

    def quads(self, quad: Any = None) -> Iterator[tuple[Any, Any, Any, Any]]:  # type: ignore[override]
        s, p, o, c = quad if quad is not None else (None, None, None, None)
        if c is not None:
            iri = getattr(c, "identifier", c)
            for triple in self.graph(iri).triples((s, p, o)):
                yield (*triple, iri)
            return
        bindings = {k: v for k, v in zip("spo", (s, p, o), strict=True) if v is not None}
        for row in self.store.query(_QUADS, {}, bindings, None):
            yield row.s, row.p, row.o, row.g


_KEPT_MAX = 200_000  # reads kept between commits, at most
_CHUNK = 500  # bound values per query, at most (a POST body of some 50 KB)
_TERM = "[^/]+"
_MEMORY = Literal(f"^{BASE}id/{_TERM}/memory/{_TERM}$".replace(".", "\\.")).n3()
_ENDS = Literal(f"^{BASE}id/{_TERM}/ends/{_TERM}$".replace(".", "\\.")).n3()
_REL = Literal(str(REL)).n3()
# Set anew by every commit, in its update request; outside id/, so in no export or check.
_GENERATION = URIRef(BASE + "state/generation").n3()
_GENERATION_P = VOCAB.generation.n3()
_GENERATION_QUERY = (
    f"SELECT ?v WHERE {{ GRAPH {_GENERATION} {{ {_GENERATION} {_GENERATION_P} ?v }} }}"
)
_A, _LABEL = RDF.type.n3(), RDFS.label.n3()
_ASSERTED, _OBSERVED = VOCAB.assertedAt.n3(), VOCAB.observedAt.n3()
_RECORD = (
    f"{_A} {VOCAB.Supersession.n3()} ; {VOCAB.endsSubject.n3()} ?s ; "
    f"{VOCAB.endsPredicate.n3()} ?p ; {VOCAB.endsObject.n3()} ?o ; {VOCAB.endedAt.n3()} ?ended"
)
# A fact's sources (active memory graphs, with when each was asserted and observed) and its
# end records (in active ends graphs), for the facts at the nodes ?n (the edges of a walk).
_EDGES = f"""SELECT DISTINCT ?s ?p ?o ?g ?asserted ?observed ?ended WHERE {{
  {{ VALUES ?n {{ %(nodes)s }}
    {{ GRAPH ?g {{ ?n ?p ?o }} BIND(?n AS ?s) }} UNION {{ GRAPH ?g {{ ?s ?p ?n }} BIND(?n AS ?o) }}
    FILTER(STRSTARTS(STR(?p), {_REL}) && REGEX(STR(?g), {_MEMORY}))
    OPTIONAL {{ GRAPH ?g {{ ?g {_ASSERTED} ?asserted }} }}
    OPTIONAL {{ GRAPH ?g {{ ?g {_OBSERVED} ?observed }} }} }}
  UNION
  {{ VALUES ?n {{ %(nodes)s }}
    {{ GRAPH ?e {{ ?r {VOCAB.endsSubject.n3()} ?n }} BIND(?n AS ?s) }}
    UNION {{ GRAPH ?e {{ ?r {VOCAB.endsObject.n3()} ?n }} BIND(?n AS ?o) }}
    GRAPH ?e {{ ?r {_RECORD} }}
    FILTER(REGEX(STR(?e), {_ENDS})) }}
}}"""
# The same for given facts (s, p, o).
_VALIDITY = f"""SELECT DISTINCT ?s ?p ?o ?g ?asserted ?observed ?ended WHERE {{
  {{ VALUES (?s ?p ?o) {{ %(facts)s }}
    GRAPH ?g {{ ?s ?p ?o }} FILTER(REGEX(STR(?g), {_MEMORY}))
    OPTIONAL {{ GRAPH ?g {{ ?g {_ASSERTED} ?asserted }} }}
    OPTIONAL {{ GRAPH ?g {{ ?g {_OBSERVED} ?observed }} }} }}
  UNION
  {{ VALUES (?s ?p ?o) {{ %(facts)s }}
    GRAPH ?e {{ ?r {_RECORD} }} FILTER(REGEX(STR(?e), {_ENDS})) }}
}}"""
_SOURCES = f"""SELECT ?s ?p ?o ?g WHERE {{ VALUES (?s ?p ?o) {{ %(facts)s }}
  GRAPH ?g {{ ?s ?p ?o }} FILTER(REGEX(STR(?g), {_MEMORY})) }}"""
_STATED = f"""SELECT ?s ?p ?o ?g WHERE {{ VALUES (?s ?p) {{ %(pairs)s }}
  GRAPH ?g {{ ?s ?p ?o }} FILTER(REGEX(STR(?g), {_MEMORY})) }}"""
_MENTIONS = f"""SELECT ?n (COUNT(*) AS ?c) WHERE {{ VALUES ?n {{ %(nodes)s }}
  GRAPH ?g {{ ?n {_A} ?t }} FILTER(REGEX(STR(?g), {_MEMORY})) }} GROUP BY ?n"""
_LABELS = f"""SELECT ?n (SAMPLE(?label) AS ?l) WHERE {{ VALUES ?n {{ %(nodes)s }}
  GRAPH ?g {{ ?n {_LABEL} ?label }} }} GROUP BY ?n"""
_HOLDING = """SELECT DISTINCT ?g WHERE { VALUES ?g { %(graphs)s } GRAPH ?g { ?s ?p ?o } }"""
_TRIPLES = f"""SELECT ?g ?s ?p ?o WHERE {{ VALUES ?g {{ %(graphs)s }}
  GRAPH ?g {{ ?s ?p ?o }} FILTER(STRSTARTS(STR(?p), {_REL})) }}"""


def _chunks(items: Iterable[Any]) -> Iterator[list[Any]]:
    items = list(dict.fromkeys(items))
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def _terms(nodes: Iterable[URIRef]) -> str:
    return " ".join(n.n3() for n in nodes)


def _rows(nodes: Iterable[tuple[URIRef, ...]]) -> str:
    return " ".join("(" + " ".join(n.n3() for n in row) + ")" for row in nodes)


class SparqlProvenance(Provenance):
    """:class:`~cranimem_mcp.graph.provenance.Provenance` whose reads of many nodes or facts are
    one query each, and whose single reads the batches did not cover are batches of one.

    What the queries brought is kept while the server's generation stays the same: every
    commit through a SparqlDataset, from any replica, sets a new one in the same update
    request, and each store operation starts by reading it (:meth:`begin`, one small
    query), or each block of operations that shares one check (a recall's: see
    ``GraphStore.reading``). So a recall of nodes read before costs that query alone, as in
    memory, and a replica never reads what another one changed from before the change: after
    a check, every kept read is of the server as it was at the check (a commit in between
    would have changed the generation), and what is read later is newer still."""

    def __init__(
        self, ds: Dataset, select: Callable[[str], list[Any]], generation: Callable[[], str]
    ) -> None:
        super().__init__(ds, memo=False)
        self._select = select
        self._generation = generation
        self._seen: str | None = None  # the generation the kept reads are of
        self._validity: dict[Triple, Validity] = {}
        self._edges: dict[URIRef, list[tuple[Triple, Validity]]] = {}
        self._mentions: dict[URIRef, int] = {}
        self._labels: dict[URIRef, str] = {}
        self._triples: dict[URIRef, list[Triple]] = {}

    remote = True  # begin() reads the server's generation

    def _caches(self) -> tuple[dict, ...]:
        return (self._validity, self._edges, self._mentions, self._labels, self._triples)

    def begin(self) -> None:
        """Keep what was read if the server's generation is the one it was read at."""
        current = self._generation()
        if current != self._seen or sum(map(len, self._caches())) > _KEPT_MAX:
            self.drop_memos()
        self._seen = current

    def drop_memos(self) -> None:
        super().drop_memos()
        self._seen = None
        for cache in self._caches():
            cache.clear()

    # --- batches ---------------------------------------------------------------------------

    def _validity_rows(self, rows: Iterable[Any]) -> dict[Triple, Validity]:
        """Validity per fact from rows of sources (?g ...) and of end times (?ended). Each
        end time once: a fact's validity is the same with one record or two that end it
        at the same time."""
        sources: dict[Triple, dict[str, Source]] = {}
        ends: dict[Triple, set[datetime]] = {}
        for row in rows:
            fact = (row.s, row.p, row.o)
            if row.g is not None:
                found = sources.setdefault(fact, {})
                asserted = parse_time(row.asserted) if row.asserted is not None else None
                observed = parse_time(row.observed) if row.observed is not None else None
                observed = observed or asserted
                if str(row.g) not in found and asserted and observed:
                    found[str(row.g)] = Source(memory_of(row.g), observed, asserted)
            elif row.ended is not None and (when := parse_time(row.ended)) is not None:
                ends.setdefault(fact, set()).add(when)
        return {
            fact: Validity(list(sources.get(fact, {}).values()), sorted(ends.get(fact, ())))
            for fact in sources.keys() | ends.keys()
        }

    def edges_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, list[tuple[Triple, Validity]]]:
        nodes = list(nodes)
        for chunk in _chunks(n for n in nodes if n not in self._edges):
            rows = self._select(_EDGES % {"nodes": _terms(chunk)})
            # An edge is a fact with a source; end records alone make none.
            facts = {(r.s, r.p, r.o) for r in rows if r.g is not None}
            validity = self._validity_rows(rows)
            for node in chunk:
                out = sorted(t for t in facts if t[0] == node)
                into = sorted(t for t in facts if t[2] == node)
                self._edges[node] = [(t, validity[t]) for t in out + into]
            self._validity.update({t: validity[t] for t in facts})
        return {node: self._edges[node] for node in nodes}

    def validities(self, triples: Iterable[Triple]) -> dict[Triple, Validity]:
        triples = list(triples)
        for chunk in _chunks(t for t in triples if t not in self._validity):
            validity = self._validity_rows(self._select(_VALIDITY % {"facts": _rows(chunk)}))
            for t in chunk:
                self._validity[t] = validity.get(t, Validity())
        return {t: self._validity[t] for t in triples}

    def sources_of(self, triples: Iterable[Triple]) -> dict[Triple, set[str]]:
        triples = list(triples)
        found: dict[Triple, set[str]] = {t: set() for t in triples}
        for chunk in _chunks(triples):
            for row in self._select(_SOURCES % {"facts": _rows(chunk)}):
                found[(row.s, row.p, row.o)].add(memory_of(row.g))
        return found

    def holding(self, iris: Iterable[URIRef]) -> list[URIRef]:
        iris = list(iris)
        held = set()
        for chunk in _chunks(iris):
            held.update(r.g for r in self._select(_HOLDING % {"graphs": _terms(chunk)}))
        return [iri for iri in iris if iri in held]

    def stated(self, pairs: Iterable[tuple[URIRef, URIRef]]) -> dict[tuple, list[tuple]]:
        pairs = list(pairs)
        found: dict[tuple, list[tuple]] = {pair: [] for pair in pairs}
        for chunk in _chunks(pairs):
            for row in self._select(_STATED % {"pairs": _rows(chunk)}):
                found[(row.s, row.p)].append((row.o, memory_of(row.g)))
        return found

    def mentions_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, int]:
        nodes = list(nodes)
        for chunk in _chunks(n for n in nodes if n not in self._mentions):
            counts = {
                row.n: int(row.c) for row in self._select(_MENTIONS % {"nodes": _terms(chunk)})
            }
            self._mentions.update({n: counts.get(n, 0) for n in chunk})
        return {n: self._mentions[n] for n in nodes}

    def labels_of(self, nodes: Iterable[URIRef]) -> dict[URIRef, str]:
        nodes = list(nodes)
        for chunk in _chunks(n for n in nodes if n not in self._labels):
            for row in self._select(_LABELS % {"nodes": _terms(chunk)}):
                self._labels.setdefault(row.n, str(row.l))
            for n in chunk:
                self._labels.setdefault(n, unquote(str(n).rsplit("/", 1)[-1]))
        return {n: self._labels[n] for n in nodes}

    def triples_of(self, iris: Iterable[URIRef]) -> dict[URIRef, list[Triple]]:
        iris = list(iris)
        for chunk in _chunks(i for i in iris if i not in self._triples):
            found: dict[URIRef, list[Triple]] = {i: [] for i in chunk}
            for row in self._select(_TRIPLES % {"graphs": _terms(chunk)}):
                found[row.g].append((row.s, row.p, row.o))
            self._triples.update(found)
        return {i: self._triples[i] for i in iris}

    # --- single reads, as batches of one ---------------------------------------------------

    def edges(self, node: URIRef) -> list[tuple[Triple, Validity]]:
        return self.edges_of([node])[node]

    def validity(self, s: URIRef, p: URIRef, o: URIRef) -> Validity:
        return self.validities([(s, p, o)])[(s, p, o)]

    def sources(self, s: URIRef, p: URIRef, o: URIRef) -> set[str]:
        return self.sources_of([(s, p, o)])[(s, p, o)]

    def mentions(self, node: URIRef) -> int:
        return self.mentions_of([node])[node]

    def label(self, node: URIRef) -> str:
        return self.labels_of([node])[node]

    def graph_triples(self, iri: URIRef) -> list[Triple]:
        return self.triples_of([iri])[iri]


class SparqlDataset:
    """Named graphs in a SPARQL 1.1 server. Not thread-safe: the owner serialises calls."""

    def __init__(self, query_endpoint: str | None, update_endpoint: str | None) -> None:
        if not query_endpoint or not update_endpoint:
            raise ConfigError(
                'graph.store = "sparql" needs graph.query_endpoint and graph.update_endpoint'
            )
        self.store = SPARQLUpdateStore(
            query_endpoint=query_endpoint,
            update_endpoint=update_endpoint,
            context_aware=True,
            autocommit=True,
            # POST: a batch's bound values would not fit in a URL. JSON: rdflib parses it
            # faster than the XML results it asks for by default.
            method="POST",
            returnFormat="json",
        )
        self.ds = _RemoteDataset(store=self.store)
        # Our own queries and the commits, over kept-alive connections (sparql_client.py).
        self.client = SparqlClient(query_endpoint, update_endpoint)
        self.pending = 0  # nothing to compact: the server is the durable store

    def provenance(self, ds: Dataset, memo: bool) -> SparqlProvenance:
        """The graph's reads: each batch one query to the server, kept while no commit
        changed the server's generation (``memo`` does not apply: see SparqlProvenance)."""
        return SparqlProvenance(ds, self.client.select, self.generation)

    def generation(self) -> str:
        """The server's generation: a new value with every commit ('' before the first)."""
        rows = self.client.select(_GENERATION_QUERY)
        return str(rows[0].v) if rows else ""

    def open(self) -> None:
        self.client.ask("ASK { ?s ?p ?o }")

    def close(self) -> None:
        self.client.close()

    @staticmethod
    def put(iri: URIRef, graph: Graph) -> dict[str, Any]:
        ground = graph.skolemize()
        return {"op": "put", "graph": str(iri), "nt": ground.serialize(format="nt", encoding=None)}

    @staticmethod
    def drop(iri: URIRef) -> dict[str, Any]:
        return {"op": "drop", "graph": str(iri)}

    def commit(self, entries: list[dict[str, Any]]) -> None:
        """Replace or drop whole graphs in one update request. Under a consolidation lease's
        fence (lease.py) the request applies only while the fence's token is current, and a
        fence found gone afterwards is LeaseLost."""
        if not entries:
            return
        # Every commit also writes a new generation: replicas' kept reads check it.
        generation = [
            f"DELETE WHERE {{ GRAPH {_GENERATION} {{ {_GENERATION} {_GENERATION_P} ?v }} }}",
            f"INSERT DATA {{ GRAPH {_GENERATION} {{ {_GENERATION} {_GENERATION_P} "
            f"{Literal(uuid.uuid4().hex).n3()} }} }}",
        ]
        fence = current_fence()
        if fence is not None:
            self.client.update(" ;\n".join([fenced_update(entries, fence), *generation]))
            if not self.client.ask(fence.ask()):
                raise LeaseLost(
                    f"the consolidation lease's token {fence.token} is no longer current: "
                    "this commit was refused or is the last one applied under it"
                )
            return
        parts = []
        for entry in entries:
            name = URIRef(entry["graph"]).n3()
            parts.append(f"DROP SILENT GRAPH {name}")
            if entry["op"] == "put" and entry.get("nt"):
                parts.append(f"INSERT DATA {{ GRAPH {name} {{\n{entry['nt']}\n}} }}")
        self.client.update(" ;\n".join([*parts, *generation]))

    def compact(self) -> None:
        """Nothing to do: the server keeps its own files (what they keep after a hard
        forget, and ``rewrite-graph``: see docs/SCALING.md and :mod:`.graph_rewrite`)."""
