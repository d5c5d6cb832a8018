"""The inspector: a small web UI over the same memory service the MCP tools use.

Served by the HTTP transport under ``/ui`` (``http_transport.http_app`` adds these routes
behind the bearer/cookie check). Every query is a :class:`~cranimem_mcp.service.MemoryService`
operation, never a store read, so the inspector works in a process that bridges to the
directory's owner as in the owner itself. Pages are rendered here on the server; two
hand-written scripts in ``ui_static/`` add the confirm-then-POST buttons and the SVG graph
view. Nothing is loaded from another origin.

Invariants: every string that comes from the store is HTML-escaped before it reaches a page
(stored text is untrusted); the Content-Security-Policy allows no inline script, so an
escaping mistake still cannot run code; a request that changes data is a JSON POST whose
``Origin`` is this server (with the SameSite=Strict cookie, the CSRF defence).
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from cranimem_mcp.errors import CranimemError, InvalidInput, NotFound
from cranimem_mcp.models import (
    GRAPH_NODES,
    MAX_CHARS,
    MAX_ENTITY,
    MAX_INSPECT,
    MEMORY_ID_RE,
    SCOPE_RE,
    Fact,
    MemoryDetail,
    Tier,
)
from cranimem_mcp.service import MemoryService

logger = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
ASSETS = {"ui.css": "text/css", "ui.js": "text/javascript", "graph.js": "text/javascript"}
TIERS = ("buffer", "longterm", "trash")
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
LIST_LIMIT = MAX_INSPECT  # memories listed without a query, newest first
GRAPH_LIMIT = GRAPH_NODES  # entities drawn at first; the rest arrive by expanding a node
RECALLED = 20  # memories a search shows

ServiceRef = Callable[[], MemoryService]
Found = tuple[list[tuple[MemoryDetail, float | None]], list[Fact]]  # (memory, score), facts


def h(value: object) -> str:
    """HTML-escape anything for text or a double-quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "never"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


class UI:
    """The routes of the inspector. ``service()`` returns the server's memory service."""

    def __init__(self, service: ServiceRef, hosts: list[str] | None, origins: list[str]) -> None:
        self._service = service
        self._hosts = hosts  # None: Host is not checked (remote access was allowed)
        self._origins = set(origins)

    def routes(self) -> list[Route]:
        return [
            Route("/ui", self._wrap(self.overview)),
            Route("/ui/", self._wrap(self.overview)),
            Route("/ui/memories", self._wrap(self.memories)),
            Route("/ui/graph", self._wrap(self.graph_page)),
            Route("/ui/static/{name}", self._wrap(self.static)),
            Route("/ui/api/stats", self._wrap(self.api_stats)),
            Route("/ui/api/memories", self._wrap(self.api_memories)),
            Route("/ui/api/graph", self._wrap(self.api_graph)),
            Route("/ui/api/entity", self._wrap(self.api_entity)),
            Route("/ui/api/{action}", self._wrap(self.api_action), methods=["POST"]),
        ]

    def _wrap(self, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if self._hosts is not None and request.headers.get("host") not in self._hosts:
                return _error(421, "unexpected Host header")
            try:
                return await handler(request)
            except NotFound as exc:
                return _error(404, str(exc))
            except InvalidInput as exc:
                return _error(400, str(exc))
            except CranimemError as exc:  # the store failed or is not open yet
                return _error(503, str(exc))

        return endpoint

    # --- pages -----------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        stats = await self._service().stats()
        rows = []
        for s in stats.scopes:
            rows.append(
                f'<tr data-scope="{h(s.scope)}"><th>{h(s.scope)}</th>'
                f'<td data-stat="buffer">{s.buffer_size} / {s.buffer_capacity} '
                f'<meter min="0" max="{s.buffer_capacity}" value="{s.buffer_size}"></meter></td>'
                f'<td data-stat="longterm">{s.longterm}</td><td data-stat="trash">{s.trash}</td>'
                f'<td data-stat="facts">{s.facts}</td>'
                f'<td data-stat="rejected">{s.rejected_writes}</td>'
                f'<td class="goal">{h(s.goal)}</td></tr>'
            )
        table = (
            "<table><thead><tr><th>Scope</th><th>Buffer</th><th>Long-term</th><th>Trash</th>"
            "<th>Facts</th><th>Rejected</th><th>Goal</th></tr></thead><tbody>"
            + ("".join(rows) or '<tr><td colspan="7">No memories yet.</td></tr>')
            + "</tbody></table>"
        )
        models = "".join(
            f"<dt>{h(k)}</dt><dd>{h(v)}</dd>" for k, v in stats.models.items()
        ) + "".join(f"<dt>fallbacks: {h(k)}</dt><dd>{v}</dd>" for k, v in stats.fallbacks.items())
        reports = [
            self._report(s.scope, s.last_consolidation)
            for s in stats.scopes
            if s.last_consolidation is not None
        ]
        body = (
            f'<h1>Overview</h1><p class="meta">Data directory <code>{h(stats.data_dir)}</code></p>'
            f"<section><h2>Scopes</h2>{table}</section>"
            f"<section><h2>Models</h2><dl class='models'>{models}</dl></section>"
            "<section><h2>Last consolidation per scope</h2>"
            + ("".join(reports) or "<p>No consolidation has run yet.</p>")
            + "</section>"
        )
        return _page("Overview", "overview", body)

    @staticmethod
    def _report(scope: str, r: Any) -> str:
        decisions = "".join(
            f'<tr class="{h(d.decision)}"><td><a href="/ui/memories?{_q(scope=scope, id=d.id)}">'
            f"<code>{h(d.id)}</code></a></td><td>{h(d.decision)}</td>"
            f"<td>{d.replay_score:.3f}</td><td>{h(d.reason)}</td></tr>"
            for d in r.decisions
        )
        return (
            f'<article class="report" data-scope="{h(scope)}"><h3>{h(scope)}</h3>'
            f"<p>{h(_when(r.finished_at))} ({h(r.trigger)}{', dry run' if r.dry_run else ''}): "
            f"replayed {r.replayed}, promoted {r.promoted}, pruned {r.pruned}, purged {r.purged};"
            f" facts added {r.triples_added}, reinforced {r.triples_reinforced}; "
            f"{r.took_ms:.0f} ms</p>"
            + (
                "<table><thead><tr><th>Memory</th><th>Decision</th><th>Replay score</th>"
                f"<th>Reason</th></tr></thead><tbody>{decisions}</tbody></table>"
                if decisions
                else ""
            )
            + "</article>"
        )

    async def memories(self, request: Request) -> Response:
        service = self._service()
        scopes = await self._scopes(service)
        p = request.query_params
        scope = _scope(p.get("scope") or (scopes[0] if scopes else "default"))
        tier = p.get("tier") or ""
        query = (p.get("q") or "").strip()
        memories, found_facts = await self._find(service, scope, tier, query, p.get("id"))
        form = (
            '<form class="search" method="get" action="/ui/memories">'
            f'<input type="search" name="q" value="{h(query)}" placeholder="Search (recall)" '
            'aria-label="Search">'
            + _select("scope", [(s, s) for s in scopes or [scope]], scope)
            + _select("tier", [("", "all tiers"), *((t, t) for t in TIERS)], tier)
            + '<button type="submit">Search</button></form>'
        )
        items = "".join(_memory_html(m, score) for m, score in memories)
        facts = "".join(
            f'<li class="fact">{h(f.subject)} <em>{h(f.predicate)}</em> {h(f.object)} '
            f'<span class="meta">support {f.support}</span></li>'
            for f in found_facts
        )
        what = f"{len(memories)} memories" + (f" recalled for “{h(query)}”" if query else "")
        body = (
            f'<h1>Memories</h1>{form}<p id="status" role="status"></p>'
            f'<p class="meta" id="count">{what} in scope <code>{h(scope)}</code></p>'
            + (
                f'<section><h2>Facts (graph path)</h2><ul class="facts">{facts}</ul></section>'
                if facts
                else ""
            )  # fmt: skip
            + f'<section class="memories">{items or "<p>Nothing here.</p>"}</section>'
        )
        return _page("Memories", "memories", body)

    async def graph_page(self, request: Request) -> Response:
        scopes = await self._scopes(self._service())
        scope = _scope(request.query_params.get("scope") or (scopes[0] if scopes else "default"))
        body = (
            '<h1>Graph</h1><form class="search" method="get" action="/ui/graph">'
            + _select("scope", [(s, s) for s in scopes or [scope]], scope)
            + '<button type="submit">Show</button></form>'
            '<p class="meta">Drag to pan, wheel to zoom, click an entity for its facts and '
            "neighbours. The best-supported entities are drawn first.</p>"
            f'<div class="graph-wrap"><div id="graph" data-scope="{h(scope)}">'
            '<svg id="graph-svg" role="img" aria-label="knowledge graph"></svg></div>'
            '<aside id="facts"><p class="meta">Click a node.</p></aside></div>'
        )
        return _page("Graph", "graph", body, scripts=("graph.js",))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return _error(404, "no such file")
        body = (STATIC / name).read_bytes()
        return Response(body, media_type=ASSETS[name], headers=HEADERS)

    # --- JSON ------------------------------------------------------------------------------

    async def api_stats(self, request: Request) -> Response:
        stats = await self._service().stats()
        return _json(stats.model_dump(mode="json"))

    async def api_memories(self, request: Request) -> Response:
        p = request.query_params
        scope = _scope(p.get("scope") or "default")
        query = (p.get("q") or "").strip()
        memories, facts = await self._find(self._service(), scope, p.get("tier") or "", query)
        return _json(
            {
                "scope": scope,
                "memories": [_row_json(m, score) for m, score in memories],
                "facts": [f.model_dump(mode="json") for f in facts],
            }
        )

    async def api_graph(self, request: Request) -> Response:
        scope = _scope(request.query_params.get("scope") or "default")
        view = await self._service().graph_overview(scope=scope, limit=GRAPH_LIMIT)
        return _json(view.model_dump(mode="json"))

    async def api_entity(self, request: Request) -> Response:
        scope = _scope(request.query_params.get("scope") or "default")
        name = (request.query_params.get("name") or "").strip()
        if not 0 < len(name) <= MAX_ENTITY:
            raise InvalidInput(f"name must be 1-{MAX_ENTITY} characters")
        view = await self._service().entity_neighbourhood(name=name, scope=scope)
        return _json(view.model_dump(mode="json"))

    async def api_action(self, request: Request) -> Response:
        """forget (soft), restore, purge (hard forget): the MCP tools' engine calls."""
        origin = request.headers.get("origin")
        if origin not in self._origins:
            return _error(403, "cross-origin request refused")
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            return _error(415, "send JSON")
        action = request.path_params["action"]
        if action not in ("forget", "restore", "purge"):
            return _error(404, "unknown action")
        try:
            data = await request.json()
            ids, scope = list(data["ids"]), _scope(data.get("scope") or "default")
        except (ValueError, KeyError, TypeError):
            return _error(400, 'expected {"ids": [...], "scope": "..."}')
        if not ids or not all(isinstance(i, str) and MEMORY_ID_RE.match(i) for i in ids):
            return _error(400, "ids must be memory ids")
        service = self._service()
        if action == "restore":
            result = await service.restore(ids=ids, scope=scope)
        else:
            result = await service.forget(ids=ids, scope=scope, hard=action == "purge")
        logger.info("ui %s %s in %s", action, ids, scope)
        return _json({"action": action, **result.model_dump(mode="json")})

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    async def _scopes(service: MemoryService) -> list[str]:
        return [s.scope for s in (await service.stats()).scopes]

    @staticmethod
    async def _find(
        service: MemoryService, scope: str, tier: str, query: str, memory_id: str | None = None
    ) -> Found:
        """A query goes through the dual-path recall (as the MCP tool); otherwise the scope's
        memories are listed, newest first. ``tier`` filters either."""
        if tier and tier not in TIERS:
            raise InvalidInput(f"tier must be one of {list(TIERS)}")
        if memory_id:
            if not MEMORY_ID_RE.match(memory_id):
                raise InvalidInput("not a memory id")
            found = await service.get_memories(ids=[memory_id], scope=scope)
            return [(m, None) for m in found], []
        if not query:
            only = cast("Tier | None", tier or None)  # checked above
            listed = await service.recent_memories(scope=scope, tier=only, limit=LIST_LIMIT)
            return [(m, None) for m in listed], []
        result = await service.recall(query=query, scope=scope, k=RECALLED, max_chars=MAX_CHARS)
        ids = [item.id for item in result.items]
        by_id = {m.id: m for m in await service.get_memories(ids=ids, scope=scope)}
        found = [(by_id[i.id], i.score) for i in result.items if i.id in by_id]
        return [(m, score) for m, score in found if not tier or m.tier == tier], result.facts


# --- rendering -------------------------------------------------------------------------------


def _q(**params: str) -> str:
    return h(urlencode(params))


def _scope(value: str) -> str:
    if not SCOPE_RE.match(value):
        raise InvalidInput("scope must be 1-64 chars of [A-Za-z0-9_.:-]")
    return value


def _select(name: str, options: Iterable[tuple[str, str]], chosen: str) -> str:
    opts = "".join(
        f'<option value="{h(v)}"{" selected" if v == chosen else ""}>{h(label)}</option>'
        for v, label in options
    )
    return f'<select name="{h(name)}" aria-label="{h(name)}">{opts}</select>'


def _row_json(m: MemoryDetail, score: float | None) -> dict[str, Any]:
    return {**m.model_dump(mode="json"), "score": score}


def _memory_html(m: MemoryDetail, score: float | None) -> str:
    mid, scope, tier = h(m.id), h(m.scope), h(m.tier)
    buttons = [
        ("restore", "Restore") if m.tier == "trash" else ("forget", "Forget"),
        ("purge", "Purge"),
    ]
    actions = "".join(
        f'<button type="button" class="act {a}" data-action="{a}" data-id="{mid}" '
        f'data-scope="{scope}">{label}</button>'
        for a, label in buttons
    )
    entities = ", ".join(h(e) for e in m.entities) or "-"
    scored = f' <span class="meta">score {score:.3f}</span>' if score is not None else ""
    details = [
        ("importance", _num(m.importance)),
        ("surprise", _num(m.surprise)),
        ("emotion", _num(m.emotion)),
        ("base utility", _num(m.base_utility)),
        ("relevance to goal", _num(m.relevance)),
        ("tagged by", h(m.tagged_by or "-")),
        ("entities", entities),
        ("replay score", _num(m.replay_score)),
        ("last decision", h(m.decision_reason or "-")),
        ("created", h(_when(m.created_at))),
        ("last access", h(_when(m.last_access))),
        ("source", h(m.source or "-")),
    ]
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in details)
    return (
        f'<article class="memory" data-id="{mid}" data-tier="{tier}">'
        f'<p class="content">{h(m.content)}</p>'
        f'<p class="meta"><span class="tier {tier}">{tier}</span> <code>{mid}</code>{scored}'
        f" · created {h(_when(m.created_at))}</p>"
        f"<details><summary>Details</summary><dl>{dl}</dl></details>"
        f'<div class="actions">{actions}</div></article>'
    )


def _page(title: str, active: str, body: str, scripts: tuple[str, ...] = ()) -> HTMLResponse:
    nav = "".join(
        f'<a href="{href}"{" aria-current=page" if key == active else ""}>{label}</a>'
        for key, href, label in (
            ("overview", "/ui", "Overview"),
            ("memories", "/ui/memories", "Memories"),
            ("graph", "/ui/graph", "Graph"),
        )
    )
    tags = "".join(f'<script src="/ui/static/{s}" defer></script>' for s in ("ui.js", *scripts))
    return HTMLResponse(
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)} · cranimem</title>"
        f'<link rel="stylesheet" href="/ui/static/ui.css">{tags}</head>'
        f"<body><header><strong>cranimem</strong><nav>{nav}</nav></header>"
        f"<main>{body}</main></body></html>",
        headers=HEADERS,
    )


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=HEADERS)


def _error(status: int, message: str) -> JSONResponse:
    return _json({"error": message}, status)
