"""The paper's Fig. 4 and Fig. 5 experiments (MATH A8), as ``reproduce`` jobs that run sweeps.

``topo-breast-cancer`` (Fig. 4) and the Monte Carlo of ``topo-probability`` (Fig. 5) are thin calls
of this package's sweeps (``main.py sweep``); each writes metrics.json and the arrays behind every
number in it (docs/EXPORTS.md), then a figure. ``topo-toy`` is in engine.topology.reproduce.
"""

from __future__ import annotations

import math
from pathlib import Path

from engine.core.exports import grid_to_json, save_arrays, write_metrics
from engine.core.progress import Job, Progress, subjob
from engine.sweeps import fig4, fig5
from engine.sweeps.jobs import fig4_job
from engine.sweeps.runner import sweep_job
from engine.topology.figures import probability_figure
from engine.topology.probability import CLOSED_FORM_SCHEMES, obstruction_probability, probability_grid

# --- topo-breast-cancer (Fig. 4) ---------------------------------------------------------------


def run_breast_cancer(out_dir: Path, quick: bool = False, seed: int = 0, sign_policy: str = "positive") -> Job[dict]:
    """The Fig. 4 sweep of engine.sweeps on breast cancer at the paper's grid (l = 2..9), cells kept
    under out_dir/cells; sweep.npz, the figure and metrics.json are assembled from them."""
    out_dir = Path(out_dir)
    plan = fig4.plan("breast-cancer", seed=seed, sign_policy=sign_policy, **(fig4.QUICK if quick else fig4.FULL))
    metrics = yield from subjob(fig4_job(plan, out_dir, mode="replace"), 0.0, 1.0)
    yield Progress(1.0, "topo-breast-cancer done")
    return write_metrics(out_dir, {**metrics, "quick": quick})


# --- topo-probability (Fig. 5) -----------------------------------------------------------------

PROBABILITY_GRID = range(1, 51)  # d and l
CHECKS_AT = [(1, 1), (2, 5), (5, 3), (10, 10), (30, 1), (30, 10)]  # Monte Carlo against the closed forms
TORCH_DS, TORCH_LS = [1, 2, 3, 5, 10, 20, 30, 50], [1, 2, 3, 5, 10, 20, 50]  # PyTorch default init (no closed form)


def run_probability(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    """Closed forms on the 50 × 50 grid, then one Fig. 5 sweep (engine.sweeps.fig5) of Monte Carlo
    cells: Xavier and Kaiming at CHECKS_AT (the checks against the closed forms) and PyTorch's
    default init on TORCH_DS × TORCH_LS (its map)."""
    out_dir = Path(out_dir)
    ds = ls = list(PROBABILITY_GRID)
    n_mc = 4000 if quick else 40000
    grids = {s: probability_grid(ds, ls, s) for s in CLOSED_FORM_SCHEMES}
    yield Progress(0.05, "closed forms done")
    points = [(s, d, l) for d, l in CHECKS_AT for s in CLOSED_FORM_SCHEMES]
    points += [("pytorch", d, l) for d in TORCH_DS for l in TORCH_LS]
    schemes = (*CLOSED_FORM_SCHEMES, "pytorch")
    settings = fig5.Fig5Settings(tuple(TORCH_DS), tuple(TORCH_LS), schemes, n_mc, seed, tuple(points))
    run = yield from subjob(sweep_job(fig5.plan(settings), out_dir, mode="replace"), 0.05, 0.95)
    mc = fig5.grids(settings, run.cells)
    checks = []
    for d, l in CHECKS_AT:
        a, b = TORCH_DS.index(d), TORCH_LS.index(l)
        for s in CLOSED_FORM_SCHEMES:
            est, se = float(mc[f"mc_{s}"][a, b]), float(mc[f"se_{s}"][a, b])
            exact = obstruction_probability(d, l, s)
            checks.append(
                {
                    "d": d,
                    "l": l,
                    "init": s,
                    "closed_form": exact,
                    "monte_carlo": est,
                    "std_error": se,
                    "z": (est - exact) / se,
                }
            )
    torch_p, torch_se = mc["mc_pytorch"], mc["se_pytorch"]
    d1_exact = [1 - (1 - 1 / (2 * math.sqrt(l))) ** l for l in TORCH_LS]  # MATH A8, d = 1
    save_arrays(
        out_dir,
        "probability.npz",
        d=ds,
        l=ls,
        **{f"closed_{s}": g for s, g in grids.items()},
        checks=[
            [c["d"], c["l"], CLOSED_FORM_SCHEMES.index(c["init"]), c["closed_form"], c["monte_carlo"], c["std_error"]]
            for c in checks
        ],
        torch_d=TORCH_DS,
        torch_l=TORCH_LS,
        torch_p=torch_p,
        torch_se=torch_se,
    )
    probability_figure(out_dir / "probability.png", ds, ls, grids, TORCH_DS, TORCH_LS, torch_p, torch_se)
    metrics = {
        "ds": ds,
        "ls": ls,
        "xavier_normal": grid_to_json(grids["xavier_normal"]),
        "kaiming_normal": grid_to_json(grids["kaiming_normal"]),
        "mc_checks": checks,
        "max_abs_z": float(max(abs(c["z"]) for c in checks)),
        "n_samples": n_mc,
        "pytorch_default": {
            "ds": TORCH_DS,
            "ls": TORCH_LS,
            "p": grid_to_json(torch_p),
            "std_error": grid_to_json(torch_se),
            "d1_exact": d1_exact,
        },
        "d30_l1": {
            "pytorch_default": float(torch_p[TORCH_DS.index(30), 0]),
            "kaiming_normal": obstruction_probability(30, 1, "kaiming_normal"),
        },
    }
    yield Progress(1.0, "topo-probability done")
    return write_metrics(out_dir, metrics)
