"""The C heap a window gains by showing every preset once: what it keeps once warm.

A window that has shown every tab, preset and size holds more than a fresh one: results on
show, the plots' and 3D views' pixmaps and buffers, Qt's glyph caches. The soak (soak_gui.py)
counts this warm-up in its growth when a seed first shows a view late. This benchmark shows a
1600×960 window every preset in turn (run to its end), then every tab at three sizes, and prints
glibc's heap in use after each (``engine.core.runtime.heap_bytes``, free pages given back first).
With ``--compare`` it runs twice, in fresh processes: as the app is, and with pyqtgraph's
default background cache put back on every plot (the cache style.apply_theme turns off).

    xvfb-run -a -s "-screen 0 1920x1200x24" python benchmarks/heap_tour.py [--compare]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SIZES = ((1280, 800), (1920, 1080), (1600, 960))


def heap_mb() -> float:
    from engine.core.runtime import heap_bytes, release_free_heap

    gc.collect()
    release_free_heap()
    return heap_bytes()["in_use"] / 2**20


def tour(background_cache: bool) -> list[tuple[str, float]]:
    import pyqtgraph as pg
    from bench_gui_latency import shown_window, spin
    from PySide6.QtWidgets import QGraphicsView

    from gui.presets import available_presets

    def put_cache_back():
        if background_cache:
            for plot in window.findChildren(pg.GraphicsView):
                plot.setCacheMode(QGraphicsView.CacheModeFlag.CacheBackground)

    window = shown_window(settle_ms=1500)
    put_cache_back()
    rows = [("fresh window", heap_mb())]
    for name in sorted(available_presets()):
        window.load_preset(name, run=True)
        spin(300)
        while window.computing or window.controller.busy:
            spin(100)
        put_cache_back()
        spin(800)
        rows.append((name, heap_mb()))
    for width, height in SIZES:
        window.resize(width, height)
        for index in range(window.tabs.count()):
            window.tabs.setCurrentIndex(index)
            spin(300)
    rows.append(("every tab at three sizes", heap_mb()))
    window.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", action="store_true", help="also tour with pyqtgraph's background cache")
    parser.add_argument("--background-cache", action="store_true", help=argparse.SUPPRESS)  # a --compare child
    args = parser.parse_args()
    if not args.compare:
        for name, mb in tour(args.background_cache):
            print(f"{name}\t{mb:.1f}")
        return
    columns = {}
    for label, flags in (("as the app is", []), ("background cache", ["--background-cache"])):
        out = subprocess.run([sys.executable, __file__, *flags], capture_output=True, text=True, check=True).stdout
        columns[label] = [line.split("\t") for line in out.splitlines() if "\t" in line]
    print("| after | heap in use, as the app is (MB) | with pyqtgraph's background cache (MB) |")
    print("|---|---|---|")
    for (name, mine), (_, cached) in zip(*columns.values()):
        print(f"| {name} | {float(mine):.1f} | {float(cached):.1f} |")
    (first, last), (cfirst, clast) = ((float(c[0][1]), float(c[-1][1])) for c in columns.values())
    print(f"\ngained over the tour: {last - first:.1f} MB as the app is, {clast - cfirst:.1f} MB with the cache")


if __name__ == "__main__":
    main()
