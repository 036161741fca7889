"""Time the full topo-breast-cancer grid: batched sweep vs a Python loop of per-run training.

The loop does the same work run by run (engine.obstruction.train_run_bce on each init). The
full loop takes long, so by default it runs a stratified subset (every k-th run, which keeps the
mix of hidden sizes l) and extrapolates by run count; pass --full-loop to time all of it.

    python benchmarks/bench_breast_cancer.py [--steps 1000] [--n-inits 100] [--loop-every 20]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from engine import datasets  # noqa: E402
from engine.obstruction import breast_cancer_sweep, sweep_init, held_out_bce, train_run_bce  # noqa: E402
from engine.progress import run_to_completion  # noqa: E402
from engine.runtime import configure_torch_threads  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--n-inits", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--loop-every", type=int, default=20, help="time every k-th run of the loop and extrapolate")
    ap.add_argument("--full-loop", action="store_true")
    args = ap.parse_args()
    configure_torch_threads()
    split = datasets.breast_cancer(seed=0)

    t0 = time.perf_counter()
    res = run_to_completion(breast_cancer_sweep(n_inits=args.n_inits, steps=args.steps, chunk=args.chunk))
    t_batched = time.perf_counter() - t0
    runs = res["runs"]

    every = 1 if args.full_loop else args.loop_every
    subset = list(range(0, len(runs), every))
    t0, max_diff = time.perf_counter(), 0.0
    for j in subset:
        l, lp, i = runs[j]
        p = train_run_bce(split.X_train, split.Y_train, sweep_init(30, l, lp, i, 0), 0.1, args.steps)
        max_diff = max(max_diff, abs(held_out_bce(p) - res["test_bce"][j]))
    t_loop_measured = time.perf_counter() - t0
    t_loop = t_loop_measured * len(runs) / len(subset)

    print(f"grid: {len(runs)} runs x {args.steps} steps (l = 2..9, l+ = 0..l, {args.n_inits} inits)")
    print(f"batched sweep (chunk {args.chunk}): {t_batched:.1f} s")
    how = "measured" if every == 1 else f"extrapolated from {len(subset)} runs (every {every}th) taking {t_loop_measured:.1f} s"
    print(f"per-run loop: {t_loop:.1f} s ({how})")
    print(f"speed-up: {t_loop / t_batched:.1f}x; max |test BCE difference| on the timed runs: {max_diff:.2e}")


if __name__ == "__main__":
    main()
