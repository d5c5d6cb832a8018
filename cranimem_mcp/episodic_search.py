"""The episodic store's searches: hybrid (vector + full-text, fused) and full-text alone.

A mixin of :class:`~cranimem_mcp.episodic.EpisodicStore` (which owns the table, the working
set and the thread they run in); kept apart so the store's module stays about the table's
life and writes. A mirrored scope runs the vector half on the working set and only the
full-text half in LanceDB (:mod:`~cranimem_mcp.fusion`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from .fusion import fuse
from .records import Hit, entry, scope_filter
from .working_set import FIELDS


class HybridSearch:
    """Searches over ``self._table``; the store supplies ``_mirrored``, ``_run``,
    ``_reranker``."""

    _table: Any
    _reranker: Any
    _mirrored: Any
    _run: Any

    async def hybrid(
        self,
        scope: str,
        vector: np.ndarray,
        text: str,
        tiers: Iterable[str],
        limit: int,
        among: Collection[str] | None = None,
    ) -> list[Hit]:
        """LanceDB's hybrid search (vector + full-text, reciprocal-rank fused), best first.
        A mirrored scope runs the vector half on the working set and only the full-text
        half in LanceDB, fused by the same reranker LanceDB's hybrid query uses. ``among``:
        only these memory ids (:meth:`_hybrid_among`)."""
        where = scope_filter(scope, tiers)
        terms = " ".join(re.findall(r"\w+", text))
        tiers = tuple(tiers)
        mirrored = await self._mirrored(scope, tiers)
        if among is not None:
            return await self._hybrid_among(
                scope, vector, terms, tiers, limit, set(among), mirrored
            )
        if mirrored is not None:
            near = mirrored.nearest(vector, tiers, limit)
            if not terms:  # no words to search for: a vector search, as LanceDB would run it
                return [Hit(e, sim, sim) for e, sim in near]

            found = [
                (r["id"], float(r["_score"])) for r in await self._fts(where, terms, limit, ["id"])
            ]
            text = [(i, score) for i, score in found if i in mirrored]
            return fuse(self._reranker, mirrored, vector, near, text, limit)

        def run() -> list[dict[str, Any]]:
            if not terms:
                query = self._table.search(vector.tolist()).distance_type("cosine")
            else:
                query = (
                    self._table.search(query_type="hybrid")
                    .vector(vector.tolist())
                    .text(terms)
                    .distance_type("cosine")
                    .rerank(self._reranker)
                )
            return query.where(where, prefilter=True).limit(limit).to_list()

        hits = []
        for r in await self._run(run):
            sim = float(np.asarray(r["vector"], dtype=np.float32) @ vector)
            hits.append(Hit(entry(r), sim, float(r.get("_relevance_score", sim))))
        return hits

    async def _hybrid_among(
        self, scope: str, vector: np.ndarray, terms: str, tiers: tuple[str, ...], limit: int,
        among: set[str], mirrored: Any,
    ) -> list[Hit]:  # fmt: skip
        """The vector half among ``among`` exactly; the full-text half's best 4 x ``limit``
        of the scope, kept to ``among``."""
        if mirrored is None:  # unmirrored: the search over all, kept to ``among``
            found = await self.hybrid(scope, vector, terms, tiers, 4 * limit)
            return [h for h in found if h.entry.id in among][:limit]
        near = mirrored.nearest(vector, tiers, limit, among)
        if not terms:
            return [Hit(e, sim, sim) for e, sim in near]
        where = scope_filter(scope, tiers)
        rows = await self._fts(where, terms, 4 * limit, ["id"])
        text = [(r["id"], float(r["_score"])) for r in rows if r["id"] in among][:limit]
        text = [(i, score) for i, score in text if i in mirrored]
        return fuse(self._reranker, mirrored, vector, near, text, limit)

    async def _fts(
        self, where: str | None, terms: str, limit: int, columns: list[str]
    ) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            query = self._table.search(terms, query_type="fts").where(where, prefilter=True)
            return query.limit(limit).select([*columns, "_score"]).to_list()

        return await self._run(run)

    async def text_search(
        self, scope: str, vector: np.ndarray, terms: str, tiers: Iterable[str], limit: int
    ) -> list[Hit]:
        """The full-text half alone (BM25 over ``terms``), best first; each hit's similarity
        is its cosine to ``vector``, its fused score the BM25 score."""
        tiers = tuple(tiers)
        ws = await self._mirrored(scope, tiers)
        columns = list(FIELDS) if ws is not None else [*FIELDS, "vector"]
        rows = await self._fts(scope_filter(scope, tiers), terms, limit, columns)
        if ws is not None:
            sims = {r["id"]: ws.similarity(r["id"], vector) for r in rows if r["id"] in ws}
        else:
            sims = {r["id"]: float(np.asarray(r["vector"], np.float32) @ vector) for r in rows}
        return [Hit(entry(r), sims[r["id"]], float(r["_score"])) for r in rows if r["id"] in sims]
