"""LanceDB, imported without its REST namespace client.

``import lancedb`` (0.40) imports ``lance_namespace``, which imports the package
``lance_namespace_urllib3_client``; that package's ``__init__`` builds every API class of the
namespace REST service (pydantic ``validate_call`` on each method): 1.2-2 s of CPU on this
machine, most of a one-shot command's start, for a client a local table never calls.

So the package goes into ``sys.modules`` without running its ``__init__``. Its submodules (the
request and response models ``lance_namespace`` re-exports) import as usual, and the first
attribute asked of the package itself runs the real ``__init__``: whoever uses the REST client
gets all of it. If LanceDB was imported before this module, nothing changes.

And on Python 3.11 LanceDB decorates ~100 methods with the ``overrides`` package, whose
``@override`` disassembles each class's bytecode to check it (~0.25 s here, 0.5 s under a
profiler); on 3.12 and later LanceDB uses ``typing.override``, which only marks the method.
While LanceDB imports, it gets that marker here too (``typing_extensions.override``); the stand-in
leaves ``sys.modules`` afterwards, so anyone else importing ``overrides`` gets the package.

The episodic store imports LanceDB from here and nowhere else, and reads its errors with
:func:`reason`.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

REST_CLIENT = "lance_namespace_urllib3_client"


def _defer_rest_client() -> None:
    spec = importlib.util.find_spec(REST_CLIENT) if REST_CLIENT not in sys.modules else None
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader, lock, loaded = spec.loader, threading.Lock(), []

    def load_all(attr: str) -> Any:
        if attr.startswith("__"):  # import machinery probing dunders: not a use
            raise AttributeError(attr)
        with lock:
            if not loaded:
                loaded.append(True)
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        return getattr(module, attr)

    module.__getattr__ = load_all  # type: ignore[attr-defined]
    sys.modules[REST_CLIENT] = module


@contextmanager
def _override_marker() -> Iterator[None]:
    if sys.version_info >= (3, 12) or "overrides" in sys.modules:
        yield
        return
    import typing_extensions

    class EnforceOverrides:  # what LanceDB defines for itself on 3.12
        pass

    stand_in = types.ModuleType("overrides")
    stand_in.override = typing_extensions.override  # type: ignore[attr-defined]
    stand_in.EnforceOverrides = EnforceOverrides  # type: ignore[attr-defined]
    sys.modules["overrides"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("overrides") is stand_in:
            del sys.modules["overrides"]


_defer_rest_client()
with _override_marker():
    import lancedb
    from lancedb.index import FTS, Bitmap, BTree
    from lancedb.rerankers import LinearCombinationReranker, RRFReranker

__all__ = [
    "FTS",
    "Bitmap",
    "BTree",
    "LinearCombinationReranker",
    "RRFReranker",
    "lancedb",
    "reason",
]


def reason(exc: BaseException) -> str:
    """The cause a LanceDB error carries, in a line: what its object store answered (an S3
    error code, its message and bucket; a connection refused) rather than the nested Rust
    debug output around it, which runs to a kilobyte."""
    text = str(exc)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    if code is not None:
        message = re.search(r"<Message>([^<]+)</Message>", text)
        bucket = re.search(r"<BucketName>([^<]+)</BucketName>", text)
        return (
            code[1]
            + (f": {message[1]}" if message else "")
            + (f" (bucket {bucket[1]!r})" if bucket else "")
        )
    if "connect error" in text or "ConnectError" in text:
        where = re.search(r"uri: Some\((\w+://[^/)\s]+)", text)
        return f"cannot connect to {where[1] if where else 'the object store'}"
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:300] + "..."
