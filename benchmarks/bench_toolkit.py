"""The landscape toolkit at scale, against the peer, loss-landscapes 3.0.6, in one run.

Workload: a loaded 784—128—128—10 ReLU MLP with biases (118,282 parameters), 1,000 generated
samples with integer labels, cross-entropy (mean over samples, torch.nn.CrossEntropyLoss's).
The network is generated, saved as the app's .npz and loaded back through
engine.landscape.networks, as ``main.py landscape`` would.

Rows (wall seconds, process CPU seconds):
  plane    a filter-normalised 51 × 51 plane: ours (engine.landscape.operations.plane_job) on one
           and on two threads, against the peer fed the SAME directions: its linear_interpolation
           (model wrapper, in-place parameter steps, its Loss metric, one full forward per point)
           along each row θ + α_i d1 + β d2 of the grid: what its planar_interpolation does per
           row. Timed on --peer-rows rows (fewer than 51 are extrapolated per point), one torch
           thread, best of --repeats. Beside it, the plane's GEMM floor: the products every
           point must make (layers 2.., 2·n_l·(n_{l-1} + 1)·N multiply-adds each; layer 1 is made
           once for the grid) at this machine's one-thread GEMM peak, a 1500² matmul through the
           BLAS the kernel uses (numpy's; engine.landscape.compute.blas_matmul), measured here.
  pca      200 GD steps from the loaded weights, the PCA plane and its 51 × 51 grid: ours end to
           end (engine.landscape.trajectory_pca.pca_plane_job); the peer cannot train or fit the
           plane, so its row is its evaluation of the same PCA grid (extrapolated as above).
  density  SLQ, 10 probes × 80 Lanczos steps (engine.landscape.density.density_job). The peer
           has no Hessian (its HessianEvaluator is commented out in 3.0.6): no peer row.
Targets (the issue's, for this 2-core machine): plane ≥ 10× the peer in wall time; density ≤ 60 s.
The peer's losses are checked against ours on the rows it evaluates. About 2 minutes on 2 idle
cores at the defaults.

Run: python benchmarks/bench_toolkit.py [--dtype float64|float32] [--peer-rows 51] [--repeats 2] [--device cuda]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import threadpoolctl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.core import mlp  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import configure_torch_threads  # noqa: E402
from engine.landscape import density, directions, operations, plane, trajectory_pca  # noqa: E402
from engine.landscape.compute import blas_matmul  # noqa: E402
from engine.landscape.networks import Network, read_network, write_network  # noqa: E402

WIDTHS, N, GRID, EXTENT, STEPS = (784, 128, 128, 10), 1000, 51, 1.0, 200
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def gemm_peak(dtype: str, n: int = 1500, reps: int = 3) -> float:
    """One thread's GFLOP/s on an n² matmul through the kernel's BLAS, in CPU seconds (what a busy
    machine's waiting does not inflate; on an idle one, wall)."""
    with threadpoolctl.threadpool_limits(1):
        a = torch.randn(n, n, dtype=DTYPES[dtype])
        out = torch.empty_like(a)
        blas_matmul(a, a, out)
        return 2 * n**3 / min(timed(lambda: blas_matmul(a, a, out))[1] for _ in range(reps)) / 1e9


def plane_gemm_flops(arch, n_samples: int, points: int) -> float:
    """The multiply-adds every point of a plane must make: layers 2.. with their biases."""
    widths = arch.widths
    per_point = sum(2 * widths[l] * (widths[l - 1] + arch.bias) * n_samples for l in range(2, len(widths)))
    return per_point * points


def generated_network(folder: Path) -> Network:
    """A ReLU classifier at a random start and 1,000 samples labelled by a random teacher; saved
    and loaded back through the app's .npz."""
    rng = np.random.default_rng(0)
    arch = mlp.landscape_arch(WIDTHS, "relu", True)
    theta = mlp.init_params(arch, rng, np.sqrt(2.0))
    for l in range(1, arch.n_layers + 1):  # small nonzero biases, so the bias handling is exercised
        theta[arch.block(f"b{l}").slice] = 0.01 * rng.standard_normal(arch.widths[l])
    X = rng.standard_normal((N, WIDTHS[0]))
    labels = np.argmax(X @ rng.standard_normal((WIDTHS[0], WIDTHS[-1])), 1)
    path = write_network(folder / "mlp.npz", Network(arch, theta, X, labels))
    return read_network(path)


def peer_model(arch, dtype):
    layers = []
    for l in range(1, arch.n_layers + 1):
        layers.append(torch.nn.Linear(arch.widths[l - 1], arch.widths[l], bias=arch.bias))
        if l < arch.n_layers:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(dtype)  # parameters W1, b1, W2, b2, …: mlp.py's flat order


def peer_rows(net, center, d1, d2, alpha, beta, rows, dtype):
    """loss-landscapes' linear_interpolation along rows ``rows`` of the grid: it evaluates
    start + k (end − start)/steps for k = 1..steps, so start one step before β_0."""
    from loss_landscapes.main import linear_interpolation
    from loss_landscapes.metrics import Loss

    tdtype = DTYPES[dtype]
    metric = Loss(
        torch.nn.CrossEntropyLoss(), torch.as_tensor(net.X, dtype=tdtype), torch.as_tensor(net.Y).reshape(-1).long()
    )
    h, steps = beta[1] - beta[0], len(beta)
    start_model, end_model = peer_model(net.arch, tdtype), peer_model(net.arch, tdtype)
    out = []
    for i in rows:
        start = center + alpha[i] * d1 + (beta[0] - h) * d2
        torch.nn.utils.vector_to_parameters(torch.as_tensor(start, dtype=tdtype), start_model.parameters())
        torch.nn.utils.vector_to_parameters(
            torch.as_tensor(start + steps * h * d2, dtype=tdtype), end_model.parameters()
        )
        out.append(linear_interpolation(start_model, end_model, metric, steps=steps))
    return np.array(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="float64", choices=tuple(DTYPES))
    parser.add_argument("--peer-rows", type=int, default=17, help="grid rows the peer is timed on (51: all)")
    parser.add_argument(
        "--repeats", type=int, default=2, help="interleaved timings of ours and the peer; fastest counts"
    )
    parser.add_argument("--device", default="cpu", help="cuda: run our rows on the GPU")
    parser.add_argument("--skip", default="", help="comma-separated rows to skip: plane, pca, density")
    args = parser.parse_args()
    configure_torch_threads()
    skip = set(filter(None, args.skip.split(",")))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        net = generated_network(Path(tmp))
    arch, kind = net.arch, "cross-entropy"
    print(
        f"Workload: {'—'.join(map(str, arch.widths))} ReLU with biases, {arch.n_params} parameters, N = {N}, "
        f"{kind}; {args.dtype}, torch threads {torch.get_num_threads()}, device {args.device}; peer "
        f"loss-landscapes timed on {args.peer_rows} of {GRID} rows and extrapolated per point"
    )
    rows = np.linspace(0, GRID - 1, args.peer_rows).round().astype(int)
    table = []

    def versus_peer(name, ours, center, d1, d2, alpha, beta, pick=lambda r: r):
        """``ours`` (a dict: label -> job) and the peer interleaved --repeats times; the fastest wall
        and CPU of each."""
        best = {label: [np.inf, np.inf] for label in (*ours, "peer")}
        keep = lambda label, wall, cpu: best.update({label: [min(best[label][0], wall), min(best[label][1], cpu)]})
        for _ in range(args.repeats):
            for label, job in ours.items():
                wall, cpu, result = timed(job)
                keep(label, wall, cpu)
            wall, cpu, peer = timed(lambda: peer_rows(net, center, d1, d2, alpha, beta, rows, args.dtype))
            keep("peer", wall, cpu)
        loss = pick(result)
        scale = GRID / len(rows)
        rel = np.abs(peer - loss[rows]).max() / np.abs(loss).max()
        for label in ours:
            print(f"  {name}, {label}: {best[label][0]:.2f} s wall, {best[label][1]:.2f} s CPU", flush=True)
            table.append((f"{name}, {label}", *best[label], best["peer"][0] * scale, best["peer"][1] * scale, rel))
        return best | {"peer": [best["peer"][0] * scale, best["peer"][1] * scale]}

    if "plane" not in skip:
        d1, d2 = directions.directions(arch, net.params, 2, seed=0, normalization="filter")
        job = lambda threads: lambda: run_to_completion(
            operations.plane_job(
                plane.MLPLoss(arch, net.params, net.X, net.Y, kind, args.dtype, args.device, threads), GRID, EXTENT,
                d1=d1, d2=d2,
            )
        )  # fmt: skip
        alpha = np.linspace(-EXTENT, EXTENT, GRID)
        best = versus_peer(
            "plane 51×51 filter", {"1 thread": job(1), "2 threads": job(2)}, net.params, d1, d2, alpha, alpha,
            lambda p: p.loss,
        )  # fmt: skip
        flops, peak = plane_gemm_flops(arch, N, GRID * GRID), gemm_peak(args.dtype)
        floor = flops / peak / 1e9
        (w1, c1), (w2, c2), (pw, pc) = best["1 thread"], best["2 threads"], best["peer"]
        floor_lines = [
            f"plane GEMM floor: {flops / 1e9:.1f} GFLOP at the one-thread peak {peak:.1f} GFLOP/s (1500² matmul, "
            f"numpy's BLAS, {args.dtype}, CPU s) = {floor:.2f} s",
            f"| plane 51×51, 118k parameters, {args.dtype} | wall s | CPU s | × peer wall | wall × its GEMM floor |",
            "|---|---:|---:|---:|---:|",
            f"| loss-landscapes 3.0.6, 1 torch thread | {pw:.2f} | {pc:.2f} | 1.0 | {pw / floor:.1f} |",
            f"| ours, 1 thread | {w1:.2f} | {c1:.2f} | {pw / w1:.1f} | {w1 / floor:.2f} (CPU {c1 / floor:.2f}) |",
            f"| ours, 2 threads | {w2:.2f} | {c2:.2f} | {pw / w2:.1f} | {2 * w2 / floor:.2f} (floor / 2) |",
            f"| GEMM floor, 1 thread | {floor:.2f} | | {pw / floor:.1f} | 1 |",
        ]
    if "pca" not in skip:
        job = lambda: run_to_completion(
            trajectory_pca.pca_plane_job(
                arch, net.params, net.X, net.Y, STEPS, ("gd",), lr=0.1, kind=kind, n=GRID, dtype=args.dtype,
                device=args.device,
            )
        )  # fmt: skip
        wall, cpu, r = timed(job)
        table.append((f"pca: {STEPS} GD + PCA + grid", wall, cpu, float("nan"), float("nan"), float("nan")))
        print(f"  pca end to end: {wall:.2f} s wall, {cpu:.2f} s CPU; explained {r.explained.round(4).tolist()}, "
              f"loss {r.runs[0].loss[0]:.4f} → {r.runs[0].loss[-1]:.4f}")  # fmt: skip
        pl = r.plane
        grid = lambda: run_to_completion(
            plane.mlp_grid_job(
                arch, pl.theta, pl.d1, pl.d2, pl.alpha, pl.beta, net.X, net.Y, kind, args.dtype, args.device, 1
            )
        )
        versus_peer("pca plane 51×51 grid", {"1 thread": grid}, pl.theta, pl.d1, pl.d2, pl.alpha, pl.beta)
    if "density" not in skip:
        job = lambda: run_to_completion(
            density.density_job(arch, net.params, net.X, net.Y, 10, 80, kind=kind, dtype=args.dtype, device=args.device)
        )
        wall, cpu, d = timed(job)
        table.append(("density 10×80 SLQ", wall, cpu, float("nan"), float("nan"), float("nan")))
        lo, hi = d.extremes
        print(f"  density: trace ≈ {d.trace:.4g}, λ ∈ [{lo:.4g}, {hi:.4g}], {d.steps_done.min()} steps done")
    header = (
        f"{'row':28} {'ours s':>8} {'ours CPU':>9} {'peer s':>9} {'peer CPU':>9} {'×peer wall':>10} "
        f"{'×peer CPU':>9} {'max|Δ|/max':>11}"
    )
    print(header)
    print("-" * len(header))
    for name, w, c, pw, pc, rel in table:
        print(f"{name:28} {w:8.2f} {c:9.2f} {pw:9.2f} {pc:9.2f} {pw / w:10.1f} {pc / c:9.1f} {rel:11.1e}")
    if "plane" not in skip:
        print("\n".join(floor_lines))
    print(f"load average (1 min) at start and end, {os.cpu_count()} cores: {load:.1f}, {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
