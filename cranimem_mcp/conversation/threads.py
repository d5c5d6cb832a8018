"""A conversation's thread: a transcript turn is embedded with the turn it follows (issue 18).

A turn often says what it means only after the turn before it: "Researching adoption
agencies - it's been a dream to have a family" answers "What are your plans for the
summer?", and "They were scared but we reassured them" answers "How did the kids handle the
accident?". Embedded alone, neither matches the question later asked about it. So when a
write is a turn of one of the scope's speakers
(:func:`~cranimem_mcp.conversation.transcript.speaker`, a
name that heads other memories of the scope too) that goes on the conversation of the write
just before it in the scope (:func:`~cranimem_mcp.conversation.transcript.follows`),
its vector is the normalised sum of its own text's vector and the vector of the two turns
together (:func:`~cranimem_mcp.conversation.transcript.in_context`); the gate and the tags still
judge its
own vector. Any other text (a fact, a paragraph, a note) keeps its own vector. The write before
counts whether the gate kept it or not: the question a turn answers is mostly what the gate
drops ("What are your plans for the summer?"), and on LoCoMo-dev a turn embedded with the last
*stored* memory instead found 0.641 of the evidence in the top 5, with the write before 0.676
(its own vector: 0.631; docs/RESULTS.md). In a process that has not written to the scope yet
(after a restart, a one-shot command) the write before is the scope's newest live memory.

Invariant: a memory's ``follows`` is the id of the memory whose text shaped its vector,
:data:`UNKEPT` when that text was a write the gate did not keep (held in this process's memory
only until the scope's next write or forget, never stored), or None and its vector is its own
text's. A memory whose ``follows`` is deleted for good (a hard forget, the trash's purge) is
embedded again by itself (:meth:`Thread.unthread`): no vector keeps the meaning of a deleted
text. ``reembed`` and an import with another embedder embed the stored pairs again
(:func:`embed_all`); an unkept predecessor is gone by then, so those turns get their own vector.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from cranimem_mcp.backends.embeddings import Embedder, embed_read
from cranimem_mcp.buffer.episodic import EpisodicStore
from cranimem_mcp.buffer.records import follows_filter, scope_filter
from cranimem_mcp.buffer.working_set import LIVE
from cranimem_mcp.conversation import transcript
from cranimem_mcp.models import Memory

logger = logging.getLogger(__name__)

BATCH = 64
UNKEPT = "-"  # ``follows`` of a turn embedded with a write the gate did not keep


@dataclass(frozen=True, slots=True)
class _Write:
    content: str  # after the secrets guard
    at: datetime
    memory_id: str | None  # the memory it was stored as (or merged into); None if rejected


def blend(own: np.ndarray, context: np.ndarray) -> np.ndarray:
    """The vector of a turn in its context: its own and the pair's, summed and normalised."""
    v = np.asarray(own, dtype=np.float32) + np.asarray(context, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else np.asarray(own, dtype=np.float32)


class Thread:
    """The last write of each scope (in this process), and the vectors of the turns that
    follow it."""

    def __init__(
        self,
        episodic: EpisodicStore,
        embedder: Embedder,
        on: bool = True,
        session_gap: timedelta = transcript.SESSION_GAP,
    ) -> None:
        self.episodic = episodic
        self.embedder = embedder
        self.on = on  # ``episodic.thread_turns``: off, every vector is its own text's
        self.session_gap = session_gap  # ``retrieval.session_hours``
        self._last: dict[str, _Write] = {}

    async def vector(
        self, scope: str, content: str, own: np.ndarray, now: datetime
    ) -> tuple[np.ndarray, str | None]:
        """The vector to store for ``content`` (its own vector ``own``) and the id of the
        memory it follows, or ``own`` and None. Called under the scope's lock."""
        if not self.on:
            return own, None
        last = self._last.get(scope) or await self._newest(scope)
        if last is None or not await self._speaking(scope, content, last):
            return own, None
        if (
            last.memory_id is not None
            and await self.episodic.live_entry(scope, last.memory_id) is None
        ):
            return own, None  # forgotten since
        if not transcript.follows(last.content, content, self.session_gap):
            return own, None
        (context,) = await self.embedder.embed([transcript.in_context(last.content, content)])
        return blend(own, context), last.memory_id or UNKEPT

    async def _newest(self, scope: str) -> _Write | None:
        """Nothing written to ``scope`` in this process yet (a restart, a one-shot command):
        its newest live memory is the write before."""
        entries = await self.episodic.live_rows(scope, LIVE)
        if not entries:
            return None
        newest = max(entries, key=lambda e: (e.turn or 0, e.created_at))
        self._last[scope] = _Write(newest.content, newest.created_at, newest.id)
        return self._last[scope]

    async def _speaking(self, scope: str, content: str, last: _Write) -> bool:
        """Whether ``content`` and the write before it are turns of speakers of the scope:
        names that head other live memories of it too (a labelled note or a titled paragraph
        has no speaker at all: :func:`~cranimem_mcp.conversation.transcript.speaker`)."""
        names = {transcript.speaker(content), transcript.speaker(last.content)}
        if None in names:
            return False
        said = await self.episodic.speakers(scope, among=names)
        return all(said.get(name, frozenset()) - {last.memory_id} for name in names)

    def wrote(self, scope: str, content: str, at: datetime, memory_id: str | None) -> None:
        """A write to ``scope`` passed the secrets guard (``content`` as guarded) and was
        stored as, or merged into, ``memory_id`` (None: the gate rejected it). The scope's next
        turn may follow it."""
        self._last[scope] = _Write(content, at, memory_id)

    def forgot(self, scope: str) -> None:
        """Something of ``scope`` was forgotten: the next turn follows nothing."""
        self._last[scope] = _Write("", datetime.min.replace(tzinfo=UTC), None)

    async def unthread(self, scope: str, gone: Sequence[str]) -> int:
        """Embed by itself every memory of ``scope`` that follows one of ``gone`` (ids about
        to be deleted for good) and is not gone itself; the number embedded again. Called
        under the scope's lock, before the delete."""
        leaving = set(gone)
        where = f"{scope_filter(scope)} AND {follows_filter(sorted(leaving))}"
        whole = [m for m in await self.episodic.rows(where=where, vectors=True)
                 if m.id not in leaving]  # fmt: skip
        if not whole:
            return 0
        vectors = await self.embedder.embed([m.content for m in whole])
        await self.episodic.upsert(
            [replace(m, vector=v, follows=None) for m, v in zip(whole, vectors, strict=True)]
        )
        logger.info("embedded %d memories again by themselves: the turn they followed is gone",
                    len(whole))  # fmt: skip
        return len(whole)


async def embed_all(
    embedder: Embedder, memories: Sequence[Memory], windows: int = 1
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The vectors of ``memories`` by ``embedder``, as the write path makes them, each with
    its further windows' vectors (up to ``windows`` in all; None: none): a memory that
    follows another of ``memories`` is embedded with it; one whose ``follows`` is not among
    them by itself (its ``follows`` is then stale: the caller clears it)."""
    out: list[np.ndarray] = []
    more: list[np.ndarray | None] = []
    for start in range(0, len(memories), BATCH):
        texts = [m.content for m in memories[start : start + BATCH]]
        vectors, further = await embed_read(embedder, texts, windows)
        out += list(vectors)
        more += further
    by_id = {m.id: m for m in memories}
    pairs = [(i, by_id[m.follows]) for i, m in enumerate(memories) if m.follows in by_id]
    for start in range(0, len(pairs), BATCH):
        batch = pairs[start : start + BATCH]
        texts = [transcript.in_context(p.content, memories[i].content) for i, p in batch]
        for (i, _), context in zip(batch, await embedder.embed(texts), strict=True):
            out[i] = blend(out[i], context)
    return list(zip(out, more, strict=True))


def reembedded(
    batch: Sequence[Memory],
    read: Sequence[tuple[np.ndarray, np.ndarray | None]],
    everything: Sequence[Memory],
) -> list[Memory]:
    """``batch`` with the vectors ``read`` (from :func:`embed_all` over ``everything``), each
    ``follows`` cleared where the memory it names is not among ``everything``."""
    known = {m.id for m in everything}
    return [
        replace(
            m,
            vector=np.asarray(v).tolist(),
            windows=w,
            follows=m.follows if m.follows in known else None,
        )
        for m, (v, w) in zip(batch, read, strict=True)
    ]
