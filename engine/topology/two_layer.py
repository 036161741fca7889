"""Two-layer positively homogeneous networks f(x) = W2 σ(W1 x + b1) + b2 (MATH A1).

Gradients are written out by hand (not autograd): the formulas are four lines, run the same
on a batch of networks, and make the subgradient convention explicit — σ'(z) = 1 for z > 0
and γ otherwise, as torch does. With that convention σ'(z)·z = σ(z) everywhere, which is
exactly what makes every c_k conserved under gradient flow (MATH A2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.validation import integer

ACTIVATIONS = ("relu", "leaky_relu")
LOSSES = ("mse", "bce")
INITS = ("uniform", "xavier_normal", "xavier_uniform", "kaiming_normal", "kaiming_uniform", "pytorch")


@dataclass(frozen=True)
class TwoLayerNet:
    d: int
    l: int
    e: int = 1
    activation: str = "relu"
    leaky_slope: float = 0.01  # γ, used only by leaky_relu
    bias: bool = False
    loss: str = "mse"  # "mse": mean of squared errors over samples and outputs; "bce": with logits

    def __post_init__(self):
        for name in ("d", "l", "e"):
            object.__setattr__(self, name, integer(name, getattr(self, name), 1))
        if self.activation not in ACTIVATIONS:
            raise EngineInputError(f"activation {self.activation!r} unknown; choose one of {ACTIVATIONS}")
        if not (math.isfinite(self.leaky_slope) and 0.0 <= self.leaky_slope <= 1.0):
            raise EngineInputError(f"leaky_slope = {self.leaky_slope!r} must lie in [0, 1]")
        if self.loss not in LOSSES:
            raise EngineInputError(f"loss {self.loss!r} unknown; choose one of {LOSSES}")

    @property
    def gamma(self) -> float:
        return self.leaky_slope if self.activation == "leaky_relu" else 0.0


@dataclass
class TwoLayerParams:
    W1: np.ndarray  # (l, d)
    W2: np.ndarray  # (e, l)
    b1: np.ndarray | None = None  # (l,)
    b2: np.ndarray | None = None  # (e,)

    def copy(self) -> TwoLayerParams:
        cp = lambda a: None if a is None else np.array(a, dtype=np.float64)
        return TwoLayerParams(cp(self.W1), cp(self.W2), cp(self.b1), cp(self.b2))


def check_params(net: TwoLayerNet, p: TwoLayerParams) -> TwoLayerParams:
    """Return a float64 copy of ``p`` after checking it against ``net`` (shapes, finiteness)."""
    p = p.copy()
    want = {"W1": (net.l, net.d), "W2": (net.e, net.l)}
    if net.bias:
        want |= {"b1": (net.l,), "b2": (net.e,)}
    for name in ("W1", "W2", "b1", "b2"):
        a = getattr(p, name)
        if name not in want:
            if a is not None:
                raise EngineInputError(f"{name} given but the network has no biases")
            continue
        if a is None or a.shape != want[name]:
            got = None if a is None else a.shape
            raise EngineInputError(f"{name} has shape {got}; expected {want[name]}")
        if not np.all(np.isfinite(a)):
            raise EngineInputError(f"{name} contains NaN or inf")
    return p


def check_data(net: TwoLayerNet, X, Y) -> tuple[np.ndarray, np.ndarray]:
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    if X.ndim != 2 or X.shape[1] != net.d:
        raise EngineInputError(f"X has shape {X.shape}; expected (N, d={net.d})")
    if Y.ndim != 2 or Y.shape != (X.shape[0], net.e):
        raise EngineInputError(f"Y has shape {Y.shape}; expected (N={X.shape[0]}, e={net.e})")
    if X.shape[0] < 1 or not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise EngineInputError("X and Y must hold at least one sample and no NaN/inf")
    return X, Y


# --- the network in torch (float64); tensors may carry leading batch dims -------------------


def loss_and_grads(net: TwoLayerNet, X: torch.Tensor, Y: torch.Tensor, W1, W2, b1=None, b2=None):
    """Loss and its exact gradients (gW1, gW2, gb1, gb2); the bias grads are None without biases."""
    Z = X @ W1.transpose(-1, -2)  # (N, l)
    if b1 is not None:
        Z = Z + b1.unsqueeze(-2)
    g = net.gamma
    A = torch.where(Z > 0, Z, g * Z)
    F = A @ W2.transpose(-1, -2)  # (N, e)
    if b2 is not None:
        F = F + b2.unsqueeze(-2)
    n = Y.shape[-2] * Y.shape[-1]
    if net.loss == "mse":
        R = F - Y
        loss = (R * R).sum((-1, -2)) / n
        G = (2.0 / n) * R
    else:  # BCE with logits: softplus(F) − Y F, stable for large |F|
        loss = (torch.nn.functional.softplus(F) - Y * F).sum((-1, -2)) / n
        G = (torch.sigmoid(F) - Y) / n
    gW2 = G.transpose(-1, -2) @ A
    # σ'(Z) = 1 or γ; built from a float mask, since torch.where on Python scalars is float32.
    dZ = (G @ W2) * (g + (1.0 - g) * (Z > 0).to(Z.dtype))
    gW1 = dZ.transpose(-1, -2) @ X
    gb1 = dZ.sum(-2) if b1 is not None else None
    gb2 = G.sum(-2) if b2 is not None else None
    return loss, gW1, gW2, gb1, gb2


def loss_and_grads_np(net: TwoLayerNet, X: np.ndarray, Y: np.ndarray, W1, W2, b1=None, b2=None):
    """NumPy twin of loss_and_grads for one network. The exact-flow ODE calls it ~10⁵ times
    on small arrays, where torch's per-call overhead would cost several times the arithmetic."""
    Z = X @ W1.T if b1 is None else X @ W1.T + b1
    g = net.gamma
    A = np.where(Z > 0, Z, g * Z)
    F = A @ W2.T if b2 is None else A @ W2.T + b2
    n = Y.size
    if net.loss == "mse":
        R = F - Y
        loss, G = float(np.sum(R * R)) / n, (2.0 / n) * R
    else:
        loss = float(np.sum(np.logaddexp(0.0, F) - Y * F)) / n
        G = (0.5 * (1.0 + np.tanh(0.5 * F)) - Y) / n  # stable sigmoid
    dZ = (G @ W2) * np.where(Z > 0, 1.0, g)
    return (loss, dZ.T @ X, G.T @ A, None if b1 is None else dZ.sum(0), None if b2 is None else G.sum(0))


def _t(a):
    return None if a is None else torch.as_tensor(np.asarray(a, dtype=np.float64))


def forward(net: TwoLayerNet, p: TwoLayerParams, X) -> np.ndarray:
    """Network output f(X) as (N, e) float64."""
    Z = np.asarray(X, dtype=np.float64) @ p.W1.T + (0.0 if p.b1 is None else p.b1)
    A = np.where(Z > 0, Z, net.gamma * Z)
    return A @ p.W2.T + (0.0 if p.b2 is None else p.b2)


def loss(net: TwoLayerNet, p: TwoLayerParams, X, Y) -> float:
    X, Y = check_data(net, X, Y)
    return float(loss_and_grads(net, _t(X), _t(Y), _t(p.W1), _t(p.W2), _t(p.b1), _t(p.b2))[0])


def gradients(net: TwoLayerNet, p: TwoLayerParams, X, Y) -> TwoLayerParams:
    """∇L as a TwoLayerParams of gradient blocks (handy for tests and the drift identity)."""
    X, Y = check_data(net, X, Y)
    _, *gs = loss_and_grads(net, _t(X), _t(Y), _t(p.W1), _t(p.W2), _t(p.b1), _t(p.b2))
    return TwoLayerParams(*(None if g is None else g.numpy() for g in gs))


# --- initialization --------------------------------------------------------------------------


def _layer_bounds(scheme: str, fan_in: int, fan_out: int, a: float | None):
    """(distribution, scale) of one weight matrix; scale is a std (normal) or bound (uniform)."""
    if scheme == "uniform":
        return "uniform", a
    if scheme == "xavier_normal":
        return "normal", math.sqrt(2.0 / (fan_in + fan_out))
    if scheme == "xavier_uniform":
        return "uniform", math.sqrt(6.0 / (fan_in + fan_out))
    if scheme == "kaiming_normal":  # fan_in mode, ReLU gain sqrt(2)
        return "normal", math.sqrt(2.0 / fan_in)
    if scheme == "kaiming_uniform":
        return "uniform", math.sqrt(6.0 / fan_in)
    return "uniform", 1.0 / math.sqrt(fan_in)  # pytorch nn.Linear default (kaiming_uniform, a=√5)


def sample_init(
    net: TwoLayerNet, scheme: str, rng: np.random.Generator, size: tuple = (), a: float | None = None
) -> TwoLayerParams:
    """Draw raw weights, with optional leading batch shape ``size`` (vectorized Monte Carlo).

    Biases: U(−1/√fan_in, 1/√fan_in) for "pytorch", U(−a, a) for "uniform", zero otherwise
    (the usual convention of the Xavier/Kaiming schemes).
    """
    if scheme not in INITS:
        raise EngineInputError(f"initialization {scheme!r} unknown; choose one of {INITS}")
    if scheme == "uniform" and (a is None or not (math.isfinite(a) and a > 0)):
        raise EngineInputError(f"uniform init needs a bound a > 0, got a = {a!r}")
    size = tuple(size)

    def draw(shape, fan_in, fan_out):
        kind, s = _layer_bounds(scheme, fan_in, fan_out, a)
        return rng.normal(0.0, s, size + shape) if kind == "normal" else rng.uniform(-s, s, size + shape)

    W1 = draw((net.l, net.d), net.d, net.l)
    W2 = draw((net.e, net.l), net.l, net.e)
    b1 = b2 = None
    if net.bias:
        if scheme in ("pytorch", "uniform"):
            s1, s2 = (a, a) if scheme == "uniform" else (1 / math.sqrt(net.d), 1 / math.sqrt(net.l))
            b1, b2 = rng.uniform(-s1, s1, size + (net.l,)), rng.uniform(-s2, s2, size + (net.e,))
        else:
            b1, b2 = np.zeros(size + (net.l,)), np.zeros(size + (net.e,))
    return TwoLayerParams(W1, W2, b1, b2)


def init_params(
    net: TwoLayerNet, scheme: str = "kaiming_normal", seed=0, a: float | None = None, signs: Sequence[int] | None = None
) -> TwoLayerParams:
    """One initialization. ``seed`` is an int or a numpy Generator.

    ``signs`` (e = 1 only): set the output weights' signs to these ±1 values (MATH A8).
    To also place each neuron on Q(c_k), use engine.topology.initialization.initial_params.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    p = sample_init(net, scheme, rng, a=a)
    if signs is not None:
        s = np.asarray(signs, dtype=np.float64)
        if net.e != 1 or s.shape != (net.l,) or not np.all(np.abs(s) == 1):
            raise EngineInputError(f"signs {list(signs)!r} must be l={net.l} values of ±1 (e = 1 only)")
        p.W2 = s[None, :] * np.abs(p.W2)
    return p
