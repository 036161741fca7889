"""Landscape slices against the peer, loss-landscapes 3.0.6, on the reference workload:
2—21—21—1 sigmoid, N = 20 samples, K = 5000 directions × P = 101 points, t ∈ [−1, 1].

Rows, all measured in this one run, interleaved, best of --repeats:
  peer     loss-landscapes' own per-point machinery: its random_line (model wrapper, in-place
           parameter steps, its Loss metric) fed our directions and t grid; timed on --peer-dirs
           directions and extrapolated per point.
  helper   the engine's per-point helper, landscape.losses_per_point (one forward per point),
           timed on --helper-dirs directions and extrapolated.
  engine   landscape.slices_job on the whole workload: default (landscape.WORKER_THREADS, 2
           here) and 1 thread.
Ratios are peer (or helper) time over engine time, for wall and CPU time (process CPU, all
threads). "% peak" is the engine's useful GFLOP/s (the multiply-adds of one network forward per
point) over a 1500² torch matmul of the same dtype timed here on as many threads.
Also printed: the sigmoid floor (the workload's sigmoids alone on one thread, which bounds the
"% peak" any torch.sigmoid kernel can reach), the 1-thread kernel's time as a multiple of that
floor plus the batched products alone (gemm_seconds: what the kernel cannot avoid), the λ-drag
preview (K = 5000, P = 21, float32) and a 41 × 41 plane.

Needs the bench extra: pip install -e .[bench]   (loss-landscapes declares only numpy and
imports torch; it runs unchanged on numpy 2, so no workaround is needed.)
Run: python benchmarks/bench_landscape.py [--repeats 3] [--peer-dirs 20]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.core import mlp  # noqa: E402
from engine.core.progress import run_to_completion  # noqa: E402
from engine.core.runtime import configure_torch_threads  # noqa: E402
from engine.landscape import slices as landscape

K, P, N, T = 5000, 101, 20, 1.0
ARCH = mlp.Arch((2, 21, 21, 1))
FLOPS_PER_POINT = 2 * N * sum(a * b for a, b in zip(ARCH.widths, ARCH.widths[1:]))  # 10.2 GFLOP in all
ACTIVATIONS = K * P * N * sum(ARCH.widths[1:-1])  # sigmoids: every hidden unit, point and sample (424 M)
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def timed(work):
    """(wall s, process CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def matmul_peak(dtype, threads, n=1500, reps=3):
    torch.set_num_threads(threads)
    try:
        a = torch.randn(n, n, dtype=dtype)
        a @ a
        return 2 * n**3 / min(timed(lambda: a @ a)[0] for _ in range(reps)) / 1e9
    finally:
        torch.set_num_threads(1)


def sigmoid_seconds(dtype, chunk=8 * P * 21 * N):
    """One thread's time for the workload's sigmoids alone, in the kernel's chunk size (in cache):
    no kernel that evaluates them with torch.sigmoid can take less."""
    torch.set_num_threads(1)
    try:
        x = torch.randn(chunk, dtype=dtype)
        out = torch.empty_like(x)
        torch.sigmoid(x, out=out)
        return timed(lambda: [torch.sigmoid(x, out=out) for _ in range(ACTIVATIONS // chunk)])[0]
    finally:
        torch.set_num_threads(1)


def gemm_seconds(dtype, chunk=landscape.DEFAULT_CHUNK["float64"]):
    """One thread's time for the workload's batched products alone, at the kernel's shapes: per
    chunk of ``chunk`` points, layer 2's (chunk, 21, 21) @ (chunk, 21, 20) and the output layer's
    (chunk, 1, 21) @ (chunk, 21, 20). With ``sigmoid_seconds`` this is the kernel's floor: what
    remains (forming W + t D, the additions, the loss) is overhead the kernel could still lose."""
    torch.set_num_threads(1)
    a = torch.rand(chunk, ARCH.widths[1], N, dtype=dtype)
    W2 = torch.rand(chunk, ARCH.widths[2], ARCH.widths[1], dtype=dtype)
    W3 = torch.rand(chunk, 1, ARCH.widths[2], dtype=dtype)
    out2, out3 = torch.empty(chunk, ARCH.widths[2], N, dtype=dtype), torch.empty(chunk, 1, N, dtype=dtype)
    torch.bmm(W2, a, out=out2)  # layer 3 reads layer 2's output, as in the kernel
    return timed(lambda: [(torch.bmm(W2, a, out=out2), torch.bmm(W3, out2, out=out3)) for _ in range(K * P // chunk)])[
        0
    ]


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

    best = {}  # row -> (wall, cpu, threads) per point or per run, fastest wall of the repeats

    def record(row, wall, cpu, threads, scale=1.0):
        if row not in best or wall * scale < best[row][0]:
            best[row] = (wall * scale, cpu * scale, threads)

    peaks, agree, floors, gemms = {}, {}, {}, {}
    for _ in range(args.repeats):
        for name, dtype in DTYPES.items():
            for threads in (1, 2):
                peak = matmul_peak(dtype, threads)
                peaks[name, threads] = max(peaks.get((name, threads), 0), peak)
            floors[name] = min(floors.get(name, np.inf), sigmoid_seconds(dtype))
            gemms[name] = min(gemms.get(name, np.inf), gemm_seconds(dtype))
            sub = d[: args.peer_dirs]
            wall, cpu, peer = timed(lambda: peer_curves(theta, sub, t, X, y, dtype))
            record((name, "peer"), wall, cpu, 1, points / peer.size)
            hsub = d[: args.helper_dirs]
            rows = lambda dirs: (theta + dirs[:, None] * t[:, None]).reshape(-1, ARCH.n_params)
            wall, cpu, _ = timed(lambda: landscape.losses_per_point(ARCH, rows(hsub), X, y, name))
            record((name, "helper"), wall, cpu, 1, K / len(hsub))
            for label in ("default", "1 thread"):
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
        wall, cpu, _ = timed(lambda: run_to_completion(landscape.plane_job(ARCH, theta, X, y, d[0], d[1], n=41)))
        record(("plane", "41×41 float64"), wall, cpu, 0)

    print(
        f"Workload: {'—'.join(map(str, ARCH.widths))} sigmoid, N={N}, K={K} × P={P}: "
        f"{FLOPS_PER_POINT * points / 1e9:.1f} GFLOP; best of {args.repeats}, interleaved; "
        f"peer timed on {args.peer_dirs} directions, helper on {args.helper_dirs}, both extrapolated per point"
    )
    print(
        "matmul peak (GFLOP/s, 1500² torch matmul): "
        + ", ".join(f"{name} {th} thr {peaks[name, th]:.0f}" for name in DTYPES for th in (1, 2))
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
                + (f"{100 * gflops / peaks[name, threads]:6.1f}%" if engine else f"{'':>7}")
            )
    print(
        f"sigmoid floor ({ACTIVATIONS / 1e6:.0f} M sigmoids alone, torch, 1 thread; no kernel that evaluates "
        "them can be faster): "
        + ", ".join(
            f"{name} {floors[name]:.2f} s, so at most "
            f"{100 * FLOPS_PER_POINT * points / floors[name] / 1e9 / peaks[name, 1]:.0f}% of 1-thread peak"
            for name in DTYPES
        )
    )
    one = {name: best[name, "1 thread"][0] for name in DTYPES}
    print(
        "1-thread kernel against its floor (the sigmoids alone + the batched products alone, each timed "
        "alone on 1 thread): "
        + ", ".join(
            f"{name} {one[name]:.2f} s = {one[name] / (floors[name] + gemms[name]):.2f} × "
            f"({floors[name]:.2f} + {gemms[name]:.2f} s)"
            for name in DTYPES
        )
    )
    print(
        "peer curves × N against the engine's, max |difference| / max |curve|: "
        + ", ".join(f"{name} {rel:.1e}" for name, rel in agree.items())
    )
    for key in (("preview", "K=5000 P=21 float32"), ("plane", "41×41 float64")):
        wall, cpu, _ = best[key]
        print(f"{key[0]} ({key[1]}, default threads): {1000 * wall:.0f} ms wall, {1000 * cpu:.0f} ms CPU")


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
