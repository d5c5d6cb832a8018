"""Concurrency (issue 5, item 2): four MCP clients over streamable HTTP against a real server
process, and many parallel tool calls within one stdio session, each a mix of remember
(new and repeated text), recall, forget + restore, consolidate and stats. No call fails, no
acknowledged write is lost or stored twice, and the stats add up.

CI runs 4 x 20 HTTP operations plus 36 in the stdio session; CRANIMEM_FULL=1 runs
4 x 100 + 120 (520 operations)."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import free_port, http_server_cmd, make_settings, server_env, stdio_params
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cranimem_mcp.engine import MemoryEngine

pytestmark = pytest.mark.anyio
FULL = os.environ.get("CRANIMEM_FULL") == "1"
TOKEN = "concurrency-token-" + "z" * 20
SHARED = [f"The team standup moves to room {n} on Mondays." for n in range(4)]
# Everything is stored (the gate is not under test), the buffer overflows into replay and
# background consolidation runs every few writes, so all of it happens under load.
ENV = {
    "CRANIMEM_GATING__TAU_NOISE": "-1.0",
    "CRANIMEM_EPISODIC__CAPACITY": "12",
    "CRANIMEM_CONSOLIDATION__EVERY_N_WRITES": "10",
    "CRANIMEM_CONSOLIDATION__TAU_CONSOLIDATION": "0.25",
    "CRANIMEM_CONSOLIDATION__INTERVAL_SECONDS": "0",
    "CRANIMEM_MODELS__EMBEDDER": "local",
    "CRANIMEM_MODELS__TAGGER": "heuristic",
    "CRANIMEM_MODELS__EXTRACTOR": "heuristic",
}


@dataclass
class Ledger:
    """What the clients were told."""

    ops: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    unique: dict[str, str] = field(default_factory=dict)  # id -> text
    shared_writes: Counter = field(default_factory=Counter)
    pruned_before_forget: set[str] = field(default_factory=set)


async def client_run(client: Client, name: str, n_ops: int, ledger: Ledger, seed: int) -> None:
    rng = random.Random(seed)
    scope = f"s{seed % 2}"
    mine: list[str] = []

    async def call(tool: str, args: dict) -> dict | None:
        ledger.ops[tool] += 1
        r = await client.call_tool(tool, args)
        if r.is_error:
            text = r.content[0].text if r.content else "?"
            if tool == "forget" and "no memory" in text:
                return None  # pruned to the trash by a consolidation meanwhile: checked later
            ledger.errors.append(f"{name} {tool} {args}: {text}")
            return None
        return r.structured_content

    for i in range(n_ops):
        roll = rng.random()
        if roll < 0.45:
            text = f"{name} noted fact {i}: Project Falcon{seed}x{i} ships from Berlin."
            # Pinned: the default gate may judge a bare project fact not durable, and this
            # test counts acknowledged writes, not the gate's judgement.
            r = await call("remember", {"content": text, "scope": scope, "pin": True})
            if r is not None:
                if r["status"] != "stored" or r["id"] in ledger.unique:
                    ledger.errors.append(f"{name} remember: {r['status']} {r['id']}")
                ledger.unique[r["id"]] = text
                mine.append(r["id"])
        elif roll < 0.55:
            text = rng.choice(SHARED)
            r = await call("remember", {"content": text, "scope": "shared"})
            if r is not None:
                ledger.shared_writes[text] += 1
        elif roll < 0.8:
            await call("recall", {"query": f"Falcon{seed} Berlin", "scope": scope, "k": 5})
        elif roll < 0.9 and mine:
            target = rng.choice(mine)
            gone = await call("forget", {"ids": [target], "scope": scope})
            if gone is None:
                ledger.pruned_before_forget.add(target)
            await call("restore", {"ids": [target], "scope": scope})
        elif roll < 0.95:
            await call("consolidate", {"scope": scope})
        else:
            ledger.ops["stats"] += 1
            data = json.loads((await client.read_resource("cranimem://stats")).contents[0].text)
            assert "scopes" in data


async def verify(home: Path, ledger: Ledger, minilm, final_stats: dict) -> None:
    """Reopen the store: every acknowledged write once, repeats merged, stats add up."""
    assert ledger.errors == []
    async with MemoryEngine(make_settings(home), embedder=minilm, background=False) as engine:
        assert await engine.check() == []
        rows = await engine.episodic.scope_rows(None, None)
        by_id = {r.id: r for r in rows}
        assert len(by_id) == len(rows)
        assert sorted(set(ledger.unique) - set(by_id)) == []  # nothing lost
        contents = Counter(r.content for r in rows if r.scope != "shared")
        assert max(contents.values()) == 1  # nothing stored twice
        for text, writes in ledger.shared_writes.items():
            copies = [r for r in rows if r.scope == "shared" and r.content == text]
            live = [r for r in copies if r.tier != "trash"]
            assert len(live) <= 1, text  # a repeat merges into the live copy
            assert sum(r.frequency for r in copies) == writes, text
        for mid in ledger.unique:  # restored after each forget: none left in the trash by it
            row = by_id[mid]
            assert row.decision_reason != "forgotten by request", row
        census = Counter((r.scope, r.tier) for r in rows)
    per_scope = {s["scope"]: s for s in final_stats["scopes"]}
    for (scope, tier), n in census.items():
        key = {"buffer": "buffer_size", "longterm": "longterm", "trash": "trash"}[tier]
        assert per_scope[scope][key] == n, (scope, tier)
    assert sum(s["rejected_writes"] for s in final_stats["scopes"]) == 0
    assert sum(s["buffer_size"] + s["longterm"] + s["trash"] for s in final_stats["scopes"]) == len(
        rows
    )


@pytest.fixture
def http_server(tmp_path, server_process):
    """(url, home, stop): stop() ends the server and returns its stderr."""
    port = free_port()
    home = tmp_path / "http"
    url = f"http://127.0.0.1:{port}/mcp"
    served = server_process(
        http_server_cmd(home, port), env=server_env(home, CRANIMEM_TOKEN=TOKEN, **ENV), probe=url
    )
    return url, home, lambda: served.stop()[1].decode()


async def final_stats(client: Client) -> dict:
    """Stats once the background work is done: an on-demand consolidation waits for any
    running one (they never overlap), and leaves nothing for a later one to move."""
    await client.call_tool("consolidate", {})
    return json.loads((await client.read_resource("cranimem://stats")).contents[0].text)


@pytest.mark.slow
async def test_four_http_clients_lose_and_duplicate_nothing(http_server, minilm):
    url, home, stop = http_server
    per_client = 100 if FULL else 20
    ledger = Ledger()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    started = time.monotonic()

    async def one(i: int) -> None:
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            async with Client(streamable_http_client(url, http_client=http), cache=None) as c:
                await client_run(c, f"client{i}", per_client, ledger, seed=i)

    with anyio.fail_after(1800 if FULL else 600):
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(one, i)
        took = time.monotonic() - started
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            async with Client(streamable_http_client(url, http_client=http), cache=None) as c:
                final = await final_stats(c)
    sys.stderr.write(
        f"http: {sum(ledger.ops.values())} operations in {took:.1f} s: {dict(ledger.ops)}\n"
    )
    assert sum(ledger.ops.values()) >= 4 * per_client
    err = stop()
    assert "Traceback" not in err, err[-3000:]
    await verify(home, ledger, minilm, final)


@pytest.mark.slow
async def test_parallel_calls_in_one_stdio_session_lose_and_duplicate_nothing(tmp_path, minilm):
    home = tmp_path / "stdio"
    n_ops = 120 if FULL else 36
    params = stdio_params(home, env=server_env(home, **ENV))
    ledger = Ledger()
    started = time.monotonic()
    with anyio.fail_after(1800 if FULL else 600):
        async with Client(params, cache=None) as client:
            # Six concurrent task streams share the one session, so calls interleave.
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(client_run, client, f"task{i}", n_ops // 6, ledger, 10 + i)
            final = await final_stats(client)
    took = time.monotonic() - started
    sys.stderr.write(f"stdio: {sum(ledger.ops.values())} operations in {took:.1f} s\n")
    assert sum(ledger.ops.values()) >= n_ops
    await verify(home, ledger, minilm, final)
