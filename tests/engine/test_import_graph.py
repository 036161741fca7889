"""The engine's modules import each other without cycles (read statically, lazy imports included),
its top-level packages one way only (core none of them), and the modules the GUI uses import
neither matplotlib nor Qt."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.test_gui_layers import two_way

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_imports(path: Path) -> set[str]:
    """engine.* modules that ``path`` imports anywhere in its body (a function-level import is a
    dependency too: hiding one there is how cycles used to be papered over)."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            found.add(stem)
            found |= {f"{stem}.{alias.name}" for alias in node.names}  # "from . import datasets"
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ENGINE.rglob("*.py")}
    return {name: (engine_imports(path) & set(modules)) - {name} for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle as [a, b, ..., a], or [] if the graph is acyclic (depth-first, three colours)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_import_reader_sees_relative_imports():
    graph = import_graph()
    assert "engine.topology.invariants" in graph["engine.topology.initialization"]  # from .invariants import ...
    assert "engine.core.datasets" in graph["engine.topology.width_sweep"]  # from . import datasets
    assert "engine.topology.figures" in graph["engine.topology.reproduce"]  # from .figures import


def test_engine_import_graph_has_no_cycle():
    assert find_cycle(import_graph()) == []


def package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto engine's top-level entries (core, io, …, experiments): an edge
    a → b where any module of a imports any module of b."""

    def top(module: str) -> str:
        return module.split(".")[1] if "." in module else module

    edges: dict[str, set[str]] = {top(m): set() for m in graph}
    for module, targets in graph.items():
        edges[top(module)] |= {top(t) for t in targets} - {top(module)}
    return edges


def test_the_package_folding_sees_cross_package_imports():
    folded = package_edges({"engine.a.x": {"engine.b.y", "engine.a.z"}, "engine.b.y": set(), "engine.a.z": set()})
    assert folded == {"a": {"b"}, "b": set()}
    assert "core" in package_edges(import_graph())["topology"]


def test_engine_packages_import_one_way():
    edges = package_edges(import_graph())
    assert two_way(edges) == []
    assert find_cycle(edges) == [], "nor round a longer loop"
    assert edges["core"] == set(), "core imports no other engine package"


def engine_modules_the_gui_imports() -> list[str]:
    """engine.* modules named by an import anywhere under gui/."""
    engine_modules, used = set(import_graph()), set()
    for path in (ROOT / "gui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                used |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                used |= {alias.name for alias in node.names}
    return sorted(used & engine_modules)


def test_the_engine_the_gui_uses_imports_no_matplotlib():
    used = engine_modules_the_gui_imports()
    assert {"engine.topology.width_sweep", "engine.topology.probability", "engine.topology.training"} <= set(used)
    code = (
        f"import sys, importlib\nfor m in {used!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'PySide6')))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
