"""Training shallow nets while recording the trajectory (weights, loss, c_k, sign flips).

Discrete optimizers use torch.optim on float64 leaf tensors whose .grad we fill with the exact
gradients of engine.topology.two_layer. "flow" integrates θ' = −∇L(θ) with an adaptive Runge-Kutta solver
over the same time horizon steps·lr that GD covers, so the two are directly comparable.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_integrate, torch
from engine.core.progress import Job, Progress, wait_for
from engine.core.runtime import configure_torch_threads
from engine.core.validation import integer, real
from engine.topology.invariants import balances
from engine.topology.two_layer import (
    TwoLayerNet,
    TwoLayerParams,
    check_data,
    check_params,
    loss_and_grads,
    loss_and_grads_np,
)

OPTIMIZERS = ("gd", "sgd", "adam", "momentum", "flow")
_YIELD_S = 0.03  # yield at least this often, inside the job contract's bound (docs/ARCHITECTURE.md)
_YIELD_ROWS = 20  # ... and at least every this many recorded rows, for live plots


@dataclass(frozen=True)
class TrainConfig:
    optimizer: str = "gd"
    lr: float = 0.01  # the step h; for "flow" the horizon is steps * lr
    steps: int = 500
    stride: int = 1  # record every stride-th step (and always the last one)
    batch_size: int | None = None  # "sgd" only; None means full batch
    momentum: float = 0.9  # "momentum" (heavy ball)
    betas: tuple = (0.9, 0.999)  # "adam"
    weight_decay: float = 0.0  # L2 term λθ added to the gradient (breaks conservation)
    seed: int = 0  # minibatch order for "sgd"
    # "flow" solver tolerances. The ReLU vector field jumps by O(1/N) whenever a data point
    # crosses a neuron's kink, so tighter tolerances cost many times the evaluations for changes
    # below 1e-5 in θ; c_k is still conserved to ~1e-11 at these settings.
    rtol: float = 1e-8
    atol: float = 1e-10

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise EngineInputError(f"optimizer {self.optimizer!r} unknown; choose one of {OPTIMIZERS}")
        real("learning rate lr", self.lr, positive=True)
        integer("steps", self.steps, 0), integer("stride", self.stride, 1)
        if self.batch_size is not None:
            integer("batch_size (None: full batch)", self.batch_size, 1)
        if not (math.isfinite(self.momentum) and 0 <= self.momentum < 1):
            raise EngineInputError(f"momentum = {self.momentum!r} must lie in [0, 1)")
        if len(self.betas) != 2 or not all(math.isfinite(b) and 0 <= b < 1 for b in self.betas):
            raise EngineInputError(f"betas = {self.betas!r} must be two numbers in [0, 1)")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise EngineInputError(f"weight_decay = {self.weight_decay!r} must be a finite number >= 0")
        if not (self.rtol > 0 and self.atol > 0):
            raise EngineInputError(f"rtol = {self.rtol!r}, atol = {self.atol!r} must be positive")


@dataclass
class Trajectory:
    step: np.ndarray  # (T,) step index of each recorded row (time / lr for "flow")
    W1: np.ndarray  # (T, l, d)
    W2: np.ndarray  # (T, e, l)
    b1: np.ndarray | None  # (T, l) or None
    b2: np.ndarray | None  # (T, e) or None
    loss: np.ndarray  # (T,) data loss at the recorded parameters (no weight-decay term)
    c: np.ndarray  # (T, l)
    sign_flips: list = field(default_factory=list)  # (step, neuron): an output weight crossed 0 (e = 1)
    diverged_at: int | None = None
    message: str = ""
    time: np.ndarray | None = None  # (T,) = step * lr, the gradient-flow time

    def final_params(self) -> TwoLayerParams:
        pick = lambda a: None if a is None else a[-1].copy()
        return TwoLayerParams(self.W1[-1].copy(), self.W2[-1].copy(), pick(self.b1), pick(self.b2))


class _Recorder:
    """Preallocated trajectory arrays; rows below ``n`` are final, so slices can be shared."""

    def __init__(self, net: TwoLayerNet, config: TrainConfig):
        T = config.steps // config.stride + 1 + (config.steps % config.stride != 0)
        self.lr = config.lr
        self.step = np.zeros(T, dtype=np.int64)
        self.W1, self.W2 = np.zeros((T, net.l, net.d)), np.zeros((T, net.e, net.l))
        self.b1 = np.zeros((T, net.l)) if net.bias else None
        self.b2 = np.zeros((T, net.e)) if net.bias else None
        self.loss, self.c = np.zeros(T), np.zeros((T, net.l))
        self.n, self.flips = 0, []
        self._last_sign = None

    def add(self, step, loss, W1, W2, b1=None, b2=None):
        i = self.n
        self.step[i], self.loss[i], self.W1[i], self.W2[i] = step, loss, W1, W2
        if self.b1 is not None:
            self.b1[i], self.b2[i] = b1, b2
        self.c[i] = balances(W1, W2, b1)
        self.n += 1

    def track_signs(self, step: int, W2: np.ndarray) -> None:
        """Record (step, k) whenever output weight k changes sign (e = 1); zeros don't count."""
        if W2.shape[0] != 1:
            return
        s = np.sign(W2[0])
        if self._last_sign is None:
            self._last_sign = s.copy()
            return
        for k in np.nonzero((s != 0) & (self._last_sign != 0) & (s != self._last_sign))[0]:
            self.flips.append((int(step), int(k)))
        self._last_sign = np.where(s != 0, s, self._last_sign)

    def snapshot(self, diverged_at=None, message="") -> Trajectory:
        n = self.n
        cut = lambda a: None if a is None else a[:n]
        return Trajectory(
            self.step[:n],
            self.W1[:n],
            self.W2[:n],
            cut(self.b1),
            cut(self.b2),
            self.loss[:n],
            self.c[:n],
            list(self.flips),
            diverged_at,
            message,
            self.step[:n] * self.lr,
        )


def _recorded_steps(config: TrainConfig) -> np.ndarray:
    steps = np.arange(0, config.steps + 1, config.stride)
    return steps if steps[-1] == config.steps else np.append(steps, config.steps)


def train(net: TwoLayerNet, params: TwoLayerParams, X, Y, config: TrainConfig) -> Job[Trajectory]:
    """Job: train from ``params`` and return the recorded Trajectory.

    On NaN/inf the run stops, keeps the rows recorded so far, and returns with
    ``diverged_at`` set to the offending step and a message (no exception).
    """
    configure_torch_threads()
    params = check_params(net, params)
    X, Y = check_data(net, X, Y)
    if config.optimizer == "flow":
        return (yield from _train_flow(net, params, X, Y, config))
    return (yield from _train_discrete(net, params, X, Y, config))


def _train_discrete(net, params, X, Y, config) -> Job[Trajectory]:
    rec = _Recorder(net, config)
    Xt, Yt = torch.from_numpy(X), torch.from_numpy(Y)
    tensors = [torch.tensor(a) for a in (params.W1, params.W2, params.b1, params.b2) if a is not None]
    # The first optimizer of a process imports torch._dynamo, which is slow (slower still on a busy
    # machine): built on a helper thread, so pause and cancel still act meanwhile.
    opt = yield from wait_for(lambda stop: _make_optimizer(config, tensors), "preparing the optimizer")
    gen = torch.Generator().manual_seed(config.seed)
    batch = config.batch_size if config.optimizer == "sgd" else None
    order, pos = None, X.shape[0]
    last_yield, rows_at_yield = time.perf_counter(), 0
    for t in range(config.steps + 1):
        with torch.no_grad():
            full_loss, *grads = loss_and_grads(net, Xt, Yt, *_pad(tensors))
            arrays = [a.numpy() for a in tensors]
            if not (math.isfinite(float(full_loss)) and all(np.all(np.isfinite(a)) for a in arrays)):
                return rec.snapshot(t, f"diverged at step {t}: loss or weights became NaN/inf")
            rec.track_signs(t, arrays[1])
            if t % config.stride == 0 or t == config.steps:
                rec.add(t, float(full_loss), *arrays)
            if t == config.steps:
                break
            if batch is not None and batch < X.shape[0]:  # fresh permutation each epoch
                if pos + batch > X.shape[0]:
                    order, pos = torch.randperm(X.shape[0], generator=gen), 0
                idx = order[pos : pos + batch]
                pos += batch
                _, *grads = loss_and_grads(net, Xt[idx], Yt[idx], *_pad(tensors))
            for p, g in zip(tensors, (g for g in grads if g is not None)):
                p.grad = g
        opt.step()
        now = time.perf_counter()
        if now - last_yield > _YIELD_S or rec.n - rows_at_yield >= _YIELD_ROWS:
            last_yield, rows_at_yield = now, rec.n
            yield Progress(
                (t + 1) / (config.steps + 1), f"{config.optimizer} step {t + 1}/{config.steps}", rec.snapshot()
            )
    return rec.snapshot(None, f"{config.optimizer}: {config.steps} steps, final loss {rec.loss[rec.n - 1]:.6g}")


def _pad(tensors):
    return list(tensors) + [None] * (4 - len(tensors))


def _make_optimizer(config: TrainConfig, tensors):
    if config.optimizer == "adam":
        return torch.optim.Adam(tensors, lr=config.lr, betas=tuple(config.betas), weight_decay=config.weight_decay)
    mom = config.momentum if config.optimizer == "momentum" else 0.0
    return torch.optim.SGD(tensors, lr=config.lr, momentum=mom, weight_decay=config.weight_decay)


def _train_flow(net, params, X, Y, config) -> Job[Trajectory]:
    """Exact gradient flow θ' = −∇L(θ) (− λθ with weight decay), stepped by the adaptive RK45
    solver one internal step at a time so we can yield every ``_YIELD_S``; recorded times are read
    off its dense output. Sign flips are detected between recorded rows, so a small stride
    localizes them."""
    rec = _Recorder(net, config)
    arrays = [a for a in (params.W1, params.W2, params.b1, params.b2) if a is not None]
    shapes, sizes = [a.shape for a in arrays], [a.size for a in arrays]

    def unpack(y):
        parts = [p.reshape(s) for p, s in zip(np.split(y, np.cumsum(sizes)[:-1]), shapes)]
        return parts + [None] * (4 - len(parts))

    def field_(t, y):
        grads = [g for g in loss_and_grads_np(net, X, Y, *unpack(y))[1:] if g is not None]
        return -np.concatenate([g.reshape(-1) for g in grads]) - config.weight_decay * y

    def record(step, y):
        parts = unpack(y)
        rec.track_signs(step, parts[1])
        rec.add(step, loss_and_grads_np(net, X, Y, *parts)[0], *(p for p in parts if p is not None))

    steps = _recorded_steps(config)
    y0 = np.concatenate([a.reshape(-1) for a in arrays])
    record(0, y0)
    horizon, i, last = config.steps * config.lr, 1, time.perf_counter()
    if config.steps == 0:
        return rec.snapshot(None, "flow: no steps")
    solver = scipy_integrate.RK45(field_, 0.0, y0, horizon, rtol=config.rtol, atol=config.atol)
    while i < len(steps):
        message = solver.step()
        if solver.status == "failed" or not np.all(np.isfinite(solver.y)):
            bad = int(steps[i])
            return rec.snapshot(bad, f"flow diverged near step {bad} (t ≈ {solver.t:g}): {message or 'NaN/inf'}")
        dense = solver.dense_output()
        while i < len(steps) and (steps[i] * config.lr <= solver.t or solver.status == "finished"):
            record(int(steps[i]), solver.y if steps[i] == config.steps else dense(steps[i] * config.lr))
            i += 1
        if time.perf_counter() - last > _YIELD_S:
            last = time.perf_counter()
            yield Progress(solver.t / horizon, f"flow t = {solver.t:.4g} / {horizon:.4g}", rec.snapshot())
    return rec.snapshot(None, f"flow: t = {horizon:g}, final loss {rec.loss[rec.n - 1]:.6g}")
