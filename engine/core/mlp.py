"""Deep MLPs ``n0 — n1 — … — e`` as ONE flat float64 parameter vector (docs/MATH.md B1): the
network description that paper B (engine.minima), the landscape toolkit (engine.landscape) and
the file readers (engine.io) share, so it lives in core and imports none of them.

Layout of the flat vector, layer by layer: ``W1, b1, W2, b2, …, W_L, b_L`` where ``W_l`` has
shape ``(n_l, n_{l-1})`` stored row-major (row p = incoming weights of neuron p of layer l) and
``b_l`` has shape ``(n_l,)``; the ``b_l`` are absent when ``bias`` is False. Hidden layers use
the activation, the output layer is linear, and the loss is SUMMED: ``L = Σ_α (f(x_α) − y_α)²``.

Paper B's networks have one output (e = 1) and that summed loss. The landscape toolkit
(engine.landscape) also loads networks with e ≥ 2 outputs and takes a ``kind`` of loss (``LOSSES``):
"sum" (the papers'), "mean" (the sum over N) and "cross-entropy" (integer labels in Y); every
function here defaults to "sum" and gives e = 1 exactly the numbers it always did.

Everything is written for a batch of parameter vectors ``(B, P)`` at once with hand-batched
matmuls, because that is what makes landscape slices fast (see engine.landscape.slices); the single
vector case is the batch of one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch

ACTIVATIONS = ("sigmoid", "tanh")
# The landscape toolkit also evaluates ReLU networks (LandscapeArch); paper B's constructions need
# a smooth activation, so Arch itself keeps to ACTIVATIONS.
LANDSCAPE_ACTIVATIONS = ACTIVATIONS + ("relu",)
LOSSES = ("sum", "mean", "cross-entropy")


def check_loss(kind: str) -> str:
    if kind not in LOSSES:
        raise EngineInputError(f"unknown loss {kind!r}; choose one of: {', '.join(LOSSES)}")
    return kind


def check_activation(name: str, allowed: tuple = ACTIVATIONS) -> str:
    if name not in allowed:
        raise EngineInputError(f"unknown activation {name!r}; choose one of: {', '.join(allowed)}")
    return name


def sigma_(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The activation as an in-place function, ``sigma_(name)(z)``: the landscape's hot path reuses
    the pre-activation buffer, and looks the function up once, not at every call."""
    return {"relu": torch.relu_, "sigmoid": torch.sigmoid_, "tanh": torch.tanh_}[name]


def sigma(name: str, z: torch.Tensor, order: int = 0) -> torch.Tensor:
    """The activation (order 0) and its first two derivatives, in closed form."""
    if name == "relu":  # derivatives almost everywhere: the step and 0
        return torch.relu(z) if order == 0 else (z > 0).to(z.dtype) if order == 1 else torch.zeros_like(z)
    s = torch.sigmoid(z) if name == "sigmoid" else torch.tanh(z)
    if order == 0:  # the hot path of every landscape evaluation: no derivative work
        return s
    if name == "sigmoid":
        return s * (1 - s) if order == 1 else s * (1 - s) * (1 - 2 * s)
    return 1 - s * s if order == 1 else -2 * s * (1 - s * s)


@dataclass(frozen=True)
class Block:
    name: str  # "W2" or "b2"
    layer: int  # 1-based layer index
    slice: slice  # position in the flat vector
    shape: tuple


@dataclass(frozen=True)
class Arch:
    """Widths ``(n0, n1, …, e)``, activation name and whether every layer has a bias. Paper B's
    code and the file loaders use e = 1; the landscape toolkit any e ≥ 1."""

    widths: tuple
    activation: str = "sigmoid"
    bias: bool = False
    any_outputs: ClassVar[bool] = False  # LandscapeArch: e ≥ 1 outputs
    activations: ClassVar[tuple] = ACTIVATIONS

    def __post_init__(self):
        widths = tuple(int(w) for w in self.widths)
        if len(widths) < 2 or any(w < 1 for w in widths):
            raise EngineInputError(f"widths {self.widths!r} must be at least (n0, 1) with every width ≥ 1")
        if widths[-1] != 1 and not self.any_outputs:
            raise EngineInputError(f"widths {self.widths!r}: the output layer must have width 1")
        object.__setattr__(self, "widths", widths)
        check_activation(self.activation, self.activations)

    @property
    def n_outputs(self) -> int:
        return self.widths[-1]

    @property
    def n_layers(self) -> int:  # weight layers, output included
        return len(self.widths) - 1

    @cached_property
    def blocks(self) -> tuple[Block, ...]:
        out, pos = [], 0
        for l in range(1, len(self.widths)):
            shape = (self.widths[l], self.widths[l - 1])
            out.append(Block(f"W{l}", l, slice(pos, pos + shape[0] * shape[1]), shape))
            pos += shape[0] * shape[1]
            if self.bias:
                out.append(Block(f"b{l}", l, slice(pos, pos + shape[0]), (shape[0],)))
                pos += shape[0]
        return tuple(out)

    @property
    def n_params(self) -> int:
        return self.blocks[-1].slice.stop

    def block(self, name: str) -> Block:
        return next(b for b in self.blocks if b.name == name)

    def neuron_blocks(self) -> list[np.ndarray]:
        """Flat indices of each neuron's incoming weights (and bias), for per-neuron normalization."""
        groups = []
        for l in range(1, len(self.widths)):
            W = self.block(f"W{l}")
            rows = np.arange(W.slice.start, W.slice.stop).reshape(W.shape)
            for p in range(W.shape[0]):
                idx = list(rows[p])
                if self.bias:
                    idx.append(self.block(f"b{l}").slice.start + p)
                groups.append(np.array(idx))
        return groups


@dataclass(frozen=True)
class LandscapeArch(Arch):
    """An Arch for the landscape toolkit only (engine.landscape): e ≥ 1 outputs and ReLU besides
    sigmoid and tanh. Paper B's constructions and verdicts take plain ``Arch``; ``landscape_arch``
    returns one whenever the network is one."""

    any_outputs: ClassVar[bool] = True
    activations: ClassVar[tuple] = LANDSCAPE_ACTIVATIONS


def landscape_arch(widths, activation: str = "sigmoid", bias: bool = False) -> Arch:
    """``Arch`` when paper B's code can take the network (e = 1, smooth activation), else ``LandscapeArch``."""
    widths = tuple(int(w) for w in widths)
    plain = widths and widths[-1] == 1 and activation in ACTIVATIONS
    return (Arch if plain else LandscapeArch)(widths, activation, bias)


def unpack(arch: Arch, theta) -> tuple[list, list]:
    """Flat vector -> ([W1, …], [b1, …] or [None, …]) as views (numpy or torch, like the input)."""
    Ws = [theta[arch.block(f"W{l}").slice].reshape(arch.block(f"W{l}").shape) for l in range(1, arch.n_layers + 1)]
    bs = [theta[arch.block(f"b{l}").slice] if arch.bias else None for l in range(1, arch.n_layers + 1)]
    return Ws, bs


def pack(Ws, bs=None) -> np.ndarray:
    """[W1, …], [b1, …] (or None) -> flat float64 vector in the documented order."""
    parts = []
    for l, W in enumerate(Ws):
        parts.append(np.asarray(W, dtype=np.float64).ravel())
        if bs is not None and bs[l] is not None:
            parts.append(np.asarray(bs[l], dtype=np.float64).ravel())
    return np.concatenate(parts)


def arch_of(Ws, bs, activation: str) -> Arch:
    """The architecture of weight matrices ``Ws`` (and biases ``bs``, or None), e.g. a loaded model's."""
    return Arch((Ws[0].shape[1],) + tuple(W.shape[0] for W in Ws), activation, bs is not None and bs[0] is not None)


def init_params(arch: Arch, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Gaussian weights with variance scale²/fan_in, zero biases."""
    Ws = [
        rng.normal(0, scale / np.sqrt(arch.widths[l - 1]), (arch.widths[l], arch.widths[l - 1]))
        for l in range(1, arch.n_layers + 1)
    ]
    bs = [np.zeros(arch.widths[l]) for l in range(1, arch.n_layers + 1)] if arch.bias else None
    return pack(Ws, bs)


def as_targets(Y, n_outputs: int = 1, kind: str = "sum") -> np.ndarray:
    """Accept targets as (N,) or (N, 1); the scalar-output networks use (N,).

    With e = ``n_outputs`` ≥ 2, squared losses take (N, e) targets; "cross-entropy" takes integer
    class labels 0 … e − 1 as (N,) or (N, 1), returned as float64 (N,) holding whole numbers."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 2 and Y.shape[1] == 1:
        Y = Y[:, 0]
    if kind == "cross-entropy":
        if n_outputs < 2:
            raise EngineInputError("the cross-entropy loss needs a classifier with e ≥ 2 outputs; this network has 1")
        if Y.ndim != 1 or not (
            np.isfinite(Y).all() and (Y == np.round(Y)).all() and ((0 <= Y) & (Y < n_outputs)).all()
        ):
            raise EngineInputError(
                f"the cross-entropy loss needs integer class labels 0..{n_outputs - 1} in Y, shape (N,) or (N, 1); "
                f"got shape {Y.shape}"
            )
        return Y
    if n_outputs > 1:
        if Y.ndim != 2 or Y.shape[1] != n_outputs:
            raise EngineInputError(
                f"targets Y have shape {Y.shape}; the network has {n_outputs} outputs, so use (N, {n_outputs})"
            )
        return Y
    if Y.ndim != 1:
        raise EngineInputError(f"targets Y have shape {Y.shape}; these networks have one output, so use (N,) or (N, 1)")
    return Y


def check_data(arch: Arch, X, Y, kind: str = "sum") -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Y = as_targets(Y, arch.n_outputs, check_loss(kind))
    if X.ndim != 2 or X.shape[1] != arch.widths[0]:
        raise EngineInputError(f"inputs X have shape {X.shape}; the network expects (N, {arch.widths[0]})")
    if len(Y) != len(X):
        raise EngineInputError(f"X has {len(X)} samples but Y has {len(Y)}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise EngineInputError("X or Y contains NaN or inf")
    return X, Y


def forward_batch(arch: Arch, thetas: torch.Tensor, X: torch.Tensor, keep: bool = False):
    """Outputs ``(B, N)`` for parameter vectors ``thetas (B, P)``; with ``keep`` also the list of
    pre-activations ``z_l (B, n_l, N)`` and activations ``a_l`` (a_0 = Xᵀ). With e ≥ 2 outputs
    the outputs are ``(B, e, N)``."""
    B = thetas.shape[0]
    a = X.T  # (n0, N), shared by the whole batch: one broadcast matmul instead of B copies
    zs, acts = [], [a]
    for l in range(1, arch.n_layers + 1):
        W = thetas[:, arch.block(f"W{l}").slice].reshape(B, arch.widths[l], arch.widths[l - 1])
        z = torch.matmul(W, a)
        if arch.bias:
            z = z + thetas[:, arch.block(f"b{l}").slice].unsqueeze(-1)
        zs.append(z)
        if l < arch.n_layers:
            a = sigma(arch.activation, z)
            acts.append(a)
    f = zs[-1][:, 0, :] if arch.n_outputs == 1 else zs[-1]
    return (f, zs, acts) if keep else f


def target_tensor(arch: Arch, Y, kind: str = "sum", dtype=None, device=None) -> torch.Tensor:
    """Targets as the loss functions take them: (N,) for e = 1, (e, N) for squared losses with
    e ≥ 2 outputs (laid out like the outputs), (N,) int64 labels for cross-entropy."""
    y = as_targets(Y, arch.n_outputs, check_loss(kind))
    if kind == "cross-entropy":
        return torch.as_tensor(y.astype(np.int64), device=device)
    return torch.as_tensor(y if y.ndim == 1 else y.T, dtype=dtype or torch.float64, device=device)


def loss_of_outputs(f: torch.Tensor, y: torch.Tensor, kind: str = "sum") -> torch.Tensor:
    """The loss of outputs ``f`` ((…, N) for e = 1, (…, e, N) otherwise) against ``target_tensor``
    targets, reduced over samples (and outputs) -> (…,). docs/MATH.md B12:

    sum: Σ_α ‖f(x_α) − y_α‖²;  mean: that over N;  cross-entropy: (1/N) Σ_α [log Σ_c e^{f_c(x_α)} − f_{y_α}(x_α)].
    """
    if kind == "cross-entropy":
        picked = f.gather(-2, y.expand(*f.shape[:-2], 1, y.shape[-1])).squeeze(-2)
        # log Σ e^{f_c} = m + log Σ e^{f_c − m}, with f_c − m kept where e^{·} is a normal number:
        # terms below the smallest normal cannot change a sum ≥ 1, and denormal results made exp
        # dominate a whole plane point's cost (benchmarks/README.md)
        m = f.amax(dim=-2, keepdim=True)
        shifted = (f - m).clamp_min(math.log(torch.finfo(f.dtype).tiny) + 1.0)
        return (m.squeeze(-2) + shifted.exp().sum(-2).log() - picked).mean(-1)
    squared = ((f - y) ** 2).sum((-2, -1) if y.ndim == 2 else -1)  # y (e, N): sum over the outputs too
    return squared / f.shape[-1] if kind == "mean" else squared


def loss_batch(arch: Arch, thetas: torch.Tensor, X: torch.Tensor, y: torch.Tensor, kind: str = "sum") -> torch.Tensor:
    """Loss (summed squared by default) for each row of ``thetas (B, P)`` -> ``(B,)``; ``y`` from
    ``target_tensor`` (for e = 1 and a squared loss, the (N,) targets as always)."""
    if kind == "sum" and arch.n_outputs == 1:
        return ((forward_batch(arch, thetas, X) - y) ** 2).sum(-1)
    return loss_of_outputs(forward_batch(arch, thetas, X), y, kind)


def loss_t(arch: Arch, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, kind: str = "sum") -> torch.Tensor:
    """Scalar loss of one flat vector; differentiable (torch.func friendly)."""
    return loss_batch(arch, theta.unsqueeze(0), X, y, kind)[0]


def tensors(*arrays, dtype=None):
    return tuple(torch.as_tensor(np.asarray(a), dtype=dtype or torch.float64) for a in arrays)


def loss(arch: Arch, theta, X, Y, kind: str = "sum") -> float:
    (t, Xt), yt = tensors(theta, X), target_tensor(arch, Y, kind)
    return float(loss_t(arch, t, Xt, yt, kind))


def predict(arch: Arch, theta, X) -> np.ndarray:
    t, Xt = tensors(theta, X)
    return forward_batch(arch, t.unsqueeze(0), Xt)[0].numpy()


def loss_and_grad(arch: Arch, theta, X, Y, kind: str = "sum") -> tuple[float, np.ndarray]:
    (t, Xt), yt = tensors(theta, X), target_tensor(arch, Y, kind)
    t.requires_grad_(True)
    value = loss_t(arch, t, Xt, yt, kind)
    (g,) = torch.autograd.grad(value, t)
    return float(value.detach()), g.numpy()


# torch.func's forward-mode AD keeps its levels in process-wide state: two threads computing a
# Hessian at once (the λ slider's live readout beside a re-slice) failed with "forward AD level"
# errors. One at a time: each is short at the papers' sizes, so the wait is too.
_HESSIAN_LOCK = threading.Lock()


def hessian(arch: Arch, theta, X, Y, kind: str = "sum") -> np.ndarray:
    """Full Hessian of the loss on the flat vector (torch.func: forward-over-reverse)."""
    (t, Xt), yt = tensors(theta, X), target_tensor(arch, Y, kind)
    with _HESSIAN_LOCK:
        H = torch.func.hessian(lambda p: loss_t(arch, p, Xt, yt, kind))(t)
    H = H.numpy()
    return 0.5 * (H + H.T)  # exact symmetry for eigvalsh
