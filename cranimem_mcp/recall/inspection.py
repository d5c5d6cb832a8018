"""The inspector's queries: memories in full, a scope's graph at a glance, one entity's
neighbourhood. Read-only; the stores are handed in by the engine, which checks the
arguments first. Records become :class:`~cranimem_mcp.models.MemoryDetail` records here, so no
face reads a store's row by key.
"""

from __future__ import annotations

from collections.abc import Iterable

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.graph.vocabulary import entity_iri
from cranimem_mcp.models import (
    EntityFact,
    EntityView,
    Fact,
    FactSource,
    GraphEdge,
    GraphNode,
    GraphView,
    Memory,
    MemoryDetail,
)
from cranimem_mcp.naming import canonical_name

_FIELDS = tuple(MemoryDetail.model_fields)


def detail(memory: Memory) -> MemoryDetail:
    values = {k: getattr(memory, k) for k in _FIELDS}
    values["entities"] = list(values["entities"] or [])
    values["tags"] = list(values["tags"] or [])
    values["pinned"] = bool(values["pinned"])
    return MemoryDetail.model_validate(values)


async def get_memories(episodic: EpisodicStore, ids: list[str], scope: str) -> list[MemoryDetail]:
    found = {m.id: m for m in await episodic.get(ids) if m.scope == scope}
    return [detail(found[i]) for i in ids if i in found]


async def recent_memories(
    episodic: EpisodicStore, scope: str, tiers: Iterable[str], limit: int
) -> list[MemoryDetail]:
    found = await episodic.scope_rows(scope, tuple(tiers))  # oldest first
    return [detail(m) for m in found[::-1][:limit]]


def _edge(f: Fact) -> GraphEdge:
    return GraphEdge(source=canonical_name(f.subject), target=canonical_name(f.object),
                     predicate=f.predicate, support=f.support)  # fmt: skip


async def graph_overview(
    episodic: EpisodicStore, graph: GraphStore, scope: str, limit: int
) -> GraphView:
    """The ``limit`` entities of long-term memory that most memories mention, and the facts
    between them; the rest arrive by asking for an entity's neighbourhood."""
    names: dict[str, str] = {}
    for m in await episodic.scope_rows(scope, ("longterm",)):
        for name in m.entities or []:
            names.setdefault(canonical_name(name), name)
    support = await graph.entity_support(scope, list(names.values()))
    ranked = sorted((n for n, c in support.items() if c > 0), key=lambda n: (-support[n], n))
    top = ranked[:limit]
    facts = await graph.facts(scope, [entity_iri(scope, n) for n in top], 1, limit * 4)
    nodes = {canonical_name(n): GraphNode(id=canonical_name(n), label=n, support=support[n])
             for n in top}  # fmt: skip
    edges = [e for e in map(_edge, facts) if e.source in nodes and e.target in nodes]
    return GraphView(scope=scope, nodes=list(nodes.values()), edges=edges, total=len(ranked))


async def entity_neighbourhood(
    episodic: EpisodicStore, graph: GraphStore, scope: str, name: str, limit: int
) -> EntityView:
    """The entity's facts (one hop), the entities at their other ends with their support,
    and the memories each fact comes from."""
    facts = await graph.facts(scope, [entity_iri(scope, name)], 1, limit)
    ids = sorted({i for f in facts for i in f.sources})
    found = {m.id: m for m in await episodic.get(ids)}
    labels = {canonical_name(x): x for f in facts for x in (f.subject, f.object)}
    support = await graph.entity_support(scope, list(labels.values()))
    return EntityView(
        scope=scope,
        entity=name,
        nodes=[GraphNode(id=k, label=v, support=support.get(v, 0)) for k, v in labels.items()],
        edges=[_edge(f) for f in facts],
        facts=[
            EntityFact(
                **_edge(f).model_dump(),
                subject=f.subject,
                object=f.object,
                sources=[
                    FactSource(id=i, content=found[i].content, tier=found[i].tier)
                    for i in f.sources
                    if i in found
                ],
            )
            for f in facts
        ],
    )
