"""cranimem-mcp: a gated, bounded, multi-stage memory for AI assistants (the CraniMem paper).

The package's faces (``server/``, ``cli/``, ``ui/``, ``sharing/``, ``eval/``) call one
:class:`MemoryService`; :class:`MemoryEngine` implements it over the paper's stages, one
folder each: ``secrets/`` and ``gate/`` (B.1), ``buffer/`` (B.2), ``replay/`` (B.3),
``graph/`` and ``extraction/`` (B.4), ``recall/`` and ``conversation/`` (B.5), with the models
in ``backends/``. What is named here is the public API; the names load on first use, so
importing the package (or running ``cranimem-mcp --help``) loads no store and no model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cranimem_mcp.config import Settings, load_settings
    from cranimem_mcp.engine import MemoryEngine
    from cranimem_mcp.errors import (
        BackendUnavailable,
        ConfigError,
        CranimemError,
        InvalidInput,
        ModelOutputError,
        NotFound,
        StoreError,
    )
    from cranimem_mcp.models import (
        ConsolidationReport,
        ForgetResult,
        RecallItem,
        RecallResult,
        RememberResult,
        RestoreResult,
        Stats,
    )
    from cranimem_mcp.service import MemoryService

_WHERE = {
    "MemoryEngine": "engine",
    "MemoryService": "service",
    "Settings": "config",
    "load_settings": "config",
    **dict.fromkeys(
        ("CranimemError", "ConfigError", "InvalidInput", "NotFound", "StoreError",
         "BackendUnavailable", "ModelOutputError"),
        "errors",
    ),
    **dict.fromkeys(
        ("RememberResult", "RecallResult", "RecallItem", "ForgetResult", "RestoreResult",
         "ConsolidationReport", "Stats"),
        "models",
    ),
}  # fmt: skip
__all__ = [
    "BackendUnavailable",
    "ConfigError",
    "ConsolidationReport",
    "CranimemError",
    "ForgetResult",
    "InvalidInput",
    "MemoryEngine",
    "MemoryService",
    "ModelOutputError",
    "NotFound",
    "RecallItem",
    "RecallResult",
    "RememberResult",
    "RestoreResult",
    "Settings",
    "Stats",
    "StoreError",
    "load_settings",
]
assert set(__all__) == set(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'cranimem_mcp' has no attribute {name!r}")
    value = getattr(import_module(f"cranimem_mcp.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
