"""First paint of a slice panel: K curves as one density image against K translucent paths.

Run under Xvfb: ``xvfb-run -a -s "-screen 0 1920x1200x24" python3 benchmarks/bench_slice_paint.py``.
Both draw the same (K, 101) curves in a 640 × 480 SliceView; the time is from handing the data to
the view to the pixels being painted (a synchronous ``grab``), best of ``--repeats``, interleaved.
The paths are the drawing this panel used before the density: one PlotCurveItem broken between
curves, with K-dependent opacity.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gui.app import create_app  # noqa: E402
from gui.views.slice_view import SliceView  # noqa: E402


def curves(k: int, p: int = 101, seed: int = 0):
    """Slices shaped like the Fig. 3 minimum's: parabolas of random curvature about L*."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-1, 1, p)
    losses = 2.98 + rng.gamma(0.5, 0.02, size=(k, 1)) * t**2 + 1e-4 * rng.normal(size=(k, p))
    return t, losses


def paint_density(view, t, losses) -> float:
    start = time.perf_counter()
    view.show_slices(t, losses, losses.min(0), float(losses.min()), 0.0, 0)
    view.grab()
    return time.perf_counter() - start


def paint_paths(view, t, losses) -> float:
    import pyqtgraph as pg

    start = time.perf_counter()
    k, p = losses.shape
    connect = np.ones((k, p), dtype=bool)
    connect[:, -1] = False
    alpha = int(np.clip(round(255 * 30 / max(k, 1) ** 1.15), 4, 160))
    item = pg.PlotCurveItem(pen=pg.mkPen((0, 114, 178, alpha), width=1), antialias=False, skipFiniteCheck=True)
    item.setData(np.tile(t, k), losses.ravel(), connect=connect.ravel())
    view.addItem(item)
    view.setXRange(t[0], t[-1], padding=0.02)
    view.setYRange(float(losses.min()), float(np.percentile(losses, 40)), padding=0.05)
    view.grab()
    elapsed = time.perf_counter() - start
    view.removeItem(item)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", default="500,5000,50000")
    args = parser.parse_args()
    create_app()
    density, paths = SliceView("density"), SliceView("paths")
    for view in (density, paths):
        view.resize(640, 480)
        view.show()
    print(f"{'K':>7} {'density (ms)':>13} {'paths (ms)':>11} {'paths / density':>16}")
    for k in (int(x) for x in args.k.split(",")):
        t, losses = curves(k)
        best_d = best_p = float("inf")
        for _ in range(args.repeats):
            best_d = min(best_d, paint_density(density, t, losses))
            best_p = min(best_p, paint_paths(paths, t, losses))
        print(f"{k:>7} {1e3 * best_d:>13.1f} {1e3 * best_p:>11.1f} {best_p / best_d:>16.1f}")


if __name__ == "__main__":
    main()
