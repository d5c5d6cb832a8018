"""One typed service: the engine, the bridge's client and the handle the faces hold all have
the operations of :class:`MemoryService`, with its signatures; the owner's MCP endpoint serves
exactly those, and the client decodes each result into the models a local call returns."""

from __future__ import annotations

import inspect
from typing import get_type_hints

import pytest
from conftest import bridged, uvicorn_task

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import InvalidInput, NotFound
from cranimem_mcp.models import GraphView, MemoryDetail, RecallResult, Stats
from cranimem_mcp.server.owner import owner_app
from cranimem_mcp.service import OPERATIONS, READ_ONLY, MemoryService
from cranimem_mcp.sharing.handle import EngineHandle
from cranimem_mcp.sharing.ownership import OwnerGone
from cranimem_mcp.sharing.remote import RemoteEngine

pytestmark = pytest.mark.anyio
KEEP_ALL = {"tau_noise": -1.0, "default_gate": False}


def test_the_operations_are_the_protocols_coroutines():
    assert OPERATIONS[:3] == ("remember", "recall", "consolidate")
    assert {"get_memories", "recent_memories", "graph_overview", "entity_neighbourhood"} <= set(
        OPERATIONS
    )
    assert READ_ONLY <= set(OPERATIONS)


@pytest.mark.parametrize("implementation", [MemoryEngine, RemoteEngine])
@pytest.mark.parametrize("name", OPERATIONS)
def test_each_implementation_has_the_protocols_signature(implementation, name):
    wanted = inspect.signature(getattr(MemoryService, name))
    got = inspect.signature(getattr(implementation, name))
    wanted_types = get_type_hints(getattr(MemoryService, name))
    # The engine's methods kept in other modules annotate ``engine`` under TYPE_CHECKING.
    got_types = get_type_hints(getattr(implementation, name), None, {"MemoryEngine": MemoryEngine})
    assert got_types["return"] == wanted_types["return"], name
    # The first parameter is the instance (``engine`` for the methods kept in other modules).
    got_params = dict(list(got.parameters.items())[1:])
    for param in list(wanted.parameters.values())[1:]:
        assert param.name in got_params, f"{implementation.__name__}.{name}: {param.name}"
        mine = got_params[param.name]
        # Keyword-only in the Protocol; the engine may also take them by position.
        assert mine.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD), param.name
        assert mine.default == param.default, f"{implementation.__name__}.{name}: {param.name}"
        assert got_types.get(param.name) == wanted_types.get(param.name), param.name
    extra = [p for p in got_params.values() if p.name not in wanted.parameters]
    # What the implementation takes beyond the Protocol (the engine's own trigger) is optional.
    assert all(p.default is not p.empty for p in extra), [p.name for p in extra]


@pytest.mark.parametrize("name", OPERATIONS)
def test_the_handle_forwards_each_operation_with_the_protocols_signature(name):
    assert inspect.signature(getattr(EngineHandle, name)) == inspect.signature(
        getattr(MemoryService, name)
    )


async def test_the_handle_refuses_a_wrong_argument_before_calling(open_engine):
    async with open_engine() as engine:
        handle = EngineHandle.of(engine).service
        assert isinstance(handle, MemoryService)
        with pytest.raises(TypeError):
            await handle.recall("positional")  # type: ignore[misc]
        with pytest.raises(TypeError):
            await handle.recall(query="x", colour="blue")  # type: ignore[call-arg]


async def test_the_inspection_queries_cross_to_the_owner(open_engine):
    async with open_engine(gating=KEEP_ALL) as engine:
        stored = await engine.remember("Bob Chen works at Acme Robotics on the Atlas project.")
        await engine.consolidate()
        async with bridged(engine) as remote:
            details = await remote.get_memories(ids=[stored.id, "m_" + "0" * 20])
            assert [type(d) for d in details] == [MemoryDetail]
            assert details[0].content.startswith("Bob Chen") and details[0].tier == "longterm"
            assert [d.id for d in await remote.recent_memories(tier="longterm")] == [stored.id]
            view = await remote.graph_overview()
            assert isinstance(view, GraphView) and "acme robotics" in {n.id for n in view.nodes}
            near = await remote.entity_neighbourhood(name="Acme Robotics")
            assert any(s.id == stored.id for f in near.facts for s in f.sources)
            assert await remote.check() == []
            assert "Acme" in await remote.graph_turtle(scope="default")
            with pytest.raises(InvalidInput, match="limit"):
                await remote.recent_memories(limit=10_000)
            with pytest.raises(TypeError):  # refused here: the owner never hears of it
                await remote.consolidate(trigger="x")  # type: ignore[call-arg]


async def test_results_over_the_bridge_equal_the_engines_own(open_engine):
    async with open_engine(gating=KEEP_ALL) as engine:
        await engine.remember("Dana's flight to Lisbon leaves on 3 May 2025.", scope="trip")
        async with bridged(engine) as remote:
            far = await remote.recall(query="When does Dana fly?", scope="trip")
            near = await engine.recall(query="When does Dana fly?", scope="trip")
            assert isinstance(far, RecallResult)
            assert far.model_dump(exclude={"took_ms"}) == near.model_dump(exclude={"took_ms"})
            assert isinstance(await remote.stats(), Stats)
            steps = []

            async def progress(done, total, message):
                steps.append((done, total, message))

            report = await remote.consolidate(scope="trip", progress=progress)
            assert report.scope == "trip" and len(steps) == 1
            with pytest.raises(NotFound):
                await remote.restore(ids=["m_" + "1" * 20], scope="trip")


async def test_the_owner_refuses_a_wrong_token_and_a_gone_owner_was_never_sent(open_engine):
    async with open_engine() as engine:

        async def service():
            return engine

        async with uvicorn_task(owner_app(service, "t" * 32)) as port:
            stranger = RemoteEngine(port, "u" * 32)
            try:
                with pytest.raises(OwnerGone, match="token") as refused:
                    await stranger.connect()
                assert refused.value.sent is False
            finally:
                await stranger.aclose()
        nobody = RemoteEngine(port, "t" * 32)  # the port is closed now
        try:
            with pytest.raises(OwnerGone, match="does not answer") as gone:
                await nobody.connect()
            assert gone.value.sent is False
        finally:
            await nobody.aclose()
