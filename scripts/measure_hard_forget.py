"""Where a hard-forgotten text is left when replicas share a table on S3 and a graph on an
Oxigraph server (docs/SCALING.md, "Hard forget across replicas").

.venv/bin/python scripts/measure_hard_forget.py [--versioned]

Two engines (replicas A and B) share one table in a moto S3 bucket on loopback (versioning
on with ``--versioned``) and one `oxigraph serve`. A writes three memories, two holding a
canary, and consolidates; B recalls the canary; A hard-forgets the two. Then the canary is
looked for in every object version in the bucket, in the Oxigraph server's files, and in the
Python objects reachable from each engine, before and after B's next operation.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from pathlib import Path

import anyio

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from conftest import free_port, make_settings  # noqa: E402
from servers import s3_server  # noqa: E402
from test_hard_forget_replicas import (  # noqa: E402
    endpoints,
    held,
    objects_holding,
    oxigraph_serve,
)

from cranimem_mcp.backends.embeddings import OnnxEmbedder  # noqa: E402
from cranimem_mcp.engine import MemoryEngine  # noqa: E402
from cranimem_mcp.graph.rewrite import files_holding  # noqa: E402


def say(line: str) -> None:
    sys.stdout.write(line + "\n")


async def scenario(versioned: bool) -> None:
    canary = "Qzv" + uuid.uuid4().hex[:14]
    tmp = Path(tempfile.mkdtemp(prefix="measure-hard-forget-"))
    port, embedder = free_port(), OnnxEmbedder(threads=1)
    with s3_server() as s3, oxigraph_serve(tmp / "oxigraph", port) as served:
        episodic = s3.location("memories")
        if versioned:
            import boto3

            keys = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
            client = boto3.client("s3", endpoint_url=s3.url, region_name="us-east-1", **keys)
            on = {"Status": "Enabled"}
            client.put_bucket_versioning(Bucket="memories", VersioningConfiguration=on)
        sections = {
            "episodic": episodic,
            "graph": endpoints(port),
            "gating": {"tau_noise": -1.0, "default_gate": False},
            "consolidation": {"tau_consolidation": 0.0, "every_n_writes": 0, "interval_seconds": 0},
        }
        a_settings, b_settings = (make_settings(tmp / n, **sections) for n in "ab")
        async with (
            MemoryEngine(a_settings, embedder=embedder, background=False) as a,
            MemoryEngine(b_settings, embedder=embedder, background=False) as b,
        ):
            await a.remember("I live in Paris with Alex.")
            ids = [(await a.remember(text)).id for text in (
                f"My locker code at Acme Robotics is {canary}.",
                f"{canary} is the name of my colleague at Globex.",
            )]  # fmt: skip
            say(f"promoted {(await a.consolidate()).promoted}")
            await b.recall(f"locker code {canary}")
            say(f"before the forget: A holds it at {sorted(set(held(a, canary)))}")
            say(f"                   B holds it at {sorted(set(held(b, canary)))}")
            await a.forget(ids=ids, hard=True)
            say(f"after A's hard forget: A {sorted(set(held(a, canary)))}")
            say(f"  B, idle: {sorted(set(held(b, canary)))}")
            await b.recall("Where do I live?")
            say(f"  B, after one recall: {sorted(set(held(b, canary)))}")
        count, hits = objects_holding(s3, "memories", canary)
        say(f"bucket ({'versioned' if versioned else 'unversioned'}): {count} object versions, "
            f"{len(hits)} hold the canary {sorted(set(hits))[:3]}")  # fmt: skip
        served.stop()
    found = [p.name for p in files_holding(tmp / "oxigraph", canary)]
    say(f"Oxigraph's files, server stopped: {len(found)} hold the canary {found}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versioned", action="store_true", help="turn bucket versioning on")
    anyio.run(scenario, parser.parse_args().versioned)


if __name__ == "__main__":
    main()
