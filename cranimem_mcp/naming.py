"""How the memory names what it knows: the merge key of an entity and the name of a relation.

Both are pure and total, and every layer uses these two and no other: the extractors, the
linkage checks, replay's entity counts, forget by entity, the graph's IRIs and the UI. So
"Osaka", "osaka" and " Osaka " are one entity everywhere, and "Lives In" and "lives_in" one
relation.
"""

from __future__ import annotations

import re

_PREDICATE_JUNK = re.compile(r"[^a-z0-9_]+")


def canonical_name(name: str) -> str:
    """The merge key of an entity: 'Osaka', 'osaka' and ' Osaka ' are one node."""
    return " ".join(name.replace("’", "'").split()).strip(" .,;:!?\"'()[]{}").casefold()


def predicate_name(raw: str) -> str:
    """A relation's name: snake_case, at most 64 characters, ``related_to`` if nothing is
    left."""
    name = _PREDICATE_JUNK.sub("_", raw.strip().lower()).strip("_")[:64]
    return name or "related_to"
