"""Landscape slices against the peer, loss-landscapes 3.0.6, on the reference workload:
2—21—21—1 sigmoid, N = 20 samples, K = 5000 directions × P = 101 points, t ∈ [−1, 1].

Rows, all measured in this one run, interleaved, best of --repeats:
  peer     loss-landscapes' own per-point machinery: its random_line (model wrapper, in-place
           parameter steps, its Loss metric) fed our directions and t grid; timed on --peer-dirs
           directions and extrapolated per point.
  helper   the engine's per-point helper, landscape.losses_per_point (one forward per point),
           timed on --helper-dirs directions and extrapolated.
  engine   landscape.slices_job on the whole workload: default (landscape.WORKER_THREADS, 2
           here) and 1 thread, ENGINE_RUNS times a repeat (best of repeats × ENGINE_RUNS).
Ratios are peer (or helper) time over engine time, for wall and CPU time (process CPU, all
threads). "% peak" is the engine's useful GFLOP/s (the multiply-adds of one network forward per
point) over a 1500² matmul of the same dtype on as many threads, through the BLAS the kernel uses
(numpy's OpenBLAS on the CPU: engine.landscape.compute.blas_matmul; torch's MKL is printed too).
The floor, timed here on one thread in CPU seconds: the workload's sigmoids alone (torch.sigmoid
in the kernel's chunk size) plus the kernel's products alone at its shapes (a chunk's per-point
20×21 @ 21×21 products and its output layer's (P·N)×21 @ 21×2 ones): what no kernel built from
these calls can avoid. The 1-thread kernel is printed as a multiple of it (in CPU seconds, so that
a busy machine's waiting does not count), and two threads' speed-up as 1-thread over 2-thread
wall time (fair only on an idle machine: the load average is printed) beside the same speed-up
of the floor's own work split over two threads, this machine's limit for it. Where one thread's
time goes: each kind of call the kernel makes (sigmoids, products, the elementwise passes, the
loss) timed where it is made, and the rest. Also printed: the λ-drag preview (K = 5000, P = 21,
float32) and a 41 × 41 plane.

Needs the bench extra: pip install -e .[bench]   (loss-landscapes declares only numpy and
imports torch; it runs unchanged on numpy 2, so no workaround is needed.)
Run: python benchmarks/bench_landscape.py [--repeats 3] [--peer-dirs 20]   (about a minute on 2 idle cores)
"""

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import threadpoolctl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.core import lazy, mlp  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import configure_torch_threads  # noqa: E402
from engine.landscape import operations
from engine.landscape import slices as landscape
from engine.landscape.plane import MLPLoss

K, P, N, T = 5000, 101, 20, 1.0
ARCH = mlp.Arch((2, 21, 21, 1))
FLOPS_PER_POINT = 2 * N * sum(a * b for a, b in zip(ARCH.widths, ARCH.widths[1:]))  # 10.2 GFLOP in all
# the kernel's chunk in each dtype: whole directions of P points
DIRS_PER_CHUNK = {name: points // P for name, points in landscape.DEFAULT_CHUNK.items()}
DTYPES = {"float64": torch.float64, "float32": torch.float32}
# The engine's rows are timed this many times a repeat, interleaved: a run takes ~1 s against the
# peer's ~20, so more samples of the fast rows cost little, and on a shared machine one slow
# sample of three decided the ratios (1-thread / floor: 1.15–1.23× over three runs in a row).
ENGINE_RUNS = 2


def timed(work):
    """(wall s, process CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def matmul_peak(dtype, threads, blas="numpy", n=1500, reps=3):
    """GFLOP/s of an n² matmul on ``threads`` threads, through numpy's BLAS (the kernel's) or torch's."""
    limits = threadpoolctl.threadpool_limits(threads)
    torch.set_num_threads(threads)
    try:
        a = torch.randn(n, n, dtype=dtype)
        out = torch.empty_like(a)
        product = (lambda: landscape.blas_matmul(a, a, out)) if blas == "numpy" else (lambda: torch.mm(a, a, out=out))
        product()
        return 2 * n**3 / min(timed(product)[0] for _ in range(reps)) / 1e9
    finally:
        torch.set_num_threads(1)
        limits.restore_original_limits()


def floor_chunk(dtype, name, sigmoids=True, products=True):
    """One chunk of the floor's work, on buffers of its own, in the kernel's chunk of k
    directions for ``name``: its sigmoids (both hidden layers', in place, as the kernel does) and
    its products at its shapes (the hidden layer's per-point (N, 21) @ (21, 21) and the output
    layer's (P·N, 21) @ (21, 2) per direction). What the kernel does beyond these (layer 1's
    pre-activations, each point's weights, the outputs' sum, the loss, Python) is overhead."""
    k, (n1, n2) = DIRS_PER_CHUNK[name], ARCH.widths[1:3]
    a, w = torch.rand(k * P, N, n1, dtype=dtype), torch.rand(k * P, n1, n2, dtype=dtype)
    z, wd = torch.rand(k * P, N, n2, dtype=dtype), torch.rand(k, n2, 2, dtype=dtype)
    u = torch.empty(k, P * N, 2, dtype=dtype)

    def chunk():
        if sigmoids:
            torch.sigmoid_(a)
        if products:
            landscape.blas_matmul(a, w, z)
        if sigmoids:
            torch.sigmoid_(z)
        if products:  # the output layer reads the hidden layer's output, as in the kernel
            landscape.blas_matmul(z.view(k, P * N, n2), wd, u)

    chunk()
    return chunk, K // k


def floor_seconds(dtype, name, **parts):
    """One thread's CPU seconds for the floor's work (or, with ``sigmoids=False`` or
    ``products=False``, for one part of it) over the whole workload, chunk by chunk."""
    chunk, chunks = floor_chunk(dtype, name, **parts)
    return timed(lambda: [chunk() for _ in range(chunks)])[1]


def floor_on_threads(dtype, name, threads):
    """Wall seconds of the floor's whole work split in halves over ``threads`` Python threads with
    buffers of their own: the two-thread speed-up this machine gives that work, the limit for the
    kernel's."""

    def work(share):
        chunk, _ = floor_chunk(dtype, name)
        for _ in range(share):
            chunk()

    shares = [len(part) for part in np.array_split(np.arange(K // DIRS_PER_CHUNK[name]), threads)]
    with ThreadPoolExecutor(threads) as pool:
        return timed(lambda: list(pool.map(work, shares)))[0]


# What the kernel calls, by kind: (module, attribute, kind). The kernel looks each up when it calls it.
KERNEL_CALLS = (
    (lazy.torch, "sigmoid_", "sigmoids"),
    (np, "matmul", "products"),
    (lazy.torch, "addcmul", "passes: layer 1, per-point weights, outputs"),
    (landscape, "squared_errors", "loss"),
)


def where_the_time_goes(theta, X, y, d, name):
    """One thread's CPU seconds in each kind of call the kernel makes, for the whole workload,
    each call timed where the kernel makes it; the rest (Python between the calls, slicing,
    the loss's subtraction, collecting the chunks, the summary) is the job's total less these."""
    spent = dict.fromkeys([kind for *_, kind in KERNEL_CALLS], 0.0)
    originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in KERNEL_CALLS]

    def clocked(call, kind):
        def run(*args, **kwargs):
            began = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent[kind] += time.process_time() - began

        return run

    for (owner, attr, call), (*_, kind) in zip(originals, KERNEL_CALLS):
        setattr(owner, attr, clocked(call, kind))
    try:
        job = landscape.slices_job(ARCH, theta, X, y, directions=d, P=P, T=T, dtype=name, threads=1)
        total = timed(lambda: run_to_completion(job))[1]
    finally:
        for owner, attr, call in originals:
            setattr(owner, attr, call)
    return total, spent


def peer_curves(theta, dirs, t, X, y, dtype):
    """loss-landscapes' random_line along each of our directions, ×N (its MSELoss is a mean).

    random_line draws its own direction with rand_u_like, normalizes it to ‖start‖/distance/steps
    and evaluates start + i·step for i = 1..steps, stepping the parameters in place. So we hand it
    our direction through rand_u_like, start it one step before −T and choose distance so that the
    step is h = 2T/(P−1): it then evaluates exactly our grid, with its own machinery per point."""
    import loss_landscapes.main as ll_main
    from loss_landscapes.metrics import Loss
    from loss_landscapes.model_interface.model_parameters import ModelParameters

    model = torch.nn.Sequential(
        torch.nn.Linear(2, 21, bias=False),
        torch.nn.Sigmoid(),
        torch.nn.Linear(21, 21, bias=False),
        torch.nn.Sigmoid(),
        torch.nn.Linear(21, 1, bias=False),
    ).to(dtype)
    metric = Loss(torch.nn.MSELoss(), torch.as_tensor(X, dtype=dtype), torch.as_tensor(y, dtype=dtype)[:, None])
    h = t[1] - t[0]
    shapes = [p.shape for p in model.parameters()]  # W1, W2, W3: the flat layout of engine.core.mlp
    drawn = ll_main.rand_u_like
    curves = []
    try:
        for dk in dirs:
            torch.nn.utils.vector_to_parameters(
                torch.as_tensor(theta + (t[0] - h) * dk, dtype=dtype), model.parameters()
            )
            parts = torch.as_tensor(dk, dtype=dtype).split([s.numel() for s in shapes])
            ll_main.rand_u_like = lambda _, parts=parts: ModelParameters(
                [p.reshape(s).clone() for p, s in zip(parts, shapes)]
            )
            distance = ModelParameters(list(model.parameters())).model_norm() / (h * len(t))
            curves.append(ll_main.random_line(model, metric, distance=distance, steps=len(t), normalization=None))
    finally:
        ll_main.rand_u_like = drawn
    return N * np.array(curves)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timings of each row; the fastest counts")
    parser.add_argument("--peer-dirs", type=int, default=20, help="directions the peer is timed on (× 101 points)")
    parser.add_argument("--helper-dirs", type=int, default=10, help="directions the per-point helper is timed on")
    parser.add_argument(
        "--device", default="cpu", help="cuda: time the slice kernel on the GPU against this machine's CPU instead"
    )
    args = parser.parse_args()
    configure_torch_threads()
    rng = np.random.default_rng(0)
    theta = mlp.init_params(ARCH, rng, 2.0)
    X, y = rng.normal(size=(N, 2)), rng.normal(size=N) * 0.1
    d = landscape.random_directions(ARCH, theta, K, seed=0)
    t = np.linspace(-T, T, P)
    points = K * P
    if args.device != "cpu":
        return device_table(args, theta, X, y, d)

    best = {}  # row -> (wall, cpu, threads) per point or per run: the fastest wall and CPU of the repeats
    load = [os.getloadavg()[0]]

    def record(row, wall, cpu, threads, scale=1.0):
        old = best.get(row, (np.inf, np.inf, threads))
        best[row] = (min(old[0], wall * scale), min(old[1], cpu * scale), threads)

    peaks, agree, sigmoids, gemms, floor_wall = {}, {}, {}, {}, {}
    for _ in range(args.repeats):
        for name, dtype in DTYPES.items():
            for threads, blas in ((1, "numpy"), (2, "numpy"), (1, "torch")):
                peak = matmul_peak(dtype, threads, blas)
                peaks[name, threads, blas] = max(peaks.get((name, threads, blas), 0), peak)
            sigmoids[name] = min(sigmoids.get(name, np.inf), floor_seconds(dtype, name, products=False))
            gemms[name] = min(gemms.get(name, np.inf), floor_seconds(dtype, name, sigmoids=False))
            for threads in (1, 2):
                floor_wall[name, threads] = min(
                    floor_wall.get((name, threads), np.inf), floor_on_threads(dtype, name, threads)
                )
            sub = d[: args.peer_dirs]
            wall, cpu, peer = timed(lambda: peer_curves(theta, sub, t, X, y, dtype))
            record((name, "peer"), wall, cpu, 1, points / peer.size)
            hsub = d[: args.helper_dirs]
            rows = lambda dirs: (theta + dirs[:, None] * t[:, None]).reshape(-1, ARCH.n_params)
            wall, cpu, _ = timed(lambda: landscape.losses_per_point(ARCH, rows(hsub), X, y, name))
            record((name, "helper"), wall, cpu, 1, K / len(hsub))
            for label in ("default", "1 thread") * ENGINE_RUNS:
                threads = landscape.WORKER_THREADS if label == "default" else 1
                wall, cpu, s = timed(
                    lambda: run_to_completion(
                        landscape.slices_job(ARCH, theta, X, y, directions=d, P=P, T=T, dtype=name, threads=threads)
                    )
                )
                record((name, label), wall, cpu, threads)
            # the peer's curves are the engine's, up to its in-place stepping (float32: ~1e-4)
            ours = s.curves[: len(sub)]
            rel = np.abs(peer - ours).max() / np.abs(ours).max()
            assert rel < (1e-9 if name == "float64" else 1e-3), f"{name}: peer and engine curves differ by {rel:.1e}"
            agree[name] = max(agree.get(name, 0.0), rel)
        wall, cpu, _ = timed(lambda: landscape.preview_slices(ARCH, theta, X, y, d, P=21))
        record(("preview", "K=5000 P=21 float32"), wall, cpu, 0)
        wall, cpu, _ = timed(
            lambda: run_to_completion(operations.plane_job(MLPLoss(ARCH, theta, X, y), 41, d1=d[0], d2=d[1]))
        )
        record(("plane", "41×41 float64"), wall, cpu, 0)
        load.append(os.getloadavg()[0])

    print(
        f"Workload: {'—'.join(map(str, ARCH.widths))} sigmoid, N={N}, K={K} × P={P}: "
        f"{FLOPS_PER_POINT * points / 1e9:.1f} GFLOP; best of {args.repeats} (the engine's rows: of "
        f"{args.repeats * ENGINE_RUNS}), interleaved; "
        f"peer timed on {args.peer_dirs} directions, helper on {args.helper_dirs}, both extrapolated per point"
    )
    print(
        "matmul peak (GFLOP/s, 1500²): "
        + ", ".join(
            f"{name} numpy's BLAS 1 thr {peaks[name, 1, 'numpy']:.0f}, 2 thr {peaks[name, 2, 'numpy']:.0f}, "
            f"torch's 1 thr {peaks[name, 1, 'torch']:.0f}"
            for name in DTYPES
        )
    )
    header = (
        f"{'dtype':8} {'method':10} {'thr':>3} {'wall s':>8} {'CPU s':>8} {'µs/pt':>7} "
        f"{'×peer wall':>10} {'×peer CPU':>9} {'×helper':>8} {'GFLOP/s':>8} {'% peak':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in DTYPES:
        peer, helper = best[name, "peer"], best[name, "helper"]
        for method in ("peer", "helper", "default", "1 thread"):
            wall, cpu, threads = best[name, method]
            gflops = FLOPS_PER_POINT * points / wall / 1e9
            engine = method in ("default", "1 thread")
            print(
                f"{name:8} {method:10} {threads:>3} {wall:8.2f} {cpu:8.2f} {wall / points * 1e6:7.2f} "
                f"{peer[0] / wall:10.1f} {peer[1] / cpu:9.1f} {helper[0] / wall:8.1f} {gflops:8.2f} "
                + (f"{100 * gflops / peaks[name, threads, 'numpy']:6.1f}%" if engine else f"{'':>7}")
            )
    floor = {name: sigmoids[name] + gemms[name] for name in DTYPES}
    one = {name: best[name, "1 thread"][1] for name in DTYPES}
    two = {name: best[name, "1 thread"][0] / best[name, "default"][0] for name in DTYPES}
    print(
        "floor, 1 thread, CPU s (the sigmoids alone + the kernel's products alone; no kernel built from these "
        "calls can be faster): "
        + ", ".join(
            f"{name} {floor[name]:.2f} s = {sigmoids[name]:.2f} + {gemms[name]:.2f} s, the products at "
            f"{FLOPS_PER_POINT * points / gemms[name] / 1e9:.0f} GFLOP/s"
            for name in DTYPES
        )
    )
    print(
        "1-thread kernel against its floor, CPU s: "
        + ", ".join(f"{name} {one[name]:.2f} s = {one[name] / floor[name]:.2f} × floor" for name in DTYPES)
    )
    print(
        f"{landscape.WORKER_THREADS} threads against 1, wall: "
        + ", ".join(f"{name} {two[name]:.2f}×" for name in DTYPES)
        + "; CPU s of 2 threads over 1 thread's (more: the threads slowed each other): "
        + ", ".join(f"{name} {best[name, 'default'][1] / best[name, '1 thread'][1]:.2f}" for name in DTYPES)
    )
    print(
        "the floor's own work on 2 threads against 1, wall (this machine's limit for the kernel's speed-up): "
        + ", ".join(f"{name} {floor_wall[name, 1] / floor_wall[name, 2]:.2f}×" for name in DTYPES)
    )
    print("where one thread's time goes, CPU s of the whole job (each call timed where the kernel makes it):")
    for name in DTYPES:
        total, spent = min((where_the_time_goes(theta, X, y, d, name) for _ in range(args.repeats)), key=lambda r: r[0])
        parts = [f"{kind} {seconds:.3f}" for kind, seconds in spent.items()]
        print(f"  {name}: {total:.3f} s = " + " + ".join(parts) + f" + the rest {total - sum(spent.values()):.3f}"
              f" (floor: sigmoids {sigmoids[name]:.3f}, products {gemms[name]:.3f})")  # fmt: skip
    print(
        "peer curves × N against the engine's, max |difference| / max |curve|: "
        + ", ".join(f"{name} {rel:.1e}" for name, rel in agree.items())
    )
    for key in (("preview", "K=5000 P=21 float32"), ("plane", "41×41 float64")):
        wall, cpu, _ = best[key]
        print(f"{key[0]} ({key[1]}, default threads): {1000 * wall:.0f} ms wall, {1000 * cpu:.0f} ms CPU")
    print(f"load average (1 min) during the run, {os.cpu_count()} cores: " + ", ".join(f"{x:.1f}" for x in load))
    versus_peer = lambda n, row: f"{best[n, row][0]:.2f} s, {best[n, 'peer'][0] / best[n, row][0]:.1f}×"
    print("\nFor the README (wall s, × the peer; the floor and the ratios as above):\n")
    print("| | " + " | ".join(DTYPES) + " |\n|---|" + "---|" * len(DTYPES))
    rows = [
        ("loss-landscapes 3.0.6", lambda n: f"{best[n, 'peer'][0]:.1f} s"),
        (f"engine, {landscape.WORKER_THREADS} threads", lambda n: versus_peer(n, "default")),
        ("engine, 1 thread", lambda n: versus_peer(n, "1 thread")),
        ("floor, 1 thread (sigmoids + products)", lambda n: f"{floor[n]:.2f} s ({sigmoids[n]:.2f} + {gemms[n]:.2f})"),
        ("1 thread / floor (CPU s)", lambda n: f"{one[n] / floor[n]:.2f}×"),
        (f"{landscape.WORKER_THREADS} threads / 1 thread (wall)", lambda n: f"{two[n]:.2f}×"),
        ("the floor's work, 2 threads / 1 (wall)", lambda n: f"{floor_wall[n, 1] / floor_wall[n, 2]:.2f}×"),
    ]
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(n) for n in DTYPES) + " |")


def device_table(args, theta, X, y, d):
    """The same slices on ``args.device`` and on the CPU (default threads), in one run: wall
    time, ratio, and the largest difference from CPU float64 relative to the curves' size."""

    def slices(dtype, device):
        return run_to_completion(
            landscape.slices_job(ARCH, theta, X, y, directions=d, P=P, T=T, dtype=dtype, device=device)
        )

    reference = slices("float64", "cpu").curves
    slices("float32", args.device)  # the device's first call pays for its start-up
    print(f"Workload: {'—'.join(map(str, ARCH.widths))} sigmoid, N={N}, K={K} × P={P}; best of {args.repeats}")
    print(f"{'dtype':8} {'device':6} {'wall s':>8} {'×cpu':>6} {'max |Δ| / max |curve| vs cpu float64':>38}")
    for name in DTYPES:
        best = {}
        for _ in range(args.repeats):
            for device in ("cpu", args.device):
                wall, _, s = timed(lambda: slices(name, device))
                if device not in best or wall < best[device][0]:
                    best[device] = (wall, np.abs(s.curves - reference).max() / np.abs(reference).max())
        for device, (wall, rel) in best.items():
            print(f"{name:8} {device:6} {wall:8.3f} {best['cpu'][0] / wall:6.1f} {rel:38.1e}")


if __name__ == "__main__":
    main()
