"""The knowledge graph's names: the IRIs of scopes, entities, relations and named graphs,
and the ``cm:`` terms. These names are the on-disk and export format.

Under ``https://cranimem.dev/``: ``ns#`` holds the terms (``cm:scope``, ``cm:observedAt``,
``cm:Supersession`` ...), ``rel/`` the relations (one per :func:`~cranimem_mcp.naming.
predicate_name`), and ``id/<scope>/`` a scope's entities (``entity/<canonical name>``) and
named graphs (``memory/<id>``, ``ends/<id>``, ``trash/<id>``, ``trash-ends/<id>``). Every
variable part is percent-encoded, so a name can neither leave its scope nor pose as
another kind of node.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from urllib.parse import quote

from rdflib import XSD, Literal, Namespace, URIRef

from cranimem_mcp.naming import canonical_name, predicate_name

BASE = "https://cranimem.dev/"
VOCAB = Namespace(BASE + "ns#")
REL = Namespace(BASE + "rel/")
Triple = tuple[URIRef, URIRef, URIRef]


@lru_cache(maxsize=4096)
def scope_base(scope: str) -> str:
    return f"{BASE}id/{quote(scope, safe='')}/"


@lru_cache(maxsize=65536)  # linking a recall's texts tries every span of up to five words
def entity_iri(scope: str, name: str) -> URIRef:
    return URIRef(scope_base(scope) + "entity/" + quote(canonical_name(name), safe=""))


def relation_iri(raw: str) -> URIRef:
    return REL[predicate_name(raw)]


def memory_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "memory/" + memory_id)


def trash_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "trash/" + memory_id)


def ends_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "ends/" + memory_id)


def trash_ends_graph_iri(scope: str, memory_id: str) -> URIRef:
    return URIRef(scope_base(scope) + "trash-ends/" + memory_id)


def graph_name(ctx: object) -> str:
    """A quad's context comes back as a Graph or as its IRI, depending on the call."""
    return str(getattr(ctx, "identifier", ctx))


def memory_of(ctx: object) -> str:
    """The memory id a named graph of ours belongs to."""
    return graph_name(ctx).rsplit("/", 1)[-1]


def graph_kind(ctx: object) -> str:
    """'memory', 'ends', 'trash' or 'trash-ends' for our graphs, '' otherwise."""
    parts = graph_name(ctx).removeprefix(BASE + "id/").split("/")
    return parts[1] if len(parts) == 3 else ""


def is_relation(p: object) -> bool:
    return str(p).startswith(str(REL))


def parse_time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def stamp(when: datetime) -> Literal:
    return Literal(when.isoformat(), datatype=XSD.dateTime)
