"""``sweep fig4|fig5|minima --out DIR``: a grid past the papers', on this machine or a Ray cluster.

Every finished cell is written at once under DIR/cells/ and DIR/sweep.json records the settings;
``--resume`` computes only the missing cells (and refuses changed settings), so Ctrl-C loses at
most the cells in flight. metrics.json and the .npz arrays are assembled from the cells.
"""

from __future__ import annotations

import json
import sys

from ..arguments import MAX_SEED, float_in, int_in

NAME = "sweep"
HELP = "a Fig. 4 / Fig. 5 / construction sweep, local or on Ray, resumable"

SIGN_POLICIES = ("positive", "negative", "random_common", "independent")  # engine.topology.width_sweep


def _common(p, quick: str, seed: bool = True) -> None:
    """What every kind takes; ``quick``: what --quick runs."""
    p.add_argument("--quick", action="store_true", help=quick)
    if seed:
        p.add_argument("--seed", type=int_in(0, MAX_SEED, "a seed from 0"), default=0)
    p.add_argument("--out", required=True, help="folder for sweep.json, cells/, metrics.json and the arrays")
    p.add_argument("--executor", choices=("local", "ray"), default="local", help="where the cells run")
    p.add_argument("--address", help="with --executor ray: auto or ray://HOST:PORT of a running cluster")
    p.add_argument("--workers", type=int_in(1, 4096), help="local threads, or CPUs of a Ray started here")
    p.add_argument("--resume", action="store_true", help="continue the sweep in --out: compute the missing cells")
    p.add_argument("--cells-per-task", type=int_in(1, 100_000), help="Ray: cells per task (default: sized by cost)")


def add_arguments(parser) -> None:
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", parser_class=type(parser), required=True)
    f4 = kinds.add_parser("fig4", help="test BCE over (l, l+), trained from rescaled inits")
    _common(f4, "a small grid: 4 inits, 150 steps (l = 2..9)")
    f4.add_argument("--dataset", default="breast-cancer", help="breast-cancer, wine, digits-binary or FILE.csv")
    f4.add_argument("--l", default=None, help="hidden sizes, e.g. 2..30 (default 2..9)")
    f4.add_argument("--inits", type=int_in(1, 10_000), default=None, help="inits per (l, l+) (default 100)")
    f4.add_argument("--steps", type=int_in(1, 1_000_000), default=None, help="GD steps (default 1000)")
    f4.add_argument("--lr", type=float_in(1e-12, 1e3), default=0.1)
    f4.add_argument("--sign-policy", choices=SIGN_POLICIES, default="positive")
    f5 = kinds.add_parser("fig5", help="P[obstruction at init] over (d, l), Monte Carlo and closed forms")
    _common(f5, "a small grid: d, l = 1..5, 2000 draws (unless given)")
    f5.add_argument("--d", help="input dimensions, e.g. 1..100 (default 1..30)")
    f5.add_argument("--l", help="hidden sizes, e.g. 1..100 (default 1..30)")
    f5.add_argument("--samples", type=int_in(2, 100_000_000), help="Monte Carlo draws per cell (default 20000)")
    f5.add_argument("--scheme", default="kaiming_normal,xavier_normal,pytorch", help="init schemes, comma separated")
    mi = kinds.add_parser("minima", help="the Fig. 3 construction over data seeds: how often each outcome")
    _common(mi, "a small grid: seeds 0..3, 2 splits (unless given)", seed=False)
    mi.add_argument("--data-seeds", help="data seeds, e.g. 0..99 (default 0..19)")
    mi.add_argument("--splits", help="splits per hidden layer (sizes), e.g. 5,20 (default 20)")
    mi.add_argument("--lam", type=float_in(-1e6, 1e6), default=0.99, help="λ of each split")
    mi.add_argument("--saddle-lam", type=float_in(-1e6, 1e6), default=2.0, help="λ of the saddle probe")


def _plan(args):
    from engine.sweeps import fig4, fig5, minima
    from engine.sweeps.grid import int_range

    if args.kind == "fig4":
        size = dict(fig4.QUICK if args.quick else fig4.FULL)
        if args.l is not None:
            size["ls"] = int_range(args.l, "--l", 1, fig4.MAX_L)
        if args.inits is not None:
            size["n_inits"] = args.inits
        if args.steps is not None:
            size["steps"] = args.steps
        return fig4.plan(args.dataset, lr=args.lr, sign_policy=args.sign_policy, seed=args.seed, **size)
    if args.kind == "fig5":
        d, l, samples = ("1..5", "1..5", 2000) if args.quick else ("1..30", "1..30", 20_000)
        d, l, samples = args.d or d, args.l or l, args.samples or samples
        schemes = tuple(s.strip() for s in args.scheme.split(",") if s.strip())
        s = fig5.Fig5Settings(
            int_range(d, "--d", 1, fig5.MAX_D), int_range(l, "--l", 1, fig5.MAX_L), schemes, samples, args.seed
        )
        return fig5.plan(s)
    seeds, splits = ("0..3", "2") if args.quick else ("0..19", "20")
    seeds, splits = args.data_seeds or seeds, args.splits or splits
    s = minima.MinimaSettings(
        int_range(seeds, "--data-seeds", 0, 2**31),
        int_range(splits, "--splits", 0, minima.MAX_SPLITS),
        lam=args.lam,
        saddle_lam=args.saddle_lam,
    )
    return minima.plan(s)


def run(args) -> int:
    from engine.core.exports import json_default
    from engine.core.progress import run_to_completion
    from engine.sweeps import jobs
    from engine.sweeps.runner import SweepPartial

    from ..progress_bar import CellBar

    plan = _plan(args)
    job = {"fig4": jobs.fig4_job, "fig5": jobs.fig5_job, "minima": jobs.minima_job}[args.kind](
        plan,
        args.out,
        executor=args.executor,
        address=args.address,
        workers=args.workers,
        mode="resume" if args.resume else "new",
        cells_per_task=args.cells_per_task,
    )
    bar = None

    def report(update):
        nonlocal bar
        p = update.partial
        if not isinstance(p, SweepPartial):
            return
        if bar is None:  # quiet when stderr is not a terminal (a log, CI, a pipe)
            where = f"{p.kind} on {p.executor} ({p.workers} worker{'' if p.workers == 1 else 's'})"
            bar = CellBar(where, p.total, p.done)
        bar.update(p.done)

    try:
        metrics = run_to_completion(job, report)
    except KeyboardInterrupt:
        job.close()
        from engine.sweeps.store import CellStore

        kept = len(CellStore(args.out).finished())
        total = len(plan.cells)
        print(f"\ninterrupted: {kept} of {total} cells kept in {args.out}; add --resume to finish", file=sys.stderr)
        raise
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps(metrics, indent=2, default=json_default))
    return 0
