"""What callers may pass the engine: scopes, texts, memory ids and times, checked once at
the engine's door (bad input is an :class:`InvalidInput` that changes nothing), and the
ids, digests and clock the engine stamps memories with."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from hashlib import sha256

from cranimem_mcp.errors import InvalidInput
from cranimem_mcp.models import MEMORY_ID_RE, SCOPE_RE


def now() -> datetime:
    return datetime.now(UTC)


def content_hash(content: str) -> str:
    return sha256(" ".join(content.casefold().split()).encode("utf-8")).hexdigest()


def new_id() -> str:
    return "m_" + uuid.uuid4().hex[:20]


def check_scope(scope: str) -> str:
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        raise InvalidInput(
            f"invalid scope {scope[:80]!r}: use 1-64 characters of [A-Za-z0-9_.:-]"
            if isinstance(scope, str)
            else "scope must be a string"
        )
    return scope


def check_text(name: str, value: str, max_len: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters")
    try:
        # Lone surrogates: what Python makes of invalid UTF-8 on the command line, and what
        # a JSON "\\ud800" escape decodes to. No store can hold them.
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{name} is not valid UTF-8 text (a lone surrogate at position {exc.start})"
        ) from exc
    if not value.strip():
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_len:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {max_len}")
    return value.strip()


def check_time(value: str | datetime, name: str = "as_of") -> datetime:
    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"{name} must be an ISO 8601 date or time, got {value!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def check_ids(ids: list[str]) -> list[str]:
    bad = [i for i in ids if not isinstance(i, str) or not MEMORY_ID_RE.match(i)]
    if bad:
        raise InvalidInput(f"invalid memory id {str(bad[0])[:80]!r}: ids look like m_ + 20 hex")
    return list(dict.fromkeys(ids))
