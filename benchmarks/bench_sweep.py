"""The same Fig. 4 grid on ``local`` and on ``ray`` with 1 and 2 workers, as ratios, in one run.

Each Ray sweep starts a local Ray in a driver process of its own (engine.sweeps.ray_driver). Its
start-up (that process and ``ray.init``; the sweep times leave it out) and its per-task overhead
(round trips of empty tasks through the driver; the first task on each worker, which imports
torch and the engine, apart) are measured apart from the sweep itself, and so is the packing:
the same grid at several cells per task against the runner's own choice (engine.sweeps.runner.
pack). Every Ray result is checked bit for bit against local's.

    python3 -m pip install -e ".[ray]" && python3 benchmarks/bench_sweep.py [--inits 16 --steps 300]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.progress import run_to_completion  # noqa: E402
from engine.sweeps import fig4  # noqa: E402
from engine.sweeps.executors import RayExecutor  # noqa: E402
from engine.sweeps.runner import TASK_OVERHEAD_S, pack, sweep_job, task_seconds  # noqa: E402


def _empty_cell(_context, _cell) -> dict:
    return {}


def timed(plan, out, **options) -> tuple[float, dict]:
    """A sweep's seconds, its executor's start (a fresh local Ray for each Ray sweep) left out."""
    run = run_to_completion(sweep_job(plan, out, mode="replace", **options))
    return run.seconds - run.startup_s, run


def same(a, b) -> str:
    """ "same bits" when every array of every cell is byte for byte the same."""
    equal = all(
        a.cells[c].keys() == b.cells[c].keys()
        and all(a.cells[c][k].tobytes() == b.cells[c][k].tobytes() for k in a.cells[c])
        for c in a.cells
    )
    return "same bits" if equal else "DIFFERENT"


def round_trips(ex: RayExecutor, tasks: int) -> float:
    """Seconds until ``tasks`` empty one-cell tasks, submitted at once, are all back."""
    t = time.perf_counter()
    for i in range(tasks):
        ex.submit(((i,),))
    back = 0
    while back < tasks:
        back += len(ex.poll(1.0))
    return time.perf_counter() - t


def ray_round(workers: int, plan, out: Path, sizes) -> tuple[tuple, dict]:
    """A local Ray of ``workers`` CPUs, as every Ray sweep starts one: its start-up (the driver
    process, the cluster), the first task per worker (a worker's imports: torch, the engine), its
    per-task overhead, then the sweep times, each sweep on a Ray of its own."""
    ex = RayExecutor(workers=workers)
    t_init = ex.startup.seconds
    # By reference from a module the driver and workers can import (this file runs as __main__).
    ex.start(importlib.import_module("benchmarks.bench_sweep")._empty_cell, None)
    t_warm = round_trips(ex, workers)
    round_trips(ex, 20)
    latency = sum(round_trips(ex, 1) for _ in range(100)) / 100
    throughput = round_trips(ex, 500) / 500
    ex.close()
    times = {"auto": timed(plan, out / f"ray{workers}", executor="ray", workers=workers)}
    for k in sizes:
        times[k] = timed(plan, out / f"ray{workers}-{k}", executor="ray", workers=workers, cells_per_task=k)
    return (t_init, t_warm, latency, throughput), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--l", default="2..9")
    ap.add_argument("--inits", type=int, default=8)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--sizes", default="1,4,16", help="cells per task to try on 2 Ray workers")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the best of each is shown")
    args = ap.parse_args()
    from engine.sweeps.grid import int_range

    plan = fig4.plan(ls=int_range(args.l, "--l", 1, 256), n_inits=args.inits, steps=args.steps)
    n = len(plan.cells)
    sizes = [int(v) for v in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    print(f"Fig. 4 grid: l = {args.l}, {args.inits} inits, {args.steps} steps: {n} cells", flush=True)
    best: dict = {}
    over: dict = {}
    checks: dict = {}
    base = None

    def keep(name, t_run):
        t, run = t_run
        best[name] = min(best.get(name, float("inf")), t)
        checks[name] = same(run, base)

    for _ in range(args.rounds):  # interleaved, so a load change on a shared machine hits all alike
        t_run = timed(plan, tmp / "local1", executor="local", workers=1)
        base = base or t_run[1]
        keep("local, 1 thread (default)", t_run)
        keep("local, 2 threads", timed(plan, tmp / "local2", executor="local", workers=2))
        for workers in (1, 2):
            o, times = ray_round(workers, plan, tmp, sizes if workers == 2 else [])
            over[workers] = tuple(min(a, b) for a, b in zip(over.get(workers, o), o))
            k_auto = len(pack(plan, list(plan.cells), workers))
            keep(f"ray, {workers} worker(s), packed by cost: {k_auto} tasks", times["auto"])
            for k in sizes if workers == 2 else []:
                keep(f"ray, 2 workers, {k} cell(s) per task", times[k])
        print(".", end="", flush=True)

    ref = best["local, 1 thread (default)"]
    cell_s = best["local, 1 thread (default)"] / n
    print(f"\n\nmean cell: {1e3 * cell_s:.1f} ms (local, 1 thread); best of {args.rounds} rounds\n")
    print(f"{'executor':48s} {'seconds':>8s} {'local/this':>10s}  result")
    for name, t in best.items():
        print(f"{name:48s} {t:8.2f} {ref / t:10.2f}  {checks[name]}")
    print(f"\n{'Ray, apart from the sweep':48s} {'1 worker':>10s} {'2 workers':>10s}")
    labels = ("driver process + ray.init", "first task per worker (imports)", "task round trip, one at a time")
    labels += ("per task, 500 in flight",)
    for i, label in enumerate(labels):
        unit, suffix = (1, " s") if i < 2 else (1e3, " ms")
        print(f"{label:48s} {over[1][i] * unit:8.3f}{suffix} {over[2][i] * unit:8.3f}{suffix}")
    per_task = over[2][2]
    work = best["local, 1 thread (default)"]
    print(
        f"\nA task of k cells pays one round trip ({1e3 * per_task:.1f} ms) for k × {1e3 * cell_s:.1f} ms of work: "
        f"k = 1 costs {100 * per_task / cell_s:.1f} %. The runner packs t = √(2·o·W/n) of estimated work per task "
        f"(o = {1e3 * TASK_OVERHEAD_S:.0f} ms, W the grid's work, n workers), which balances the overhead o/t "
        f"against the tail t/2: here {1e3 * task_seconds(work, 2):.0f} ms on 2 workers "
        f"(≈ {task_seconds(work, 2) / cell_s:.1f} cells)."
    )


if __name__ == "__main__":
    main()
