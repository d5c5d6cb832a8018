"""The SPARQL 1.1 protocol, spoken over kept-alive HTTP connections: SELECT and ASK queries
answered as SPARQL JSON results, and update requests.

Why not urllib (what rdflib's connector uses): it opens a TCP connection per request, and a
recall over a SPARQL server is a handful of small requests, so connecting was a good part of
its time (docs/SCALING.md). :class:`SparqlClient` keeps the connections it opened in a pool
and hands each request one that no other thread is using: the engine calls the graph store
from worker threads, and an ``http.client`` connection carries one exchange at a time. A
connection the server closed while it sat idle is replaced and the request sent once more
on a new one; that is safe for queries, and for our updates too, which replace whole graphs
(sending one twice leaves what sending it once leaves).

The results are read here with ``json``, not by rdflib: its parser took a second for the
thousand rows of one recall hop at 1k memories, ``json`` 30 ms. Every server error becomes
a :class:`~cranimem_mcp.errors.StoreError` here, once.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

from rdflib import BNode, URIRef

from cranimem_mcp.errors import StoreError

_TIMEOUT = 60.0  # seconds for one request's answer
_SELECT = {"Accept": "application/sparql-results+json", "Content-Type": "application/sparql-query"}
_UPDATE = {"Content-Type": "application/sparql-update"}
# What a kept connection that the server closed while it was idle fails with.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class Row(dict):
    """A result row: its bound variables as attributes, ``None`` when unbound."""

    __getattr__ = dict.get


def _term(value: dict[str, str], iris: dict[str, URIRef]) -> Any:
    """An RDF term from its SPARQL JSON results form; a literal as its text (each literal
    read here is a time, a count or a label: building rdflib Literals, which parse their
    value, cost more than the query). ``iris`` keeps each IRI of a result built once."""
    kind, text = value["type"], value["value"]
    if kind == "uri":
        iri = iris.get(text)
        if iri is None:
            iri = iris[text] = URIRef(text)
        return iri
    if kind == "bnode":
        return BNode(text)
    return text


class _Endpoint:
    """One endpoint URL and the idle connections to its host, taken one per request."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise StoreError(f"not an http(s) SPARQL endpoint: {url!r}")
        self.url = url
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._idle: list[http.client.HTTPConnection] = []
        self._closed = False  # then a connection is closed after its request, not kept
        self._lock = threading.Lock()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (kept: True) or a new one (False)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return kind(self._host, self._port, timeout=_TIMEOUT), False

    def post(self, body: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """The status and body of one POST; on a kept connection the server had closed, once
        more on a new one."""
        data = body.encode()
        while True:
            connection, kept = self._connection()
            try:
                connection.request("POST", self._path, body=data, headers=headers)
                response = connection.getresponse()
                answer = response.read()
            except _STALE:
                connection.close()
                if kept:
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            with self._lock:
                keep = not (response.will_close or self._closed)
                if keep:
                    self._idle.append(connection)
            if not keep:
                connection.close()
            return response.status, answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for connection in idle:
            connection.close()


class SparqlClient:
    """Queries and updates to one SPARQL server; safe to call from several threads."""

    def __init__(self, query_endpoint: str, update_endpoint: str) -> None:
        self._query = _Endpoint(query_endpoint)
        self._update = _Endpoint(update_endpoint)

    def _post(self, endpoint: _Endpoint, body: str, headers: dict[str, str], what: str) -> bytes:
        try:
            status, answer = endpoint.post(body, headers)
        except (OSError, http.client.HTTPException) as exc:
            raise StoreError(f"the SPARQL server did not answer {what}: {exc}") from exc
        if not 200 <= status < 300:
            detail = answer.decode("utf-8", "replace")[:300]
            raise StoreError(f"the SPARQL server refused {what}: {status} {detail}")
        return answer

    def _results(self, query: str) -> dict[str, Any]:
        answer = self._post(self._query, query, _SELECT, "a query")
        try:
            return json.loads(answer)
        except ValueError as exc:
            raise StoreError(f"the SPARQL server's answer is not JSON results: {exc}") from exc

    def select(self, query: str) -> list[Row]:
        """The rows of one SELECT query (one request)."""
        iris: dict[str, URIRef] = {}
        return [
            Row({name: _term(value, iris) for name, value in binding.items()})
            for binding in self._results(query)["results"]["bindings"]
        ]

    def ask(self, query: str) -> bool:
        """The answer to one ASK query (one request)."""
        return bool(self._results(query)["boolean"])

    def update(self, text: str) -> None:
        """Send one update request, which the server applies as one transaction."""
        self._post(self._update, text, _UPDATE, "an update")

    def close(self) -> None:
        """Close the idle connections, and each one in use once its request is answered (a
        later request still goes through, on a connection of its own)."""
        self._query.close()
        self._update.close()
