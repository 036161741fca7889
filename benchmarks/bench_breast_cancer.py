"""Time the full topo-breast-cancer grid: batched sweep vs Python loops of per-run training.

Two per-run baselines do the same work run by run:
- "hand-written": engine.topology.width_sweep.train_run_bce (exact gradients, no autograd), the tight one;
- "autograd": the usual plain-PyTorch loop (BCEWithLogits, loss.backward(), torch.optim.SGD).
A full loop takes long, so by default each runs an evenly spaced subset of the runs (keeping the
mix of hidden sizes l) and is extrapolated by run count; --full-loop times all of the first.
Both wall and process CPU time are shown. The loops use one core; the sweep spreads its chunks
over --threads cores, so its wall-clock ratio is what a user sees and its CPU ratio is per core.

    python benchmarks/bench_breast_cancer.py [--steps 1000] [--n-inits 100] [--loop-every 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine.core import datasets  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import configure_torch_threads  # noqa: E402
from engine.topology.two_layer import TwoLayerParams  # noqa: E402
from engine.topology.width_sweep import (  # noqa: E402
    WORKER_THREADS,
    SweepSettings,
    breast_cancer_sweep,
    held_out_bce,
    sweep_init,
    train_run_bce,
)


def autograd_run(X, Y, p: TwoLayerParams, lr: float, steps: int) -> TwoLayerParams:
    W1, W2 = torch.tensor(p.W1, requires_grad=True), torch.tensor(p.W2, requires_grad=True)
    opt = torch.optim.SGD([W1, W2], lr=lr)
    X, Y = torch.from_numpy(X), torch.from_numpy(Y)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(torch.relu(X @ W1.T) @ W2.T, Y).backward()
        opt.step()
    return TwoLayerParams(W1.detach().numpy(), W2.detach().numpy())


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--n-inits", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--threads", type=int, default=WORKER_THREADS, help="worker threads of the batched sweep")
    ap.add_argument("--loop-every", type=int, default=20, help="time every k-th run of the loop and extrapolate")
    ap.add_argument("--autograd-every", type=int, default=400)
    ap.add_argument("--full-loop", action="store_true")
    args = ap.parse_args()
    configure_torch_threads()
    split = datasets.breast_cancer(seed=0)

    settings = SweepSettings(n_inits=args.n_inits, steps=args.steps)
    res, bw, bc = timed(
        lambda: run_to_completion(breast_cancer_sweep(settings, chunk=args.chunk, threads=args.threads))
    )
    runs = res.runs
    print(f"grid: {len(runs)} runs x {args.steps} steps (l = 2..9, l+ = 0..l, {args.n_inits} inits)")
    print(f"batched sweep (chunk {args.chunk}, {args.threads} thread(s)): wall {bw:.1f} s, CPU {bc:.1f} s")

    for name, trainer, every in (
        ("hand-written", train_run_bce, 1 if args.full_loop else args.loop_every),
        ("autograd", autograd_run, args.autograd_every),
    ):
        subset = range(0, len(runs), every)

        def loop():
            diff = 0.0
            for j in subset:
                l, lp, i = runs[j]
                p = trainer(split.X_train, split.Y_train, sweep_init(30, l, lp, i, 0), 0.1, args.steps)
                diff = max(diff, abs(held_out_bce(p) - res.test_bce[j]))
            return diff

        diff, lw, lc = timed(loop)
        k = len(runs) / len(subset)
        how = "measured" if every == 1 else f"extrapolated x{k:.0f} from {len(subset)} runs (every {every}th)"
        print(
            f"per-run loop, {name}: wall {lw * k:.1f} s, CPU {lc * k:.1f} s ({how}); "
            f"speed-up wall {lw * k / bw:.1f}x, CPU {lc * k / bc:.1f}x; max |test BCE diff| {diff:.1e}"
        )


if __name__ == "__main__":
    main()
