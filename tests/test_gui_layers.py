"""The GUI's packages and top modules import each other one way only (read statically, lazy
imports included): views never import clips or capture, the style never imports views."""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def gui_edges(root: Path = ROOT / "gui") -> dict[str, set[str]]:
    """For each of gui's packages and top modules (gui.views, gui.clips, gui.capture, …), the
    others it imports anywhere in its files."""
    units = {p.stem if p.is_file() else p.name for p in root.iterdir() if p.suffix == ".py" or p.is_dir()}
    edges: dict[str, set[str]] = defaultdict(set)
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[:-1] if path.name != "__init__.py" else parts[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = base + (node.module.split(".") if node.module else [])
                else:
                    target = (node.module or "").split(".")
                names = [target] + [target + [a.name] for a in node.names]
                for name in names:
                    if len(name) > 1 and name[0] == "gui" and name[1] in units and name[1] != parts[1]:
                        edges[parts[1]].add(name[1])
    return edges


def two_way(edges) -> list[tuple[str, str]]:
    return sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, ())})


def test_the_reader_finds_a_two_way_import():
    assert two_way({"views": {"clips"}, "clips": {"views"}, "style": set()}) == [("clips", "views")]
    edges = gui_edges()
    assert "views" in edges["clips"] and "controller" in edges["main_window"]  # it sees real imports


def test_no_two_way_imports_between_gui_packages():
    assert two_way(gui_edges()) == []


def test_what_the_views_draw_with_imports_no_view():
    """gui/rendering/ (cameras, off-screen GL, the plots' style) is below the views and every
    part that holds views: none of them is imported there, not even inside a function."""
    edges = gui_edges()
    assert "rendering" in edges["views"]  # the reader sees the views' imports of it
    assert edges["rendering"] & {"views", "workspaces", "clips", "panels", "capture", "main_window"} == set()


QT = ("PySide6", "shiboken6", "pyqtgraph", "OpenGL")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside functions, absolute or relative (as written)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_the_presentation_layer_imports_no_qt_and_no_other_gui_part():
    """gui/present/ makes view states on the worker thread: no Qt, no pyqtgraph, no views."""
    files = sorted((ROOT / "gui" / "present").glob("*.py"))
    assert {p.stem for p in files} >= {"__init__", "landscape", "topology"}
    for path in files:
        for name in imported_modules(path):
            assert not name.startswith(QT), f"{path.name} imports {name}"
            assert not name.startswith(("..", "gui.")) or name.startswith("gui.present"), f"{path.name} imports {name}"
    assert any(n.startswith("PySide6") for n in imported_modules(ROOT / "gui" / "views" / "quadric_view.py"))
