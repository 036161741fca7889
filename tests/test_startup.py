"""The window opens before torch and scipy load: importing it and its tabs imports neither; and a
crash in C code at any point prints the Python stack."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "scipy.optimize", "scipy.linalg", "scipy.stats", "sklearn", "imageio", "matplotlib")

PROBE = f"""
import sys
import gui.main_window, gui.workspaces.topology, gui.workspaces.minima, gui.workspaces.landscape
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
"""


def test_importing_the_window_imports_no_numerics_library():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"the window module imported {out.stdout.strip()}"


def test_the_probe_sees_an_import():
    # Guards the guard: the same probe must report torch once something imports it.
    code = PROBE.replace("import gui.main_window,", "import torch, gui.main_window,")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "'torch'" in out.stdout, out.stdout + out.stderr


CRASH = """
import ctypes
from landscape_lens import cli
cli.dispatch = lambda args: ctypes.string_at(0)  # a segfault in C code, where a command would run
cli.main(["--theme", "dark"])
"""


def test_a_crash_in_c_code_prints_the_python_stack():
    out = subprocess.run([sys.executable, "-c", CRASH], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode < 0, out.stderr
    assert "Fatal Python error: Segmentation fault" in out.stderr and "cli.py" in out.stderr, out.stderr


FIRST_EXPORT = """
import sys
import numpy as np
from gui.app import preload_numerics
preload_numerics().join()
before = set(sys.modules)
import imageio.v3 as iio  # what gui.export.export_gl does on a first 3D export
iio.imwrite(sys.argv[1], np.zeros((4, 4, 3), np.uint8))
print(sorted(set(sys.modules) - before))
"""


def test_a_first_png_export_imports_nothing_after_the_preload(tmp_path):
    # A first 3D export imported PIL's plugins on the GUI thread: a 3 s block from a cold disk.
    command = [sys.executable, "-c", FIRST_EXPORT, str(tmp_path / "a.png")]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"the first export imported {out.stdout.strip()}"


def test_pytest_rewrites_no_library_module():
    # A job's first import of scikit-learn on a worker thread made pytest parse
    # scipy.stats._page_trend_test (it matched pytest's default *_test.py), and a parse beside the
    # GUI thread's raised CPython 3.11's AST recursion-depth SystemError in the state machine.
    import scipy.stats._page_trend_test as library_module

    assert type(library_module.__loader__).__module__ != "_pytest.assertion.rewrite"


FULL_COLLECTION = """
import gc
from gui.app import create_app, preload_now
from gui.main_window import MainWindow
app = create_app()
window = MainWindow()
window.show()
preload_now()
gc.collect()
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_a_full_collection_after_start_up_walks_only_what_was_made_since():
    # Each full collection walked the ~330,000 objects start-up made (modules, the window),
    # holding the GIL for 170-310 ms on whichever thread allocated: the GUI thread's longest
    # stalls during a run. Start-up's objects are frozen once the preload is done.
    out = subprocess.run([sys.executable, "-c", FULL_COLLECTION], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    frozen, tracked = (int(x) for x in out.stdout.split()[-2:])
    assert frozen > 100_000, out.stdout
    assert tracked < frozen / 20, f"{tracked} objects tracked after start-up, {frozen} frozen"
