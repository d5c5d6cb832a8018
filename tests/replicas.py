"""The replica proof (docs/SCALING.md, "The replica proof"), written once for its two users:
``scripts/replica_proof.py`` (the long form, a documented command) and
``tests/test_replica_proof.py`` (the short form, in CI).

:func:`prove` starts moto's S3 server in a process of its own (``tests/servers.py s3``: one
request at a time), one ``oxigraph serve`` and ``replicas`` processes of ``cranimem-mcp
serve --transport http``, each with its own data directory and all with one TOML file that
puts the table in the bucket and the graph in the server, background consolidation on
(every few writes and on a timer) and the SPARQL lease (``lease = "auto"``). ``clients``
real MCP clients (streamable HTTP) then each write ``writes`` pinned memories at once, each
holding a token of its own and sent to the replicas in turn. With ``kill``, a second round
of writes runs while the harness watches the logs: the first replica seen in a consolidation
is SIGKILLed mid-run and the others take the rest. Then :func:`verify` reads what is left
(the table, the replicas' logs, every replica's list of memories, recalls, ``cranimem-mcp
check``) and :class:`Report` lists each violation:

- **lost**: an acknowledged token missing from the table, or from the memories listed by a
  replica other than the one it was written to, or not recalled through another replica;
- **stored twice**: a token in more than one row, or one scope's content in two live rows;
- **promoted twice**: replay logs the ids each commit moved to long-term memory ("promoted
  by H: ids", after the table's commit); an id in two such lines was promoted twice;
- **overlap**: the "consolidation started/finished by H (trigger, token N)" lines of all
  logs, as intervals: two intervals overlap, a run has no fencing token, tokens do not grow
  in the order the runs started, or a run never ends (a killed replica's run ends at the
  kill);
- **takeover** (with ``kill``): no run of another replica with a larger token after the kill;
- **check**: ``cranimem-mcp check`` on the shared stores reports a problem;
- **errors**: an ERROR line in a replica's log, or a write that failed on a live replica.

The checks are plain functions of what was collected (``find_lost``, ``runs_of``,
``overlaps``, ...), so tests can feed them broken inputs; ``fault`` breaks a real run
(``"drop"``: a client counts a write it never sent; ``"duplicate"``: a row copied into the
table behind the key's back) and ``env`` reaches the replicas (``CRANIMEM_CONSOLIDATION__
LEASE=local`` makes the lease a no-op).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
from servers import CLI, Served, answering, free_port, server_env, wait_answering

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
TOKEN = "replica-proof-" + "t" * 24
BUCKET, PREFIX = "cranimem-proof", "team"
CALL_TIMEOUT = 180.0  # one tool call; a loaded machine with moto serialising every request
RETRIES = 2  # a call whose session ended under it is sent again this often (Clients.call)

_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) ([\w.]+): (.*)$")
_RUN = re.compile(r"consolidation (started|finished) by (\S+) \((\w+), token (\S+)\)")
_STOPPED = re.compile(r"background consolidation of \S+ stopped: ")
_PROMOTED = re.compile(r"promoted by (\S+): (.*)$")


@dataclass
class Write:
    client: int
    token: str
    replica: int
    acknowledged: bool
    seconds: float = 0.0
    memory_id: str | None = None
    error: str | None = None


@dataclass
class Run:
    """One consolidation run as the logs tell it."""

    replica: int
    holder: str
    trigger: str
    token: int | None
    start: datetime
    end: datetime | None = None
    ended: str = "open"  # finished | stopped (the lease was lost) | killed | open


@dataclass
class Replica:
    index: int
    home: Path
    url: str
    served: Served
    killed_at: datetime | None = None

    @property
    def alive(self) -> bool:
        return self.killed_at is None and self.served.proc.poll() is None

    def log(self) -> str:
        return self.served.output()[1].decode(errors="replace")


@dataclass
class Report:
    replicas: int
    clients: int
    writes: int
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def fail(self, check: str, what: str) -> None:
        self.violations.append(f"{check}: {what}")

    def text(self) -> str:
        lines = [f"replica proof: {self.replicas} replicas, {self.clients} clients x "
                 f"{self.writes} writes"]  # fmt: skip
        lines += [f"  {k}: {v}" for k, v in self.figures.items()]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  VIOLATION {v}" for v in self.violations[:60]]
        if len(self.violations) > 60:
            lines.append(f"  ... and {len(self.violations) - 60} more violations")
        lines.append("  result: " + ("FAIL" if self.violations else "all checks passed"))
        return "\n".join(lines)


# --- the checks: plain functions of what was collected ------------------------------------


def stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f")


def log_lines(log: str) -> Iterator[tuple[datetime, str, str, str]]:
    """(time, level, logger, message) of each logging line (tracebacks are skipped)."""
    for line in log.splitlines():
        if match := _LINE.match(line):
            when, level, name, message = match.groups()
            yield stamp(when), level, name, message


def runs_of(replica: int, log: str, killed_at: datetime | None = None) -> list[Run]:
    """The consolidation runs of one replica's log, in order. Runs of one process never
    interleave (its consolidation lock), so a "finished" or "stopped" line ends the open one."""
    runs: list[Run] = []
    for when, _level, name, message in log_lines(log):
        if name != "cranimem_mcp.replay.consolidator":
            continue
        if match := _RUN.search(message):
            kind, holder, trigger, token = match.groups()
            if kind == "started":
                runs.append(Run(replica, holder, trigger, None if token == "None" else int(token),
                                when))  # fmt: skip
            elif runs and runs[-1].end is None:
                runs[-1].end, runs[-1].ended = when, "finished"
        elif _STOPPED.search(message) and runs and runs[-1].end is None:
            runs[-1].end, runs[-1].ended = when, "stopped"
    if killed_at is not None and runs and runs[-1].end is None:
        runs[-1].end, runs[-1].ended = killed_at, "killed"
    return runs


def overlaps(runs: list[Run], report: Report) -> None:
    """At most one consolidation at any time, each under a fencing token larger than the
    last one's; every run ends."""
    ordered = sorted(runs, key=lambda r: r.start)
    for run in ordered:
        if run.token is None:
            report.fail("overlap", f"replica {run.replica} ran at {run.start} without a token")
        if run.end is None:
            report.fail("overlap", f"replica {run.replica}'s run of {run.start} never ended")
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a.end is None or b.start < a.end:
            report.fail("overlap", f"replica {b.replica}'s run started at {b.start} while "
                        f"replica {a.replica}'s (token {a.token}) ran")  # fmt: skip
        if a.token is not None and b.token is not None and b.token <= a.token:
            report.fail("overlap", f"token {b.token} (replica {b.replica}, {b.start}) after "
                        f"token {a.token}")  # fmt: skip


def promotions(logs: dict[int, str]) -> dict[str, list[tuple[int, datetime]]]:
    """Each memory id -> the (replica, time) of every commit that promoted it."""
    seen: dict[str, list[tuple[int, datetime]]] = defaultdict(list)
    for replica, log in logs.items():
        for when, _level, name, message in log_lines(log):
            if name == "cranimem_mcp.replay.consolidator" and (match := _PROMOTED.search(message)):
                for memory_id in match.group(2).split():
                    if memory_id != "none":
                        seen[memory_id].append((replica, when))
    return seen


def promoted_twice(seen: dict[str, list[tuple[int, datetime]]], report: Report) -> None:
    for memory_id, times in sorted(seen.items()):
        if len(times) > 1:
            by = ", ".join(f"replica {r} at {t:%H:%M:%S.%f}" for r, t in times)
            report.fail("promoted twice", f"{memory_id} by {by}")


def find_lost(
    writes: list[Write], rows: list[dict[str, Any]], listed: dict[int, set[str]], report: Report
) -> None:
    """Every acknowledged token is in the table and in the list of a replica other than the
    one that took it (the same one when there is no other)."""
    in_table = {t for r in rows for t in tokens_in(r["content"])}
    for w in writes:
        if not w.acknowledged:
            continue
        if w.token not in in_table:
            report.fail("lost", f"{w.token} (client {w.client}, replica {w.replica}) not in the "
                        "table")  # fmt: skip
        others = [r for r in listed if r != w.replica] or list(listed)
        for r in others:
            if w.token not in listed[r]:
                report.fail("lost", f"{w.token} (written to replica {w.replica}) not listed by "
                            f"replica {r}")  # fmt: skip


def stored_twice(rows: list[dict[str, Any]], report: Report) -> None:
    tokens = Counter(t for r in rows for t in set(tokens_in(r["content"])))
    for token, n in sorted(tokens.items()):
        if n > 1:
            report.fail("stored twice", f"{token} in {n} rows")
    live = Counter((r["scope"], r["content_hash"]) for r in rows if r["tier"] != "trash")
    for (scope, digest), n in sorted(live.items()):
        if n > 1:
            report.fail("stored twice", f"content {digest[:12]} in {n} live rows of {scope}")
    ids = Counter(r["id"] for r in rows)
    for memory_id, n in sorted(ids.items()):
        if n > 1:
            report.fail("stored twice", f"id {memory_id} in {n} rows")


def errors_in(logs: dict[int, str], report: Report) -> None:
    for replica, log in logs.items():
        for when, level, name, message in log_lines(log):
            if level in ("ERROR", "CRITICAL"):
                report.fail("errors", f"replica {replica} {when} {name}: {message[:300]}")


_TOKEN = re.compile(r"\bprf\w+\b")


def tokens_in(text: str) -> list[str]:
    return _TOKEN.findall(text)


def content(token: str, client: int, n: int) -> str:
    # A relation the extractor links, so a run writes the graph too; the token is an
    # identifier recall's exact path finds.
    return f"Worker {token} works at Company{n % 7} and keeps note {token}."


# --- the cluster ---------------------------------------------------------------------------


def replica_config(run_dir: Path, s3_url: str, sparql: str, lease_seconds: float) -> Path:
    options = {"aws_endpoint": s3_url, "aws_access_key_id": "test", "aws_secret_access_key":
               "test", "aws_region": "us-east-1", "allow_http": "true"}  # fmt: skip
    inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in options.items())
    path = run_dir / "replica.toml"
    path.write_text(
        f'[episodic]\nuri = "s3://{BUCKET}/{PREFIX}"\nstorage_options = {{ {inline} }}\n'
        "capacity = 100000  # the bound's eviction stays out of the proof: runs only\n"
        f'[graph]\nstore = "sparql"\nquery_endpoint = "{sparql}/query"\n'
        f'update_endpoint = "{sparql}/update"\n'
        "[consolidation]\nevery_n_writes = 10\ninterval_seconds = 5.0\nidle_seconds = 2.0\n"
        f'lease = "auto"\nlease_seconds = {lease_seconds}\n'
        '[models]\nembedder = "local"\ntagger = "heuristic"\nextractor = "heuristic"\n'
    )
    return path


@contextlib.contextmanager
def cluster(
    run_dir: Path, replicas: int, lease_seconds: float, env: dict[str, str]
) -> Iterator[tuple[list[Replica], Path, str, str]]:
    """moto, Oxigraph and the replicas, all answering; stopped on the way out."""
    with contextlib.ExitStack() as stack:
        s3_port, graph_port = free_port(), free_port()
        s3_url = f"http://127.0.0.1:{s3_port}"
        moto = [sys.executable, str(Path(__file__).with_name("servers.py")), "s3", "--port",
                str(s3_port)]  # fmt: skip
        stack.enter_context(answering(moto, probe=s3_url, timeout=120))
        httpx.put(f"{s3_url}/{BUCKET}", timeout=30).raise_for_status()
        sparql = f"http://127.0.0.1:{graph_port}"
        oxigraph = [OXIGRAPH, "serve", "--location", str(run_dir / "oxigraph"), "--bind",
                    f"127.0.0.1:{graph_port}"]  # fmt: skip
        stack.enter_context(answering(oxigraph, probe=f"{sparql}/query?query=ASK%7B%7D"))
        config = replica_config(run_dir, s3_url, sparql, lease_seconds)
        started = []
        for i in range(replicas):  # all at once: opening a fresh table races, as in production
            home, port = run_dir / f"replica-{i}", free_port()
            argv = [*CLI, "serve", "--transport", "http", "--port", str(port), "--data-dir",
                    str(home), "--config", str(config)]  # fmt: skip
            served = stack.enter_context(
                answering(argv, env=server_env(home, CRANIMEM_TOKEN=TOKEN, **env))
            )
            started.append(Replica(i, home, f"http://127.0.0.1:{port}/mcp", served))
        for r in started:
            wait_answering(r.served, r.url)
        yield started, config, s3_url, sparql


@dataclass
class Session:
    client: Any = None
    gone: anyio.Event = field(default_factory=anyio.Event)
    error: str | None = None


class Clients:
    """One MCP session per (client, replica) over streamable HTTP. Each session is owned by
    a task of its own: when its replica is killed, the SDK's transport fails its task group,
    which ends that task (and the calls waiting on it), not the harness."""

    def __init__(self, tg: anyio.abc.TaskGroup, replicas: list[Replica]) -> None:
        self.tg, self.replicas = tg, replicas
        self.sessions: dict[tuple[int, int], Session] = {}
        self.notes: list[str] = []

    async def _own(self, url: str, session: Session, ready: anyio.Event) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        try:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT) as http:
                async with Client(streamable_http_client(url, http_client=http), cache=None) as c:
                    session.client = c
                    ready.set()
                    await anyio.sleep_forever()
        except Exception as exc:  # noqa: BLE001 (its replica went away: the session is gone)
            session.error = cause(exc)  # the transport's own error, over "Connection closed"
        finally:
            session.gone.set()
            ready.set()

    async def session(self, client: int, replica: int) -> Session:
        key = (client, replica)
        if key not in self.sessions:
            self.sessions[key] = session = Session()
            ready = anyio.Event()
            self.tg.start_soon(self._own, self.replicas[replica].url, session, ready)
            await ready.wait()
        return self.sessions[key]

    async def call(self, client: int, replica: int, tool: str, args: dict[str, Any]) -> Any:
        """``tool`` on ``replica`` in ``client``'s session. A session that ends under the call
        while its replica lives is reopened and the call sent again, up to RETRIES times (a
        note each time), as a real client does with a request that got no answer: the SDK
        ends the whole session when one request's connection fails (an idle keep-alive
        connection the server closed as it was reused did that, under load). Sending again
        is safe here: a write's content holds its token, so a second copy of a write that did
        land is merged, not stored twice (and "stored twice" is checked)."""
        for attempt in range(RETRIES + 1):
            try:
                return await self._call_once(client, replica, tool, args)
            except ConnectionError as exc:
                if attempt == RETRIES or not self.replicas[replica].alive:
                    raise
                self.notes.append(f"{tool} by client {client} on replica {replica}: {exc}; "
                                  "sent again in a new session")  # fmt: skip
        raise AssertionError("unreachable")

    async def _call_once(self, client: int, replica: int, tool: str, args: dict[str, Any]) -> Any:
        session = await self.session(client, replica)
        result = None
        with anyio.fail_after(CALL_TIMEOUT):
            async with anyio.create_task_group() as tg:

                async def give_up() -> None:
                    await session.gone.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(give_up)
                if session.client is not None:
                    try:
                        result = await session.client.call_tool(tool, args)
                    except Exception as exc:  # noqa: BLE001 (the session closed under it)
                        if "Connection closed" not in str(exc):
                            raise
                        session.error = session.error or f"{type(exc).__name__}: {exc}"
                tg.cancel_scope.cancel()
        if result is None:
            self.sessions.pop((client, replica), None)  # the next call opens one
            with anyio.move_on_after(10):  # the transport's own error says why it ended
                await session.gone.wait()
            raise ConnectionError(f"the session with replica {replica} is gone: {session.error}")
        return result


def cause(exc: BaseException) -> str:
    """What ended a session: the innermost errors of the SDK's task groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(cause(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def write_round(
    clients: Clients, n_clients: int, writes: int, round_name: str, fault: str | None
) -> list[Write]:
    """Each client writes ``writes`` memories at once with the others, to the live replicas
    in turn; a write counts as acknowledged when the tool answered stored (or merged)."""
    done: list[Write] = []

    async def client(c: int) -> None:
        for n in range(writes):
            live = [r.index for r in clients.replicas if r.alive]
            replica = live[(c + n) % len(live)]
            token = f"prf{round_name}c{c}w{n:04d}"
            if fault == "drop" and c == 0 and n == writes // 2:
                done.append(Write(c, token, replica, True))  # counted, never sent
                continue
            started = time.perf_counter()
            try:
                args = {"content": content(token, c, n), "pin": True}
                result = await clients.call(c, replica, "remember", args)
            except Exception as exc:  # noqa: BLE001 (a killed replica: any transport error)
                done.append(Write(c, token, replica, False, error=f"{type(exc).__name__}: {exc}"))
                continue
            took = time.perf_counter() - started
            data = result.structured_content or {}
            ok = not result.is_error and data.get("status") in ("stored", "merged")
            error = None if ok else (result.content[0].text if result.content else "no answer")
            done.append(Write(c, token, replica, ok, took, data.get("id"), error))

    async with anyio.create_task_group() as tg:
        for c in range(n_clients):
            tg.start_soon(client, c)
    return done


async def kill_mid_run(replicas: list[Replica], since: datetime, report: Report) -> Run | None:
    """SIGKILL the first replica whose log shows a run started after ``since`` and not yet
    finished (never the last one alive)."""
    with anyio.move_on_after(300):
        while True:
            for r in replicas:
                if not r.alive or sum(x.alive for x in replicas) < 2:
                    continue
                runs = runs_of(r.index, r.log())
                if runs and runs[-1].end is None and runs[-1].start >= since:
                    r.served.proc.send_signal(signal.SIGKILL)
                    r.killed_at = datetime.now()
                    r.served.proc.wait()
                    report.figures["killed"] = (
                        f"replica {r.index} at {r.killed_at:%H:%M:%S.%f} in its run of token "
                        f"{runs[-1].token}"
                    )
                    return runs[-1]
            await anyio.sleep(0.05)
    report.fail("takeover", "no replica was seen mid-consolidation to kill")
    return None


async def wait_quiet(replicas: list[Replica], quiet: float, limit: float) -> None:
    """Until no replica has a run open and none started or ended for ``quiet`` seconds (a
    timer run may start right after a long run ends: the writes it did not see)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        latest, open_run = None, False
        for r in replicas:
            for run in runs_of(r.index, r.log(), r.killed_at):
                open_run |= run.end is None
                latest = max(latest or run.start, run.start, run.end or run.start)
        if not open_run and (latest is None or (datetime.now() - latest).total_seconds() > quiet):
            return
        await anyio.sleep(0.5)


# --- reading it back -----------------------------------------------------------------------


def table_rows(s3_url: str) -> list[dict[str, Any]]:
    """Every row of the shared table, read with LanceDB itself (not through our store)."""
    import lancedb

    options = {"aws_endpoint": s3_url, "aws_access_key_id": "test", "aws_secret_access_key":
               "test", "aws_region": "us-east-1", "allow_http": "true"}  # fmt: skip
    db = lancedb.connect(f"s3://{BUCKET}/{PREFIX}", storage_options=options)
    table = db.open_table("memories")
    columns = ["id", "scope", "tier", "content", "content_hash"]
    return table.to_arrow().select(columns).to_pylist()


def copy_a_row(s3_url: str) -> None:
    """The "duplicate" fault: a second row of one memory's content, added behind the key."""
    import lancedb

    options = {"aws_endpoint": s3_url, "aws_access_key_id": "test", "aws_secret_access_key":
               "test", "aws_region": "us-east-1", "allow_http": "true"}  # fmt: skip
    table = lancedb.connect(f"s3://{BUCKET}/{PREFIX}", storage_options=options).open_table(
        "memories"
    )
    row = next(r for r in table.to_arrow().to_pylist() if r["tier"] != "trash")
    row["id"], row["live_key"] = "m_" + uuid.uuid4().hex[:20], row["live_key"] + "-copy"
    table.add([row])


async def listed_by(clients: Clients, replica: int) -> set[str]:
    """The tokens of every memory (all tiers) a replica lists, page by page."""
    tokens: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        args = {"limit": 100, "offset": offset}
        page = await clients.call(0, replica, "list_memories", args)
        if page.is_error:
            raise AssertionError(f"list_memories on replica {replica}: {page.content[0].text}")
        data = page.structured_content
        tokens.update(t for item in data["items"] for t in tokens_in(item["content"]))
        offset = data["next_offset"]
    return tokens


async def recalled(clients: Clients, writes: list[Write], report: Report, sample: int) -> None:
    """``sample`` acknowledged tokens, each recalled through a replica that did not take it."""
    acked = [w for w in writes if w.acknowledged]
    step = max(1, len(acked) // max(1, sample))
    live = [r.index for r in clients.replicas if r.alive]
    for w in acked[::step][:sample]:
        other = next((r for r in live if r != w.replica), live[0])
        result = await clients.call(1 % len(live), other, "recall", {"query": w.token, "k": 20})
        items = [] if result.is_error else result.structured_content["items"]
        if not any(w.token in item["content"] for item in items):
            report.fail("lost", f"{w.token} (replica {w.replica}) not recalled by replica {other}")


def check_stores(config: Path, run_dir: Path, report: Report) -> None:
    """``cranimem-mcp check`` on the shared stores, from a data directory of its own."""
    home = run_dir / "checker"
    proc = subprocess.run([*CLI, "check", "--data-dir", str(home), "--config", str(config)],
                          env=server_env(home), capture_output=True, timeout=600)  # fmt: skip
    said = (proc.stdout + proc.stderr).decode(errors="replace").strip()
    report.figures["check"] = f"exit {proc.returncode}: {said.splitlines()[-1] if said else ''}"
    if proc.returncode != 0:
        report.fail("check", said[-2000:])


def latency(writes: list[Write], seconds: float, report: Report, label: str) -> None:
    acked = sorted(w.seconds for w in writes if w.acknowledged and w.seconds)
    if not acked:
        return
    p95 = acked[min(len(acked) - 1, round(0.95 * (len(acked) - 1)))]
    report.figures[label] = (f"{len(acked)} acknowledged of {len(writes)} in {seconds:.1f} s: "
                             f"{len(acked) / seconds:.2f} writes/s, p50 "
                             f"{1000 * statistics.median(acked):.0f} ms, p95 {1000 * p95:.0f} ms,"
                             f" load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip


# --- the whole proof -----------------------------------------------------------------------


async def prove(
    run_dir: Path,
    replicas: int = 3,
    clients: int = 4,
    writes: int = 200,
    kill: bool = True,
    lease_seconds: float = 8.0,
    takeover_wait: float | None = None,
    recalls: int = 40,
    fault: str | None = None,
    env: dict[str, str] | None = None,
) -> Report:
    report = Report(replicas, clients, writes)
    report.figures["load at start"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    with cluster(run_dir, replicas, lease_seconds, env or {}) as (nodes, config, s3_url, _):
        async with anyio.create_task_group() as sessions:
            pool = Clients(sessions, nodes)
            for c in range(clients):  # sessions opened before the clock starts
                for r in range(replicas):
                    await pool.session(c, r)
            started = time.perf_counter()
            done = await write_round(pool, clients, writes, "a", fault)
            latency(done, time.perf_counter() - started, report, "writes")
            killed: Run | None = None
            if kill and replicas > 1:
                since = datetime.now()
                async with anyio.create_task_group() as tg:

                    async def watch() -> None:
                        nonlocal killed
                        killed = await kill_mid_run(nodes, since, report)

                    tg.start_soon(watch)
                    second = await write_round(pool, clients, max(4, writes // 4), "b", None)
                    with anyio.move_on_after(takeover_wait or 3 * lease_seconds + 60):
                        while killed is None or not taken_over(nodes, killed):
                            await anyio.sleep(0.5)
                    tg.cancel_scope.cancel()
                done += second
                if killed is None and not any("takeover" in v for v in report.violations):
                    report.fail("takeover", "no replica was seen mid-consolidation to kill")
                if killed is not None and not taken_over(nodes, killed):
                    report.fail("takeover", f"no run with a token above {killed.token} after "
                                "the kill")  # fmt: skip
            await wait_quiet(nodes, quiet=12.0, limit=300.0)
            if fault == "duplicate":
                copy_a_row(s3_url)
            await verify(pool, nodes, done, config, s3_url, run_dir, report, recalls)
            sessions.cancel_scope.cancel()
    return report


def taken_over(nodes: list[Replica], killed: Run) -> bool:
    later = [x for r in nodes if r.alive for x in runs_of(r.index, r.log())]
    return any(x.token is not None and killed.token is not None and x.token > killed.token
               and x.end is not None for x in later)  # fmt: skip


async def verify(
    pool: Clients,
    nodes: list[Replica],
    writes: list[Write],
    config: Path,
    s3_url: str,
    run_dir: Path,
    report: Report,
    recalls: int,
) -> None:
    rows = table_rows(s3_url)
    try:
        listed = {r.index: await listed_by(pool, r.index) for r in nodes if r.alive}
        find_lost(writes, rows, listed, report)
        await recalled(pool, writes, report, recalls)
    finally:
        report.notes += pool.notes
        for r in nodes:  # kept whatever happens, to read
            (run_dir / f"replica-{r.index}.log").write_text(r.log())
    # After the table: a promotion in the rows read is logged by then (the line follows
    # the commit by milliseconds).
    logs = {r.index: r.log() for r in nodes}
    for r in nodes:
        (run_dir / f"replica-{r.index}.log").write_text(logs[r.index])
    stored_twice(rows, report)
    seen = promotions(logs)
    promoted_twice(seen, report)
    runs = [x for r in nodes for x in runs_of(r.index, logs[r.index], r.killed_at)]
    overlaps(runs, report)
    errors_in(logs, report)
    dead = {r.index for r in nodes if not r.alive}
    for w in writes:
        if not w.acknowledged and w.replica not in dead:
            report.fail("errors", f"{w.token} on live replica {w.replica}: {w.error}")
    unlogged = {r["id"] for r in rows if r["tier"] == "longterm"} - set(seen)
    if unlogged and not dead:  # a killed replica may have committed and died before its log
        report.fail("promoted twice", f"{len(unlogged)} long-term rows with no promotion logged")
    elif unlogged:
        report.notes.append(f"{len(unlogged)} long-term rows with no promotion logged")
    check_stores(config, run_dir, report)
    tiers = Counter(r["tier"] for r in rows)
    report.figures["table"] = f"{len(rows)} rows: " + ", ".join(f"{n} {t}" for t, n in
                                                                sorted(tiers.items()))  # fmt: skip
    report.figures["runs"] = (
        f"{len(runs)} consolidation runs, tokens "
        f"{[x.token for x in sorted(runs, key=lambda x: x.start)]}"
    )
    lost_acks = sum(not w.acknowledged for w in writes)
    report.figures["unacknowledged"] = f"{lost_acks} (replicas killed: {sorted(dead) or 'none'})"
    report.figures["promotions logged"] = str(sum(len(v) for v in seen.values()))
