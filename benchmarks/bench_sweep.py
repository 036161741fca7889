"""The same Fig. 4 grid on ``local`` and on ``ray`` with 1 and 2 workers, as ratios, in one run.

Ray's start-up (``ray.init`` plus the first task on each worker, which imports torch and the
engine) and its per-task overhead (round trips of empty tasks) are measured apart from the sweep
itself, and so is the packing: the same grid at several cells per task against the runner's own
choice (engine.sweeps.runner.pack). Every Ray result is checked bit for bit against local's.

    python3 -m pip install -e ".[ray]" && python3 benchmarks/bench_sweep.py [--inits 16 --steps 300]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.progress import run_to_completion  # noqa: E402
from engine.sweeps import fig4  # noqa: E402
from engine.sweeps.runner import TASK_OVERHEAD_S, pack, sweep_job, task_seconds  # noqa: E402


def _noop(x):
    return x


def _warm():
    import engine.sweeps.fig4  # noqa: F401  (torch, sklearn, the engine: what a worker's first cell pays)

    return True


def timed(plan, out, **options) -> tuple[float, dict]:
    t = time.perf_counter()
    run = run_to_completion(sweep_job(plan, out, mode="replace", **options))
    return time.perf_counter() - t, run


def same(a, b) -> str:
    """ "same bits" when every array of every cell is byte for byte the same."""
    equal = all(
        a.cells[c].keys() == b.cells[c].keys()
        and all(a.cells[c][k].tobytes() == b.cells[c][k].tobytes() for k in a.cells[c])
        for c in a.cells
    )
    return "same bits" if equal else "DIFFERENT"


def ray_round(workers: int, plan, out: Path, sizes) -> tuple[tuple, dict]:
    """Start a local Ray of ``workers`` CPUs; its start-up, per-task overhead and sweep times."""
    import ray

    t = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    t_init = time.perf_counter() - t
    t = time.perf_counter()
    ray.get([ray.remote(num_cpus=1)(_warm).remote() for _ in range(workers)])
    t_warm = time.perf_counter() - t
    noop = ray.remote(num_cpus=1)(_noop)
    ray.get([noop.remote(0) for _ in range(20)])
    t = time.perf_counter()
    for i in range(100):
        ray.get(noop.remote(i))
    latency = (time.perf_counter() - t) / 100
    t = time.perf_counter()
    ray.get([noop.remote(i) for i in range(500)])
    throughput = (time.perf_counter() - t) / 500
    # One untimed sweep first: the first on a fresh cluster also ships the cell function and the
    # data to every worker, which the first timed row paid alone (1.5× the later rows' time).
    timed(plan, out / f"ray{workers}-warm", executor="ray")
    times = {"auto": timed(plan, out / f"ray{workers}", executor="ray")}
    for k in sizes:
        times[k] = timed(plan, out / f"ray{workers}-{k}", executor="ray", cells_per_task=k)
    ray.shutdown()
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
    labels = ("ray.init", "first task per worker (imports)", "task round trip, one at a time")
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
