"""The replica proof, long form (docs/SCALING.md, "The replica proof"):

.venv/bin/python scripts/replica_proof.py [--replicas 3] [--clients 4] [--writes 200]
    [--no-kill] [--lease-seconds 8] [--recalls 40] [--keep DIR]
    [--fault drop|duplicate] [--env CRANIMEM_CONSOLIDATION__LEASE=local]

Starts moto's S3 server and `oxigraph serve` in processes of their own and N `cranimem-mcp
serve --transport http` replicas over them, has the clients write at once (then, unless
--no-kill, SIGKILLs a replica mid-consolidation while they write on), and checks that no
acknowledged write was lost, no content stored or promoted twice, no two consolidations ran
at once, another replica took the lease over, and `cranimem-mcp check` is clean. Prints the
report; exits 1 on any violation. The harness is tests/replicas.py (the CI test's too).
--fault and --env break a run on purpose, to see a check fire.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio

os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from replicas import prove  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument(
        "--writes", type=int, default=200, help="per client (the kill round: a quarter, at least 4)"
    )
    p.add_argument("--no-kill", action="store_true", help="no second round, no SIGKILL")
    p.add_argument("--lease-seconds", type=float, default=8.0)
    p.add_argument("--takeover-wait", type=float, help="seconds (default 3 x lease + 60)")
    p.add_argument("--recalls", type=int, default=40, help="tokens recalled via another replica")
    p.add_argument("--fault", choices=["drop", "duplicate"])
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE for the replicas")
    p.add_argument("--keep", type=Path, help="run directory to keep (logs, stores)")
    args = p.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="replica-proof-") as tmp:
        run_dir = args.keep or Path(tmp)
        run_dir.mkdir(parents=True, exist_ok=True)
        report = anyio.run(lambda: prove(
            run_dir, replicas=args.replicas, clients=args.clients, writes=args.writes,
            kill=not args.no_kill, lease_seconds=args.lease_seconds,
            takeover_wait=args.takeover_wait, recalls=args.recalls, fault=args.fault, env=env,
        ))  # fmt: skip
    print(report.text())
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
