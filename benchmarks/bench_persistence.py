"""How long sublevel-set persistence and the basin map take on a plane's grid, against gudhi.

Run: ``python3 benchmarks/bench_persistence.py [--size 201] [--repeats 7]``. Three grids of
``--size``² losses: white noise (a minimum in about one point of nine, the worst case for the
union-find's Python loop), a smooth two-scale surface with a few dozen minima, and a single bowl.
For each it prints the median wall time of ``persistence`` and of ``basin_map`` (given the pairs).
When gudhi is importable (``pip install gudhi``; not a dependency of the project) it also times
``gudhi.CubicalComplex(top_dimensional_cells=grid).persistence()``, whose pixel adjacency is this
module's 8-connectivity, and checks that its 0-dimensional pairs of positive persistence equal
ours. Nothing is asserted about the times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.landscape.persistence import basin_map, basins, persistence  # noqa: E402


def grids(n: int) -> dict[str, np.ndarray]:
    x, y = np.meshgrid(np.linspace(-3, 3, n), np.linspace(-3, 3, n), indexing="ij")
    return {
        "noise": np.random.default_rng(0).standard_normal((n, n)),
        "smooth": np.sin(3 * x) * np.cos(2 * y) + 0.3 * np.sin(7 * x + 5 * y) + 0.1 * (x**2 + y**2),
        "bowl": (x - 0.3) ** 2 + 2 * (y + 0.2) ** 2,
    }


def median_time(call, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - began)
    return statistics.median(times), out


def gudhi_pairs(L: np.ndarray):
    import gudhi

    complex_ = gudhi.CubicalComplex(top_dimensional_cells=L)
    complex_.persistence()
    return complex_.persistence_intervals_in_dimension(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=201)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    try:
        import gudhi
    except ImportError:
        gudhi = None
    print(f"{args.size}×{args.size} grid, median of {args.repeats}; gudhi {getattr(gudhi, '__version__', 'absent')}")
    for name, L in grids(args.size).items():
        t_pairs, p = median_time(lambda L=L: persistence(L), args.repeats)
        t_map, labels = median_time(lambda L=L, p=p: basin_map(L, 0.0, p), args.repeats)
        line = f"{name:7s} {len(p):5d} minima, {basins(p, 0.0):5d} of persistence > 0, "
        line += f"persistence {t_pairs * 1e3:7.1f} ms, basin_map {t_map * 1e3:6.1f} ms"
        if gudhi is not None:
            t_gudhi, intervals = median_time(lambda L=L: gudhi_pairs(L), args.repeats)
            ours = sorted((b, d) for b, d in zip(p.birth, p.death) if d > b)
            theirs = sorted((float(b), float(d)) for b, d in intervals if d > b)
            same = "same pairs" if ours == theirs else f"DIFFERENT pairs ({len(ours)} against {len(theirs)})"
            line += f", gudhi {t_gudhi * 1e3:7.1f} ms, {same}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
