"""The tool schemas ``tools/list`` sends, lean: they ride along on every turn of the client's
model, so they carry what a client and its model use and nothing else.

An input schema keeps every property, description, default, bound and pattern, and loses
what pydantic adds for nothing: each ``title`` (the property's name again), and the
``anyOf`` of a nullable argument, which becomes a ``type`` list with the same bounds (they
apply to the non-null kind only, so the schema accepts exactly what it accepted) and no
``default`` of null (which says no more than leaving the argument out). An output
schema is an outline: the top-level fields by name (and their values when they are a fixed
set): the clients that validate the structured content against it (the SDK's do) still
can, and the result's JSON (the structured content, and the text content beside it) carries
every value with its type. The budget goes to what guides the model's calls: the
descriptions and the input schemas.
"""

from __future__ import annotations

from typing import Any

# Keywords that constrain one JSON type only: merged into a ``type`` list with "null", they
# still let null through, as the ``anyOf`` did.
_ONE_KIND = {
    "type", "pattern", "minLength", "maxLength", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "items", "minItems", "maxItems",
}  # fmt: skip
_NULL = {"type": "null"}


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without titles, each nullable ``anyOf`` as a ``type`` list."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: lean_input(sub) for name, sub in value.items()}
        elif isinstance(value, dict):
            out[key] = lean_input(value)
        elif isinstance(value, list):
            out[key] = [lean_input(v) if isinstance(v, dict) else v for v in value]
        else:
            out[key] = value
    return _nullable(out)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    branches = schema.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or _NULL not in branches:
        return schema
    (kind,) = [b for b in branches if b != _NULL]
    if not isinstance(kind.get("type"), str) or not set(kind) <= _ONE_KIND | {"enum"}:
        return schema
    merged = {**kind, "type": [kind["type"], "null"]}
    if "enum" in kind:
        merged["enum"] = [*kind["enum"], None]
    rest = {k: v for k, v in schema.items() if k != "anyOf" and (k, v) != ("default", None)}
    return {**merged, **rest}


def outline_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """An output schema's top-level fields, by name (with their values, for a fixed set)."""
    if schema is None or "properties" not in schema:
        return schema
    fields = {
        name: {"enum": sub["enum"]} if "enum" in sub else {}
        for name, sub in schema["properties"].items()
    }
    return {"type": "object", "properties": fields}
