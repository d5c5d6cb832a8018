"""The narrated demo (``scripts/demo``): what it promises to show, it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from cranimem_mcp.cli.demo import run_demo
from cranimem_mcp.config import load_settings


@pytest.mark.slow  # over ~5 s
@pytest.mark.anyio
async def test_demo_shows_a_prune_and_the_restored_memory_coming_back(tmp_path: Path) -> None:
    lines: list[str] = []
    await run_demo(load_settings(home=tmp_path / "demo"), lines.append)
    text = "\n".join(lines)
    consolidation = text.split("== 3.")[1].split("== 4.")[0]
    forget = text.split("== 5.")[1].split("== 6.")[0]
    stats = text.split("== 6.")[1]

    # replay prunes the vague write the gate kept, and names it
    assert "pruned 1;" in consolidation
    assert "  trash    m_" in consolidation and "<= tau 0.300" in consolidation
    assert "pruned to the trash (restorable" in consolidation
    assert "'A ryokan would be nice.'" in consolidation

    # the forgotten memory is gone from recall, then comes back (with its fact) once restored
    gone, back = forget.split("restored 1: m_")
    assert "allergic to shellfish" not in gone
    assert "the memory is back" in back
    assert "I am allergic to shellfish" in back and "allergic_to" in back

    # the pruned memory is still in the trash at the end; the models line is readable
    assert ", trash 1," in stats
    assert "models: embedder " in stats and "{" not in stats
