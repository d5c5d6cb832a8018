"""The layering of STYLE.md, checked by parsing imports: nothing imports the edges (server,
cli, eval), only the engine among core modules sees Settings, and the domain's rules
(naming, temporal) import nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "cranimem_mcp"
CLI = {"cli", "cli_parser", "cli_serve", "cli_text"}  # the command line, split by concept
EDGES = {"server", "eval", "demo"} | CLI
CORE = {"embeddings", "llm", "episodic", "graph", "gating", "consolidation", "retrieval", "heap",
        "linkage", "heuristics", "extraction", "models", "errors", "state", "working_set",
        "validation", "naming", "temporal", "vocabulary", "graph_io", "provenance", "service",
        "inspection", "lexicon", "discourse", "verb_frames", "copulas"}  # fmt: skip
DOMAIN = {"naming", "temporal"}  # the domain's rules, pure: they import nothing of ours
STORES = {"engine", "episodic", "graph", "lance", "sparql"}
FACES = {"server", "ui", "http_transport"}  # call the memory service, never the stores


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
        if path.parent == PACKAGE and path.stem in CLI:
            continue
        calls = [
            n for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"
        ]  # fmt: skip
        assert not calls, f"print() in {path}"


def test_the_engine_parts_do_not_import_the_engine():
    # The engine hands them their collaborators (coordination.py); they never reach back.
    parts = CORE | {"intake", "replay", "pruning", "forgetting", "consistency", "coordination",
                    "portability"}  # fmt: skip
    for name in parts:
        imports = internal_imports(PACKAGE / f"{name}.py")
        assert "engine" not in imports, f"{name}.py imports the engine"


def test_the_faces_reach_the_stores_only_through_the_service():
    for name in FACES:
        bad = internal_imports(PACKAGE / f"{name}.py") & STORES
        assert not bad, f"{name}.py imports {bad}"
