"""The knowledge graph's store in memory: pyoxigraph's in-memory store under rdflib's API.

The graph is read through rdflib (``Dataset``, ``Graph``, their ``triples`` and ``quads``);
its quads live in :class:`OxMemory`, an rdflib ``Store`` over a ``pyoxigraph.Store`` held in
memory (Rust: interned terms, compact indexes). On the 10k store of docs/RESULTS.md (101k
quads) it holds the graph in ~40 MiB where rdflib's own ``Memory`` took ~95 MiB, and loads
the snapshot in a fraction of the CPU (``bulk_load`` against building Python dicts). Nothing
of it reaches the disk: the files stay the journal's (snapshot and journal, so that a hard
forget leaves no residue after a compaction).

What the store keeps as it should read (the invariants ``Memory`` needed a subclass for):
a named graph exists while it holds a quad (``Dataset.graph(name)`` on an empty name
registers nothing), and a plain literal comes back plain (RDF 1.1 makes it an
``xsd:string``; rdflib 7 tells the two apart, and every literal we build is plain).
Oxigraph's memory store does not reclaim what a removal frees (its entries are versioned
for concurrent readers); :meth:`OxMemory.replace` takes a fresh store with the same quads,
which the journal's compaction builds from the files anyway (``journal.compact``), so what
removed quads leave behind lasts until the next compaction.

A read of all graphs (``triples(pattern, context=None)``) lists each matching triple once,
with the graphs that hold it, as ``Memory`` did: an entity's type stated in thousands of
memory graphs is one triple for the reader, converted to rdflib's terms once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

import pyoxigraph as ox
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.namespace import XSD
from rdflib.store import Store

_XSD_STRING = str(XSD.string)
_DEFAULT = ox.DefaultGraph()
_DEFAULT_NAME = str(DATASET_DEFAULT_GRAPH_ID)


@lru_cache(maxsize=1 << 14)
def to_rdflib(node: Any) -> Any:
    """An Oxigraph term as rdflib's (remembered: entities and predicates repeat)."""
    if isinstance(node, ox.NamedNode):
        return URIRef(node.value)
    if isinstance(node, ox.BlankNode):
        return BNode(node.value)
    if isinstance(node, ox.Literal):
        if node.language:
            return Literal(node.value, lang=node.language)
        datatype = node.datatype.value
        return Literal(node.value, datatype=None if datatype == _XSD_STRING else datatype)
    raise ValueError(f"not an RDF term in a quad: {node!r}")  # the default graph has no name


def to_ox(term: Any) -> Any:
    """An rdflib term (or a graph, by its name) as Oxigraph's; ``None`` stays ``None``."""
    if term is None:
        return None
    kind = type(term)
    if kind is URIRef:  # most terms: the checks below in the order of how often they come
        return _DEFAULT if str.__eq__(term, _DEFAULT_NAME) else ox.NamedNode(term)
    if isinstance(term, Graph):
        return to_ox(term.identifier)
    if isinstance(term, Literal):
        datatype = term.datatype
        return ox.Literal(
            term, language=term.language, datatype=ox.NamedNode(datatype) if datatype else None
        )
    if isinstance(term, BNode):
        return ox.BlankNode(term)
    if isinstance(term, URIRef):
        return to_ox(URIRef(term))
    raise ValueError(f"not an RDF term: {term!r}")


class Context:
    """A quad's graph as ``triples`` yields it: only its name (``identifier``), which is all
    rdflib's ``Dataset.quads`` and our readers take of it. A ``Graph`` per quad cost more
    than the read (a fact many memories state has a quad in each), and keeping one per name
    was what rdflib's Memory spent megabytes on."""

    __slots__ = ("identifier",)

    def __init__(self, name: Any) -> None:
        self.identifier = (
            DATASET_DEFAULT_GRAPH_ID if isinstance(name, ox.DefaultGraph) else to_rdflib(name)
        )

    def __repr__(self) -> str:
        return f"Context({self.identifier!s})"


class OxMemory(Store):
    """An rdflib ``Store`` over an in-memory ``pyoxigraph.Store`` (see the module docstring).
    Not thread-safe: the owner serialises calls."""

    context_aware = True
    graph_aware = True
    formula_aware = False
    transaction_aware = False

    def __init__(self) -> None:
        super().__init__()
        self.inner = ox.Store()
        self._prefixes: dict[str, URIRef] = {}

    # --- what the journal does with whole graphs, without rdflib's parser

    def bulk_load(self, path: str) -> None:
        """Add an N-Quads file's quads (the snapshot)."""
        self.inner.bulk_load(path=path, format=ox.RdfFormat.N_QUADS)

    def put_graph(self, name: URIRef, ntriples: str) -> None:
        """Make the named graph hold exactly these N-Triples."""
        graph = ox.NamedNode(name)
        self.inner.remove_graph(graph)
        if ntriples:
            self.inner.load(input=ntriples, format=ox.RdfFormat.N_TRIPLES, to_graph=graph)

    def drop_graph(self, name: URIRef) -> None:
        self.inner.remove_graph(ox.NamedNode(name))

    def replace(self, fresh: ox.Store) -> None:
        """Hold ``fresh`` from now on: the same quads (the caller's word), none of the space
        the old store kept for what was removed from it."""
        self.inner = fresh

    # --- rdflib's Store

    def add(self, triple: Any, context: Any, quoted: bool = False) -> None:
        if quoted:
            raise ValueError("the graph store holds no formulae")
        s, p, o = triple
        self.inner.add(ox.Quad(to_ox(s), to_ox(p), to_ox(o), to_ox(context)))
        super().add(triple, context, quoted)

    def addN(self, quads: Iterable[Any]) -> None:  # noqa: N802 (rdflib's name)
        self.inner.extend([ox.Quad(*map(to_ox, quad)) for quad in quads])

    def remove(self, triple_pattern: Any, context: Any = None) -> None:
        gone = list(self._quads(triple_pattern, to_ox(context)))
        for quad in gone:
            self.inner.remove(quad)
        # A graph exists while it holds a quad (Oxigraph keeps an emptied one named).
        for name in {quad.graph_name for quad in gone}:
            if isinstance(name, ox.NamedNode) and not self._holds(name):
                self.inner.remove_graph(name)

    def _quads(self, triple_pattern: Any, graph: Any = None) -> Iterator[Any]:
        """Oxigraph's quads that match an rdflib pattern (``graph``: Oxigraph's name, or
        ``None`` for all). A literal subject or a predicate that is no IRI matches none
        (Oxigraph would refuse the pattern)."""
        s, p, o = triple_pattern
        if isinstance(s, Literal) or not isinstance(p, URIRef | None):
            return iter(())
        return self.inner.quads_for_pattern(to_ox(s), to_ox(p), to_ox(o), graph)  # type: ignore[no-any-return]

    def _holds(self, name: Any) -> bool:
        return next(iter(self.inner.quads_for_pattern(None, None, None, name)), None) is not None

    def triples(self, triple_pattern: Any, context: Any = None) -> Iterator[Any]:
        s, p, o = triple_pattern
        graph = None if context is None else to_ox(context)
        quads = self._quads(triple_pattern, graph)
        if context is not None:
            contexts = (Context(graph),)
            for q in quads:
                triple = (
                    to_rdflib(q.subject) if s is None else s,
                    to_rdflib(q.predicate) if p is None else p,
                    to_rdflib(q.object) if o is None else o,
                )
                yield triple, iter(contexts)
            return
        if s is not None and p is not None and o is not None:  # one triple, in these graphs
            names = [q.graph_name for q in quads]
            if names:
                yield (s, p, o), map(Context, names)
            return
        grouped: dict[tuple[Any, Any, Any], list[Any]] = {}
        for q in quads:
            grouped.setdefault((q.subject, q.predicate, q.object), []).append(q.graph_name)
        for (qs, qp, qo), names in grouped.items():
            triple = (
                to_rdflib(qs) if s is None else s,
                to_rdflib(qp) if p is None else p,
                to_rdflib(qo) if o is None else o,
            )
            yield triple, map(Context, names)

    def triples_held(self, triple_pattern: Any, keep: Callable[[str], bool]) -> Iterator[Any]:
        """Each triple that matches (over all graphs) and that a graph whose name passes
        ``keep`` holds, once. What ``triples(pattern, context=None)`` gives a reader that
        asks only that, at a third of its cost over an entity's thousands of copies (each
        quad's triple compared as Oxigraph's, no term or context built for it)."""
        s, p, o = triple_pattern
        seen: set[Any] = set()
        for q in self._quads(triple_pattern):
            triple = q.triple
            if triple in seen:
                continue
            name = q.graph_name
            if isinstance(name, ox.NamedNode) and keep(name.value):
                seen.add(triple)
                yield (
                    to_rdflib(triple.subject) if s is None else s,
                    to_rdflib(triple.predicate) if p is None else p,
                    to_rdflib(triple.object) if o is None else o,
                )

    def graph_names(self, triple_pattern: Any) -> Iterator[str]:
        """The name of the graph of each quad that matches (over all graphs), as a string:
        what a count of the graphs that state something needs, without a term or a context
        per quad. The default graph's name is ``""``."""
        for q in self._quads(triple_pattern):
            name = q.graph_name
            yield "" if isinstance(name, ox.DefaultGraph) else name.value

    def __len__(self, context: Any = None) -> int:
        if context is None:
            return len(self.inner)
        return sum(1 for _ in self.inner.quads_for_pattern(None, None, None, to_ox(context)))

    def contexts(self, triple: Any = None) -> Iterator[Graph]:
        if triple is None:
            # Each holds a quad: remove() drops a graph it empties, add_graph() adds none.
            names: Iterable[Any] = self.inner.named_graphs()
        else:
            names = dict.fromkeys(q.graph_name for q in self._quads(triple))
        return (Graph(store=self, identifier=Context(n).identifier) for n in names)

    def add_graph(self, graph: Graph) -> None:
        return None  # a graph exists once it holds a quad (see the module docstring)

    def remove_graph(self, graph: Graph) -> None:
        name = to_ox(graph)
        if isinstance(name, ox.DefaultGraph):
            self.inner.clear_graph(name)
        else:
            self.inner.remove_graph(name)

    def bind(self, prefix: str, namespace: Any, override: bool = True) -> None:
        if override or prefix not in self._prefixes:
            for known, iri in list(self._prefixes.items()):
                if iri == namespace:
                    del self._prefixes[known]
            self._prefixes[prefix] = URIRef(namespace)

    def namespace(self, prefix: str) -> URIRef | None:
        return self._prefixes.get(prefix)

    def prefix(self, namespace: Any) -> str | None:
        return next((p for p, iri in self._prefixes.items() if iri == namespace), None)

    def namespaces(self) -> Iterator[tuple[str, URIRef]]:
        yield from list(self._prefixes.items())
