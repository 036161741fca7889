"""The engine is the model: it must import, every module of it, with Qt made unimportable."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK_QT_AND_IMPORT_ALL = r"""
import importlib, pkgutil, sys

class BlockQt:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph"}:
            raise ImportError(f"engine imported {name}")

sys.meta_path.insert(0, BlockQt())
import engine
names = [m.name for m in pkgutil.walk_packages(engine.__path__, "engine.")]
# Only `reproduce` draws figures: each paper's figures module and the experiment modules that call them.
# Everything else -- all the GUI can import -- must load without matplotlib.
from engine.experiments import experiments
REPRODUCE_ONLY = {e.target.split(":")[0] for e in experiments().values()}
for name in names:
    if not name.endswith(".figures") and name not in REPRODUCE_ONLY:
        importlib.import_module(name)
assert "matplotlib" not in sys.modules, "importing the engine imported matplotlib"
for name in sorted(REPRODUCE_ONLY):
    importlib.import_module(name)
print(len(names))
"""


def test_every_engine_module_imports_without_qt():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_QT_AND_IMPORT_ALL], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[-1]) >= 5  # the walk really found the modules


def test_the_figures_are_the_only_matplotlib_users():
    # Guards the matplotlib check: importing a figures module must trip it.
    code = BLOCK_QT_AND_IMPORT_ALL.replace(
        'assert "matplotlib"', 'import engine.minima.figures\nassert "matplotlib"', 1
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "imported matplotlib" in result.stderr


def test_the_blocker_catches_a_qt_import():
    # Guards the guard: the same harness must fail when Qt is imported.
    code = BLOCK_QT_AND_IMPORT_ALL.replace("import engine\n", "import engine\nimport PySide6\n", 1)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "engine imported PySide6" in result.stderr
