"""Batched landscape slices vs the per-point method, K=5000 × P=101 on 2—21—21—1 with 20 samples.

The per-point method (what existing landscape tools do): write each parameter vector into a
torch nn.Module and call forward once. It is timed on a subset of points and extrapolated.
Also reports achieved GFLOP/s against a large matmul measured in the same run.
Run: python benchmarks/bench_landscape.py [--threads 1 2] [--repeats 3]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine import deep, landscape  # noqa: E402
from engine.progress import run_to_completion  # noqa: E402
from engine.runtime import configure_torch_threads  # noqa: E402

K, P, N = 5000, 101, 20
ARCH = deep.Arch((2, 21, 21, 1))
# multiply-adds per point: 2 flops each, plus the activations and the loss (counted as 1 flop each)
FLOPS_PER_POINT = 2 * N * (2 * 21 + 21 * 21 + 21) + 2 * 21 * N + 3 * N


def per_point(theta, d, t, X, y, dtype, n_points):
    model = torch.nn.Sequential(torch.nn.Linear(2, 21, bias=False), torch.nn.Sigmoid(),
                                torch.nn.Linear(21, 21, bias=False), torch.nn.Sigmoid(),
                                torch.nn.Linear(21, 1, bias=False)).to(dtype)
    Xt, yt = torch.as_tensor(X, dtype=dtype), torch.as_tensor(y, dtype=dtype)
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(n_points):
            vec = torch.as_tensor(theta + t[i % P] * d[i // P], dtype=dtype)
            torch.nn.utils.vector_to_parameters(vec, model.parameters())  # W1, W2, W3: same order as deep.py
            ((model(Xt)[:, 0] - yt) ** 2).sum().item()
    return (time.perf_counter() - start) / n_points


def best_of(repeats: int, work) -> float:
    """Fastest of several timings: on a shared machine the minimum is the least disturbed."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_gflops(dtype, n=1000, reps=5):
    a = torch.randn(n, n, dtype=dtype)
    a @ a
    return 2 * n**3 / best_of(reps, lambda: a @ a) / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="Python worker threads for the batched path (each is reported)")
    parser.add_argument("--subset", type=int, default=3000, help="per-point evaluations actually timed")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each; the fastest counts")
    args = parser.parse_args()
    configure_torch_threads()
    rng = np.random.default_rng(0)
    theta = deep.init_params(ARCH, rng, 2.0)
    X, y = rng.normal(size=(N, 2)), rng.normal(size=N) * 0.1
    d = landscape.random_directions(ARCH, theta, K, seed=0)
    t = np.linspace(-1, 1, P)
    for name, dtype in (("float64", torch.float64), ("float32", torch.float32)):
        peak = matmul_gflops(dtype)
        pp = min(per_point(theta, d, t, X, y, dtype, args.subset) for _ in range(args.repeats)) * K * P
        print(f"{name}: per-point {pp:.1f} s (extrapolated from {args.subset} points; best of {args.repeats}); "
              f"a 1000² matmul runs at {peak:.1f} GFLOP/s")
        for threads in args.threads:
            batched = best_of(args.repeats, lambda: run_to_completion(landscape.slices_job(
                ARCH, theta, X, y, directions=d, P=P, dtype=name, threads=threads)))
            gflops = FLOPS_PER_POINT * K * P / batched / 1e9
            print(f"  batched, {threads} thread(s): {batched:.2f} s ({batched / (K * P) * 1e6:.2f} µs/point); "
                  f"speed-up {pp / batched:.1f}x; {gflops:.2f} GFLOP/s = {100 * gflops / (peak * threads):.1f}% "
                  f"of the matmul's rate on {threads} core(s)")


if __name__ == "__main__":
    main()
