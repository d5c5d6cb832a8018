"""The consolidation lease against a real SPARQL server (``oxigraph serve`` on loopback):
one winner among competing clients, takeover after expiry with a larger fencing token,
renewal while held, and the fencing check that refuses a stale holder's commit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import anyio
import pytest
from test_sparql import oxigraph  # noqa: F401 (the module-scoped server fixture)

from cranimem_mcp.errors import LeaseHeld, LeaseLost
from cranimem_mcp.graph import GraphStore
from cranimem_mcp.lease import LEASE_GRAPH, SparqlLease
from cranimem_mcp.models import Entity, Extraction, Relation
from cranimem_mcp.sparql import SparqlDataset

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


async def test_of_clients_competing_at_once_exactly_one_wins(server):
    async with leases(server, 6) as clients:
        won: dict[str, int | None] = {}

        async def attempt(lease: SparqlLease) -> None:
            fence = await lease.acquire()
            won[lease.holder] = None if fence is None else fence.token

        async with anyio.create_task_group() as tg:
            for lease in clients:
                tg.start_soon(attempt, lease)
        winners = {h: t for h, t in won.items() if t is not None}
        state = await clients[0].read()
        assert len(winners) <= 1, winners
        # A contested record is left free; then the next attempt of anyone wins alone.
        if not winners:
            assert (await clients[0].acquire()) is not None
            state = await clients[0].read()
        assert len(state.claims) == 1 and len(state.holders) == 1
        assert state.live


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
