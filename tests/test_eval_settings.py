"""The benchmark harness's settings: the ``no-gate`` ablation stores every write."""

from __future__ import annotations

from pathlib import Path

import pytest

from cranimem_mcp.backends.embeddings import OnnxEmbedder
from cranimem_mcp.config import Settings
from cranimem_mcp.engine import MemoryEngine
from cranimem_mcp.eval.systems import eval_settings

PLEASANTRY = "Great question! Happy to help with that."


@pytest.mark.anyio
@pytest.mark.parametrize(("gate", "status"), [(True, "rejected"), (False, "stored")])
async def test_no_gate_stores_what_the_default_gate_rejects(
    tmp_path: Path, minilm: OnnxEmbedder, gate: bool, status: str
) -> None:
    # A scope with the default goal goes through the default gate, which the ablation must
    # turn off as well (it once set only the goal-conditioned gate's threshold).
    settings = eval_settings(Settings(), tmp_path / "home", gate=gate)
    async with MemoryEngine(settings, embedder=minilm, background=False) as engine:
        result = await engine.remember(PLEASANTRY, "chat")
    assert result.status == status
