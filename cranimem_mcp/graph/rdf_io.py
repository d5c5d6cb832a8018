"""The knowledge graph as RDF documents: every named graph of ours as TriG (export and
import, the portable archive's ``graph.trig``), and one scope's facts as bounded Turtle (the
MCP graph resource).

These functions read or build rdflib datasets and never write a store: the
:class:`~cranimem_mcp.graph.store.GraphStore` calls them under its lock and commits what an import
returns. An import holds only graphs of ours (:func:`~cranimem_mcp.graph.vocabulary.graph_kind`);
anything else is refused whole, before a single graph is written.
"""

from __future__ import annotations

import warnings
from collections import defaultdict

from rdflib import Dataset, Graph, Namespace, URIRef

from cranimem_mcp.errors import StoreError
from cranimem_mcp.graph.vocabulary import (
    REL,
    VOCAB,
    graph_kind,
    graph_name,
    is_relation,
    scope_base,
)


def export_trig(ds: Dataset) -> tuple[str, int]:
    """The named graphs of ours in ``ds`` as TriG, and the number of quads in it."""
    out = Dataset()
    out.bind("cm", VOCAB)
    out.bind("rel", REL)
    quads = 0
    for s, p, o, c in ds.quads((None, None, None, None)):
        if graph_kind(c):
            out.graph(URIRef(graph_name(c))).add((s, p, o))
            quads += 1
    with warnings.catch_warnings():  # rdflib's TriG code calls its own deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        return out.serialize(format="trig"), quads


def parse_trig(data: str) -> tuple[dict[str, Graph], int]:
    """The named graphs of a TriG export, by IRI, and the number of quads read."""
    incoming = Dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        incoming.parse(data=data, format="trig")
    graphs: dict[str, Graph] = defaultdict(Graph)
    quads = 0
    for s, p, o, c in incoming.quads((None, None, None, None)):
        if not graph_kind(c):
            raise StoreError(f"the import names a graph that is not ours: {graph_name(c)[:120]}")
        graphs[graph_name(c)].add((s, p, o))
        quads += 1
    return dict(graphs), quads


def turtle(ds: Dataset, scope: str, max_triples: int) -> str:
    """The scope's memory graphs as Turtle, facts first, then what names and types their
    entities, at most ``max_triples`` triples."""
    g = Graph()
    g.bind("cm", VOCAB)
    g.bind("rel", REL)
    g.bind("e", Namespace(scope_base(scope) + "entity/"))
    prefix = scope_base(scope) + "memory/"
    for facts in (True, False):
        for s, p, o, c in ds.quads((None, None, None, None)):
            if len(g) >= max_triples:
                break
            if is_relation(p) != facts:
                continue
            if graph_name(c).startswith(prefix) and not str(s).startswith(prefix):
                g.add((s, p, o))
    return g.serialize(format="turtle")
