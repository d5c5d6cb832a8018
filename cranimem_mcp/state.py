"""Small durable engine state: per-scope goals, turn counters, rejected-write counts and the
last consolidation report. One JSON file, replaced atomically (write, fsync, rename)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import StoreError
from .models import ConsolidationReport


class EngineState(BaseModel):
    goals: dict[str, str] = {}
    turns: dict[str, int] = {}
    rejected: dict[str, int] = {}
    reports: dict[str, ConsolidationReport] = {}
    embedder: dict[str, Any] | None = None
    # Long-term memories linked by the heuristic fallback, to re-extract with the LLM.
    reextract: dict[str, list[str]] = {}


def load_state(path: Path) -> EngineState:
    if not path.exists():
        return EngineState()
    try:
        return EngineState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:  # one line, not pydantic's dump
        why = exc.errors(include_url=False)[0]["msg"]
        raise StoreError(f"cannot read engine state {path}: {why}") from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read engine state {path}: {exc}") from exc


def save_state(path: Path, state: EngineState) -> None:
    tmp = path.with_suffix(".tmp")
    data = json.dumps(state.model_dump(mode="json"), ensure_ascii=False, indent=1)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
