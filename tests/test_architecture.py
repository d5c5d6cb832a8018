"""The layering of STYLE.md, checked by parsing imports: nothing imports the edges (server,
cli, eval), only the engine among core modules sees Settings, and the domain's rules
(naming, temporal) import nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "cranimem_mcp"
EDGES = {"server", "cli", "eval", "demo"}
CORE = {"embeddings", "llm", "episodic", "graph", "gating", "consolidation", "retrieval", "heap",
        "linkage", "heuristics", "extraction", "models", "errors", "state", "working_set",
        "validation", "naming", "temporal", "vocabulary", "graph_io", "provenance", "records",
        "retention"}  # fmt: skip
DOMAIN = {"naming", "temporal"}  # the domain's rules, pure: they import nothing of ours


def internal_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cranimem_mcp."):
            found.add(node.module.split(".")[1])
    return found


def test_nothing_imports_the_edges():
    for path in PACKAGE.glob("*.py"):
        if path.stem in EDGES:
            continue
        bad = internal_imports(path) & EDGES
        assert not bad, f"{path.name} imports {bad}"


def test_core_modules_do_not_read_settings():
    for name in CORE:
        imports = internal_imports(PACKAGE / f"{name}.py")
        assert "config" not in imports, f"{name}.py imports config"


def test_domain_rules_import_nothing_internal():
    for name in DOMAIN:
        imports = internal_imports(PACKAGE / f"{name}.py")
        assert not imports, f"{name}.py imports {imports}"


def test_no_print_in_the_package_outside_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.name == "cli.py":
            continue
        calls = [
            n for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"
        ]  # fmt: skip
        assert not calls, f"print() in {path}"


def test_the_engine_parts_do_not_import_the_engine():
    # The engine hands them their collaborators (coordination.py); they never reach back.
    parts = CORE | {"replay", "pruning", "forgetting", "consistency", "coordination", "portability"}
    for name in parts:
        imports = internal_imports(PACKAGE / f"{name}.py")
        assert "engine" not in imports, f"{name}.py imports the engine"
