"""The working set: an in-memory copy of each scope's memories, live (buffer and long-term)
and trashed (so a recall can tell, at the cost of a matrix product, whether the trash holds a
better answer).

Why: measured at 100k memories on this machine, every LanceDB query costs 5-50 ms (planning,
plus a scan of each small fragment a write leaves until compaction), and a write used to ask
six of them: is this exact text stored (twice), how close is the nearest memory, how full is
the buffer (twice), and the insert. The working set answers the questions from memory (a
dictionary lookup, one matrix-vector product), so a write costs one LanceDB commit, and the
vector half of a recall needs no query at all.

Invariant: the episodic store keeps it in step with the table. Every change to the table
goes through :class:`~cranimem_mcp.buffer.episodic.EpisodicStore`, which applies it here under its
write lock once the commit succeeded; a change it cannot follow exactly (a failed commit, an
update of a mirrored column) drops the copies it may touch, and a dropped scope is reloaded
from the table on next use. That holds because this process is the table's only writer (the
owner lock, docs/SCALING.md); on a table other processes write too (replicas), the store
also drops it whenever the table's version moved by a commit not its own.

Bounded: at most ``max_rows`` rows across scopes (a row per memory and per further window of a
long one), least recently used scopes leave first; a scope larger than the bound is not
mirrored (the store asks LanceDB, as before).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from cranimem_mcp.backends.passages import scored
from cranimem_mcp.conversation.transcript import speaker
from cranimem_mcp.models import Memory

LIVE = ("buffer", "longterm")
MIRRORED = (*LIVE, "trash")
_CODE = {"buffer": 1, "longterm": 2, "trash": 3}
_LIVE_CODES = {1, 2}
# The columns a mirrored memory keeps (its vector aside).
FIELDS = ("id", "tier", "content", "content_hash", "created_at", "observed_at", "turn")


@dataclass(slots=True)
class Entry:
    """A memory's working-set fields: what the hot path reads (a search hit, the buffer's
    items for the change check)."""

    id: str
    tier: str
    content: str
    content_hash: str
    created_at: datetime
    observed_at: datetime | None
    turn: int | None

    @classmethod
    def of(cls, memory: Memory) -> Entry:
        return cls(
            memory.id,
            memory.tier,
            memory.content,
            memory.content_hash,
            memory.created_at,
            memory.observed_at,
            memory.turn,
        )

    @property
    def happened_at(self) -> datetime:
        """When the event it tells happened: ``observed_at``, else when it was written."""
        return self.observed_at or self.created_at


def _codes(tiers: Iterable[str]) -> list[int]:
    return [_CODE[t] for t in tiers]


def _mask(tier: np.ndarray, tiers: Iterable[str]) -> np.ndarray:
    codes = set(_codes(tiers))
    if codes == _LIVE_CODES:
        return (tier > 0) & (tier < 3)  # every live tier (the common question): no set lookup
    return np.isin(tier, list(codes))


class ScopeSet:
    """One scope's memories: rows in slots, their unit vectors in one matrix."""

    def __init__(self, dim: int, capacity: int = 64) -> None:
        self._dim = dim
        self._vectors = np.zeros((capacity, dim), dtype=np.float32)
        self._tier = np.zeros(capacity, dtype=np.int8)  # 0 = free slot
        self._entries: list[Entry | None] = [None] * capacity
        self._slot: dict[str, int] = {}
        self._by_hash: dict[str, str] = {}
        self._free: list[int] = list(range(capacity - 1, -1, -1))  # lowest slot first
        self._high = 0  # slots at or above are unused: searches stop there
        # What a recall asks again and again between writes, kept until the next change
        # (``_changes`` counts them): the live entries in order, the cosines to the last
        # query vector (the trash notice asks with the vector the search used), and each
        # speaker's live turns (kept up to date by put and remove, not rebuilt).
        self._changes = 0
        self._ordered: dict[frozenset[int], tuple[int, list[Entry]]] = {}
        self._last_sims: tuple[int, tuple[bool, bytes], np.ndarray] | None = None
        self._speakers: dict[str, set[str]] = {}
        # The further vectors of long memories (their passages, or windows past the first
        # 256 word pieces): unit vectors in rows 0 .. _window_rows - 1 of one matrix, each
        # row's slot beside it (-1: its memory left). A recall's cosine is a memory's own,
        # lifted by its best passage's (backends.passages.scored).
        self._windows = np.zeros((0, dim), dtype=np.float32)
        self._window_slot = np.zeros(0, dtype=np.int64)
        self._window_rows = 0
        self._window_dead = 0

    def __len__(self) -> int:
        return len(self._slot)

    @property
    def size(self) -> int:
        """What the working set's bound counts: a row per memory and per further window of
        a long one (a window's vector weighs about what a memory's row does)."""
        return len(self._slot) + self._window_rows - self._window_dead

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._slot

    def _grow(self) -> None:
        old = len(self._entries)
        self._vectors = np.concatenate([self._vectors, np.zeros_like(self._vectors)])
        self._tier = np.concatenate([self._tier, np.zeros_like(self._tier)])
        self._entries += [None] * old
        self._free = list(range(2 * old - 1, old - 1, -1)) + self._free

    def put(self, entry: Entry, vector: Any, windows: Any = None) -> None:
        """Insert or replace a memory (only live ones answer :meth:`find_hash`), with the
        vectors of its further windows (None: it has none)."""
        self.remove(entry.id)
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._entries[slot] = entry
        self._vectors[slot] = np.asarray(vector, dtype=np.float32)
        self._tier[slot] = _CODE[entry.tier]
        self._slot[entry.id] = slot
        if entry.tier in LIVE:  # a trashed twin is no duplicate of a new write
            self._by_hash[entry.content_hash] = entry.id
            name = speaker(entry.content)
            if name is not None:
                self._speakers.setdefault(name, set()).add(entry.id)
        self._high = max(self._high, slot + 1)
        if windows is not None and len(windows):
            self._add_windows(slot, np.asarray(windows, dtype=np.float32).reshape(-1, self._dim))
        self._changes += 1

    def _add_windows(self, slot: int, rows: np.ndarray) -> None:
        end = self._window_rows + len(rows)
        if end > len(self._windows):  # grow by doubling, as the slots do
            size = max(64, 2 * end)
            grown = np.zeros((size, self._dim), dtype=np.float32)
            grown[: self._window_rows] = self._windows[: self._window_rows]
            owner = np.full(size, -1, dtype=np.int64)
            owner[: self._window_rows] = self._window_slot[: self._window_rows]
            self._windows, self._window_slot = grown, owner
        self._windows[self._window_rows : end] = rows
        self._window_slot[self._window_rows : end] = slot
        self._window_rows = end

    def _drop_windows(self, slot: int) -> None:
        if not self._window_rows:
            return
        mine = self._window_slot[: self._window_rows] == slot
        gone = int(mine.sum())
        if not gone:
            return
        self._window_slot[: self._window_rows][mine] = -1
        self._window_dead += gone
        if self._window_dead * 2 > self._window_rows:  # mostly dead rows: pack the live ones
            live = self._window_slot[: self._window_rows] >= 0
            kept = int(live.sum())
            self._windows[:kept] = self._windows[: self._window_rows][live]
            self._window_slot[:kept] = self._window_slot[: self._window_rows][live]
            self._window_slot[kept : self._window_rows] = -1
            self._window_rows, self._window_dead = kept, 0

    def remove(self, memory_id: str) -> None:
        slot = self._slot.pop(memory_id, None)
        if slot is None:
            return
        entry = self._entries[slot]
        assert entry is not None
        if self._by_hash.get(entry.content_hash) == memory_id:
            del self._by_hash[entry.content_hash]
        name = speaker(entry.content) if entry.tier in LIVE else None
        if name is not None and name in self._speakers:
            self._speakers[name].discard(memory_id)
            if not self._speakers[name]:
                del self._speakers[name]
        self._entries[slot] = None
        self._tier[slot] = 0
        self._drop_windows(slot)
        self._free.append(slot)
        self._changes += 1

    def find_hash(self, content_hash: str) -> str | None:
        return self._by_hash.get(content_hash)

    def entry(self, memory_id: str) -> Entry | None:
        slot = self._slot.get(memory_id)
        return None if slot is None else self._entries[slot]

    def count(self, tiers: Iterable[str]) -> int:
        return int(_mask(self._tier, tiers).sum())

    def entries(self, tiers: Iterable[str]) -> list[Entry]:
        """The memories of ``tiers``, oldest first (a new list; the order is kept until the
        next change)."""
        codes = frozenset(_codes(tiers))
        kept = self._ordered.get(codes)
        if kept is None or kept[0] != self._changes:
            found = [e for e in self._entries if e is not None and _CODE[e.tier] in codes]
            found.sort(key=lambda e: (e.created_at, e.turn or 0))
            kept = self._ordered[codes] = (self._changes, found)
        return list(kept[1])

    def speakers(
        self, min_turns: int = 1, among: Collection[str] | None = None
    ) -> dict[str, frozenset[str]]:
        """Each speaker (of those ``among``, if given) of ``min_turns`` or more live memories
        (:func:`~cranimem_mcp.conversation.transcript.speaker`) and the ids of their turns."""
        said = self._speakers
        names = said if among is None else {n: said.get(n, set()) for n in among}
        return {n: frozenset(ids) for n, ids in names.items() if len(ids) >= min_turns}

    def similarity(self, memory_id: str, vector: np.ndarray, windows: bool = False) -> float:
        """The memory's cosine to ``vector`` (with ``windows``: lifted by its best passage's,
        read from the cosines the search with that vector computed, not from a scan)."""
        slot = self._slot[memory_id]
        if windows and self._window_rows:
            return float(self._sims(np.asarray(vector, dtype=np.float32), True)[slot])
        return float(self._vectors[slot] @ vector)

    def nearest(
        self,
        vector: np.ndarray,
        tiers: Iterable[str],
        limit: int,
        among: Collection[str] | None = None,
        windows: bool = False,
    ) -> list[tuple[Entry, float]]:
        """Exact cosine nearest neighbours (vectors are unit length), best first; with
        ``among``, only those memory ids; with ``windows``, a long memory by its best
        window."""
        mask = _mask(self._tier[: self._high], tiers)
        if among is not None:
            only = np.zeros_like(mask)
            only[[self._slot[i] for i in among if i in self._slot]] = True
            mask &= only
        n = int(mask.sum())
        if n == 0 or limit <= 0:
            return []
        sims = self._cosines(np.asarray(vector, dtype=np.float32), windows)
        sims[~mask] = -np.inf
        top = np.argpartition(-sims, limit - 1)[:limit] if limit < n else np.flatnonzero(mask)
        top = top[np.argsort(-sims[top], kind="stable")]
        out = []
        for slot in top:
            entry = self._entries[int(slot)]
            if entry is not None and mask[slot]:
                out.append((entry, float(sims[slot])))
        return out

    def _cosines(self, vector: np.ndarray, windows: bool = False) -> np.ndarray:
        """Every slot's cosine to ``vector`` (with ``windows``: lifted by its best passage's;
        a copy, for the caller to mask): one matrix product per query vector between changes."""
        return self._sims(vector, windows).copy()

    def _sims(self, vector: np.ndarray, windows: bool) -> np.ndarray:
        """:meth:`_cosines`, the kept array itself (not to be changed)."""
        key = (windows, vector.tobytes())
        last = self._last_sims
        if last is None or last[0] != self._changes or last[1] != key:
            sims = self._vectors[: self._high] @ vector
            if windows and self._window_rows:
                owner = self._window_slot[: self._window_rows]
                live = owner >= 0
                best = sims.copy()
                np.maximum.at(best, owner[live], self._windows[: self._window_rows][live] @ vector)
                sims = scored(sims, best)
            last = self._last_sims = (self._changes, key, sims)
        return last[2]


class WorkingSet:
    """The mirrored scopes, bounded by ``max_rows`` memories in all (0 turns it off)."""

    def __init__(self, dim: int, max_rows: int) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self._scopes: OrderedDict[str, ScopeSet] = OrderedDict()
        self._oversized: set[str] = set()

    @property
    def enabled(self) -> bool:
        return self.max_rows > 0

    def rows(self) -> int:
        """Rows held: memories and long memories' further windows (:attr:`ScopeSet.size`)."""
        return sum(s.size for s in self._scopes.values())

    def get(self, scope: str) -> ScopeSet | None:
        found = self._scopes.get(scope)
        if found is not None:
            self._scopes.move_to_end(scope)
        return found

    def wanted(self, scope: str) -> bool:
        """Worth loading: mirroring is on and the scope was not found too big for it."""
        return self.enabled and scope not in self._oversized and scope not in self._scopes

    def install(
        self,
        scope: str,
        entries: Sequence[Entry],
        vectors: Any,
        windows: Sequence[Any] | None = None,
    ) -> None:
        """Mirror ``scope``'s memories (with their vectors and further windows' vectors)."""
        more_rows = sum(len(w) for w in windows if w is not None) if windows is not None else 0
        if len(entries) + more_rows > self.max_rows:
            self._oversized.add(scope)
            return
        mirrored = ScopeSet(self.dim, capacity=max(64, 2 * len(entries)))
        more_of = windows if windows is not None else [None] * len(entries)
        for entry, vector, more in zip(entries, vectors, more_of, strict=True):
            mirrored.put(entry, vector, more)
        self._scopes[scope] = mirrored
        self._fit(keep=scope)

    def _fit(self, keep: str) -> None:
        total = self.rows()
        while total > self.max_rows and self._scopes:
            scope, mirrored = next(iter(self._scopes.items()))
            if scope == keep and len(self._scopes) == 1:
                self._oversized.add(scope)
            self._scopes.pop(scope)
            total -= mirrored.size

    def apply(self, memories: Iterable[Memory]) -> None:
        """Follow committed whole records (an insert or an upsert): each is put in its tier.
        A record without its vector drops its scope instead."""
        touched = set()
        for memory in memories:
            mirrored = self._scopes.get(memory.scope)
            if mirrored is None:
                # Not mirrored here; the id might be, under another scope (a scope change).
                self.remove([memory.id])
                continue
            if memory.tier in MIRRORED:
                if memory.vector is None:
                    self.drop(memory.scope)
                    continue
                mirrored.put(Entry.of(memory), memory.vector, memory.windows)
                touched.add(memory.scope)
            else:
                mirrored.remove(memory.id)
        for scope in touched:
            self._fit(keep=scope)

    def remove(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for mirrored in self._scopes.values():
            for memory_id in ids:
                mirrored.remove(memory_id)

    def drop(self, scope: str | None = None) -> None:
        """Forget the copy of ``scope`` (or of every scope): it is reloaded on next use."""
        if scope is None:
            self._scopes.clear()
            self._oversized.clear()
        else:
            self._scopes.pop(scope, None)
            self._oversized.discard(scope)
