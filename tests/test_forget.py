"""Forget (soft, hard, by entity, by scope), restore, and the on-disk guarantee of a hard
forget."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from cranimem_mcp.errors import InvalidInput, NotFound

pytestmark = pytest.mark.anyio
COMPANY = "Help the user with their colleagues and companies"


def files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if needle.encode() in path.read_bytes():
                hits.append(str(path.relative_to(root)))
    return hits


@pytest.mark.object_store  # also on S3 (moto)
async def test_forgetting_a_memory_retracts_its_facts_but_keeps_shared_ones(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        a = await engine.remember("Alice works at Acme Robotics.")
        b = await engine.remember(
            "Alice works at Acme Robotics, and Acme Robotics is based in Berlin."
        )
        c = await engine.remember(
            "Acme Robotics is based in Berlin. Acme Robotics sells robot arms."
        )
        await engine.consolidate()
        gone = await engine.forget(ids=[b.id])
        assert gone.ids == [b.id] and not gone.hard
        # b's two facts were each also asserted by another memory: nothing is retracted.
        assert gone.facts_removed == 0
        facts = {(f.subject, f.predicate, f.object): f for f in
                 (await engine.recall("Alice Acme Robotics", paths=["graph"])).facts}  # fmt: skip
        assert facts[("Alice", "works_at", "Acme Robotics")].sources == [a.id]
        assert facts[("Acme Robotics", "based_in", "Berlin")].sources == [c.id]
        # Now forget c: the Berlin fact has no other source left, so it goes.
        gone = await engine.forget(ids=[c.id])
        assert gone.facts_removed >= 1
        facts = {(f.subject, f.predicate, f.object) for f in
                 (await engine.recall("Alice Acme Robotics", paths=["graph"])).facts}  # fmt: skip
        assert ("Acme Robotics", "based_in", "Berlin") not in facts
        assert ("Alice", "works_at", "Acme Robotics") in facts
        # Restoring c brings its fact back.
        await engine.restore([c.id])
        facts = {(f.subject, f.predicate, f.object) for f in
                 (await engine.recall("Alice Acme Robotics", paths=["graph"])).facts}  # fmt: skip
        assert ("Acme Robotics", "based_in", "Berlin") in facts


@pytest.mark.object_store  # also on S3 (moto)
async def test_forget_by_entity_takes_every_memory_that_mentions_it(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        a = await engine.remember("Kenji works at Hoshino Resorts.")
        b = await engine.remember("I am meeting kenji in Tokyo on May 5th.")
        c = await engine.remember("I prefer window seats on trains.")
        await engine.consolidate()
        d = await engine.remember("Kenji recommended the Hakone ropeway.")
        preview = await engine.forget(entity="Kenji", dry_run=True)
        assert preview.dry_run and set(preview.ids) == {a.id, b.id, d.id}
        assert (await engine.stats()).scopes[0].trash == 0  # a dry run changes nothing
        done = await engine.forget(entity="Kenji")
        assert set(done.ids) == {a.id, b.id, d.id}
        left = await engine.recall("Kenji", k=10)
        assert [it.id for it in left.items] in ([c.id], [])
        assert all("Kenji" not in f.subject + f.object for f in left.facts)


@pytest.mark.object_store  # also on S3 (moto)
async def test_forget_whole_scope_and_restore(open_engine):
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        ids = [(await engine.remember(t, scope="proj")).id for t in ("I use Rust.", "I use tokio.")]
        await engine.remember("I live in Paris.", scope="home")
        result = await engine.forget(scope="proj", all_in_scope=True)
        assert sorted(result.ids) == sorted(ids)
        stats = {s.scope: s for s in (await engine.stats()).scopes}
        assert (stats["proj"].buffer_size, stats["proj"].trash) == (0, 2)
        assert stats["home"].buffer_size == 1
        await engine.restore(ids, scope="proj")
        stats = {s.scope: s for s in (await engine.stats()).scopes}
        assert (stats["proj"].buffer_size, stats["proj"].trash) == (2, 0)


async def test_hard_forget_leaves_no_copy_on_disk(open_engine, tmp_path):
    canary = "Zyxwv" + uuid.uuid4().hex[:12]
    async with open_engine(gating={"tau_noise": -1.0, "default_gate": False}) as engine:
        keep = await engine.remember("I live in Paris with my partner Alex.")
        secret = await engine.remember(
            f"My locker code at Acme Robotics is {canary}, Sam knows it."
        )
        other = await engine.remember(f"Sam {canary} is my colleague at Acme Robotics.")
        await engine.consolidate()
        await engine.recall(f"locker code {canary}")
        assert files_containing(tmp_path / "data", canary), "the canary should be on disk first"
        result = await engine.forget(ids=[secret.id, other.id], hard=True)
        assert result.hard and set(result.ids) == {secret.id, other.id}
        assert files_containing(tmp_path / "data", canary) == []
        assert await engine.episodic.get([secret.id]) == []
        assert (await engine.recall("Where do I live?")).items[0].id == keep.id
    # ... and still nothing after the stores are closed (graph compaction on close).
    assert files_containing(tmp_path / "data", canary) == []


@pytest.mark.object_store  # also on S3 (moto)
async def test_soft_forgotten_memory_is_in_the_trash_not_in_recall(open_engine):
    async with open_engine() as engine:
        m = await engine.remember("I am allergic to penicillin.")
        await engine.forget(ids=[m.id])
        assert (await engine.recall("What am I allergic to?")).items == []
        (row,) = await engine.episodic.get([m.id])
        assert row.tier == "trash" and row.prev_tier == "buffer"


async def test_bad_forget_requests_are_clear_errors_and_change_nothing(open_engine):
    async with open_engine() as engine:
        m = await engine.remember("I am allergic to penicillin.")
        with pytest.raises(InvalidInput, match="say what to forget"):
            await engine.forget()
        with pytest.raises(InvalidInput, match="invalid memory id"):
            await engine.forget(ids=["m_1' OR 1=1 --"])
        with pytest.raises(NotFound):
            await engine.forget(ids=[m.id, "m_" + "0" * 20])
        with pytest.raises(InvalidInput, match="invalid scope"):
            await engine.forget(ids=[m.id], scope="a b")
        with pytest.raises(NotFound):
            await engine.restore([m.id])  # not in the trash
        (row,) = await engine.episodic.get([m.id])
        assert row.tier == "buffer"


@pytest.mark.object_store  # also on S3 (moto)
async def test_trash_past_retention_is_purged_at_consolidation(open_engine):
    async with open_engine(consolidation={"trash_retention_days": 0.0}) as engine:
        m = await engine.remember("I am allergic to penicillin.")
        await engine.forget(ids=[m.id])
        report = await engine.consolidate()
        assert report.purged == 1
        assert await engine.episodic.get([m.id]) == []


async def test_trash_within_retention_stays_and_only_the_old_is_purged(open_engine):
    async with open_engine(consolidation={"trash_retention_days": 1.0}) as engine:
        old = await engine.remember("I am allergic to penicillin.")
        new = await engine.remember("My sister Ana lives in Lisbon.")
        await engine.forget(ids=[old.id, new.id])
        (row,) = await engine.episodic.get([old.id], vectors=True)
        earlier = row.tier_changed_at - timedelta(days=1, seconds=1)
        await engine.episodic.upsert([replace(row, tier_changed_at=earlier)])
        report = await engine.consolidate()
        assert report.purged == 1
        assert await engine.episodic.get([old.id]) == []
        assert [r.tier for r in await engine.episodic.get([new.id])] == ["trash"]
