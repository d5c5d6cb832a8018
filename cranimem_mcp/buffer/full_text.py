"""The episodic table's full-text searches (BM25 over ``content``), on LanceDB's asynchronous
API, and a recall's search started before the query's vector exists.

Why the asynchronous API: the synchronous one runs each query on LanceDB's own event loop
thread and asks it for the table's schema more than once per query, each a hop between
Python threads; a search took 4.5 ms at 1k memories that way and 2.3 ms awaited here on the
caller's loop, where the query runs in LanceDB's native threads (docs/RESULTS.md). It also
leaves the Python threads free: a recall's full-text half runs while its query is embedded
(:meth:`FullText.read_ahead`), 15.5 -> 11.2 ms a recall at 1k memories.

Invariant: a search reads the table as of the last commit the store counted (:meth:`moved`).
The store's writes go through its synchronous handle; this handle reads the latest version
again after any commit (a local table: only when the store counted one; a shared one: before
each read, as the store's own reads do).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from cranimem_mcp.buffer.lance import lancedb, reason
from cranimem_mcp.errors import StoreError

_WORD = re.compile(r"\w+")
_READ_AHEAD_KEPT = 16  # searches read ahead and not (yet) asked for


def terms_of(text: str) -> str:
    """The words a full-text search of ``text`` looks for (its punctuation dropped)."""
    return " ".join(_WORD.findall(text))


class FullText:
    """Full-text searches of one table: ``uri`` (a directory or any LanceDB URI) with its
    ``storage_options``; ``shared``: other processes write it too."""

    def __init__(
        self, uri: str, table: str, storage_options: dict[str, str] | None, shared: bool
    ) -> None:
        self._uri = uri
        self._name = table
        self._options = storage_options or None
        self._shared = shared
        self._table: Any = None
        self._commits = 0  # the store's commits counted so far
        self._read_at = -1  # the count when this handle last read the latest version
        # (filter, terms, limit, columns) -> (the commit count it was read at, its rows)
        self._ahead: dict[tuple[Any, ...], tuple[int, list[dict[str, Any]]]] = {}

    def moved(self) -> None:
        """The store committed (a change, a compaction, a new handle): the next search reads
        the latest version, and nothing read ahead before it is used."""
        self._commits += 1

    async def search(
        self, where: str | None, terms: str, limit: int, columns: list[str]
    ) -> list[dict[str, Any]]:
        """The best ``limit`` rows for ``terms`` among those ``where`` holds (a prefilter),
        best first: ``columns`` and the BM25 ``_score``."""
        key = (where, terms, limit, tuple(columns))
        ahead = self._ahead.pop(key, None)
        if ahead is not None and ahead[0] == self._commits:
            return ahead[1]
        try:
            return await self._run(where, terms, limit, columns)
        except Exception:  # noqa: BLE001 - asked once more, and then reported
            # The version read may be one a maintenance has just removed (its files gone, its
            # successor committed): once more, on a fresh handle.
            await self.renew()
        try:
            return await self._run(where, terms, limit, columns)
        except Exception as exc:  # lance raises bare OSError/RuntimeError/ValueError
            raise StoreError(f"episodic store operation failed: {reason(exc)}") from exc

    async def _run(
        self, where: str | None, terms: str, limit: int, columns: list[str]
    ) -> list[dict[str, Any]]:
        table = await self._latest()
        query = table.query().nearest_to_text(terms)
        if where:
            query = query.where(where)
        return await query.limit(limit).select([*columns, "_score"]).to_list()

    async def read_ahead(self, where: str | None, terms: str, limit: int) -> None:
        """Run :meth:`search` (of ids) now and keep its rows for the same search asked
        before the next commit. A failure is left for that search to meet."""
        commits = self._commits
        try:
            rows = await self.search(where, terms, limit, ["id"])
        except StoreError:
            return
        if len(self._ahead) >= _READ_AHEAD_KEPT:
            self._ahead.clear()  # reads ahead that no search asked for
        self._ahead[(where, terms, limit, ("id",))] = (commits, rows)

    async def close(self) -> None:
        table, self._table = self._table, None
        self._ahead.clear()
        if table is not None:
            table.close()

    async def renew(self) -> None:
        """Let the handle go (after a compaction): the next search opens the table afresh, as
        the store does with its own handle (LanceDB's handles hold native memory)."""
        await self.close()
        self.moved()

    async def _latest(self) -> Any:
        if self._table is None:
            db = await lancedb.connect_async(
                self._uri,
                storage_options=self._options,
                read_consistency_interval=timedelta(0) if self._shared else None,
            )
            commits = self._commits
            self._table = await db.open_table(self._name)
            self._read_at = commits
        elif self._read_at != self._commits and not self._shared:
            commits = self._commits
            await self._table.checkout_latest()
            self._read_at = commits
        return self._table
