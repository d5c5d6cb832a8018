"""The reference memory server's file (``@modelcontextprotocol/server-memory``): JSON Lines,
each line an entity ``{"type": "entity", "name", "entityType", "observations": [...]}`` or a
relation ``{"type": "relation", "from", "to", "relationType"}``.

Every observation becomes a memory that keeps the entity's name. The server stores
observations as fragments about the entity ("Prefers pnpm over npm"), so the entity is put
back as the sentence's subject ("Maya Lindqvist prefers pnpm over npm"), not as a label
("Maya Lindqvist: Prefers pnpm ..."): a label is nobody
(:mod:`cranimem_mcp.conversation.transcript`), and the extractor would read the fragment as
the user's own preference. An observation that names the entity already, or has a subject
of its own ("The user met her at PyCon"), is labelled with the name instead. Each relation
becomes the sentence "<from> <relationType> <to>", each entity with a type "<name> is a
<type>". The extractor reads facts out of these sentences at consolidation, as it does any
memory's: the service has no way to assert a graph fact directly, by design (every fact has
a memory that states it).

The records are pinned: the user chose to store them in the other server, so the noise gate
does not judge them again (``--gate`` asks it to).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from cranimem_mcp.importers.records import Reading, Record, clean_tags, malformed
from cranimem_mcp.models import MAX_CONTENT

FORMAT = "server-memory"
# First words that give an observation a subject of its own: it is labelled with the name.
_SUBJECTS = frozenset(
    "the a an this that these those i we you he she they it my our your there".split()
)
# "Its staging database ..." about Harbor: "Harbor's staging database ...".
_POSSESSIVES = frozenset({"its", "his", "her", "their"})


def sentence(name: str, observation: str) -> str:
    """An observation of the entity ``name`` as a sentence that names it."""
    text = observation.strip()
    first, _, rest = text.partition(" ")
    word = first.lower().strip(",.;:")
    if name.lower() in text.lower():
        return text
    if word in _POSSESSIVES and rest:
        return f"{name}'s {rest}"
    if word in _SUBJECTS or not first[:1].isalpha():
        return f"{name}: {text}"
    # A fragment ("Prefers pnpm", "Is allergic to peanuts"): the entity is its subject.
    # A capitalised first word is lowered only when it is a plain word ("Prefers"), not a
    # name or an acronym ("PostgreSQL", "AWS").
    if first[:1].isupper() and first[1:] == first[1:].lower():
        first = first[:1].lower() + first[1:]
    return f"{name} {first} {rest}".strip()


def _text(value: object, path: Path, where: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise malformed(path, where, f"'{field}' must be a non-empty string, got {value!r:.60}")
    return value.strip()


def read(path: Path) -> Reading:
    """The records of a server-memory file; raises ``InvalidInput`` naming the line of the
    first line that is not an entity or a relation."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise malformed(path, "reading", str(exc)) from exc
    out: list[Record] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise malformed(path, where, f"not JSON ({exc})") from exc
        if not isinstance(item, dict):
            raise malformed(path, where, "not a JSON object")
        kind = item.get("type")
        if kind == "entity":
            out += _entity(item, path, where)
        elif kind == "relation":
            a = _text(item.get("from"), path, where, "from")
            b = _text(item.get("to"), path, where, "to")
            rel = _text(item.get("relationType"), path, where, "relationType")
            out.append(_record(f"{a} {rel.replace('_', ' ')} {b}", path, where, "relation",
                               json.dumps([a, rel, b])))  # fmt: skip
        else:
            raise malformed(path, where, f"'type' must be 'entity' or 'relation', got {kind!r:.40}")
    return Reading(out)


def _entity(item: dict, path: Path, where: str) -> list[Record]:
    name = _text(item.get("name"), path, where, "name")
    observations = item.get("observations", [])
    if not isinstance(observations, list):
        raise malformed(path, where, "'observations' must be a list of strings")
    etype = item.get("entityType")
    if etype is not None and not isinstance(etype, str):
        raise malformed(path, where, "'entityType' must be a string")
    tags = clean_tags([etype] if etype else [])
    out = []
    if etype and etype.strip():
        t = etype.strip().replace("_", " ")
        article = "an" if t[:1].lower() in "aeiou" else "a"
        out.append(_record(f"{name} is {article} {t}", path, where, "entity",
                           json.dumps([name]), tags))  # fmt: skip
    for i, obs in enumerate(observations):
        text = _text(obs, path, f"{where}, observation {i + 1}", "observations")
        out.append(_record(sentence(name, text), path, f"{where}, observation {i + 1}",
                           "observation", json.dumps([name, text]), tags))  # fmt: skip
    return out


def _record(
    content: str, path: Path, where: str, kind: str, key: str, tags: tuple[str, ...] = ()
) -> Record:
    if len(content) > MAX_CONTENT:
        raise malformed(path, where, f"{len(content)} characters; a memory holds {MAX_CONTENT}")
    # The file has no ids: a node is known by what it says (its name and text), hashed.
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Record(content=content, source=f"{FORMAT}:{kind}:{digest}", kind=kind, tags=tags,
                  pin=True)  # fmt: skip
