"""B10: a suboptimal minimum at infinity (biases → ∞) — the recipe, L(b), GD drift, L-BFGS escape.

``infinity_job`` is the one pipeline: ``reproduce nonattr-infinity`` and the GUI preset run it.
GD yields by elapsed time (every ``YIELD_EVERY_S``), the L-BFGS run goes through progress.wait_for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_optimize, scipy_special
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.core.runtime import configure_torch_threads

YIELD_EVERY_S = 0.02


def infinity_data(seed: int, n_samples: int = 20):
    """B10's data: a noisy sine on 20 1-D inputs, which no constant fits well (so L∞ is suboptimal)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n_samples)


def infinity_point(X, Y, width: int = 2):
    """B10 recipe for one hidden layer with biases: incoming weights W (width, n0) and output weights
    v (width,) (output bias 0, Σv = mean y) such that L(b) > L∞ for all large shared biases b."""
    X, y = np.asarray(X, float), mlp.as_targets(Y)
    c = y.mean()
    r = c - y
    g = r @ X
    if np.linalg.norm(g) < 1e-12:
        raise EngineInputError("Σ_α (mean(y) − y_α) x_α = 0: the B10 recipe needs it nonzero")
    gh = g / np.linalg.norm(g)
    t = 1 / np.std(X @ gh)
    s = np.where(np.arange(width) % 2 == 0, 1.0, -1.0)
    for _ in range(60):  # S_i must have sign −s_i; true for t small enough
        S = np.array([r @ np.exp(-si * t * (X @ gh)) for si in s])
        if np.all(np.sign(S) == -s):
            break
        t /= 2
    else:
        raise EngineInputError("B10 recipe: could not find t with sign(S_i) = −s_i")
    W = np.outer(s * t, gh)
    v = s.copy()
    gap = c - v.sum()  # add to a neuron whose sign matches, so every v_i keeps sign s_i
    v[0 if gap > 0 else 1 if width > 1 else 0] += gap
    return W, v


def theta_of(W, b, v, b_out=0.0):
    """The flat vector (engine.core.mlp layout) of the one-hidden-layer net with biases."""
    return mlp.pack([W, v[None, :]], [b, np.array([b_out])])


def loss_of(W, b, v, b_out, X, y) -> float:
    """L = Σ (σ(X Wᵀ + b) v + b_out − y)², in plain numpy (what the exports let anyone recompute)."""
    res = scipy_special.expit(X @ W.T + b) @ v + b_out - y
    return float(res @ res)


def _excess(W, b, v, b_out, X, y):
    """L − L∞ as 2 r·d + d·d, with d = f − mean(y) written via σ(z) − 1 = −σ(−z): keeps every digit."""
    c = y.mean()
    z = X @ W.T + b
    d = (v.sum() + b_out - c) - scipy_special.expit(-z) @ v
    return 2 * (c - y) @ d + d @ d


@dataclass(frozen=True)
class BiasCurve:
    b: np.ndarray  # shared bias of every hidden neuron
    loss: np.ndarray  # L(b)
    loss_minus_Linf: np.ndarray  # L(b) − L∞, computed without cancellation
    L_inf: float  # the limit b → ∞: Σ (mean y − y)²


def loss_vs_bias(X, Y, W, v, bs) -> BiasCurve:
    X, y = np.asarray(X, float), mlp.as_targets(Y)
    bs = np.asarray(bs, float)
    L_inf = float(((y.mean() - y) ** 2).sum())
    excess = np.array([_excess(W, np.full(len(v), b), v, 0.0, X, y) for b in bs])
    loss = np.array([loss_of(W, np.full(len(v), b), v, 0.0, X, y) for b in bs])
    return BiasCurve(bs, loss, excess, L_inf)


@dataclass(frozen=True)
class GDTrajectory:
    """Plain GD on all parameters, recorded every ``steps // record`` steps (and at the last)."""

    step: np.ndarray  # (R,)
    W: np.ndarray  # (R, width, n0)
    b: np.ndarray  # (R, width): the hidden biases
    v: np.ndarray  # (R, width)
    b_out: np.ndarray  # (R,)
    loss: np.ndarray  # (R,) L at each recorded step
    loss_minus_Linf: np.ndarray  # (R,) L − L∞ without cancellation
    L_inf: float
    lr: float
    escape_step: int | None  # first recorded step below L∞ − 1e−3 L∞

    @property
    def mean_bias(self) -> np.ndarray:
        return self.b.mean(1)


def gd_from_infinity(
    X, Y, W, v, b0: float = 15.0, lr: float = 0.01, steps: int = 200_000, record: int = 400
) -> Job[GDTrajectory]:
    """Plain GD on all parameters of the one-hidden-layer net from shared bias b0 (analytic numpy
    gradient: far faster than autograd at this size). Yields every ``YIELD_EVERY_S`` of work.
    Near infinity the Hessian in (v, b_out) is ≈ 2N·11ᵀ, so stability needs lr < 1/(N (width + 1))."""
    X, y = np.asarray(X, float), mlp.as_targets(Y)
    W, v = np.array(W, float), np.array(v, float)
    b, b_out = np.full(len(v), float(b0)), 0.0
    L_inf = float(((y.mean() - y) ** 2).sum())
    every = max(1, steps // record)
    rec = {key: [] for key in ("step", "W", "b", "v", "b_out", "loss", "excess")}
    escape = None
    last = time.perf_counter()
    for k in range(steps + 1):
        z = X @ W.T + b
        a = scipy_special.expit(z)
        res = a @ v + b_out - y
        if k % every == 0 or k == steps:
            for key, value in zip(
                rec, (k, W.copy(), b.copy(), v.copy(), b_out, float(res @ res), float(_excess(W, b, v, b_out, X, y)))
            ):
                rec[key].append(value)
            if escape is None and rec["excess"][-1] < -1e-3 * L_inf:
                escape = k  # below the limit at infinity: GD left the flat set
        if k == steps:
            break
        if k % 64 == 0 and time.perf_counter() - last > YIELD_EVERY_S:
            last = time.perf_counter()
            yield Progress(k / steps, f"GD step {k}")
        gz = 2 * res[:, None] * v * a * (1 - a)  # (N, width)
        W -= lr * gz.T @ X
        b -= lr * gz.sum(0)
        v -= lr * 2 * a.T @ res
        b_out -= lr * 2 * res.sum()
    arr = {key: np.array(value) for key, value in rec.items()}
    return GDTrajectory(
        arr["step"], arr["W"], arr["b"], arr["v"], arr["b_out"], arr["loss"], arr["excess"], L_inf, lr, escape
    )


@dataclass(frozen=True)
class LowerPoint:
    """Where L-BFGS goes from the recipe's weights with b = 0: a loss below L∞."""

    W: np.ndarray
    b: np.ndarray
    v: np.ndarray
    b_out: float
    loss: float


def lbfgs_from_job(X, Y, W, b, v) -> Job[LowerPoint]:
    arch = Arch((X.shape[1], len(v), 1), "sigmoid", True)
    fun = lambda p: mlp.loss_and_grad(arch, p, X, Y)

    def run(stop):
        configure_torch_threads()  # one BLAS thread for scipy's L-BFGS too

        def callback(intermediate_result):
            if stop.is_set():
                raise StopIteration

        return scipy_optimize.minimize(
            fun, theta_of(W, b, v), jac=True, method="L-BFGS-B", callback=callback, options=dict(maxiter=5000)
        )

    res = yield from wait_for(run, "L-BFGS from the recipe's weights")
    Ws, bs = mlp.unpack(arch, res.x)
    return LowerPoint(Ws[0], bs[0], Ws[1][0], float(bs[1][0]), float(res.fun))


@dataclass(frozen=True)
class InfinityResult:
    X: np.ndarray
    Y: np.ndarray
    W: np.ndarray  # (width, 1) the recipe's incoming weights
    v: np.ndarray  # (width,) its outgoing weights (output bias 0)
    b0: float  # GD starts from shared bias b0
    curve: BiasCurve | None = None
    gd: GDTrajectory | None = None
    lower: LowerPoint | None = None


def infinity_job(seed: int = 0, steps: int = 200_000, b0: float = 15.0, width: int = 2) -> Job[InfinityResult]:
    """B10: the recipe's point, L(b) for b in [0, 40], GD from b0, and L-BFGS's lower loss.
    Partials: the result with the stages done so far."""
    configure_torch_threads()
    X, Y = infinity_data(seed)
    W, v = infinity_point(X, Y, width)
    result = InfinityResult(X, Y, W, v, b0, loss_vs_bias(X, Y, W, v, np.linspace(0, 40, 81)))
    yield Progress(0.05, "loss against bias", result)
    result = replace(result, gd=(yield from subjob(gd_from_infinity(X, Y, W, v, b0, steps=steps), 0.05, 0.9, "GD: ")))
    yield Progress(0.9, "GD done", result)
    # At b0 the gradient is ~e^{-b0}: L-BFGS stops at once there, so start it from the recipe's weights with b = 0.
    return replace(result, lower=(yield from lbfgs_from_job(X, Y, W, np.zeros(len(v)), v)))
