"""The HTTP transport's bearer token: where it comes from and how a request proves it.

The token is ``CRANIMEM_TOKEN`` (at least :data:`~cranimem_mcp.config.MIN_TOKEN_LENGTH`
characters, checked when the settings load), else one generated once into
``<data dir>/http-token`` (mode 0600). Every request carries ``Authorization: Bearer
<token>``; one that does not is answered 401 with a body and a ``WWW-Authenticate`` header
(RFC 6750) that say which of three things is wrong: no token, a header that is not
``Bearer <token>``, or a token that does not match. Never which characters differ.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from cranimem_mcp.config import MIN_TOKEN_LENGTH, Settings
from cranimem_mcp.errors import ConfigError

TOKEN_FILE = "http-token"

# (error code, sentence) for each way a request can fail the check.
WHERE = f"CRANIMEM_TOKEN, or the one in <data dir>/{TOKEN_FILE}"
MISSING = (
    "missing_token",
    f"missing bearer token: send the header 'Authorization: Bearer <token>' ({WHERE})",
)
MALFORMED = ("invalid_request", "malformed Authorization header: expected 'Bearer <token>'")
INVALID = ("invalid_token", f"invalid bearer token: it is not this server's token ({WHERE})")


def resolve_token(settings: Settings) -> tuple[str, Path | None]:
    """``CRANIMEM_TOKEN`` (settings.token) or a token generated once into a 0600 file."""
    if settings.token:
        return settings.token, None
    path = settings.home / TOKEN_FILE
    if path.exists():
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"the token in {path} must be at least {MIN_TOKEN_LENGTH} characters long "
                f"(it has {len(token)}); delete the file to have a new one generated"
            )
        return token, path
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token, path


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``
    (compared in constant time); anything else is answered 401, saying what was wrong.

    The inspector under ``/ui`` also accepts its cookie, since a browser cannot send a header
    on navigation: ``/ui?token=<token>`` answers with an HttpOnly, SameSite=Strict cookie and
    a redirect to the same address without the token. The cookie holds an HMAC of the token,
    not the token, and it opens ``/ui`` only; ``/mcp`` stays bearer-only."""

    COOKIE = "cranimem_ui"

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._cookie = hmac.new(self._token, b"cranimem-ui-cookie", hashlib.sha256).hexdigest()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        header, cookies = None, b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value
            elif name == b"cookie":
                cookies = value
        problem = self._check(header)
        if problem is None:
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path == "/ui" or path.startswith("/ui/"):
            if self._has_cookie(cookies):
                return await self.app(scope, receive, send)
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
            given_q = [v for k, v in query if k == "token"]
            if given_q and hmac.compare_digest(given_q[0].encode("utf-8"), self._token):
                rest = urlencode([(k, v) for k, v in query if k != "token"])
                return await self._respond(send, 303, b"", [
                    (b"location", (path + ("?" + rest if rest else "")).encode("latin-1")),
                    (b"set-cookie", f"{self.COOKIE}={self._cookie}; Path=/ui; HttpOnly; "
                                    "SameSite=Strict".encode()),
                    (b"cache-control", b"no-store"),
                    (b"referrer-policy", b"no-referrer"),
                ])  # fmt: skip
            if given_q and problem is MISSING:
                problem = INVALID
        await self._deny(send, problem)

    def _check(self, header: bytes | None) -> tuple[str, str] | None:
        """None when the header carries this server's token, else what is wrong with it."""
        if header is None or not header.strip():
            return MISSING
        scheme, _, given = header.strip().partition(b" ")
        given = given.strip()
        if scheme.lower() != b"bearer" or not given:
            return MALFORMED
        if hmac.compare_digest(given, self._token):
            return None
        return MALFORMED if b" " in given else INVALID  # token68 (RFC 6750) has no spaces

    async def _deny(self, send: Any, problem: tuple[str, str]) -> None:
        code, sentence = problem
        body = json.dumps({"error": code, "error_description": sentence}).encode()
        # RFC 6750 section 3: no error code in the challenge when no credentials were sent.
        challenge = 'Bearer realm="cranimem"'
        if problem is not MISSING:
            challenge += f', error="{code}", error_description="{sentence}"'
        await self._respond(send, 401, body, [
            (b"content-type", b"application/json"),
            (b"www-authenticate", challenge.encode("latin-1"))])  # fmt: skip

    def _has_cookie(self, header: bytes) -> bool:
        for part in header.decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.COOKIE and hmac.compare_digest(value.encode(), self._cookie.encode()):
                return True
        return False

    @staticmethod
    async def _respond(send: Any, status: int, body: bytes, headers: list) -> None:
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
