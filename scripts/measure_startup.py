"""Spawn `cranimem-mcp serve` over stdio and time spawn -> initialize response, and
spawn -> first `remember` answered (the engine open included). Median of N runs.

    .venv/bin/python scripts/measure_startup.py [-n 5] [--repo DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "measure", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "remember", "arguments": {"content": "I live in Lisbon."}},
}


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) the process has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def once(repo: str, call: bool) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRANIMEM_")}
        env.update(HF_HUB_OFFLINE="1", LANCE_LOG="error", PYTHONPATH=repo,
                   CRANIMEM_MODELS__TAGGER="heuristic", CRANIMEM_MODELS__EXTRACTOR="heuristic",
                   CRANIMEM_MODELS__EMBEDDER="local")  # fmt: skip
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cranimem_mcp.cli", "serve", "--data-dir", home],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd=repo,
        )  # fmt: skip
        assert proc.stdin and proc.stdout
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        t_init = time.perf_counter() - started
        cpu_init = cpu_seconds(proc.pid)
        assert json.loads(line)["id"] == 1, line
        if not call:
            proc.stdin.close()
            proc.wait(timeout=120)
            return t_init, cpu_init, float("nan")
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(CALL) + "\n").encode())
        proc.stdin.flush()
        while True:
            msg = json.loads(proc.stdout.readline())
            if msg.get("id") == 2:
                break
        t_call = time.perf_counter() - started
        proc.stdin.close()
        proc.wait(timeout=60)
        return t_init, cpu_init, t_call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--repo", default=os.getcwd())
    parser.add_argument("--call", action="store_true", help="also time the first remember")
    args = parser.parse_args()
    runs = [once(args.repo, args.call) for _ in range(args.n)]
    inits = [r[0] for r in runs]
    cpus = [r[1] for r in runs]
    print(f"spawn->initialize: median {statistics.median(inits):.2f} s wall "
          f"(min {min(inits):.2f}, max {max(inits):.2f}), "
          f"{statistics.median(cpus):.2f} s CPU, over {args.n} runs")  # fmt: skip
    if args.call:
        calls = [r[2] for r in runs]
        print(f"spawn->first remember answered: median {statistics.median(calls):.2f} s "
              f"(min {min(calls):.2f}, max {max(calls):.2f})")  # fmt: skip
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
