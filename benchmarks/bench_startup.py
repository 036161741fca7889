"""Time to window: from starting ``python3 main.py`` to the main window shown and painted.

Run under Xvfb: ``xvfb-run -a -s "-screen 0 1920x1200x24" python3 benchmarks/bench_startup.py``.
Each run is a fresh interpreter that launches the app as a user does (``main.py``, no preset) and
quits once the window has painted its first frame; the time is the parent's wall clock from the
launch to that frame. "Cold" drops the page cache first (root only: /proc/sys/vm/drop_caches), so
every module is read from disk; "warm" is the same run again with the files cached.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Launch the window as main.py does, and report the first paint (then quit).
CHILD = r"""
import sys, time
sys.argv = ["main.py"]
from PySide6.QtCore import QObject, QEvent, QTimer
import landscape_lens.cli as cli
import gui.app as app_module

real_run = app_module.run_gui

def run_gui(*args, **kwargs):
    from gui.main_window import MainWindow
    from PySide6.QtWidgets import QApplication
    original_show = MainWindow.show

    def show(self):
        original_show(self)

        class FirstPaint(QObject):
            def eventFilter(self, obj, event):
                if event.type() == QEvent.Type.Paint:
                    print("PAINTED", time.time(), flush=True)
                    QTimer.singleShot(0, QApplication.instance().quit)
                    obj.removeEventFilter(self)
                return False

        self._first_paint = FirstPaint(self)
        self.installEventFilter(self._first_paint)

    MainWindow.show = show
    return real_run(*args, **kwargs)

app_module.run_gui = run_gui
cli.main([], prog="main.py")
"""


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def time_to_window() -> float:
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    painted = [line for line in out.stdout.splitlines() if line.startswith("PAINTED")]
    if not painted:
        raise RuntimeError(f"the window did not paint:\n{out.stderr[-2000:]}")
    return float(painted[0].split()[1]) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cold = []
    for _ in range(args.repeats):
        if not drop_caches():
            print("cannot drop the page cache (not root): cold runs skipped")
            break
        cold.append(time_to_window())
    warm = [time_to_window() for _ in range(args.repeats)]
    for name, runs in (("cold", cold), ("warm", warm)):
        if runs:
            print(
                f"{name}: median {statistics.median(runs):.2f} s, min {min(runs):.2f} s, max {max(runs):.2f} s "
                f"({len(runs)} runs)"
            )


if __name__ == "__main__":
    main()
