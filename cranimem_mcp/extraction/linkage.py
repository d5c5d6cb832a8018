"""The linkage engine (paper B.4): extraction output, checked, into the knowledge graph.

Checks: empty names are dropped, names are whitespace-normalised, unknown types become
``Other``, relations must join two known, distinct entities (after canonicalisation, so
"Osaka", "osaka" and " Osaka " are one node) and get a snake_case predicate. A secrets
guard's placeholder is no entity ("My password is [redacted password]" states no fact).
"""

from __future__ import annotations

from functools import lru_cache

from cranimem_mcp.extraction.extractor import extract_one
from cranimem_mcp.models import ENTITY_TYPES, Entity, Extraction, Relation
from cranimem_mcp.naming import canonical_name, predicate_name
from cranimem_mcp.secrets.guard import LABELS

_WITHHELD = frozenset(canonical_name(f"redacted {label}") for label in LABELS)


def check(extraction: Extraction, max_name: int = 200) -> Extraction:
    entities: dict[str, Entity] = {}
    for ent in extraction.entities:
        name = " ".join(ent.name.split())[:max_name]
        key = canonical_name(name)
        if not key or key in _WITHHELD:
            continue
        type_ = ent.type if ent.type in ENTITY_TYPES else "Other"
        if key not in entities or entities[key].type == "Other":
            entities[key] = Entity(name=name, type=type_)
    relations: dict[tuple[str, str, str], Relation] = {}
    for rel in extraction.relations:
        s, o = canonical_name(rel.subject), canonical_name(rel.object)
        if not s or not o or s == o or s not in entities or o not in entities:
            continue
        p = predicate_name(rel.predicate)
        relations.setdefault(
            (s, p, o),
            Relation(
                subject=entities[s].name,
                predicate=p,
                object=entities[o].name,
                functional=rel.functional,
            ),
        )
    return Extraction(entities=list(entities.values()), relations=list(relations.values()))


@lru_cache(maxsize=4096)
def quick(text: str) -> Extraction:
    """The heuristic extraction of ``text``, checked: what a write links at once and what
    recall reads from buffer items. Remembered per text (the same buffer items are read
    again at every write that states a single-valued fact); the result is shared, so
    callers must not change it."""
    return check(extract_one(text))
