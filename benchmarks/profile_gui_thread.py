"""What the GUI thread computes while presets run: time inside the engine, torch, scipy or
scikit-learn, and inside numpy functions called directly from gui/, as a share of the run.

``sys.setprofile`` is installed on the GUI thread alone (it is per thread), from Run until 0.5 s
after the run ends. A *stretch* is one outermost call into such code; the table gives the
share of the run spent in stretches, the longest stretch and where it was. Issue 26's target:
≤ 3 % of the run and no stretch over 20 ms. The profiler slows the calls it sees, so the shares
are upper bounds. Run under Xvfb:

    xvfb-run -a -s "-screen 0 1920x1200x24" python benchmarks/profile_gui_thread.py [--presets a,b]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

DEFAULT_PRESETS = "fig3-free,your-network,fig4-breast-cancer,nonattr-fig3"
COMPUTE = (str(ROOT / "engine"), "/torch/", "/scipy/", "/sklearn/")
GUI = str(ROOT / "gui")


def spin(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


class ComputeProfiler:
    """Times the outermost calls into compute code made on the thread that installs it."""

    def __init__(self):
        self.total, self.longest, self.where = 0.0, 0.0, ""
        self.stretches = Counter()
        self._depth, self._start, self._entry = 0, 0.0, ""

    def _is_compute(self, frame, event, arg) -> bool:
        if event in ("c_call", "c_return", "c_exception"):
            module = getattr(arg, "__module__", None) or ""
            called_from_gui = frame.f_code.co_filename.startswith(GUI)
            return called_from_gui and module.startswith(("numpy", "torch", "scipy"))
        path = frame.f_code.co_filename
        if any(part in path for part in COMPUTE):
            return True
        caller = frame.f_back
        return "/numpy/" in path and caller is not None and caller.f_code.co_filename.startswith(GUI)

    def __call__(self, frame, event, arg):
        calling = event in ("call", "c_call")
        if self._depth:
            if calling:
                self._depth += 1
            elif event in ("return", "c_return", "c_exception"):
                self._depth -= 1
                if self._depth == 0:
                    self._stop()
            return
        if calling and self._is_compute(frame, event, arg):
            self._depth, self._start = 1, time.perf_counter()
            name = getattr(arg, "__name__", "") if event == "c_call" else frame.f_code.co_name
            self._entry = f"{Path(frame.f_code.co_filename).name}:{name}"

    def _stop(self):
        spent = time.perf_counter() - self._start
        self.total += spent
        self.stretches[self._entry] += spent
        if spent > self.longest:
            self.longest, self.where = spent, self._entry


def profile_preset(window, name: str, timeout_s: float = 600.0) -> dict:
    window.load_preset(name, run=False)
    spin(300)
    profiler = ComputeProfiler()
    sys.setprofile(profiler)
    start = time.perf_counter()
    try:
        window.run()
        deadline = start + timeout_s
        while window.controller.busy and time.perf_counter() < deadline:
            spin(20)
        spin(500)
    finally:
        sys.setprofile(None)
    wall = time.perf_counter() - start
    load = os.getloadavg()[0]  # the machine's 1-minute load as the run ended: the figures depend on it
    top = ", ".join(f"{k} {1e3 * v:.0f} ms" for k, v in profiler.stretches.most_common(3))
    return {"preset": name, "wall": wall, "share": profiler.total / wall, "longest": profiler.longest,
            "where": profiler.where, "top": top, "outcome": window.last_outcome, "load": load}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default=DEFAULT_PRESETS)
    args = parser.parse_args()
    from gui.headless import close_window, open_window

    app, window = open_window((1600, 960))
    rows = []
    try:
        for name in args.presets.split(","):
            rows.append(profile_preset(window, name.strip()))
    finally:
        close_window(window)
    print(f"{os.cpu_count()} CPUs")
    print("| preset | run (s) | GUI thread computing | longest stretch | where | outcome | load (1 min) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['preset']} | {r['wall']:.1f} | {100 * r['share']:.1f} % | {1e3 * r['longest']:.0f} ms | "
              f"{r['where']} | {r['outcome']} | {r['load']:.1f} |")  # fmt: skip
    for r in rows:
        print(f"{r['preset']}: most time in {r['top']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
