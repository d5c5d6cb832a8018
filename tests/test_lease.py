"""The consolidation lease against a real SPARQL server (``oxigraph serve`` on loopback):
one winner among competing clients, takeover after expiry with a larger fencing token,
renewal while held, and the fencing check that refuses a stale holder's commit."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from conftest import connected, make_settings
from test_sparql import oxigraph  # noqa: F401 (the module-scoped server fixture)

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import LeaseHeld, LeaseLost
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.graph.lease import LEASE_GRAPH, Fence, SparqlLease
from cranimem_mcp.graph.sparql import SparqlDataset
from cranimem_mcp.graph.store import GraphStore
from cranimem_mcp.models import Entity, Extraction, Relation

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def server(oxigraph):  # noqa: F811
    """The Oxigraph endpoints, emptied for each test."""
    SparqlDataset(oxigraph["query_endpoint"], oxigraph["update_endpoint"]).store.update(
        "DROP SILENT ALL"
    )
    return oxigraph


@asynccontextmanager
async def leases(server, n: int, seconds: float = 30.0) -> AsyncIterator[list[SparqlLease]]:
    """``n`` lease clients of one server, each with its renewal task group."""
    async with anyio.create_task_group() as tg:
        made = [
            SparqlLease(
                server["query_endpoint"],
                server["update_endpoint"],
                seconds=seconds,
                start_soon=tg.start_soon,
                holder=f"replica-{i}",
            )
            for i in range(n)
        ]
        try:
            yield made
        finally:
            for lease in made:
                await lease.aclose()
            tg.cancel_scope.cancel()


def expire_now(server) -> None:
    """What a long pause of the holder looks like to the server: its expiry has passed."""
    store = SparqlDataset(server["query_endpoint"], server["update_endpoint"]).store
    past = "2000-01-01T00:00:00Z"
    store.update(
        f"DELETE {{ GRAPH <{LEASE_GRAPH}> {{ ?s <https://cranimem.dev/ns#leaseRenewedAt> ?e }} }} "
        f"INSERT {{ GRAPH <{LEASE_GRAPH}> {{ ?s <https://cranimem.dev/ns#leaseRenewedAt> "
        f'"{past}"^^<http://www.w3.org/2001/XMLSchema#dateTime> }} }} '
        f"WHERE {{ GRAPH <{LEASE_GRAPH}> {{ ?s <https://cranimem.dev/ns#leaseRenewedAt> ?e }} }}"
    )


async def test_of_clients_competing_at_once_at_most_one_wins(server):
    """Twelve clients try at once, ten rounds: at most one wins each round, and the record
    still names the winner alone once every attempt is over (a winner whose record another
    claim joined later would share the lease with the next one to take it)."""
    async with leases(server, 12) as clients:
        for _round in range(10):
            won: list[Fence] = []

            async def attempt(lease: SparqlLease, won: list[Fence]) -> None:
                if (fence := await lease.acquire()) is not None:
                    won.append(fence)

            async with anyio.create_task_group() as tg:
                for lease in clients:
                    tg.start_soon(attempt, lease, won)
            assert len(won) <= 1, won
            if won:
                state = await clients[0].read()
                assert state.claims == {won[0].claim} and state.tokens == {won[0].token}
                assert state.live
                await clients[0].release(won[0])
        # A round all of whose attempts collided leaves the record contested, which counts as
        # free: a lone attempt then wins.
        assert await clients[0].acquire() is not None


async def test_a_second_client_cannot_take_a_live_lease(server):
    async with leases(server, 2) as (a, b):
        first = await a.acquire()
        assert first is not None and first.token == 1
        assert await b.acquire() is None
        with pytest.raises(LeaseHeld, match="replica-0 holds the lease until"):
            async with b.hold("on_demand"):
                pass


async def test_after_expiry_another_takes_over_with_a_larger_token(server):
    async with leases(server, 2, seconds=1.0) as (a, b):
        first = await a.acquire()
        assert first is not None
        taken = None
        with anyio.fail_after(20):
            while taken is None:  # no renewal: the server's clock lets it expire
                taken = await b.acquire()
        assert taken.token > first.token
        state = await b.read()
        assert state.holders == {"replica-1"}


async def test_release_keeps_the_token_growing(server):
    async with leases(server, 2) as (a, b):
        async with a.hold("on_demand") as fence:
            pass
        async with b.hold("on_demand") as later:
            assert later.token == fence.token + 1


async def test_renewal_keeps_a_long_runs_lease(server):
    async with leases(server, 2, seconds=1.5) as (a, b):
        async with a.hold("timer") as fence:
            with anyio.fail_after(30):
                while a.renewals < 4:  # 4 renewals: well past the 1.5 s it was taken for
                    await a.renewed.wait()
            assert await b.acquire() is None
            await a.check(server=True)
        assert (await b.acquire()).token == fence.token + 1


async def test_a_holder_whose_lease_was_taken_cannot_commit(server):
    """The fencing test: the holder pauses past its expiry (simulated on the server's side,
    so the holder's own clock still believes it), another takes the lease; the first one's
    graph commit is refused and the graph is unchanged."""
    dataset = SparqlDataset(server["query_endpoint"], server["update_endpoint"])
    graph = GraphStore(store=dataset)
    await graph.open()
    extraction = Extraction(
        entities=[Entity(name="Alice", type="Person"), Entity(name="Acme", type="Organization")],
        relations=[Relation(subject="Alice", predicate="works_at", object="Acme")],
    )
    when = datetime(2026, 1, 1, tzinfo=UTC)
    async with leases(server, 2) as (a, b):
        async with a.hold("on_demand"):
            await graph.put("default", "m_before", extraction, when)  # current: applied
            expire_now(server)
            taken = await b.acquire()
            assert taken is not None
            with pytest.raises(LeaseLost, match="no longer current"):
                await graph.put("default", "m_stale", extraction, when)
            with pytest.raises(LeaseLost, match="names another holder"):
                await a.check(server=True)
        assert await graph.has_memory("default", "m_before")
        assert not await graph.has_memory("default", "m_stale")
        assert (await graph.provenance()) == {("default", "memory"): {"m_before"}}
    await graph.close()  # its kept connections


# --- the lease in the engine -----------------------------------------------------------------

GATE_OPEN = {"tau_noise": -1.0, "default_gate": False}  # every write is stored


class PausingExtractor(HeuristicExtractor):
    """The heuristic extractor, with a pause (``during``) inside the next call once armed: the
    model call of a consolidation run, during which the lease can change hands."""

    def __init__(self) -> None:
        self.during: Callable[[], Awaitable[None]] | None = None

    async def extract(self, texts: list[str]) -> list[Extraction]:
        during, self.during = self.during, None
        if during is not None:
            await during()
        return await super().extract(texts)


@asynccontextmanager
async def engine_on(server, home: Path, minilm, extractor=None, **sections) -> AsyncIterator:
    settings = make_settings(home, graph=server, gating=GATE_OPEN, **sections)
    async with MemoryEngine(
        settings, embedder=minilm, extractor=extractor, background=False
    ) as engine:
        yield engine


async def test_a_run_that_loses_the_lease_midway_applies_nothing(server, tmp_path, minilm):
    """The fencing test end to end: during the run's model call the lease expires and another
    replica takes it; the run's graph commit is refused, so nothing is promoted or linked."""
    extractor = PausingExtractor()
    async with (
        leases(server, 1) as (other,),
        engine_on(server, tmp_path / "data", minilm, extractor) as engine,
    ):
        await engine.remember("Alice works at Acme Robotics.")

        async def taken_over() -> None:
            expire_now(server)  # the run's holder paused past its expiry
            assert await other.acquire() is not None

        extractor.during = taken_over
        with pytest.raises(LeaseLost):
            await engine.consolidate()
        (stats,) = (await engine.stats()).scopes
        assert (stats.buffer_size, stats.longterm, stats.facts) == (1, 0, 0)
        assert await engine.graph.provenance() == {}
        assert await engine.check() == []


async def test_a_run_longer_than_the_lease_keeps_it_by_renewal(server, tmp_path, minilm):
    extractor = PausingExtractor()
    async with (
        leases(server, 1) as (other,),
        engine_on(
            server, tmp_path / "data", minilm, extractor, consolidation={"lease_seconds": 1.5}
        ) as engine,
    ):
        await engine.remember("Alice works at Acme Robotics.")

        async def long_model_call() -> None:
            seen: set = set()
            with anyio.fail_after(30):
                while len(seen) < 4:  # four renewals: well past the 1.5 s it was taken for
                    seen.update((await other.read()).renewed)
                    assert await other.acquire() is None
                    await anyio.sleep(0.2)

        extractor.during = long_model_call
        report = await engine.consolidate()
        assert report.promoted == 1


async def test_consolidate_on_a_replica_without_the_lease_says_who_holds_it(
    server, tmp_path, minilm
):
    async with leases(server, 1) as (other,):
        assert await other.acquire() is not None

        async def opener(**sections):
            return engine_on(server, tmp_path / "data", minilm, **sections)

        @asynccontextmanager
        async def open_engine(**sections):
            async with await opener(**sections) as engine:
                yield engine

        async with connected(open_engine) as (client, engine):
            await client.call_tool("remember", {"content": "Alice works at Acme Robotics."})
            result = await client.call_tool("consolidate", {})
            assert result.is_error
            assert "replica-0 holds the lease until" in result.content[0].text
            (stats,) = (await engine.stats()).scopes
            assert (stats.buffer_size, stats.longterm) == (1, 0)


RUN = re.compile(r"consolidation (started|finished) by (\S+) \(\w+, token (\S+)\)")


async def test_two_engines_on_one_server_never_consolidate_at_once(
    server, tmp_path, minilm, caplog
):
    """Background consolidation on in both, every second write: the runs, in the order their
    log lines were written, never interleave, and each has a larger token than the last."""
    caplog.set_level(logging.INFO, logger="cranimem_mcp.replay.consolidator")
    often = {"every_n_writes": 2, "interval_seconds": 0.0}
    lines = [
        "works at Acme Robotics.", "lives in Lyon.", "likes green tea.", "plays the cello.",
        "owns a red bicycle.", "speaks Portuguese.", "is allergic to peanuts.",
        "studies geology.",
    ]  # fmt: skip
    settings = [
        make_settings(tmp_path / name, graph=server, gating=GATE_OPEN, consolidation=often)
        for name in ("a", "b")
    ]
    async with (
        MemoryEngine(settings[0], embedder=minilm, background=True) as a,
        MemoryEngine(settings[1], embedder=minilm, background=True) as b,
    ):

        async def write(engine: MemoryEngine, who: str, pair: list[str]) -> None:
            for line in pair:  # the second write starts a background run
                await engine.remember(f"{who} {line}")
            await engine.wait_idle()

        for pair in zip(lines[::2], lines[1::2], strict=True):  # both at once, four times
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(write, a, "Ana", list(pair))
                    tg.start_soon(write, b, "Ben", list(pair))
    runs = [RUN.search(r.getMessage()) for r in caplog.records]
    events = [m.groups() for m in runs if m is not None]
    assert len(events) >= 4, events  # at least two runs
    for started, finished in zip(events[::2], events[1::2], strict=True):
        assert started[0] == "started" and finished[0] == "finished", events
        assert started[1:] == finished[1:], events  # the same run: holder and token
    tokens = [int(e[2]) for e in events[::2]]
    assert tokens == sorted(set(tokens)), tokens


async def test_a_replica_without_the_lease_asks_once_to_make_room_then_pauses(
    server, tmp_path, minilm, caplog
):
    # Room in a full buffer is made under the lease; refused, a replica does not ask the
    # lease's server again at every write (the holder's runs keep the bound).
    sections = {"episodic": {"capacity": 2}, "consolidation": {"every_n_writes": 0}}
    settings = make_settings(tmp_path / "data", graph=server, gating=GATE_OPEN, **sections)
    async with leases(server, 1) as (other,):
        assert await other.acquire() is not None
        with caplog.at_level(logging.INFO, logger="cranimem_mcp.replay.consolidator"):
            async with MemoryEngine(settings, embedder=minilm, background=True) as engine:
                for i in range(6):
                    result = await engine.remember(f"Courier route {i} passes Testville{i}.")
                    assert result.status == "stored"
                    with anyio.fail_after(30):
                        await engine.wait_idle()
    refused = [r for r in caplog.records if r.getMessage().startswith("room in default's")]
    assert len(refused) == 1
