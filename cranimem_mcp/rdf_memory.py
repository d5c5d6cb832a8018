"""rdflib's in-memory store, made to give back what it no longer holds.

rdflib 7's ``Memory`` store keeps three nested indexes (subject -> predicate -> object and
its two rotations) and, per named graph, a ``Graph`` object in a map from the graph's name.
Removing a triple deletes only its innermost entry: the emptied inner dicts stay, keyed by
the removed terms, and so does the name map's entry of every graph ever touched, even by a
read (``Dataset.graph(name)`` on a name that holds nothing registers an empty graph). With
one named graph per memory and memories moving to the trash and out, that was a few KiB
per write kept for good, in a store whose triples the bounds keep constant.

:class:`TidyMemory` keeps the store's invariant as it should read: the indexes and the
name map hold only terms and graphs that some stored triple uses, so the store's size is
that of its triples. A named graph exists while it holds a triple, as in the N-Quads
snapshot a reopen reads (which cannot hold an empty graph).

It reaches into ``Memory``'s name-mangled attributes (``_Memory__spo`` and so on): there is
no public way to prune them. ``tests/test_persistence.py`` compares the store after a churn
of memories with a reopen of the same files, index entry by index entry, so a change of
rdflib's internals fails a test, not a user.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from rdflib import BNode, Dataset, Graph, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.namespace import XSD
from rdflib.plugins.stores.memory import Memory


def _key(context: Any) -> str | None:
    """The name map's key for a graph, as ``Memory`` computes it."""
    if context is None:
        return None
    identifier = getattr(context, "identifier", context)
    return f"{identifier.__class__.__name__}:{identifier}"


class TidyMemory(Memory):
    """``Memory`` whose indexes shrink when triples go (see the module docstring)."""

    def _holds(self, context: Any) -> bool:
        return _key(context) in self._Memory__contextTriples

    def add_graph(self, graph: Any) -> None:
        # Registered when its first triple is added (Memory.add), not before.
        return None

    def __len__(self, context: Any = None) -> int:
        if context is not None and not self._holds(context):
            return 0  # without registering a graph that holds nothing
        return super().__len__(context)

    def triples(self, triple_pattern: Any, context: Any = None) -> Iterator[Any]:
        if context is not None and not self._holds(context):
            return iter(())  # the same (nothing) as Memory gives, without registering it
        return super().triples(triple_pattern, context)

    def _Memory__contexts(self, triple: Any) -> Iterator[Any]:  # noqa: N802
        """The graphs a triple is in, listed when asked. ``Memory`` builds that list for
        every triple it yields, though ``Graph.triples`` (a memory's own graph read) drops
        it: for a triple that thousands of memory graphs share (an entity's type, a common
        fact), each such read cost a pass over all of them (recall's "outdated" check at
        10k memories: 1.2 ms per triple, docs/RESULTS.md)."""
        yield from Memory._Memory__contexts(self, triple)

    def remove(self, triple_pattern: Any, context: Any = None) -> None:
        gone = [triple for triple, _ in super().triples(triple_pattern, context)]
        super().remove(triple_pattern, context)
        spo, pos, osp = self._Memory__spo, self._Memory__pos, self._Memory__osp
        for s, p, o in gone:
            for index, outer, inner in ((spo, s, p), (pos, p, o), (osp, o, s)):
                level = index.get(outer)
                if level is None:
                    continue
                if inner in level and not level[inner]:
                    del level[inner]
                if not level:
                    del index[outer]
        if context is not None and not self._holds(context):
            self._Memory__context_obj_map.pop(_key(context), None)
            self._Memory__all_contexts.discard(context)


def load_nquads(ds: Dataset, path: Path) -> None:
    """Add an N-Quads file's quads to ``ds``, parsed by pyoxigraph (Rust): the same quads as
    ``ds.parse(path, format="nquads")`` (a plain literal stays plain, as rdflib reads it) in
    under half the time (3.8 s against 8.3 s of CPU for the 101k quads of a 10k store)."""
    terms: dict[Any, Any] = {}
    graphs: dict[Any, Graph] = {}

    def term(node: Any) -> Any:
        found = terms.get(node)
        if found is None:
            found = terms[node] = _rdflib(node)
        return found

    def graph(name: Any) -> Graph:
        found = graphs.get(name)
        if found is None:
            default = isinstance(name, ox.DefaultGraph)
            found = graphs[name] = ds.graph(DATASET_DEFAULT_GRAPH_ID if default else term(name))
        return found

    ds.addN(
        (term(q.subject), term(q.predicate), term(q.object), graph(q.graph_name))
        for q in ox.parse(path=str(path), format=ox.RdfFormat.N_QUADS)
    )


def _rdflib(node: Any) -> Any:
    if isinstance(node, ox.NamedNode):
        return URIRef(node.value)
    if isinstance(node, ox.BlankNode):
        return BNode(node.value)
    if isinstance(node, ox.Literal):
        if node.language:
            return Literal(node.value, lang=node.language)
        datatype = node.datatype.value
        return Literal(node.value, datatype=None if datatype == str(XSD.string) else datatype)
    raise ValueError(f"not an RDF term in a quad: {node!r}")  # the default graph has no name
