"""Scopes from MCP roots: a session's workspace folder names its memory.

A client that declares roots (workspace folders) gets, for calls that name no scope, the
scope of its first root: the folder's name made safe for a scope (``[A-Za-z0-9_.-]``, at
most 40 characters) plus ``-`` and six hex digits of a hash of the root's full URI. Stable
(the same folder always maps to the same scope), readable (the name says which project), and
two folders of the same name in different places do not share memory.
"""

from __future__ import annotations

import re
from hashlib import sha256
from urllib.parse import unquote, urlparse

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def scope_for_root(uri: str, name: str | None = None) -> str:
    path = unquote(urlparse(uri).path).rstrip("/")
    folder = path.rsplit("/", 1)[-1] or (name or "") or "root"
    safe = _UNSAFE.sub("-", folder).strip("-.") or "root"
    digest = sha256(uri.rstrip("/").encode("utf-8")).hexdigest()[:6]
    return f"{safe[:40]}-{digest}"
