"""The consolidation lease: at most one replica consolidates at a time (docs/SCALING.md).

Replay moves rows between tiers; two replicas replaying one shared buffer would both promote.
A consolidation run therefore holds the lease while it lasts. Two kinds:

- :class:`LocalLease`, for one machine: the data directory's owner lock already makes this
  process the only consolidator, so the lease is always held and commits are not fenced.
- :class:`SparqlLease`, for replicas sharing a SPARQL server: the named graph
  ``<https://cranimem.dev/lease/consolidation>`` holds the holder, a claim (one random value
  per acquisition), an expiry in the server's clock and a **fencing token** that grows by one
  with every acquisition. Acquire, renew and release are each one conditional SPARQL update;
  a renewal task extends the expiry every third of ``lease_seconds`` while the lease is held.

Oxigraph applies an update request atomically (all or nothing) and reads it against one
snapshot, but it does not serialise concurrent read-write updates: two acquisitions in flight
together can both see the lease free and both write (measured: 20 threads x 20 conditional
increments of one counter gave 381, not 400, and left two values). So an acquirer waits
``settle_seconds`` after its update and reads the record back: it holds the lease only if the
record then names its claim alone. A competitor's update that raced it must have started
before its own commit (later ones see the lease taken); if it lands within the settle time,
both see two claims and back off (a contested record counts as free for the next attempt).
This is Fischer's mutual exclusion: safe as long as the server applies an update within
``settle_seconds`` of reading for it.

While a lease is held, :func:`current_fence` is its :class:`Fence` in the holder's task (a
context variable, as :func:`cranimem_mcp.backends.llm.metered`): the SPARQL graph store makes each
commit under a fence conditional on the token still being current (:func:`fenced_update`),
and reads the fence back afterwards, so a holder that lost the lease (a pause past its expiry
and another replica took it) changes nothing and gets :class:`~cranimem_mcp.errors.LeaseLost`.
Commits to other stores (the LanceDB table) are only checked just before (:meth:`check`).
"""

from __future__ import annotations

import logging
import os
import random
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from rdflib import Literal, URIRef

from cranimem_mcp.errors import ConfigError, LeaseHeld, LeaseLost, StoreError
from cranimem_mcp.graph.vocabulary import VOCAB

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

LEASE_GRAPH = URIRef("https://cranimem.dev/lease/consolidation")
HOLDER, CLAIM, TOKEN = VOCAB.leaseHolder, VOCAB.leaseClaim, VOCAB.leaseToken
# The expiry is renewedAt + duration, compared on the server as NOW() - renewedAt > duration:
# Oxigraph 0.5.13 leaves dateTime + duration unbound for some values (PT1S, PT60S) and not
# others (PT30S); the difference of two dateTimes and its comparison always answered.
RENEWED, DURATION = VOCAB.leaseRenewedAt, VOCAB.leaseDuration
SETTLE_SECONDS = 0.5  # between an acquisition's update and its read-back (module docstring)

_L, _XSD = LEASE_GRAPH.n3(), "<http://www.w3.org/2001/XMLSchema#"
_NOW = f"{_XSD}dateTime>(NOW())"
_LIVE = (
    f"EXISTS {{ GRAPH {_L} {{ {_L} {RENEWED.n3()} ?x_at ; {DURATION.n3()} ?x_for }} "
    f"FILTER (({_NOW} - ?x_at) <= ?x_for) }}"
)  # true while some renewal is not yet expired
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?)?")


def server_time(value: str) -> datetime | None:
    """An xsd:dateTime as the server writes it (Oxigraph: nanoseconds, which Python's
    ``fromisoformat`` refuses; the digits past microseconds are dropped)."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?", value)
    if match is None:
        return None
    whole, fraction, zone = match.groups()
    zone = "+00:00" if zone in (None, "Z") else zone
    text = whole + (f".{fraction[:6]}" if fraction else "") + zone
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def default_holder() -> str:
    """This process's name in the lease: host, pid and a random suffix (two engines of one
    process are two holders)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


@dataclass(frozen=True)
class Fence:
    """One acquisition: commits under it apply only while its token is the current one."""

    holder: str
    token: int
    claim: str

    def pattern(self) -> str:
        """A SPARQL group pattern that matches once while this acquisition is current."""
        claim = Literal(self.claim).n3()
        return (
            f"GRAPH {_L} {{ {_L} {TOKEN.n3()} {self.token} ; {CLAIM.n3()} {claim} }} "
            f"FILTER NOT EXISTS {{ GRAPH {_L} {{ {_L} {TOKEN.n3()} ?fence_t "
            f"FILTER (?fence_t != {self.token}) }} }} "
            f"FILTER NOT EXISTS {{ GRAPH {_L} {{ {_L} {CLAIM.n3()} ?fence_c "
            f"FILTER (?fence_c != {claim}) }} }}"
        )

    def ask(self) -> str:
        return f"ASK {{ {self.pattern()} }}"


_fence: ContextVar[Fence | None] = ContextVar("cranimem_lease_fence", default=None)


def current_fence() -> Fence | None:
    """The fence of the lease this task holds, if it holds a fenced one."""
    return _fence.get()


def fenced_update(entries: list[dict[str, Any]], fence: Fence) -> str:
    """The SPARQL graph store's commit (replace or drop whole graphs) with every operation
    conditional on ``fence``: applied whole if its token is current, else nothing."""
    where = fence.pattern()
    parts = []
    for entry in entries:
        name = URIRef(entry["graph"]).n3()
        parts.append(
            f"DELETE {{ GRAPH {name} {{ ?s ?p ?o }} }} "
            f"WHERE {{ {where} GRAPH {name} {{ ?s ?p ?o }} }}"
        )
        if entry["op"] == "put" and entry.get("nt"):
            parts.append(f"INSERT {{ GRAPH {name} {{\n{entry['nt']}\n}} }} WHERE {{ {where} }}")
    return " ;\n".join(parts)


@dataclass
class LeaseState:
    """The lease record as read from the server, with the server's time."""

    now: datetime | None = None
    holders: set[str] = field(default_factory=set)
    claims: set[str] = field(default_factory=set)
    tokens: set[int] = field(default_factory=set)
    renewed: list[datetime] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def contested(self) -> bool:
        return len(self.claims) > 1 or len(self.tokens) > 1

    @property
    def until(self) -> datetime | None:
        if not self.renewed or not self.seconds:
            return None
        return max(self.renewed) + timedelta(seconds=max(self.seconds))

    @property
    def live(self) -> bool:
        """Held by someone (uncontested, not expired)."""
        until = self.until
        return (
            bool(self.claims)
            and not self.contested
            and until is not None
            and (self.now is None or until > self.now)
        )


class Lease(Protocol):
    """What a consolidator needs of the lease."""

    holder: str

    def hold(self, purpose: str) -> Any:
        """``async with lease.hold("timer"):`` holds the lease for the block (shared by this
        process's concurrent holders); raises LeaseHeld if another replica holds it."""
        ...

    async def check(self, server: bool = False) -> None:
        """Raise LeaseLost if the held lease is no longer this process's (``server``: ask the
        server too, not only the local deadline)."""
        ...

    async def aclose(self) -> None: ...


class LocalLease:
    """One machine: the owner lock guarantees one consolidator, so the lease is always held."""

    def __init__(self, holder: str | None = None) -> None:
        self.holder = holder or default_holder()

    @asynccontextmanager
    async def hold(self, purpose: str) -> AsyncIterator[None]:
        yield None

    async def check(self, server: bool = False) -> None:
        return None

    async def aclose(self) -> None:
        return None


def consolidation_lease(
    kind: str,
    graph_store: str,
    query_endpoint: str | None,
    update_endpoint: str | None,
    seconds: float,
    start_soon: Callable[..., Any],
) -> Lease:
    """The lease ``consolidation.lease`` names ("auto": the SPARQL one when the graph is in a
    SPARQL server, whose replicas may share it)."""
    if kind == "auto":
        kind = "sparql" if graph_store == "sparql" else "local"
    if kind == "local":
        return LocalLease()
    if not query_endpoint or not update_endpoint:
        raise ConfigError(
            'consolidation.lease = "sparql" needs graph.query_endpoint and graph.update_endpoint'
        )
    return SparqlLease(query_endpoint, update_endpoint, seconds=seconds, start_soon=start_soon)


class SparqlLease:
    """The lease in a SPARQL 1.1 server (module docstring). ``start_soon`` runs the renewal
    task in the engine's task group."""

    def __init__(
        self,
        query_endpoint: str,
        update_endpoint: str,
        *,
        seconds: float,
        start_soon: Callable[..., Any],
        holder: str | None = None,
        settle_seconds: float = SETTLE_SECONDS,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.holder = holder or default_holder()
        self.seconds, self.settle = seconds, settle_seconds
        self._query, self._update = query_endpoint, update_endpoint
        self._start_soon = start_soon
        # Imported here: only a replica's engine holds this lease, and httpx is ~0.1 s of
        # every other engine's open (a one-shot command's among them).
        import httpx

        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))
        self._lock = anyio.Lock()  # acquisitions and releases of this process, one at a time
        self._fence: Fence | None = None
        self._users = 0
        self._deadline = 0.0  # monotonic: the lease is surely ours until then
        self._lost: str | None = None
        self._stop: anyio.Event | None = None
        self.renewals = 0  # counted, for tests and stats
        self.contested = False  # the last attempt collided with another (it may try again)
        self.renewed: anyio.Event = anyio.Event()  # set at each renewal (tests wait on it)

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- the server's record ----------------------------------------------------------------

    async def _post(self, url: str, data: dict[str, str], accept: str | None = None) -> Any:
        import httpx

        headers = {"accept": accept} if accept else {}
        try:
            response = await self._client.post(url, data=data, headers=headers)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise StoreError(f"the SPARQL server's lease request failed: {exc}") from exc
        return response.json() if accept else None

    async def _run_update(self, text: str) -> None:
        await self._post(self._update, {"update": text})

    async def ask(self, text: str) -> bool:
        body = await self._post(self._query, {"query": text}, "application/sparql-results+json")
        return bool(body.get("boolean"))

    async def read(self) -> LeaseState:
        """The lease record and the server's time."""
        query = (
            f"SELECT ?now ?p ?o WHERE {{ BIND ({_NOW} AS ?now) "
            f"OPTIONAL {{ GRAPH {_L} {{ {_L} ?p ?o }} }} }}"
        )
        body = await self._post(self._query, {"query": query}, "application/sparql-results+json")
        state = LeaseState()
        for row in body["results"]["bindings"]:
            state.now = server_time(row["now"]["value"])
            p, o = row.get("p", {}).get("value"), row.get("o", {}).get("value")
            if p == str(HOLDER):
                state.holders.add(o)
            elif p == str(CLAIM):
                state.claims.add(o)
            elif p == str(TOKEN):
                state.tokens.add(int(o))
            elif p == str(RENEWED) and (when := server_time(o)) is not None:
                state.renewed.append(when)
            elif p == str(DURATION) and (match := _DURATION.fullmatch(o)):
                d, h, m, sec = (float(x or 0) for x in match.groups())
                state.seconds.append(((d * 24 + h) * 60 + m) * 60 + sec)
        return state

    def _duration(self) -> str:
        # Oxigraph refuses "PT30.000S" (trailing zeros): write 30, 1.5.
        return f'"PT{round(self.seconds, 3):g}S"^^{_XSD}dayTimeDuration>'

    async def acquire(self) -> Fence | None:
        """One attempt: the new fence if this process now holds the lease, else None."""
        claim = secrets.token_hex(8)
        started = time.monotonic()
        # Free: no record, released (no claim), expired, or contested. The new token is the
        # largest one seen plus one, so tokens only grow (release keeps the token).
        await self._run_update(
            f"DELETE {{ GRAPH {_L} {{ {_L} ?p ?o }} }} "
            f"INSERT {{ GRAPH {_L} {{ {_L} {HOLDER.n3()} {Literal(self.holder).n3()} ; "
            f"{CLAIM.n3()} {Literal(claim).n3()} ; {TOKEN.n3()} ?next ; "
            f"{RENEWED.n3()} ?now ; {DURATION.n3()} {self._duration()} }} }} "
            f"WHERE {{ {{ SELECT (COALESCE(MAX(?t), 0) AS ?last) "
            f"(COUNT(DISTINCT ?c) AS ?claims) WHERE {{ "
            f"OPTIONAL {{ GRAPH {_L} {{ {_L} {TOKEN.n3()} ?t }} }} "
            f"OPTIONAL {{ GRAPH {_L} {{ {_L} {CLAIM.n3()} ?c }} }} }} }} "
            f"FILTER (?claims != 1 || !({_LIVE})) "
            f"BIND (?last + 1 AS ?next) BIND ({_NOW} AS ?now) "
            f"OPTIONAL {{ GRAPH {_L} {{ {_L} ?p ?o }} }} }}"
        )
        await anyio.sleep(self.settle)
        state = await self.read()
        if state.claims == {claim} and len(state.tokens) == 1:
            fence = Fence(self.holder, next(iter(state.tokens)), claim)
            self._deadline = started + self.seconds
            logger.info(
                "lease acquired by %s: token %d until %s", self.holder, fence.token, state.until
            )
            return fence
        self.contested = claim in state.claims
        if self.contested:
            logger.info("lease contested (%d claims): %s backs off", len(state.claims), self.holder)
        else:
            logger.info(
                "lease not acquired by %s: %s holds it until %s (token %s)",
                self.holder, ", ".join(sorted(state.holders)) or "nobody", state.until,
                max(state.tokens, default=0),
            )  # fmt: skip
        return None

    async def renew(self, fence: Fence) -> bool:
        """Extend the expiry; False if the lease is no longer this acquisition's."""
        started = time.monotonic()
        await self._run_update(
            f"DELETE {{ GRAPH {_L} {{ {_L} {RENEWED.n3()} ?e }} }} "
            f"INSERT {{ GRAPH {_L} {{ {_L} {RENEWED.n3()} ?now }} }} "
            f"WHERE {{ {fence.pattern()} GRAPH {_L} {{ {_L} {RENEWED.n3()} ?e }} "
            f"BIND ({_NOW} AS ?now) }}"
        )
        state = await self.read()
        if state.claims == {fence.claim} and state.tokens == {fence.token}:
            self._deadline = started + self.seconds
            self.renewals += 1
            self.renewed.set()
            self.renewed = anyio.Event()
            logger.info("lease renewed by %s: token %d until %s", self.holder, fence.token,
                        state.until)  # fmt: skip
            return True
        return False

    async def release(self, fence: Fence) -> None:
        """Give the lease up; the token stays, so the next acquisition's is larger."""
        await self._run_update(
            f"DELETE {{ GRAPH {_L} {{ {_L} {HOLDER.n3()} ?h ; {CLAIM.n3()} ?c ; "
            f"{RENEWED.n3()} ?e ; {DURATION.n3()} ?d }} }} "
            f"WHERE {{ {fence.pattern()} GRAPH {_L} {{ {_L} {HOLDER.n3()} ?h ; "
            f"{CLAIM.n3()} ?c ; {RENEWED.n3()} ?e ; {DURATION.n3()} ?d }} }}"
        )
        logger.info("lease released by %s: token %d", self.holder, fence.token)

    # --- holding it for a run ---------------------------------------------------------------

    @asynccontextmanager
    async def hold(self, purpose: str) -> AsyncIterator[Fence]:
        async with self._lock:
            if self._users == 0:
                fence = await self.acquire()
                for _retry in range(2):  # collided: try again at a random moment, twice
                    if fence is not None or not self.contested:
                        break
                    await anyio.sleep(random.uniform(0.0, 2 * self.settle))
                    fence = await self.acquire()
                if fence is None and self.contested:
                    raise LeaseHeld(
                        "consolidation runs on one replica at a time and several replicas "
                        "tried to take the lease at once: try again in a moment"
                    )
                if fence is None:
                    state = await self.read()
                    holder = ", ".join(sorted(state.holders)) if state.live else "another replica"
                    raise LeaseHeld(
                        f"consolidation runs on one replica at a time and {holder} holds the "
                        f"lease until {state.until or 'a moment'} (server time): try again "
                        "then, or call consolidate on that replica"
                    )
                self._fence, self._lost = fence, None
                self._stop = anyio.Event()
                self._start_soon(self._renew_while_held, fence, self._stop)
            self._users += 1
            fence = self._fence
            assert fence is not None
        reset = _fence.set(fence)
        logger.info("lease token %d held by %s for %s", fence.token, self.holder, purpose)
        try:
            yield fence
        finally:
            _fence.reset(reset)
            with anyio.CancelScope(shield=True):
                await self._let_go(fence)

    async def _let_go(self, fence: Fence) -> None:
        async with self._lock:
            self._users -= 1
            if self._users:
                return
            assert self._stop is not None
            self._stop.set()
            self._fence = None
            if self._lost is None:
                try:
                    with anyio.fail_after(10):
                        await self.release(fence)
                except (StoreError, TimeoutError) as exc:
                    logger.warning("lease token %d not released (%s): it expires", fence.token,
                                   exc)  # fmt: skip

    async def _renew_while_held(self, fence: Fence, stop: anyio.Event) -> None:
        while not stop.is_set():
            with anyio.move_on_after(self.seconds / 3):
                await stop.wait()
            if stop.is_set():
                return
            if time.monotonic() >= self._deadline:
                self._lose(fence, "it expired before a renewal got through")
                return
            try:
                if not await self.renew(fence):
                    self._lose(fence, "another replica took it")
                    return
            except StoreError as exc:  # the server did not answer: try again next third
                logger.warning("lease token %d not renewed: %s", fence.token, exc)

    def _lose(self, fence: Fence, why: str) -> None:
        self._lost = why
        logger.warning("lease lost by %s: token %d, %s", self.holder, fence.token, why)

    async def check(self, server: bool = False) -> None:
        fence = self._fence
        if fence is None:
            return
        if self._lost is None and time.monotonic() > self._deadline - self.settle:
            self._lose(fence, "its expiry passed")
        if self._lost is None and server and not await self.ask(fence.ask()):
            self._lose(fence, "the server names another holder")
        if self._lost is not None:
            raise LeaseLost(
                f"this replica ({self.holder}) lost the consolidation lease (token "
                f"{fence.token}: {self._lost}); the run stops without applying the rest"
            )
