"""What a commit changes, as the memos of the graph's reads need to know it.

:class:`~cranimem_mcp.graph.provenance.Provenance` remembers, between commits, each fact's validity,
each node's relations, mentions and label. A commit replaces or drops whole named graphs, so
what it can change is what the graphs it names held before it or hold after it: a fact's
sources are the graphs that state it, its end is a record in an ``ends`` graph that names it,
a node's mentions are the graphs that type it, its label is stated in a graph. :func:`delta`
reads that off the graphs' triples, before and after.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rdflib import RDF, RDFS

from cranimem_mcp.graph.vocabulary import VOCAB, Triple, is_relation

_ENDS = (VOCAB.endsSubject, VOCAB.endsPredicate, VOCAB.endsObject)


@dataclass
class Delta:
    facts: set[Triple] = field(default_factory=set)  # stated, or named by an end record
    typed: set[Any] = field(default_factory=set)  # nodes a graph types
    labelled: set[Any] = field(default_factory=set)  # nodes a graph labels

    def relations_at(self) -> dict[Any, set[Triple]]:
        """The relations among the facts, by the node at each end."""
        at: dict[Any, set[Triple]] = {}
        for fact in self.facts:
            if is_relation(fact[1]):
                at.setdefault(fact[0], set()).add(fact)
                at.setdefault(fact[2], set()).add(fact)
        return at


def delta(contents: Iterable[Iterable[Triple]]) -> Delta:
    """What the memos must read again, from the triples of each graph a commit named, as
    they were before it and as they are after it."""
    found = Delta()
    for triples in contents:
        records: dict[Any, dict[Any, Any]] = {}
        for s, p, o in triples:
            found.facts.add((s, p, o))
            if p == RDF.type:
                found.typed.add(s)
            elif p == RDFS.label:
                found.labelled.add(s)
            elif p in _ENDS:
                records.setdefault(s, {})[p] = o
        for record in records.values():
            if len(record) == len(_ENDS):
                found.facts.add(tuple(record[p] for p in _ENDS))  # type: ignore[arg-type]
    return found
