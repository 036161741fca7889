"""Hessian report of a 2—200—200—1 sigmoid net (41,001 parameters) on 20 samples: the issue-12
requirement is under a minute. Two points: the random start, and after 200 L-BFGS steps (near a
minimum, where a few Gauss–Newton eigenvalues dwarf the rest and the lowest are hardest to find).
The report runs as the job the GUI drives, so the time includes its progress yields.
Run: python benchmarks/bench_hessian.py [--k 6] [--probes 64]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.optimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.core import mlp  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import configure_torch_threads  # noqa: E402
from engine.landscape import hessian


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--probes", type=int, default=64)
    args = parser.parse_args()
    configure_torch_threads()
    arch = mlp.Arch((2, 200, 200, 1), "sigmoid", True)
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=20)
    theta = mlp.init_params(arch, rng)
    trained = scipy.optimize.minimize(
        lambda p: mlp.loss_and_grad(arch, p, X, Y), theta, jac=True, method="L-BFGS-B", options=dict(maxiter=200)
    ).x
    print(f"{arch.widths}: {arch.n_params} parameters, {len(X)} samples")
    for name, point in (("random start", theta), ("after 200 L-BFGS steps", trained)):
        updates = []
        began = time.perf_counter()
        r = run_to_completion(
            hessian.hessian_report_job(arch, point, X, Y, k=args.k, probes=args.probes), updates.append
        )
        seconds = time.perf_counter() - began
        print(f"{name}: {seconds:.1f} s, method {r.method}, {r.n_hvp} HVPs, {len(updates)} progress updates")
        print(f"  lowest  {np.array2string(r.lowest, precision=4)}")
        print(f"  highest {np.array2string(r.highest, precision=4)}")
        print(f"  trace {r.trace:.6g} ± {r.trace_stderr:.2g} (Hutchinson, {r.probes} probes)")


if __name__ == "__main__":
    main()
