"""The package's shape, as docs/ARCHITECTURE.md draws it, checked by parsing its source.

The units are the shared modules at the top of ``cranimem_mcp/`` and its folders (one per
stage of the paper and per face). Each unit imports only the units ``ALLOWED`` names for it,
and those rules form no cycle; no module import cycle either (``TYPE_CHECKING`` imports
count); only the composition roots open an engine; faces reach the stores only where
``STORE_ACCESS`` says why; no dependency's private name is used; only the engine, the
providers and the faces read Settings; nothing prints but the command line."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "cranimem_mcp"

SHARED = {"config", "errors", "models", "naming", "temporal", "validation", "service"}
ADAPTERS = {"secrets", "backends", "buffer", "graph", "extraction"}
# What each unit may import (besides itself). Lowest first.
ALLOWED: dict[str, set[str]] = {
    # The domain: types, errors, settings and the rules that need no store.
    "errors": set(),
    "naming": set(),
    "temporal": set(),
    "models": {"errors"},
    "config": {"errors"},
    "validation": {"errors", "models"},
    "service": {"models", "errors"},
    # Adapters: each wraps one library or model, and sees only the domain (and the models).
    "secrets": SHARED - {"config"},
    # a long text's passages are of what is said: a turn's stamp is the transcript's rule
    "backends": SHARED - {"config"} | {"conversation.transcript"},
    "graph": SHARED - {"config"} | {"backends"},
    "conversation.transcript": {"temporal"},  # a transcript turn's pure text rules
    "buffer": SHARED - {"config"} | {"backends", "conversation.transcript"},
    "extraction": SHARED - {"config"} | {"backends", "secrets", "conversation.transcript"},
    # The paper's stages: logic over the stores and models handed in.
    "coordination": SHARED - {"config"} | {"buffer"},
    "gate": SHARED - {"config"} | {"backends", "extraction", "secrets"},
    "conversation": SHARED - {"config"} | {"backends", "buffer"},
    "recall": SHARED - {"config"} | ADAPTERS | {"coordination", "conversation"},
    "replay": SHARED - {"config"} | ADAPTERS | {"coordination", "conversation", "gate"},
    "intake": SHARED - {"config"} | ADAPTERS | {"coordination", "conversation", "gate", "replay"},
    # The composition: the only core units that read Settings.
    "providers": SHARED | {"backends", "extraction", "gate", "coordination"},
    "engine": SHARED | ADAPTERS
    | {"coordination", "gate", "conversation", "recall", "replay", "intake", "providers"},
    # Faces: they call the memory service; nothing imports them (but the inspector's app,
    # which the HTTP transport mounts beside the MCP endpoint).
    "ui": {"service", "models", "errors"},
    "sharing": SHARED | {"engine", "providers", "backends", "extraction", "coordination"},
    "server": {"service", "models", "errors", "config", "sharing", "ui"},
    "eval": SHARED | {"engine", "backends", "recall", "buffer"},
    "importers": {"service", "models", "errors"},
    "cli": SHARED | {"engine", "providers", "server", "sharing", "eval", "backends",
                     "buffer", "graph", "conversation", "coordination", "importers"},
}  # fmt: skip
# Faces that reach past the service to a store on purpose, and why.
STORE_ACCESS = {
    "eval": "the benchmark fills a store directly at size N before it measures (bench.py)",
    "cli": "doctor re-embeds and rewrites the stores of a directory no server owns (doctor.py);"
    " export and import read and write the two stores' files (portability.py)",
}
STORES = {"buffer", "graph"}
# The composition roots: the faces that open an engine in this process.
ENGINE_OPENERS = {"sharing", "cli", "eval"}
FACES = {"server", "sharing", "cli", "ui", "eval", "importers"}


def module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str:
    parts = module.split(".")
    if module == "cranimem_mcp.conversation.transcript":
        return "conversation.transcript"
    return parts[1] if len(parts) > 1 else "cranimem_mcp"


def sources() -> dict[str, Path]:
    return {module_of(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports, ``TYPE_CHECKING`` and function-level imports
    included (``from cranimem_mcp.x import y`` names the module ``x.y`` when it is one)."""
    known = sources()
    me = module_of(path).split(".")
    if path.name != "__init__.py":
        me.pop()
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(me[: len(me) - node.level + 1]) if node.level else ""
            target = ".".join(filter(None, [base, node.module or ""]))
            if not target.startswith("cranimem_mcp"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & set(known)
            found |= subs or {target}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("cranimem_mcp")}
    return found


def unit_imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, path in sources().items():
        mine = unit_of(module)
        out.setdefault(mine, set()).update(
            unit_of(t)
            for t in imports(path)
            if unit_of(t).split(".")[0] != mine.split(".")[0] and unit_of(t) != "cranimem_mcp"
        )
    return out


def test_every_unit_is_placed():
    units = set(unit_imports()) - {"cranimem_mcp"}
    assert not units - set(ALLOWED), f"give these a place in ALLOWED: {units - set(ALLOWED)}"
    assert not set(ALLOWED) - units, f"ALLOWED names what is gone: {set(ALLOWED) - units}"


def test_the_package_has_a_few_shared_modules_and_a_folder_per_stage_and_face():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert len(top) <= 12, top
    stages = {"gate", "secrets", "buffer", "replay", "graph", "extraction", "recall",
              "conversation", "backends"}  # fmt: skip
    faces = {"server", "sharing", "cli", "ui", "eval"}
    assert stages | faces <= set(folders), folders


def test_the_facade_names_its_public_api():
    import cranimem_mcp

    assert "MemoryEngine" in cranimem_mcp.__all__ and "Settings" in cranimem_mcp.__all__
    for name in cranimem_mcp.__all__:
        assert getattr(cranimem_mcp, name) is not None, name


def test_units_import_only_what_they_are_allowed():
    bad = [
        f"{unit} imports {other}"
        for unit, others in unit_imports().items()
        if unit != "cranimem_mcp"
        for other in sorted(others - ALLOWED[unit])
        if not (other == "conversation.transcript" and "conversation" in ALLOWED[unit])
    ]
    assert not bad, "\n".join(bad)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name, [name])):
            return found
    return None


def test_the_allowed_imports_form_no_cycle():
    graph = {u: {o for o in others if o in ALLOWED} for u, others in ALLOWED.items()}
    graph["conversation"] = graph["conversation"]  # transcript is its own unit below buffer
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_import_cycles_counting_type_checking_imports():
    graph = {m: imports(p) - {m} for m, p in sources().items()}
    # A package's __init__ that re-exports its modules is not a cycle with them.
    for m in graph:
        graph[m] = {t for t in graph[m] if not m.startswith(t + ".")}
    found = _cycle(graph)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_only_the_composition_roots_open_an_engine():
    bad = {u for u, others in unit_imports().items() if "engine" in others}
    assert not bad - ENGINE_OPENERS - {"cranimem_mcp"}, sorted(bad - ENGINE_OPENERS)


def test_faces_reach_the_stores_only_where_it_is_said_why():
    bad = [
        f"{face} imports {sorted(others & STORES)}"
        for face, others in unit_imports().items()
        if face in FACES - set(STORE_ACCESS) and others & STORES
    ]
    assert not bad, "\n".join(bad)


def test_nothing_imports_a_face():
    bad = [
        f"{u} imports {sorted(others & FACES)}"
        for u, others in unit_imports().items()
        if u not in FACES and u != "cranimem_mcp" and others & FACES
    ]
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


def test_no_module_uses_a_private_name_it_does_not_define():
    """Neither another module's nor a dependency's: a private name of LanceDB, the MCP SDK or
    the Ollama client may change in any release."""
    bad = []
    for path in sources().values():
        own = defined_private_names(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                bad += [
                    f"{path.name}:{node.lineno} imports private {a.name} from {node.module}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
            names = []
            if isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                names = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            for name in names:
                if not isinstance(name, str) or not name.startswith("_"):
                    continue
                if name.startswith("__") or name in own:
                    continue
                bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno} uses {name}")
    assert not bad, "\n".join(bad)


def test_only_the_composition_and_the_faces_read_settings():
    bad = {u for u, others in unit_imports().items() if "config" in others}
    bad -= {"engine", "providers", "cranimem_mcp"} | FACES
    assert not bad, f"these read Settings: {sorted(bad)} (pass the values down)"


def test_no_print_in_the_package_outside_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "cli":  # the command line writes to its terminal
            continue
        calls = [
            n for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"
        ]  # fmt: skip
        assert not calls, f"print() in {path}"


# The stage seams where there are real alternatives: each protocol (the module that declares
# it) and its implementations (the module of each). The engine builds the one the settings
# pick and hands it to the stage that uses it; that stage names only the protocol.
SEAMS = {
    "Gate": ("gate.goal", {"GoalGate": "gate.goal", "DefaultGate": "gate.default"}),
    "Ranker": (
        "recall.ranking",
        {"HybridRanker": "recall.ranking", "ConversationRanker": "conversation.ranking"},
    ),
    "QuadStore": (
        "graph.store",
        {"JournaledDataset": "graph.journal", "SparqlDataset": "graph.sparql"},
    ),
    "TableLocation": (
        "buffer.table",
        {"LocalTable": "buffer.table", "SharedTable": "buffer.table"},
    ),
}
# Who else builds an implementation, and why.
BUILDERS = {
    ("SparqlDataset", "cranimem_mcp.graph.rewrite"): "the hard forget copies a server's quads"
    " into a fresh store (not the engine's graph)",
    ("LocalTable", "cranimem_mcp.cli.doctor"): STORE_ACCESS["cli"],
}


def _class(module: str, name: str) -> type:
    import importlib

    return getattr(importlib.import_module(f"cranimem_mcp.{module}"), name)


def _parameters(fn: object) -> list[str]:
    import inspect

    return [p for p in inspect.signature(fn).parameters if p != "self"]  # type: ignore[arg-type]


def test_each_seam_is_a_protocol_its_implementations_speak():
    from typing import Protocol

    for protocol, (module, implementations) in SEAMS.items():
        proto = _class(module, protocol)
        assert Protocol in proto.__bases__, f"{protocol} is no Protocol"
        methods = [n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")]
        assert methods, protocol
        for name, where in implementations.items():
            impl = _class(where, name)
            for method in methods:
                theirs = getattr(impl, method, None)
                assert callable(theirs), f"{name} lacks {protocol}.{method}"
                assert _parameters(theirs) == _parameters(getattr(proto, method)), (
                    f"{name}.{method} takes {_parameters(theirs)}, {protocol}.{method} "
                    f"{_parameters(getattr(proto, method))}"
                )


def test_only_the_engine_builds_and_names_a_seams_implementations():
    """The stages receive a seam's implementation; none builds or imports one itself."""
    owners = {name: f"cranimem_mcp.{where}" for _p, (_m, impls) in SEAMS.items()
              for name, where in impls.items()}  # fmt: skip
    built: dict[str, set[str]] = {name: set() for name in owners}
    bad = []
    for module, path in sources().items():
        for node in ast.walk(ast.parse(path.read_text())):
            named: list[str] = []
            if isinstance(node, ast.Call):
                named = [getattr(node.func, "id", None) or getattr(node.func, "attr", "")]
            elif isinstance(node, ast.ImportFrom):
                named = [a.name for a in node.names]
            for name in set(named) & set(owners):
                if isinstance(node, ast.Call):
                    built[name].add(module)
                if module in {owners[name], "cranimem_mcp.engine"}:
                    continue
                if (name, module) not in BUILDERS:
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno} names {name}")
    assert not bad, "\n".join(bad)
    unbuilt = sorted(n for n, where in built.items() if "cranimem_mcp.engine" not in where)
    assert not unbuilt, f"the engine builds none of {unbuilt}: how is it picked?"
