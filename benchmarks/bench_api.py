"""The API's overhead over the engine kernel it calls: ``ll.plane`` on an ``nn.Sequential`` against
the MLP kernel the command line runs (``engine.landscape.operations.plane_job`` on an ``MLPLoss``), interleaved in
one run.

Workload: benchmarks/bench_toolkit.py's 784—128—128—10 ReLU MLP with biases (118,282 parameters),
1,000 generated samples with integer labels, cross-entropy, a 51 × 51 filter-normalised plane in
float64, the machine's threads. Prints each side's best of ``--repeats``, process CPU seconds (the
figure compared: on a shared machine the wall clock also measures the other jobs) and wall
seconds, and their ratios.

    python3 benchmarks/bench_api.py [--repeats 3] [--points 51]
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import landscape_lens as ll  # noqa: E402
from engine.core import mlp  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.landscape.operations import plane_job  # noqa: E402
from engine.landscape.plane import MLPLoss  # noqa: E402

WIDTHS, N = (784, 128, 128, 10), 1000


def workload(seed: int = 0):
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        layers.append(torch.nn.Linear(a, b, dtype=torch.float64))
        if i < len(WIDTHS) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    X = rng.standard_normal((N, WIDTHS[0]))
    Y = rng.integers(0, WIDTHS[-1], N)
    return model, X, Y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--points", type=int, default=51)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    model, X, Y = workload()
    Ws = [m.weight.detach().numpy() for m in model[0::2]]
    bs = [m.bias.detach().numpy() for m in model[0::2]]
    arch = mlp.landscape_arch(WIDTHS, "relu", True)
    theta = mlp.pack(Ws, bs)
    kernel, api = [], []  # (CPU s, wall s) per repeat, interleaved

    def timed(work):
        cpu, wall = time.process_time(), time.perf_counter()
        out = work()
        return (time.process_time() - cpu, time.perf_counter() - wall), out

    cli = lambda: run_to_completion(
        plane_job(MLPLoss(arch, theta, X, Y.astype(float), "cross-entropy"), args.points, 1.0, "filter", "none", 0)
    )
    for _ in range(args.repeats):
        t, engine = timed(cli)
        kernel.append(t)
        t, through_api = timed(
            lambda: ll.plane(model, (X, Y), points=args.points, loss="cross-entropy", progress=False)
        )
        api.append(t)
    same = np.allclose(engine.loss, through_api.loss, rtol=1e-12, atol=0)
    print(f"{args.points}² plane of {arch.n_params} parameters, {N} samples, {torch.get_num_threads()} threads")
    for name, ts in (("the command line's kernel", kernel), ("through ll.plane", api)):
        every = ", ".join(f"{c:.2f}/{w:.2f}" for c, w in ts)
        print(f"  {name:<26} best {min(c for c, _ in ts):.2f} s CPU, {min(w for _, w in ts):.2f} s wall ({every})")
    cpu = min(c for c, _ in api) / min(c for c, _ in kernel)
    wall = min(w for _, w in api) / min(w for _, w in kernel)
    print(f"  API / kernel: CPU {cpu:.3f}, wall {wall:.3f}; the same losses: {same}")


if __name__ == "__main__":
    main()
