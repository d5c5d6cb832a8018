"""One owner per data directory: the process that opens the stores.

The owner holds an exclusive OS lock (``flock``) on ``<home>/owner.lock`` for as long as it
runs; the kernel drops it when the process exits, however it exits, so a crashed owner never
leaves a stale lock. An owner that serves other processes also listens on a loopback port,
recorded in ``<home>/owner.json`` (written after the listener is up, removed on a clean exit),
and accepts only the per-directory token kept in ``<home>/owner-token`` (mode 0600, made once
and kept, so a bridge reconnects to a later owner with the same token).

Invariant: nothing writes the stores without holding the lock. ``owner.json`` is a hint:
a reader trusts it only while the lock is held by someone else, and only after the token
handshake succeeds on that port.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cranimem_mcp.errors import StoreError

LOCK_FILE = "owner.lock"
INFO_FILE = "owner.json"
TOKEN_FILE = "owner-token"

# How the owner's endpoint and a bridge meet on the port of owner.json: the MCP path, and
# the JSON-RPC error code of an error the owner's engine raised (``data["type"]``: its class).
ENDPOINT = "/mcp"
OPERATION_ERROR = -32001


class OwnerGone(StoreError):
    """The owner did not answer. ``sent``: the request may have reached it."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


@dataclass(frozen=True)
class OwnerInfo:
    pid: int
    port: int


class DirectoryLock:
    """The exclusive ownership lock of one data directory. Not re-entrant."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks."""
        if self._fd is not None:
            return True
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot lock the data directory {self.home}: {exc}") from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        clear_owner_info(self.home)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def holder_pid(self) -> int | None:
        """The pid the current holder wrote (best effort, for messages)."""
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def owner_token(home: Path) -> str:
    """The directory's bridge token: generated once into a 0600 file, then reused."""
    path = home / TOKEN_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return token


def write_owner_info(home: Path, port: int) -> None:
    tmp = home / (INFO_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"pid": os.getpid(), "port": port}, fh)
    os.replace(tmp, home / INFO_FILE)


def read_owner_info(home: Path) -> OwnerInfo | None:
    try:
        data = json.loads((home / INFO_FILE).read_text(encoding="utf-8"))
        return OwnerInfo(pid=int(data["pid"]), port=int(data["port"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clear_owner_info(home: Path) -> None:
    info = read_owner_info(home)
    if info is not None and info.pid == os.getpid():
        (home / INFO_FILE).unlink(missing_ok=True)
