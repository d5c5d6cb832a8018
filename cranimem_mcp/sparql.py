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
from collections.abc import Iterator
from typing import Any

from rdflib import Dataset, Graph, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

from .errors import ConfigError, LeaseLost, StoreError
from .lease import current_fence, fenced_update

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
        )
        self.ds = _RemoteDataset(store=self.store)
        self.pending = 0  # nothing to compact: the server is the durable store

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
        """Replace or drop whole graphs in one update request. Under a consolidation lease's
        fence (lease.py) the request applies only while the fence's token is current, and a
        fence found gone afterwards is LeaseLost."""
        if not entries:
            return
        fence = current_fence()
        if fence is not None:
            self.store.update(fenced_update(entries, fence))
            if not self.store.query(fence.ask(), {}, {}, None).askAnswer:
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
        self.store.update(" ;\n".join(parts))

    def compact(self) -> None:
        """Nothing to do: the server keeps its own files (a hard forget there is the
        server's business: see docs/SCALING.md)."""
