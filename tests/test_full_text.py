"""The episodic table's full-text searches run on a handle of their own (LanceDB's
asynchronous API, ``buffer/full_text.py``): they must read every commit the store made, through
appends, changes, deletes, maintenance and a purge; a search read ahead (a recall's, while its
query is embedded) is used once, and never after a commit."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from test_working_set import at, unit

from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.full_text import FullText
from cranimem_mcp.buffer.table import LocalTable
from cranimem_mcp.buffer.working_set import LIVE
from cranimem_mcp.models import Memory

pytestmark = pytest.mark.anyio

STAMP = datetime(2026, 1, 1, tzinfo=UTC)


def note(n: int, text: str, rng: np.random.Generator, tier: str = "buffer") -> Memory:
    return Memory(id=f"m_{n:020x}", scope="s", tier=tier, content=text, content_hash=f"{n:032x}",
                  created_at=STAMP, turn=n, vector=unit(rng).tolist())  # fmt: skip


async def found(store: EpisodicStore, words: str) -> list[str]:
    hits = await store.text_search("s", np.zeros(8, np.float32), words, LIVE, 10)
    return sorted(h.entry.content for h in hits)


@pytest.mark.object_store  # also on S3 (moto)
async def test_full_text_search_reads_every_commit_of_the_store(tmp_path, episodic_location):
    rng = np.random.default_rng(7)
    store = EpisodicStore(**at(episodic_location, tmp_path / "t"), dim=8)
    await store.open()
    try:
        await store.add([note(1, "The quokka exhibit opens in May.", rng)])
        assert await found(store, "quokka") == ["The quokka exhibit opens in May."]
        await store.add([note(2, "Feed the quokka at noon.", rng)])
        assert await found(store, "quokka") == [
            "Feed the quokka at noon.", "The quokka exhibit opens in May."]  # fmt: skip
        await store.update([f"m_{1:020x}"], {"tier": "trash"})  # a change: out of the live tiers
        assert await found(store, "quokka") == ["Feed the quokka at noon."]
        await store.maintain()  # compaction, new handles, old versions dropped
        assert await found(store, "quokka") == ["Feed the quokka at noon."]
        await store.add([note(3, "Quokka photos go in the shared album.", rng)])
        assert await found(store, "quokka") == [
            "Feed the quokka at noon.", "Quokka photos go in the shared album."]  # fmt: skip
        await store.delete([f"m_{2:020x}"])
        await store.purge_history()
        assert await found(store, "quokka") == ["Quokka photos go in the shared album."]
        assert await found(store, "noon") == []
    finally:
        await store.close()


async def test_a_search_read_ahead_is_used_once_and_never_after_a_commit(tmp_path, monkeypatch):
    rng = np.random.default_rng(8)
    store = EpisodicStore(LocalTable(tmp_path / "t"), dim=8)
    await store.open()
    ran: list[str] = []
    run = FullText._run

    async def counted(self, where, terms, limit, columns):
        ran.append(terms)
        return await run(self, where, terms, limit, columns)

    monkeypatch.setattr(FullText, "_run", counted)
    try:
        await store.add([note(1, "Water the basil every morning.", rng)])
        qvec = unit(rng)
        await store.read_ahead("s", "basil?", LIVE, 5)
        hits = await store.hybrid("s", qvec, "basil?", LIVE, 5)
        assert [h.entry.id for h in hits] == [f"m_{1:020x}"] and ran == ["basil"]
        await store.hybrid("s", qvec, "basil?", LIVE, 5)  # used once: searched again
        assert ran == ["basil", "basil"]

        await store.read_ahead("s", "basil", LIVE, 5)
        await store.add([note(2, "The basil on the balcony needs a bigger pot.", rng)])
        hits = await store.hybrid("s", qvec, "basil", LIVE, 5)  # a commit came between
        assert len(ran) == 4 and {h.entry.id for h in hits} == {f"m_{1:020x}", f"m_{2:020x}"}
    finally:
        await store.close()


async def test_a_search_on_a_removed_version_is_asked_again_on_a_fresh_handle(tmp_path):
    rng = np.random.default_rng(9)
    store = EpisodicStore(LocalTable(tmp_path / "t"), dim=8)
    await store.open()
    try:
        await store.add([note(1, "Renew the passport before March.", rng)])
        await store.add([note(2, "The passport photo must be recent.", rng)])
        both = ["Renew the passport before March.", "The passport photo must be recent."]
        assert await found(store, "passport") == both
        # A purge compacts the table and drops every old version; a search already on its
        # way holds the version before it (here: the handle is kept and the commit not counted).
        moved, renew = store._text.moved, store._text.renew

        async def kept() -> None:
            pass

        store._text.moved, store._text.renew = (lambda: None), kept
        await store.purge_history()
        store._text.moved = moved
        renewed = []

        async def counted_renew():
            renewed.append(True)
            await renew()

        store._text.renew = counted_renew
        assert await found(store, "passport") == both
        assert renewed == [True]  # its files were gone: asked again on a fresh handle
    finally:
        await store.close()
