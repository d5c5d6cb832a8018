"""Handing freed heap memory back to the operating system.

glibc's allocator keeps memory that native libraries free (onnxruntime's session build,
LanceDB's compactions and table handles) in its arenas, so the process stays as large as
its peak. ``malloc_trim(0)`` returns the free pages. Measured here: building the embedder's
onnxruntime session left the process 163 MiB larger, 106 MiB after a trim (docs/RESULTS.md).
Elsewhere than glibc this does nothing.

Arrow allocates from a pool of its own (mimalloc in pyarrow's wheels), which a trim cannot
reach: :func:`arrow_on_malloc` points it at the C library's allocator. And glibc gives
threads that allocate at once arenas of their own (up to 8 per core), whose partly used
pages a trim cannot return either: :func:`limit_arenas` caps them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import cache
from typing import Any

logger = logging.getLogger(__name__)


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def trim() -> bool:
    """Return free heap pages to the OS; False where the C library cannot."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))


def arrow_on_malloc() -> None:
    """Make pyarrow allocate with ``malloc`` (its "system" pool) from now on, so a trim
    returns what Arrow frees too. At 10k memories its bundled mimalloc kept ~25 MiB of the
    first recall's buffers (reading the working set's rows) for good: RSS 645 -> 619 MiB,
    peak 651 -> 624 MiB, recall and write CPU unchanged (docs/RESULTS.md, "Server memory at
    10k, again"). Buffers made before keep their own pool; calling this again changes nothing."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())


M_ARENA_MAX = -8  # glibc's mallopt parameter


def limit_arenas(count: int = 2) -> bool:
    """At most ``count`` glibc arenas from now on (threads then share them); False where
    the C library has no such setting. Each LanceDB maintenance spreads its allocations over
    the arenas of its worker threads, and what is left half-used in each stays resident: on
    a 10k store, six maintenances (30 writes apart) took the process 617 -> 748 MiB with the
    default arenas and 621 -> 663 MiB with two (docs/RESULTS.md, "Server memory at 10k,
    again"). Arenas that exist already stay; new threads share them."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, count))
