"""How a tool argument the SDK rejected reads to the model: one sentence that names each
argument and the bound it missed ("Invalid argument for recall: `k` must be at most 50
(got 51)."), never pydantic's multi-line dump with its type codes and documentation links.

The bounds themselves stay in the tool signatures, where the SDK validates them against the
input schema (their numbers come from :mod:`.models`, which the engine checks too); this
module holds the argument types several tools share and rewords the ``ValidationError``
that validation raises (:class:`~.protocol.CranimemServer` calls :func:`explain`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, ValidationError

from cranimem_mcp.models import MAX_IDS, MEMORY_ID_PATTERN, SCOPE_PATTERN

# Every argument carries a description: it is the only help the model gets for it.
Scope = Annotated[
    str | None,
    Field(
        pattern=SCOPE_PATTERN,
        description="Omit unless the user names a scope",
    ),
]
MemoryId = Annotated[str, Field(pattern=MEMORY_ID_PATTERN)]
MemoryIds = Annotated[list[MemoryId], Field(max_length=MAX_IDS)]
DryRun = Annotated[bool, Field(description="Report what would happen; change nothing")]

# pydantic's error types for a value of the wrong kind, and what the value must be instead.
_KINDS = {
    "string": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "list": "a list",
    "dict": "an object",
    "model": "an object",
}


def explain(tool: str, exc: ValidationError) -> str:
    """One sentence for the model: every rejected argument with what it must be."""
    problems = [_problem(error) for error in exc.errors(include_url=False)]
    noun = "argument" if len(problems) == 1 else "arguments"
    return f"Invalid {noun} for {tool}: {'; '.join(problems)}."


def _problem(error: Any) -> str:
    name = _name(error["loc"])
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return f"{name} is required"
    if kind == "string_too_short":
        return f"{name} must be at least {_count(ctx['min_length'], 'character')} long{_len(value)}"
    if kind == "string_too_long":
        return f"{name} must be at most {_count(ctx['max_length'], 'character')} long{_len(value)}"
    if kind == "too_short":
        return f"{name} must have at least {_count(ctx['min_length'], 'item')}{_len(value)}"
    if kind == "too_long":
        return f"{name} must have at most {_count(ctx['max_length'], 'item')}{_len(value)}"
    if kind == "string_pattern_mismatch":
        return f"{name} must match the pattern {ctx['pattern']}{_got(value)}"
    bounds = {"greater_than_equal": ("at least", "ge"), "less_than_equal": ("at most", "le"),
              "greater_than": ("greater than", "gt"), "less_than": ("less than", "lt")}  # fmt: skip
    if kind in bounds:
        words, key = bounds[kind]
        return f"{name} must be {words} {ctx[key]}{_got(value)}"
    if kind == "literal_error":
        return f"{name} must be {ctx['expected']}{_got(value)}"
    if kind == "int_from_float":
        return f"{name} must be a whole number{_got(value)}"
    base = kind.removesuffix("_type").removesuffix("_parsing")
    if base in _KINDS:
        return f"{name} must be {_KINDS[base]}{_got(value)}"
    # Anything else (a custom validator's ValueError): pydantic's own one-line message.
    return f"{name}: {error['msg'].removeprefix('Value error, ')}"


def _name(loc: tuple[Any, ...]) -> str:
    """``('tags', 3)`` -> ```tags[3]```; union branch tags (``function-after[...]``) dropped."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif "[" not in part:
            text += f".{part}" if text else part
    return f"`{text or 'arguments'}`"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _len(value: Any) -> str:
    return f" (got {len(value)})" if isinstance(value, str | list) else ""


def _got(value: Any) -> str:
    """The rejected value, short and as JSON: the model wrote it, so it may read it back."""
    if isinstance(value, list | dict):
        return f" (got {'a list' if isinstance(value, list) else 'an object'})"
    if isinstance(value, str) and len(value) > 40:
        value = value[:40] + "..."
    return f" (got {json.dumps(value, ensure_ascii=False, default=str)})"
