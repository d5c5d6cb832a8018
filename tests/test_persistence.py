"""Everything survives closing and reopening; a store refuses another embedder."""

from __future__ import annotations

import pytest

from cranimem_mcp.config import load_settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import ConfigError

pytestmark = pytest.mark.anyio


@pytest.mark.slow  # over ~5 s
async def test_everything_survives_closing_and_reopening(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home, gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        await engine.set_goal("Help the user with their colleagues and companies", scope="work")
        a = await engine.remember("Alice works at Acme Robotics.", scope="work")
        b = await engine.remember("Acme Robotics is based in Berlin.", scope="work")
        await engine.consolidate()
        recent = await engine.remember("Bob joined Globex last week.", scope="work")
        trashed = await engine.remember("I use Neovim.", scope="work")
        await engine.forget(ids=[trashed.id], scope="work")
        await engine.remember("NASA released new photos today.", scope="work", goal="x" * 5)
        before = await engine.stats()
        recall_before = await engine.recall("Where is Alice's company based?", scope="work")
    async with open_engine(home=home, gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        after = await engine.stats()
        assert after.scopes == before.scopes
        assert engine.goal_of("work") == "Help the user with their colleagues and companies"
        recall_after = await engine.recall("Where is Alice's company based?", scope="work")
        assert {f.object for f in recall_after.facts} >= {"Acme Robotics", "Berlin"}
        assert {it.id for it in recall_after.items} == {it.id for it in recall_before.items}
        rows = {r.id: r.tier for r in await engine.episodic.scope_rows("work", None)}
        assert rows[a.id] == rows[b.id] == "longterm"
        assert rows[recent.id] == "buffer" and rows[trashed.id] == "trash"
        await engine.restore([trashed.id], scope="work")


async def test_a_store_refuses_a_different_embedder(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home) as engine:
        await engine.remember("I live in Paris.")

    class OtherEmbedder:
        id = "other:model"
        dim = 384

        async def embed(self, texts):  # pragma: no cover - never reached
            raise AssertionError

    with pytest.raises(ConfigError, match="refusing to open"):
        async with MemoryEngine(load_settings(home=home), embedder=OtherEmbedder()):
            pass


async def test_data_directory_is_private(open_engine, tmp_path):
    home = tmp_path / "data"
    async with open_engine(home=home) as engine:
        await engine.remember("I live in Paris.")
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "state.json").stat().st_mode & 0o777 == 0o600
