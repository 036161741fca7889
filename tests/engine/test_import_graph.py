"""The engine's modules, and the GUI's, import each other without cycles (read statically, lazy
imports included), the engine's top-level packages one way only (core none of them), and the
modules the GUI uses import neither matplotlib nor Qt."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.test_gui_layers import two_way

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"


GUI = ROOT / "gui"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_imports(path: Path, root: Path = ROOT) -> set[str]:
    """Modules that ``path`` imports anywhere in its body, named from ``root`` (a function-level
    import is a dependency too: hiding one there is how cycles used to be papered over)."""
    here = module_name(path, root).split(".")
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


def import_graph(package: Path = ENGINE, root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of ``package`` (a folder under ``root``, every subpackage included) and the
    modules of ``package`` it imports."""
    modules = {module_name(p, root): p for p in package.rglob("*.py")}
    return {name: (engine_imports(path, root) & set(modules)) - {name} for name, path in modules.items()}


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


def test_the_reader_and_finder_find_a_cycle_hidden_in_a_function(tmp_path):
    """The whole check can fail: a package on disk whose two modules import each other, one of
    them only inside a function and relatively (as gui/clips' two scenes once did), is a cycle;
    the same package with the shared helper in a module of its own is not."""
    package = tmp_path / "pkg" / "clips"
    package.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "scene.py").write_text("def helper():\n    pass\n\n\ndef story():\n    from .minima import x\n")
    (package / "minima.py").write_text("from .scene import helper\n\nx = 1\n")
    graph = import_graph(tmp_path / "pkg", tmp_path)
    assert graph["pkg.clips.scene"] == {"pkg.clips.minima"} and graph["pkg.clips.minima"] == {"pkg.clips.scene"}
    assert find_cycle(graph) == ["pkg.clips.minima", "pkg.clips.scene", "pkg.clips.minima"]
    (package / "helpers.py").write_text("def helper():\n    pass\n")
    (package / "minima.py").write_text("from pkg.clips.helpers import helper\n\nx = 1\n")
    assert find_cycle(import_graph(tmp_path / "pkg", tmp_path)) == []


def test_the_gui_reader_sees_every_package():
    graph = import_graph(GUI)
    assert "gui.clips.off_screen" in graph["gui.clips.minima_scene"]  # from .off_screen import ...
    assert "gui.present.minima" in graph["gui.workspaces.minima"]  # from ..present.minima import
    assert "gui.workspaces.landscape" in graph["gui.workspaces"]  # an __init__'s lazy import
    assert "gui.rendering.gl_cells" in graph["gui.capture"]  # inside a function


def test_gui_import_graph_has_no_cycle():
    """No two of gui's modules, in any of its packages, import each other, directly or round a
    loop, even where one import is inside a function."""
    assert find_cycle(import_graph(GUI)) == []


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
