"""The kernels of 2-D planes L(θ + α d1 + β d2) on an N×N grid, and the kernel every toolkit mode
shares (docs/MATH.md B8, B12.2). The plane itself (its directions, the grid's checks, the result)
is one job, ``engine.landscape.operations.plane_job``; these compute its grid of losses.

Every point a toolkit mode evaluates lies in a low-dimensional affine subspace: θ0 + Σ_m c_m D_m
with m = 2 for a plane (random or PCA directions) and m = 1 for an interpolation. The forward
pass is linear in the parameters up to the first nonlinearity, so layer 1's pre-activation at
every point is Z_0 + Σ_m c_m Z_m with Z_0 = W1 Xᵀ and Z_m = D1_m Xᵀ formed ONCE for the whole
grid: for an MLP with a wide input layer that product is most of a forward pass. Deeper
layers build each point's own weights W_l + Σ_m c_m D_{l,m} (one small GEMM over a chunk of
points) and run one batched GEMM of the network's true size. Chunks hold 2 MiB of activations.

Evaluation is torch, batched, its products through numpy's BLAS (compute.blas_matmul), chunks
shared by ``WORKER_THREADS`` Python threads of one BLAS thread each (engine.core.runtime): a
chunk's products are large, so the threads hardly slow each other (the CPU time of the
118k-parameter plane of benchmarks/bench_toolkit.py barely grows from one thread to two).
``device="cuda"`` runs the same kernel on a GPU.

**Any module** (``module_grid_job``): a module's forward is opaque, so every grid point is one
``ModuleLoss`` evaluation over all the data, chunk by chunk. The points run on a helper thread
(``wait_for``), so the job yields as often as the job contract asks however long one point
takes, and a cancel stops the loop at the next point. A grid is evaluated row by row
(``plane_row``): each row is a pure function of (θ, d1, d2, α_i, β), which is what a distributed
run hands out. Its side is at most ``MAX_MODULE_GRID`` points (each point is a pass over all the
data).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.mlp import Arch
from engine.core.progress import Job, wait_for
from engine.landscape.compute import DTYPES, WORKER_THREADS, blas_matmul, check_device
from engine.landscape.slices import evaluate_job

# Bytes of activations per chunk (points × widest layer × samples × the dtype's size): 2 MiB, so a
# chunk's layers stay in cache (1 MiB of L2 a core, 32 MiB of L3 shared, on the 2-core benchmark
# machine). On the planes of benchmarks/bench_toolkit.py, small and large, 2 MiB chunks beat both
# smaller ones (more calls) and the old 12 MB (out of cache), on one thread and two; the
# measurements are in benchmarks/README.md.
CHUNK_BYTES = 2 << 20
CUDA_CHUNK_ACTIVATIONS = 1 << 27
MAX_GRID = 1001  # points per plane axis: 10^6 evaluations
MAX_MODULE_GRID = 201  # a module's: each point a pass over all the data
MAX_POINTS = 100_000  # points of an interpolation curve


# A pre-activation whose activation is exactly 1.0 in float64 and float32 (σ(40) and tanh(40) round
# to 1; relu(1) = 1): the constant row that carries the next layer's bias through its product.
ONE_PREIMAGE = {"relu": 1.0, "sigmoid": 40.0, "tanh": 40.0}


def affine_kernel(
    arch: Arch, base: torch.Tensor, dirs: torch.Tensor, X: torch.Tensor, y: torch.Tensor, kind: str = "sum"
) -> Callable[[torch.Tensor], torch.Tensor]:
    """``losses(C)``: the loss at θ0 + C @ D for coefficient rows ``C (Q, m)`` -> (Q,).

    ``base`` (P,) is θ0, ``dirs`` (m, P) the directions D, ``y`` the ``mlp.target_tensor``
    targets; all tensors of one dtype and device.

    With biases, every hidden layer's activations get a last row of ones and the next layer's
    weights a last column b_l, so each bias rides inside its product instead of costing a pass
    over z: on 784—128—128—10 that pass was a sizeable share of a point. The row of ones is made
    by the layer before, from a constant pre-activation ``ONE_PREIMAGE`` (layer 1: a constant block
    of its precomputed products; deeper: an extra output row [0 … 0, v]).
    """
    stack = torch.cat([base[None], dirs.reshape(-1, base.shape[-1])])  # (m + 1, P): θ0, then D
    M, L = len(stack), arch.n_layers
    v = ONE_PREIMAGE[arch.activation]
    layers = []
    for l in range(1, L + 1):
        blk = arch.block(f"W{l}")
        W = stack[:, blk.slice].unflatten(-1, blk.shape)  # (M, n_l, n_{l-1})
        b = stack[:, arch.block(f"b{l}").slice] if arch.bias else None
        ones_out = arch.bias and l < L  # this layer also outputs the row of ones
        if l == 1:  # layer 1's products and biases, once for every point: (M, n1 [+1], N)
            W = W @ X.T + (0 if b is None else b[..., None])
            if ones_out:
                W = torch.cat([W, torch.zeros_like(W[:, :1])], 1)
                W[0, -1] = v
        elif arch.bias:
            W = torch.cat([W, b[..., None]], 2)  # the bias column, against the row of ones
            if ones_out:
                W = torch.cat([W, torch.zeros_like(W[:, :1])], 1)
                W[0, -1, -1] = v
        layers.append((W.reshape(M, -1).contiguous(), W.shape[1:]))

    N = X.shape[0]
    activation = mlp.sigma_(arch.activation)
    local = threading.local()  # each thread its own buffers (evaluate_job may run two)

    def buffers(Q: int) -> list:
        """Per layer: the points' weights (Q, ·) and outputs (Q, rows, N), kept between chunks.
        Fresh multi-MB tensors every chunk cost page faults, which doubled a 784—128—128—10
        point's CPU time."""
        bufs = getattr(local, "bufs", None)
        if bufs is None or bufs[0][1].shape[0] < Q:
            new = lambda *shape: torch.empty(*shape, dtype=stack.dtype, device=stack.device)
            bufs = [(new(Q if l else 0, W.shape[1]), new(Q, shape[0], N)) for l, (W, shape) in enumerate(layers)]
            local.bufs = bufs
        return bufs

    @torch.no_grad()
    def losses(C: torch.Tensor) -> torch.Tensor:
        Q = C.shape[0]
        C1 = torch.cat([torch.ones_like(C[:, :1]), C], 1)  # (Q, m + 1)
        a = None
        for l, ((W, shape), (w, z)) in enumerate(zip(layers, buffers(Q)), 1):
            w, z = w[:Q], z[:Q]
            if l == 1:  # the products are the pre-activations themselves
                blas_matmul(C1, W, z.view(Q, -1))
            else:
                blas_matmul(C1, W, w)
                blas_matmul(w.view(Q, *shape), a, z)
            if l < L:
                a = activation(z)
        f = z[:, 0, :] if arch.n_outputs == 1 else z
        return mlp.loss_of_outputs(f, y, kind)

    return losses


def chunk_points(arch: Arch, n_samples: int, device: torch.device, itemsize: int) -> int:
    per_point = max(arch.widths[1:]) * n_samples
    if device.type == "cuda":
        return max(1, CUDA_CHUNK_ACTIVATIONS // per_point)
    return max(1, CHUNK_BYTES // (per_point * itemsize))


def affine_losses_job(
    arch: Arch,
    base,
    dirs,
    coeffs,
    X,
    Y,
    kind: str = "sum",
    dtype: str = "float64",
    device: str = "cpu",
    threads: int = WORKER_THREADS,
) -> Job[np.ndarray]:
    """Job: float64 numpy losses (Q,) at θ0 + coeffs @ dirs, chunk by chunk."""
    if dtype not in DTYPES:
        raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
    dev = check_device(device)
    X, _ = mlp.check_data(arch, X, Y, kind)
    as_t = lambda a: torch.as_tensor(np.asarray(a, float), dtype=DTYPES[dtype], device=dev)
    y = mlp.target_tensor(arch, Y, kind, DTYPES[dtype], dev)
    coeffs = np.atleast_2d(np.asarray(coeffs, float))
    kernel = affine_kernel(arch, as_t(base), as_t(np.atleast_2d(dirs)), as_t(X), y, kind)
    C = as_t(coeffs)
    compute = lambda i0, i1: kernel(C[i0:i1]).double().cpu().numpy()
    threads = 1 if dev.type == "cuda" else threads
    return (yield from evaluate_job(len(coeffs), compute, chunk_points(arch, len(X), dev, C.element_size()), threads))


@dataclass(frozen=True, eq=False)
class PlaneResult:
    """``loss[i, j]`` = L(θ + α_i d1 + β_j d2): what plane.npz holds and a contour/surface view
    draws. Every plane is one (``engine.landscape.operations.plane_job``): the toolkit's, the API's,
    the command line's and paper B's probe plane (``engine.minima.pipeline.probe_plane_job``)."""

    alpha: np.ndarray  # (n,)
    beta: np.ndarray  # (n,)
    loss: np.ndarray  # (n, n), float64
    theta: np.ndarray  # (P,) the centre
    d1: np.ndarray  # (P,)
    d2: np.ndarray  # (P,)
    L_star: float  # L(θ) in float64
    kind: str = "sum"  # the loss
    normalization: str = ""  # how d1, d2 were made (their name when given, "" when unnamed)
    ignore: str = "none"
    seed: int = 0
    labels: tuple = ()  # what d1 and d2 are, for the axes; () when the caller knows

    def arrays(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta, "loss": self.loss, "theta": self.theta}


@dataclass(frozen=True, eq=False)
class MLPLoss:
    """An MLP's loss for the batched kernel (``mlp_grid_job``): the architecture, θ, the data and
    a named loss, in ``dtype`` on ``device``. What ``operations.plane_job`` takes beside a
    ``ModuleLoss`` for networks held as (Arch, θ) (paper B's, the app's .npz), and what
    ``operations.mlp_backend`` makes of a module that is a chain of ``Linear`` layers."""

    arch: Arch
    theta: np.ndarray  # (P,) float64
    X: np.ndarray
    Y: np.ndarray
    kind: str = "sum"
    dtype: str = "float64"
    device: str = "cpu"
    threads: int = WORKER_THREADS

    def loss(self, theta) -> float:
        """L(θ) in float64 (``mlp.loss``)."""
        return mlp.loss(self.arch, theta, self.X, self.Y, self.kind)

    def grid_job(self, theta, d1, d2, alpha, beta) -> Job[np.ndarray]:
        """Job: the (len(alpha), len(beta)) grid of L(θ + α_i d1 + β_j d2) (``mlp_grid_job``)."""
        return mlp_grid_job(
            self.arch, theta, d1, d2, alpha, beta, self.X, self.Y, self.kind, self.dtype, self.device, self.threads
        )


def check_grid(n: int, extent: float, limit: int = MAX_GRID) -> None:
    """A plane of ``n`` points a side (at most ``limit``) over [−extent, extent]."""
    if not 2 <= n <= limit:
        why = " for a module (each point is a pass over all the data)" if limit == MAX_MODULE_GRID else ""
        raise EngineInputError(f"plane size {n} must be within 2 .. {limit} points a side{why}")
    if not (np.isfinite(extent) and extent > 0):
        raise EngineInputError(f"plane extent {extent} must be a positive number")


def mlp_grid_job(
    arch: Arch, theta, d1, d2, alpha, beta, X, Y, kind="sum", dtype="float64", device="cpu", threads=WORKER_THREADS
) -> Job[np.ndarray]:
    """Job: the (len(alpha), len(beta)) grid of L(θ + α_i d1 + β_j d2), the MLP kernel
    (``affine_kernel``: layer 1 formed once for the whole grid)."""
    a, b = np.meshgrid(np.asarray(alpha, float), np.asarray(beta, float), indexing="ij")
    coeffs = np.stack([a.ravel(), b.ravel()], 1)
    out = yield from affine_losses_job(arch, theta, np.stack([d1, d2]), coeffs, X, Y, kind, dtype, device, threads)
    return out.reshape(a.shape)


# ------------------------------------------------------------------ any module, point by point
def points_job(
    count: int, evaluate: Callable[[int], tuple[float, float | None]], message: str = "point"
) -> Job[tuple[np.ndarray, np.ndarray]]:
    """Job: ``evaluate(i)`` = (loss, accuracy or None) for i < count, on a helper thread; returns
    (losses, accuracies) as float64 arrays (accuracy NaN where None)."""
    losses, accuracy = np.full(count, np.nan), np.full(count, np.nan)
    done = [0]
    # OpenMP keeps a thread count per thread and a fresh one starts with every core: the helper
    # thread takes the caller's (one in the window and in sweeps, every core from the command line)
    threads = torch.get_num_threads()

    def work(stop: threading.Event):
        torch.set_num_threads(threads)
        for i in range(count):
            if stop.is_set():
                return None
            value, acc = evaluate(i)
            losses[i], accuracy[i] = value, np.nan if acc is None else acc
            done[0] = i + 1
        return losses, accuracy

    status = lambda: (done[0] / count, f"{message} {done[0]}/{count}")
    return (yield from wait_for(work, message, status=status))


def _point(theta: torch.Tensor, d1: torch.Tensor, d2: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """θ + a d1 + b d2, in one fixed order of operations: a row anywhere equals the grid's, bit for bit."""
    return theta + a * d1 + b * d2


def plane_row(loss, theta, d1, d2, alpha: float, beta, buffers=None) -> np.ndarray:
    """L(θ + α d1 + β_j d2) for every β_j: one row of a grid, float64 (len(beta),)."""
    theta, d1, d2 = (loss.flat(v) for v in (theta, d1, d2))
    points = (_point(theta, d1, d2, float(alpha), float(b)) for b in np.asarray(beta, float))
    return np.array([loss.loss(p, buffers) for p in points])


def module_grid_job(loss, theta, d1, d2, alpha, beta, buffers=None) -> Job[np.ndarray]:
    """Job: the (len(alpha), len(beta)) grid of L(θ + α_i d1 + β_j d2), point by point: the
    module kernel (``loss``: a ``ModuleLoss``)."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    theta, d1, d2 = (loss.flat(v) for v in (theta, d1, d2))
    m = len(beta)

    def evaluate(k: int):
        i, j = divmod(k, m)
        return loss.loss(_point(theta, d1, d2, float(alpha[i]), float(beta[j])), buffers), None

    values, _ = yield from points_job(len(alpha) * m, evaluate, "plane point")
    return values.reshape(len(alpha), m)
