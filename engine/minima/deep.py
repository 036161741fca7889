"""Deep MLPs ``n0 — n1 — … — 1`` as ONE flat float64 parameter vector (MATH.md B1).

Layout of the flat vector, layer by layer: ``W1, b1, W2, b2, …, W_L, b_L`` where ``W_l`` has
shape ``(n_l, n_{l-1})`` stored row-major (row p = incoming weights of neuron p of layer l) and
``b_l`` has shape ``(n_l,)``; the ``b_l`` are absent when ``bias`` is False. Hidden layers use
the activation, the output layer is linear, and the loss is SUMMED: ``L = Σ_α (f(x_α) − y_α)²``.

Everything is written for a batch of parameter vectors ``(B, P)`` at once with hand-batched
matmuls, because that is what makes landscape slices fast (see engine.landscape.slices); the single
vector case is the batch of one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from engine.core.errors import EngineInputError

ACTIVATIONS = ("sigmoid", "tanh")


def check_activation(name: str) -> str:
    if name not in ACTIVATIONS:
        raise EngineInputError(f"unknown activation {name!r}; choose one of: {', '.join(ACTIVATIONS)}")
    return name


def sigma_(name: str, z: torch.Tensor) -> torch.Tensor:
    """The activation in place: the landscape's hot path reuses the pre-activation buffer."""
    return torch.sigmoid_(z) if name == "sigmoid" else torch.tanh_(z)


def sigma(name: str, z: torch.Tensor, order: int = 0) -> torch.Tensor:
    """The activation (order 0) and its first two derivatives, in closed form."""
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
    """Widths ``(n0, n1, …, 1)``, activation name and whether every layer has a bias."""

    widths: tuple
    activation: str = "sigmoid"
    bias: bool = False

    def __post_init__(self):
        widths = tuple(int(w) for w in self.widths)
        if len(widths) < 2 or any(w < 1 for w in widths):
            raise EngineInputError(f"widths {self.widths!r} must be at least (n0, 1) with every width ≥ 1")
        if widths[-1] != 1:
            raise EngineInputError(f"widths {self.widths!r}: the output layer must have width 1")
        object.__setattr__(self, "widths", widths)
        check_activation(self.activation)

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


def as_targets(Y) -> np.ndarray:
    """Accept targets as (N,) or (N, 1); the scalar-output networks use (N,)."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 2 and Y.shape[1] == 1:
        Y = Y[:, 0]
    if Y.ndim != 1:
        raise EngineInputError(f"targets Y have shape {Y.shape}; these networks have one output, so use (N,) or (N, 1)")
    return Y


def check_data(arch: Arch, X, Y) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Y = as_targets(Y)
    if X.ndim != 2 or X.shape[1] != arch.widths[0]:
        raise EngineInputError(f"inputs X have shape {X.shape}; the network expects (N, {arch.widths[0]})")
    if len(Y) != len(X):
        raise EngineInputError(f"X has {len(X)} samples but Y has {len(Y)}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise EngineInputError("X or Y contains NaN or inf")
    return X, Y


def forward_batch(arch: Arch, thetas: torch.Tensor, X: torch.Tensor, keep: bool = False):
    """Outputs ``(B, N)`` for parameter vectors ``thetas (B, P)``; with ``keep`` also the list of
    pre-activations ``z_l (B, n_l, N)`` and activations ``a_l`` (a_0 = Xᵀ)."""
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
    f = zs[-1][:, 0, :]
    return (f, zs, acts) if keep else f


def loss_batch(arch: Arch, thetas: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Summed squared loss for each row of ``thetas (B, P)`` -> ``(B,)``."""
    return ((forward_batch(arch, thetas, X) - y) ** 2).sum(-1)


def loss_t(arch: Arch, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Scalar loss of one flat vector; differentiable (torch.func friendly)."""
    return loss_batch(arch, theta.unsqueeze(0), X, y)[0]


def tensors(*arrays, dtype=torch.float64):
    return tuple(torch.as_tensor(np.asarray(a), dtype=dtype) for a in arrays)


def loss(arch: Arch, theta, X, Y) -> float:
    t, Xt, yt = tensors(theta, X, as_targets(Y))
    return float(loss_t(arch, t, Xt, yt))


def predict(arch: Arch, theta, X) -> np.ndarray:
    t, Xt = tensors(theta, X)
    return forward_batch(arch, t.unsqueeze(0), Xt)[0].numpy()


def loss_and_grad(arch: Arch, theta, X, Y) -> tuple[float, np.ndarray]:
    t, Xt, yt = tensors(theta, X, as_targets(Y))
    t.requires_grad_(True)
    value = loss_t(arch, t, Xt, yt)
    (g,) = torch.autograd.grad(value, t)
    return float(value.detach()), g.numpy()


# torch.func's forward-mode AD keeps its levels in process-wide state: two threads computing a
# Hessian at once (the λ slider's live readout beside a re-slice) failed with "forward AD level"
# errors. One at a time; each takes ~50 ms at 504 parameters.
_HESSIAN_LOCK = threading.Lock()


def hessian(arch: Arch, theta, X, Y) -> np.ndarray:
    """Full Hessian of the loss on the flat vector (torch.func: forward-over-reverse)."""
    t, Xt, yt = tensors(theta, X, as_targets(Y))
    with _HESSIAN_LOCK:
        H = torch.func.hessian(lambda p: loss_t(arch, p, Xt, yt))(t)
    H = H.numpy()
    return 0.5 * (H + H.T)  # exact symmetry for eigvalsh
