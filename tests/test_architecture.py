"""The layering of docs/ARCHITECTURE.md, checked by parsing the package's source: every
module has a layer and imports only its own layer or those below; no import cycle (counting
``TYPE_CHECKING`` imports); only the faces reach the engine, and they never reach the
stores; no module uses another module's private members; no module over ~500 lines; only
the engine among core modules sees Settings; nothing prints but the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "cranimem_mcp"

# Lowest first. A module imports its own layer and the layers below, never above.
LAYERS: dict[str, set[str]] = {
    # Types and pure rules: what every other part speaks.
    "domain": {"errors", "models", "naming", "temporal", "validation", "scopes", "lexicon",
               "vocabulary", "service", "consolidation", "transcript"},
    # Stores, model runtimes and the text readers: each wraps one library or one model.
    "adapters": {"heap", "rdf_memory", "journal", "lance", "lance_table", "fusion",
                 "episodic_search", "working_set", "records", "retention",
                 "episodic", "graph_io", "graph_delta", "provenance", "graph", "sparql",
                 "sparql_client",
                 "graph_rewrite", "state", "ownership", "lease", "onnx_graph", "embeddings",
                 "syntax", "llm",
                 "ollama_backend", "ollama_prompts", "ollama", "secret_finders", "secret_rules",
                 "redaction", "discourse", "verb_frames", "copulas", "extraction", "linkage",
                 "heuristics", "write_cues", "parse_cues", "durable"},
    # The paper's stages as logic over stores handed in: gate, buffer, replay, recall.
    "pipeline": {"gating", "retrieval", "rerank", "speakers", "exact", "inspection", "coordination",
                 "threads", "context",
                 "intake",
                 "progress", "replay", "pruning", "forgetting", "consistency", "portability"},
    # The composition of the pipeline, and what reads configuration to choose its parts.
    "engine": {"config", "engine", "providers", "preload", "doctor"},
    # What users and clients touch: they call the memory service.
    "faces": {"server", "http_transport", "http_auth", "arguments", "roots", "remote", "sharing",
              "ui", "cli", "cli_parser", "cli_text", "cli_serve", "demo", "eval"},
}  # fmt: skip
ORDER = list(LAYERS)
LAYER_OF = {m: layer for layer, mods in LAYERS.items() for m in mods}
STORES = {"episodic", "graph", "graph_io", "provenance", "sparql", "sparql_client", "lance",
          "lance_table", "fusion", "working_set",
          "journal", "rdf_memory", "graph_delta"}  # fmt: skip
# Faces that reach past the service on purpose, and why.
STORE_ACCESS = {
    "eval": "the benchmark fills a store directly at size N before it measures (bench.py)",
}
# The composition roots: the faces that open an engine in this process.
ENGINE_OPENERS = {"sharing", "demo", "eval"}
# Private members of third-party objects we use, and why.
THIRD_PARTY_PRIVATE = {
    "_normalize_scores": "LanceDB's hybrid-query score normalisation, reused for our fusion",
    "_request_raw": "the ollama client has no method for /api/version",
    "_client": "the ollama client's httpx client, for the host it resolved",
    "_lowlevel_server": "MCPServer has no public hook for client notifications (roots changed)",
}
MAX_LINES = 500


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return "eval" if rel.parts[0] == "eval" else rel.parts[0]


def modules() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.setdefault(module_name(path), []).append(path)
    return found


def internal_imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports, TYPE_CHECKING and function-level included;
    the eval subpackage counts as one module."""
    found = set()
    in_eval = path.parent.name == "eval"
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level >= 1:
            if in_eval and node.level == 1:
                found.add("eval")
            elif node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif (node.module or "").startswith("cranimem_mcp."):
            found.add(node.module.split(".")[1])
    return found


def imports_of(name: str) -> set[str]:
    return set().union(*(internal_imports(p) for p in modules()[name])) - {name}


def test_every_module_has_exactly_one_layer():
    listed = [m for mods in LAYERS.values() for m in mods]
    assert len(listed) == len(set(listed)), "a module is in two layers"
    unplaced = set(modules()) - set(listed)
    assert not unplaced, f"give these modules a layer in LAYERS: {sorted(unplaced)}"
    gone = set(listed) - set(modules())
    assert not gone, f"LAYERS names modules that do not exist: {sorted(gone)}"


def test_modules_import_only_their_layer_and_below():
    bad = []
    for name in modules():
        mine = ORDER.index(LAYER_OF[name])
        for other in imports_of(name):
            if ORDER.index(LAYER_OF[other]) > mine:
                bad.append(f"{name} ({LAYER_OF[name]}) imports {other} ({LAYER_OF[other]})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles_counting_type_checking_imports():
    graph = {name: imports_of(name) for name in modules()}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_only_the_composition_roots_open_an_engine():
    bad = {n for n in modules() if "engine" in imports_of(n)} - ENGINE_OPENERS
    assert not bad, f"these import the engine: {sorted(bad)} (they get a MemoryService)"


def test_faces_reach_the_stores_only_through_the_service():
    bad = []
    for name in LAYERS["faces"] - set(STORE_ACCESS):
        if stores := imports_of(name) & STORES:
            bad.append(f"{name} imports {sorted(stores)}")
        for path in modules()[name]:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in ("episodic", "graph"):
                    bad.append(f"{path.name}:{node.lineno} reads .{node.attr}")
    assert not bad, "\n".join(bad)


def defined_private_names(path: Path) -> set[str]:
    """Private names a module defines: functions, classes, attributes it assigns."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_module_uses_another_modules_private_members():
    bad = []
    for paths in modules().values():
        for path in paths:
            own = defined_private_names(path)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute):
                    attr = node.attr
                elif isinstance(node, ast.ImportFrom) and node.level >= 1:
                    bad += [
                        f"{path.name}:{node.lineno} imports private {a.name} from .{node.module}"
                        for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")
                    ]
                    continue
                else:
                    continue
                if not attr.startswith("_") or attr.startswith("__") or attr in own:
                    continue
                if attr in THIRD_PARTY_PRIVATE:
                    continue
                bad.append(f"{path.name}:{node.lineno} uses {ast.unparse(node)}")
    assert not bad, "\n".join(bad)


def test_no_module_is_longer_than_about_500_lines():
    long = {
        p.name: n
        for paths in modules().values()
        for p in paths
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split these along their concepts: {long}"


def test_only_the_engine_layer_and_the_faces_read_settings():
    bad = {n for n in modules() if "config" in imports_of(n)}
    bad -= LAYERS["engine"] | LAYERS["faces"]
    assert not bad, f"these read Settings: {sorted(bad)} (pass the values down)"


def test_the_domain_rules_import_nothing_but_the_domain():
    for name in ("naming", "temporal", "lexicon", "scopes"):
        assert not imports_of(name), f"{name}.py imports {imports_of(name)}"


def test_no_print_in_the_package_outside_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.name == "cli.py":  # the command line writes to its terminal
            continue
        calls = [
            n for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"
        ]  # fmt: skip
        assert not calls, f"print() in {path}"
