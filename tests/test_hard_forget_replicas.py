"""Hard forget across replicas (docs/SCALING.md): the graph on `oxigraph serve`, the episodic
table on S3 (moto on loopback), two engines as two replicas. A hard forget through one leaves
no object in the bucket holding the forgotten text, but the Oxigraph server's files still
hold it (its string dictionary is never cleaned); ``cranimem-mcp rewrite-graph`` copies the
live graph into a fresh store that holds it nowhere, and the other replica recalls the rest
from the server restarted on that store."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import CLI, answering, free_port, make_settings, server_env
from rdflib import Graph, Literal, URIRef

from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.errors import InvalidInput, StoreError
from cranimem_mcp.extraction.extractor import HeuristicExtractor
from cranimem_mcp.graph.rewrite import files_holding, rewrite
from cranimem_mcp.graph.sparql import SparqlDataset

# The tests that start a subprocess (`oxigraph serve`, the command line) are marked slow.

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")

KEPT = "I live in Paris with Alex."


def oxigraph_serve(location: Path, port: int):
    if not Path(OXIGRAPH).exists():
        pytest.skip("the oxigraph server is not installed (the 'sparql' extra)")
    base = f"http://127.0.0.1:{port}"
    argv = [OXIGRAPH, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    return answering(argv, probe=f"{base}/query?query=ASK%7B%7D", timeout=60)


def endpoints(port: int) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    return {"store": "sparql", "query_endpoint": f"{base}/query",
            "update_endpoint": f"{base}/update"}  # fmt: skip


def objects_holding(s3, bucket: str, text: str) -> tuple[int, list[str]]:
    """(objects in the bucket, every version counted; the keys of those holding ``text``)."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3.url, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")  # fmt: skip
    listed = client.list_object_versions(Bucket=bucket).get("Versions", [])
    hits = []
    for v in listed:
        body = client.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"]
        if text.encode() in body.read():
            hits.append(v["Key"])
    return len(listed), hits


def held(root: object, text: str) -> list[str]:
    """Where, in the Python objects reachable from ``root``, a string holds ``text`` (what a
    native library keeps, and memory freed but not yet reused, are out of its sight)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(root, "engine")]
    while stack:
        obj, where = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        if isinstance(obj, str | bytes):
            if (text if isinstance(obj, str) else text.encode()) in obj:
                found.append(where)
        elif isinstance(obj, dict):
            stack += [(k, f"{where}[key]") for k in obj]
            stack += [(v, f"{where}[{str(k)[:40]}]") for k, v in obj.items()]
        elif isinstance(obj, list | tuple | set | frozenset):
            stack += [(v, f"{where}[]") for v in obj]
        elif hasattr(obj, "__dict__"):
            stack += [(v, f"{where}.{k}") for k, v in vars(obj).items()]
        elif hasattr(type(obj), "__slots__"):
            slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]
            stack += [(getattr(obj, n), f"{where}.{n}") for n in slots if hasattr(obj, n)]
    return found


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=server_env(home), capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


async def linked_canary(sentence: str) -> str:
    """A fresh name the extractor takes for an entity of ``sentence`` (so the graph holds it).
    Not every random string is one: the parser tagged ~1 in 12 "Qzv" + 14 hex digits as
    something else, and then the graph held no canary to look for (seen in CI)."""
    letters = str.maketrans("0123456789abcdef", "ghijklmnopqrstuv")
    while True:
        canary = "Qzv" + uuid.uuid4().hex[:14].translate(letters)
        (found,) = await HeuristicExtractor().extract([sentence.format(canary)])
        if canary in (e.name for e in found.entities):
            return canary


def config_file(path: Path, graph: dict[str, str]) -> Path:
    lines = ["[graph]", *(f'{k} = "{v}"' for k, v in graph.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.anyio
async def test_after_a_hard_forget_the_rewrite_leaves_the_canary_in_no_file_and_no_object(
    tmp_path, s3, minilm
):
    colleague = "{} is the name of my colleague at Globex."
    canary = await linked_canary(colleague)
    old, new = tmp_path / "oxigraph", tmp_path / "oxigraph-rewritten"
    port = free_port()
    graph = endpoints(port)
    sections = {
        "episodic": s3.location("hard-forget"),
        "graph": graph,
        "gating": {"tau_noise": -1.0, "default_gate": False},
        "consolidation": {"tau_consolidation": 0.0, "every_n_writes": 0, "interval_seconds": 0},
    }
    a_settings = make_settings(tmp_path / "a", **sections)
    b_settings = make_settings(tmp_path / "b", **sections)
    with ExitStack() as servers:
        served = servers.enter_context(oxigraph_serve(old, port))
        async with (
            MemoryEngine(a_settings, embedder=minilm, background=False) as a,
            MemoryEngine(b_settings, embedder=minilm, background=False) as b,
        ):
            await a.remember(KEPT)
            ids = [(await a.remember(text, tags=[canary])).id for text in (
                f"My locker code at Acme Robotics is {canary}.",
                colleague.format(canary),
            )]  # fmt: skip
            assert (await a.consolidate()).promoted == 3
            assert canary in (await b.recall(f"locker code {canary}")).context  # B holds it
            assert held(b, canary) != []  # its working set, its graph reads
            assert (await a.forget(ids=ids, hard=True)).forgotten == 2
            assert held(b, canary) != []  # idle, B still holds what it read
            # B's next operation follows the table's version and the graph's generation:
            # after it, neither replica holds the text in any object reachable from it.
            assert canary not in (await b.recall("Where do I live?")).context
            assert held(a, canary) == [] and held(b, canary) == []
            # The bucket: purge_history left no object (no old version, data or index
            # file) holding it.
            count, in_bucket = objects_holding(s3, "hard-forget", canary)
            assert count > 0 and in_bucket == []

            cli_home = tmp_path / "cli"
            config = config_file(tmp_path / "g.toml", graph)
            done = run_cli("rewrite-graph", "--config", str(config), "--data-dir",
                           str(cli_home), "--to", str(new), "--absent", canary, "--json",
                           home=cli_home)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert '"quads"' in done.stdout and canary not in done.stdout + done.stderr
            served.stop()
            # The server's files still hold it (read once it stopped: a serving store
            # compacts): the "before" the rewrite exists for. The rewrite never touches
            # them; the new store holds it nowhere.
            assert files_holding(old, canary) != []
            assert files_holding(new, canary) == [] and any(new.iterdir())

            # The swap: the server restarted on the new store at the same address. The
            # replicas stay open; B recalls the rest from it and finds the stores agree.
            servers.enter_context(oxigraph_serve(new, port))
            recalled = await b.recall("Where do I live?")
            assert "Paris" in recalled.context and canary not in recalled.context
            facts = await b.recall("Where do I live?", paths=["graph"])
            assert any("Paris" in f.object for f in facts.facts)
            assert await b.check() == []
            assert (await a.remember("I work at Initech.")).status == "stored"
            assert (await a.consolidate()).promoted == 1  # and A writes through it
    assert files_holding(new, canary) == []


def test_a_target_that_is_not_an_empty_directory_is_refused_and_kept(tmp_path):
    target = tmp_path / "store"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="not an empty directory"):
        # No server behind the address: the target is checked before the server is asked.
        rewrite(*_unreachable(), target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert (target / "keep.txt").read_text() == "mine"


@pytest.mark.slow
def test_an_unreachable_server_is_a_clear_error_that_creates_nothing(tmp_path):
    target = tmp_path / "store"
    with pytest.raises(StoreError, match="did not answer"):
        rewrite(*_unreachable(), target)
    assert not target.exists()
    # The same through the command line: one line on stderr, exit code 2.
    graph = dict(zip(("query_endpoint", "update_endpoint"), _unreachable(), strict=True))
    config = config_file(tmp_path / "g.toml", {"store": "sparql", **graph})
    done = run_cli("rewrite-graph", "--config", str(config), "--data-dir", str(tmp_path / "h"),
                   "--to", str(target), home=tmp_path / "h")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: the SPARQL server") and "Traceback" not in done.stderr
    assert not target.exists()


@pytest.mark.slow
def test_a_wrong_url_or_a_live_canary_is_an_error_that_leaves_no_store(tmp_path):
    port = free_port()
    graph = endpoints(port)
    target = tmp_path / "store"
    with oxigraph_serve(tmp_path / "oxigraph", port):
        base = f"http://127.0.0.1:{port}"
        # An address that is not the query endpoint (Oxigraph answers 404 there).
        with pytest.raises(StoreError, match="refused"):
            rewrite(f"{base}/nowhere", graph["update_endpoint"], target)
        assert not target.exists()
        # A text still in a live graph: no rewrite can remove it, so no store is kept.
        live = "Qzv" + uuid.uuid4().hex[:14]
        _update(
            graph["update_endpoint"],
            f'INSERT DATA {{ GRAPH <urn:g> {{ <urn:s> <urn:p> "{live} is alive" }} }}',
        )
        target.mkdir()  # an empty directory is a valid target; it is left empty
        with pytest.raises(StoreError, match="live graph"):
            rewrite(graph["query_endpoint"], graph["update_endpoint"], target, [live])
        assert target.is_dir() and not any(target.iterdir())
        # Without that text the same server rewrites fine: every quad, default graph too.
        _update(graph["update_endpoint"], 'INSERT DATA { <urn:d> <urn:p> "in the default" }')
        done = rewrite(graph["query_endpoint"], graph["update_endpoint"], target, ["absent"])
        assert done.quads == 2


@pytest.mark.slow
def test_a_commit_during_the_rewrite_fails_it_and_leaves_no_store(tmp_path):
    """A replica committing while the copy runs (each commit sets a new generation): the copy
    may be of a graph that no longer is, so the rewrite is refused and nothing is kept."""
    port = free_port()
    graph = endpoints(port)
    target = tmp_path / "store"
    with oxigraph_serve(tmp_path / "oxigraph", port):
        writer = SparqlDataset(graph["query_endpoint"], graph["update_endpoint"])
        stop = threading.Event()

        def commit_until_stopped() -> None:
            i = 0
            while not stop.is_set():
                g = Graph()
                g.add((URIRef("urn:s"), URIRef("urn:p"), Literal(f"commit {i}")))
                writer.commit([writer.put(URIRef(f"urn:g{i % 5}"), g)])
                i += 1

        thread = threading.Thread(target=commit_until_stopped)
        writer.commit([writer.put(URIRef("urn:g0"), Graph())])  # a first generation
        thread.start()
        try:
            with pytest.raises(StoreError, match="changed during the rewrite"):
                rewrite(graph["query_endpoint"], graph["update_endpoint"], target)
        finally:
            stop.set()
            thread.join(30)
            writer.close()
        assert not target.exists()


@pytest.mark.slow
def test_the_command_refuses_a_local_graph(tmp_path):
    done = run_cli("rewrite-graph", "--data-dir", str(tmp_path / "h"), "--to",
                   str(tmp_path / "store"), home=tmp_path / "h")  # fmt: skip
    assert done.returncode == 2 and 'store = "sparql"' in done.stderr
    assert not (tmp_path / "store").exists()


def _unreachable() -> tuple[str, str]:
    base = f"http://127.0.0.1:{free_port()}"
    return f"{base}/query", f"{base}/update"


def _update(endpoint: str, update: str) -> None:
    import httpx

    httpx.post(endpoint, content=update.encode(),
               headers={"Content-Type": "application/sparql-update"},
               timeout=30).raise_for_status()  # fmt: skip
