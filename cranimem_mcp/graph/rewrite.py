"""The rewrite of a SPARQL server's store, what a hard forget there leaves undone.

A hard forget drops the forgotten memories' graphs on the server, but what the server's
files keep is its own affair: Oxigraph never cleans its string dictionary, so a forgotten
text stays in its RocksDB files (docs/SCALING.md, "Hard forget across replicas"). A rewrite
copies the server's live quads, read through its SPARQL query endpoint in one query, into a
fresh Oxigraph store in a new directory. A fresh store's dictionary holds only the strings
of the quads loaded into it, so nothing forgotten is in it.

The invariant: the rewrite never touches the server or its directory, and a new store is
kept only once verified: it holds as many quads as the server counted at the same
generation (no commit came between the copy and the count: each commit sets a new one,
:mod:`.sparql`), and none of its files holds a text the caller names. A rewrite that fails
leaves the target as it found it (absent, or empty). Pointing the server at the new
directory is the operator's step: a restart, the only downtime.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pyoxigraph as ox

from cranimem_mcp.errors import InvalidInput, StoreError
from cranimem_mcp.graph.sparql import SparqlDataset

logger = logging.getLogger(__name__)

# Every quad of the dataset, the default graph's too (?g unbound there).
_ALL = "{ { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
_DUMP = f"SELECT ?s ?p ?o ?g WHERE {_ALL}"
_COUNT = f"SELECT (COUNT(*) AS ?n) WHERE {_ALL}"
_TIMEOUT = 600.0  # seconds for the whole dataset's answer


@dataclass(frozen=True)
class Rewrite:
    """A verified new store: where, how many quads, and the generation they were read at."""

    target: Path
    quads: int
    generation: str


def rewrite(
    query_endpoint: str, update_endpoint: str, target: Path, absent: Sequence[str] = ()
) -> Rewrite:
    """Copy the server's live quads into a fresh Oxigraph store at ``target`` (absent or an
    empty directory) and verify it: the server's count at the same generation, and no file
    holding any of the ``absent`` texts. Raises InvalidInput (the target) or StoreError (the
    server, or a failed verification) and then leaves the target as it was."""
    _check_target(target)
    server = SparqlDataset(query_endpoint, update_endpoint)
    try:
        return _rewrite(server, query_endpoint, target, absent)
    finally:
        server.close()  # its kept connections


def _rewrite(
    server: SparqlDataset, query_endpoint: str, target: Path, absent: Sequence[str]
) -> Rewrite:
    existed = target.exists()
    before = server.generation()
    try:
        copied = _load(target, query_endpoint, absent)
        counted = _count(query_endpoint)
        after = server.generation()
        if before != after or copied != counted:
            raise StoreError(
                f"the graph changed during the rewrite (generation {before!r} -> {after!r}, "
                f"{copied} quads copied, {counted} on the server): stop the replicas' writes "
                "(or serve the store read-only) and run it again"
            )
        for text in absent:
            if found := files_holding(target, text):
                raise StoreError(
                    f"a text that must be gone is in the new store's files ({len(found)})"
                )
    except BaseException:
        _undo(target, existed)
        raise
    logger.info("rewrote the graph server's store: %d quads into %s", copied, target)
    return Rewrite(target=target, quads=copied, generation=after)


def _load(target: Path, endpoint: str, absent: Sequence[str]) -> int:
    """Fill a fresh store at ``target`` from the server; the number of quads it holds. A
    text of ``absent`` in a live quad is an error: then the server still holds it alive
    (a soft forget, or a memory not forgotten), and no rewrite removes it."""
    try:
        store = ox.Store(str(target))
    except OSError as exc:
        raise StoreError(f"cannot make a store at {target}: {exc}") from exc
    try:
        try:
            store.bulk_extend(_quads(endpoint))
            store.flush()
        except OSError as exc:  # the disk, not the server (its errors are StoreErrors)
            raise StoreError(f"cannot write the new store at {target}: {exc}") from exc
        for text in absent:
            if bool(store.query(_holding(text))):
                raise StoreError(
                    "a text that must be gone is in a live graph on the server: forget the "
                    "memories that hold it (hard) before the rewrite"
                )
        return len(store)
    finally:
        del store  # closes RocksDB (a traceback would otherwise keep it open)


def _holding(text: str) -> str:
    """An ASK: does any term of any quad hold ``text``?"""
    literal = str(ox.Literal(text))  # N-Triples form: quoted and escaped
    terms = " || ".join(f"CONTAINS(STR(?{v}), {literal})" for v in "spog")
    return f"ASK WHERE {_ALL[:-1]} FILTER({terms}) }}"


def files_holding(root: Path, text: str) -> list[Path]:
    """The files under ``root`` whose bytes hold ``text`` (UTF-8). A file that goes while it
    is looked for (a serving store compacts) is skipped: look at a stopped store's files."""
    needle, found = text.encode(), []
    for d, _dirs, files in os.walk(root):
        for name in files:
            path = Path(d) / name
            try:
                if needle in path.read_bytes():
                    found.append(path)
            except FileNotFoundError:
                continue
    return found


def _check_target(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInput(
            f"{target} exists and is not an empty directory: the rewrite writes a new store "
            "and never into an existing one"
        )


def _undo(target: Path, existed: bool) -> None:
    if not target.exists():
        return
    if existed:
        for child in target.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        shutil.rmtree(target)


@contextmanager
def _select(endpoint: str, query: str) -> Iterator[ox.QuerySolutions]:
    """The solutions of one SELECT, read as they arrive; the answer is closed on exit."""
    request = Request(
        endpoint,
        data=query.encode(),
        headers={
            "Accept": "application/sparql-results+json",
            "Content-Type": "application/sparql-query",
        },
    )
    try:
        response = urlopen(request, timeout=_TIMEOUT)
    except HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        why = f"the SPARQL server refused the rewrite's query: {exc.code} {detail}"
        raise StoreError(why) from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"the SPARQL server at {endpoint} did not answer: {exc}") from exc
    with response:
        try:
            results = ox.parse_query_results(response, ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError, OSError) as exc:
            why = f"{endpoint} did not answer as a SPARQL query endpoint: {exc}"
            raise StoreError(why) from exc
        if not isinstance(results, ox.QuerySolutions):
            raise StoreError(f"{endpoint} did not answer the rewrite's SELECT with solutions")
        yield results


def _quads(endpoint: str) -> Iterator[ox.Quad]:
    default = ox.DefaultGraph()
    try:
        with _select(endpoint, _DUMP) as rows:
            for row in rows:
                g = row["g"]
                yield ox.Quad(row["s"], row["p"], row["o"], default if g is None else g)
    except (SyntaxError, ValueError, OSError) as exc:  # a reply cut or garbled midway
        raise StoreError(f"the SPARQL server's answer broke off during the copy: {exc}") from exc


def _count(endpoint: str) -> int:
    try:
        with _select(endpoint, _COUNT) as rows:
            (row,) = list(rows)
        return int(row["n"].value)
    except (SyntaxError, ValueError, OSError, KeyError, TypeError) as exc:
        raise StoreError(f"the SPARQL server's count of its quads was unreadable: {exc}") from exc
