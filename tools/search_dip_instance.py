"""Search a Fig. 3 construction (2—1—1—1 → 2—21—21—1, docs/MATH.md B7) whose saddle shows dips over
ALL parameters (issue 12, "A Fig. 3 instance where the dip is visible").

For each candidate (data seed, N, teacher scale, input scale, split λ of the construction) this
builds the construction with the engine's own functions (teacher_data, construction.construct_job),
moves one split's λ outside I (construction.move_lambda) and reports, per saddle λ:
L*, B(1), B(2) eigenvalues, the Hessian's min/max at the saddle, the predicted fraction
P(dᵀHd < 0) over all parameters (dip_probability.negative_probability on the full Hessian's
eigenvalues) and, unless --no-slices, the observed fraction n_below / K of K random unit
directions from landscape.slices_job at each T of --T.

Examples:
  python tools/search_dip_instance.py                       # today's flat instance (seed 0, λ = 2)
  python tools/search_dip_instance.py --split-lam 0.99 --saddle-lams 2 -1
  python tools/search_dip_instance.py --seeds 0 1 2 --split-lam 0.5 0.9 0.99 --no-slices
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core import mlp  # noqa: E402
from engine.core.errors import EngineInputError  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.landscape import slices as landscape
from engine.minima import construction as C  # noqa: E402
from engine.minima.dip_probability import negative_probability  # noqa: E402
from engine.minima.reproduce import teacher_data  # noqa: E402


def build(seed, n_samples, scale, input_scale, split_lam, schedule, data_tries, restarts,
          small=(2, 1, 1, 1), teacher=(2, 5, 5, 1)):
    """deep_construction_job's loop, with the knobs it lacks (teacher scale, input scale, split λ)."""
    for k in range(data_tries):
        X, Y = teacher_data(teacher, n_samples, seed + 1000 * k, scale=scale, input_scale=input_scale)
        try:
            c = run_to_completion(C.construct_job(X, Y, small, schedule=schedule, lam=split_lam,
                                                  seed=seed + k, max_restarts=restarts))
            return c, seed + 1000 * k
        except EngineInputError:
            continue
    return None, None


def split_index(c, which: str) -> int:
    """'last' → the last split; 'last1' / 'last2' → the last split of layer 1 / 2."""
    if which == "last":
        return len(c.splits) - 1
    layer = int(which[-1])
    return max(i for i, s in enumerate(c.splits) if s.layer == layer)


def evaluate(c, lam, which, K, Ts, P, slices=True, seed=0):
    i = split_index(c, which)
    probe = C.move_lambda(c, lam, i)
    eigs = np.linalg.eigvalsh(mlp.hessian(c.arch, probe.params, c.X, c.Y))
    inside = C.move_lambda(c, 0.5, i)  # the same split at λ = ½, inside I = (0, 1) when its B is PD
    row = {"moved": which, "verdict_lam0.5": inside.verdict, "saddle_lam": lam, "verdict": probe.verdict,
           "loss_saddle": probe.loss, "h_min": float(eigs[0]), "h_max": float(eigs[-1]),
           "n_neg": int((eigs < -C.EIG_TOL_REL * max(1, abs(eigs).max())).sum()),
           "predicted": negative_probability(eigs)}
    if slices:
        for T in Ts:
            s = run_to_completion(landscape.slices_job(c.arch, probe.params, c.X, c.Y, K=K, P=P, T=T, seed=seed))
            row[f"obs_T{T:g}"] = f"{s.n_below}/{K}"
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--n-samples", type=int, nargs="+", default=[20])
    ap.add_argument("--teacher-scale", type=float, nargs="+", default=[4.0])
    ap.add_argument("--input-scale", type=float, nargs="+", default=[1.0])
    ap.add_argument("--split-lam", type=float, nargs="+", default=[0.5],
                    help="λ of every split of the construction (construct_job's lam, inside I = (0, 1))")
    ap.add_argument("--saddle-lams", type=float, nargs="+", default=[2.0])
    ap.add_argument("--moved", nargs="+", default=["last"], choices=["last", "last1", "last2"],
                    help="which split's λ is moved outside I")
    ap.add_argument("--schedule", default="1:20,2:20")
    ap.add_argument("--data-tries", type=int, default=10)
    ap.add_argument("--restarts", type=int, default=15)
    ap.add_argument("--K", type=int, default=5000)
    ap.add_argument("--P", type=int, default=41)
    ap.add_argument("--T", type=float, nargs="+", default=[1.0, 0.2])
    ap.add_argument("--no-slices", action="store_true")
    ap.add_argument("--json", help="append one JSON line per row to this file")
    a = ap.parse_args(argv)
    schedule = tuple((int(l), int(n)) for l, n in (p.split(":") for p in a.schedule.split(",")))
    cols = ["seed", "N", "scale", "in", "split_lam", "data_seed", "t_build", "L*", "B1", "B2", "big",
            "moved", "verdict_lam0.5", "saddle_lam", "verdict", "h_min", "h_max", "n_neg", "predicted"]
    print(" | ".join(cols + ([] if a.no_slices else [f"obs_T{T:g}" for T in a.T])), flush=True)
    for seed, N, scale, ins, slam in itertools.product(a.seeds, a.n_samples, a.teacher_scale, a.input_scale,
                                                       a.split_lam):
        t0 = time.perf_counter()
        c, data_seed = build(seed, N, scale, ins, slam, schedule, a.data_tries, a.restarts)
        t_build = time.perf_counter() - t0
        head = {"seed": seed, "N": N, "scale": scale, "in": ins, "split_lam": slam, "data_seed": data_seed,
                "t_build": f"{t_build:.0f}s"}
        if c is None:
            print(" | ".join(map(str, head.values())) + " | no valid small minimum", flush=True)
            continue
        B = {n.layer: n.B_eigs for n in c.small_neurons if n.neuron == 0}
        head.update({"L*": f"{c.steps[0].loss:.4g}", "B1": np.array2string(B[1], precision=3),
                     "B2": np.array2string(B[2], precision=3),
                     "big": f"{c.verification.verdict} I={c.verification.interval} "
                            f"hmin={c.steps[-1].hessian.min:.1e}"})
        for which, lam in itertools.product(a.moved, a.saddle_lams):
            row = evaluate(c, lam, which, a.K, a.T, a.P, not a.no_slices)
            row = {**head, **row}
            fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
            print(" | ".join(fmt(row[k]) for k in row if k != "loss_saddle"), flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(row, default=float) + "\n")


if __name__ == "__main__":
    main()
