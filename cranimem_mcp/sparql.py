"""The knowledge graph in any SPARQL 1.1 server, through rdflib's ``SPARQLUpdateStore``.

:class:`SparqlDataset` offers the small interface :class:`~cranimem_mcp.graph.GraphStore`
uses of :class:`~cranimem_mcp.journal.JournaledDataset`: a ``ds`` to read with
``quads``/``graph``, and ``put``/``drop``/``commit`` to write whole named graphs. So the
graph's domain logic is the same on both backends; only where the quads live changes.

Reads become SPARQL queries in which every bound value is an RDF term serialised by rdflib
(``VALUES`` bindings and ``n3()``), never caller text. A commit is one SPARQL update request
(``DROP SILENT GRAPH`` then ``INSERT DATA`` per graph), which the server applies as one
transaction. Blank nodes are skolemised before they are sent: a server's blank-node labels
are only stable within one result set, and the supersession records are read back across
several queries. The server is the durable store, so there is no journal and nothing to
compact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from rdflib import RDF, RDFS, Dataset, Graph, Literal, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

from .errors import ConfigError, StoreError
from .provenance import Provenance
from .temporal import Source, Validity
from .vocabulary import BASE, REL, VOCAB, Triple, memory_of, parse_time

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


_CHUNK = 500  # bound values per query, at most (a POST body of some 50 KB)
_TERM = "[^/]+"
_MEMORY = Literal(f"^{BASE}id/{_TERM}/memory/{_TERM}$".replace(".", "\\.")).n3()
_ENDS = Literal(f"^{BASE}id/{_TERM}/ends/{_TERM}$".replace(".", "\\.")).n3()
_REL = Literal(str(REL)).n3()
_A, _LABEL = RDF.type.n3(), RDFS.label.n3()
_ASSERTED, _OBSERVED = VOCAB.assertedAt.n3(), VOCAB.observedAt.n3()
_RECORD = (
    f"{_A} {VOCAB.Supersession.n3()} ; {VOCAB.endsSubject.n3()} ?s ; "
    f"{VOCAB.endsPredicate.n3()} ?p ; {VOCAB.endsObject.n3()} ?o ; {VOCAB.endedAt.n3()} ?ended"
)
# A fact's sources (active memory graphs, with when each was asserted and observed) and its
# end records (in active ends graphs), for the facts at the nodes ?n (the edges of a walk).
_EDGES = f"""SELECT ?s ?p ?o ?g ?asserted ?observed ?e ?r ?ended WHERE {{
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
_VALIDITY = f"""SELECT ?s ?p ?o ?g ?asserted ?observed ?e ?r ?ended WHERE {{
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
_LABELS = f"""SELECT ?n ?l WHERE {{ VALUES ?n {{ %(nodes)s }} GRAPH ?g {{ ?n {_LABEL} ?l }} }}"""
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
    """:class:`~cranimem_mcp.provenance.Provenance` whose reads of many nodes or facts are
    one query each. What a query brought is kept until the store's next operation or
    commit (``begin``, ``changed``), never longer: replicas write to the same server. A
    single read the batches did not cover is a batch of one."""

    def __init__(self, ds: Dataset, select: Callable[[str], list[Any]]) -> None:
        super().__init__(ds, memo=False)
        self._select = select
        self._validity: dict[Triple, Validity] = {}
        self._edges: dict[URIRef, list[tuple[Triple, Validity]]] = {}
        self._mentions: dict[URIRef, int] = {}
        self._labels: dict[URIRef, str] = {}
        self._triples: dict[URIRef, list[Triple]] = {}

    def begin(self) -> None:
        self.forget()

    def forget(self) -> None:
        super().forget()
        for cache in (self._validity, self._edges, self._mentions, self._labels, self._triples):
            cache.clear()

    # --- batches ---------------------------------------------------------------------------

    def _validity_rows(self, rows: Iterable[Any]) -> dict[Triple, Validity]:
        """Validity per fact from rows of sources (?g ...) and end records (?e ?r ?ended)."""
        sources: dict[Triple, dict[str, Source]] = {}
        ends: dict[Triple, dict[tuple[Any, Any], datetime]] = {}
        for row in rows:
            fact = (row.s, row.p, row.o)
            if row.g is not None:
                found = sources.setdefault(fact, {})
                asserted = parse_time(row.asserted) if row.asserted is not None else None
                observed = parse_time(row.observed) if row.observed is not None else None
                observed = observed or asserted
                if str(row.g) not in found and asserted and observed:
                    found[str(row.g)] = Source(memory_of(row.g), observed, asserted)
            elif row.e is not None and (when := parse_time(row.ended)) is not None:
                ends.setdefault(fact, {}).setdefault((row.e, row.r), when)
        return {
            fact: Validity(list(sources.get(fact, {}).values()), list(ends.get(fact, {}).values()))
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
        self.pending = 0  # nothing to compact: the server is the durable store

    def provenance(self, ds: Dataset, memo: bool) -> SparqlProvenance:
        """The graph's reads, each batch of them one query to the server."""
        return SparqlProvenance(ds, self.select)

    def select(self, query: str) -> list[Any]:
        """The rows of one SELECT query (one request)."""
        result = self.store.query(query, {}, {}, None)
        if isinstance(result, tuple):  # rdflib hands back (status, message, None) for a POST
            raise StoreError(f"the SPARQL server refused a query: {result[1]}")
        return list(result)

    def open(self) -> None:
        try:
            self.store.query("ASK { ?s ?p ?o }", {}, {}, None)
        except Exception as exc:
            raise StoreError(f"the SPARQL server does not answer: {exc}") from exc

    @staticmethod
    def put(iri: URIRef, graph: Graph) -> dict[str, Any]:
        ground = graph.skolemize()
        return {"op": "put", "graph": str(iri), "nt": ground.serialize(format="nt", encoding=None)}

    @staticmethod
    def drop(iri: URIRef) -> dict[str, Any]:
        return {"op": "drop", "graph": str(iri)}

    def commit(self, entries: list[dict[str, Any]]) -> None:
        """Replace or drop whole graphs in one update request."""
        if not entries:
            return
        parts = []
        for entry in entries:
            name = URIRef(entry["graph"]).n3()
            parts.append(f"DROP SILENT GRAPH {name}")
            if entry["op"] == "put" and entry.get("nt"):
                parts.append(f"INSERT DATA {{ GRAPH {name} {{\n{entry['nt']}\n}} }}")
        self.store.update(" ;\n".join(parts))

    def compact(self) -> None:
        """Nothing to do: the server keeps its own files (a hard forget there is the
        server's business: see docs/SCALING.md)."""
