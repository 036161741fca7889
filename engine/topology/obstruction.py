"""Paper A on your own network: the invariants of a loaded two-layer net, which neurons are locked,
whether a better fit needs a locked neuron to flip, and training on from the loaded weights.

Locked neurons (MATH A3, A5). Neuron k's conserved ``c_k = ‖W1[k]‖² (+ b1[k]²) − ‖W2[:, k]‖²``
puts it on ``Q(c_k)``. Only a neuron whose sphere factor is S⁰ has a sign it can never change
along a path in H(c):

- e = 1 and c_k < 0: ``Q(c_k) ≅ R^d × S⁰`` (R^{d+1} × S⁰ with a hidden bias): ``v_k² ≥ −c_k > 0``,
  so the output weight's sign is fixed. These are the ``locked`` neurons.
- d = 1, no hidden bias, c_k > 0: ``Q(c_k) ≅ R^e × S⁰``: ``w_k² ≥ c_k``, the *input* weight's sign is
  fixed (``locked_inputs``).

With e ≥ 2 a c_k < 0 neuron's output vector lives on ``R^d × S^{e−1}``, connected, so no output
sign is locked; c_k = 0 is a cone, contractible. ``component`` is the label s(θ) of MATH A5 (the
fixed signs; 0 for free neurons) and ``effective_component`` its class among the 1 + l₋ of
Theorem 2 (e = 1, d > 1), numbered from 1.

The sign-kept fit (e = 1, ``sign_kept_fit``). The hidden layer is held at its loaded input
directions: with features ``Φ_k(x) = σ(W1[k]·x + b1[k])`` (plus a constant when the output layer
has a bias), the network realizes ``Σ_k a_k Φ_k(x) (+ b2)`` with ``a_k = v_k · (scale of w_k)``.
Inside the component, a locked neuron keeps ``sign(a_k) = s_k`` but, by rescaling (MATH A6 keeps
the direction), any magnitude ``|a_k| ≥ 0`` is reachable on its sheet; a free neuron's a_k is any
real. So the best fit that keeps every locked sign is the bounded linear least-squares problem
``min ‖Φ a − y‖²`` with ``s_k a_k ≥ 0`` for locked k (scipy's ``lsq_linear``, method "bvls", an
exact active-set solver), and the best fit with all signs free is the unconstrained one
(``numpy.linalg.lstsq``). Both are mean squared errors over the samples, the app's MSE. A better
fit needs a flip when the first exceeds the second; ``held_at_zero`` lists the locked neurons the sign-kept fit holds at
a_k = 0, pressed against the barrier v = 0 they cannot cross.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_optimize
from engine.core.progress import Job, Progress, subjob
from engine.core.runtime import configure_torch_threads
from engine.io.two_layer_file import TwoLayer, check_data_width, load_two_layer
from engine.topology import invariants as inv
from engine.topology.training import TrainConfig, Trajectory, train
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams

FLIP_RTOL = 1e-7  # kept − free must exceed this × mean(y²) (and 1e-12) to count as a better fit


def locked(W1, W2, b1=None) -> list[int]:
    """1-based neurons whose output sign can never change under gradient flow: e = 1, c_k < 0."""
    W2 = np.asarray(W2)
    if W2.shape[0] != 1:
        return []
    return [int(k) + 1 for k in np.nonzero(inv.balances(W1, W2, b1) < 0)[0]]


def locked_inputs(W1, W2, b1=None) -> list[int]:
    """1-based neurons whose input-weight sign is fixed: d = 1, no hidden bias, c_k > 0."""
    W1 = np.asarray(W1)
    if W1.shape[1] != 1 or b1 is not None:
        return []
    return [int(k) + 1 for k in np.nonzero(inv.balances(W1, W2, b1) > 0)[0]]


def invariants_of(net: TwoLayer) -> dict:
    """The keys ``invariant-set`` prints, computed from the weights as loaded, plus what is locked."""
    c = inv.balances(net.W1, net.W2, net.b1)
    bias = net.b1 is not None
    label = inv.component_label(net.W1, net.W2, net.b1)
    summary = inv.invariant_set_summary(net.d, net.e, c, bias)
    eff = summary["effective_components"]
    return {
        "c": [float(x) for x in c],
        **summary,
        "component": [int(s) for s in label],
        "effective_component": None if eff is None else inv.effective_component_index(label) + 1,
        "locked": locked(net.W1, net.W2, net.b1),
        "locked_inputs": locked_inputs(net.W1, net.W2, net.b1),
    }


def features(net: TwoLayer, X) -> np.ndarray:
    """Φ (N, l): every hidden neuron's output σ(W1 x + b1) on X."""
    Z = np.asarray(X, dtype=np.float64) @ net.W1.T + (0.0 if net.b1 is None else net.b1)
    return np.where(Z > 0, Z, net.gamma * Z)


def mse(net: TwoLayer, X, Y) -> float:
    R = net.forward(X) - Y
    return float(np.mean(R * R))


def sign_kept_fit(net: TwoLayer, X, Y) -> dict | None:
    """For e = 1: the least-squares fits of the output layer on the loaded hidden features, with
    every locked neuron's output sign kept and with all signs free (module docstring). None for
    e ≥ 2, where no output sign is locked."""
    if net.e != 1:
        return None
    y = np.asarray(Y, dtype=np.float64)[:, 0]
    Phi = features(net, X)
    A = Phi if net.b2 is None else np.column_stack([Phi, np.ones(len(Phi))])
    label = inv.component_label(net.W1, net.W2, net.b1)
    lock = locked(net.W1, net.W2, net.b1)
    lb, ub = np.full(A.shape[1], -np.inf), np.full(A.shape[1], np.inf)
    for k in lock:
        (lb if label[k - 1] > 0 else ub)[k - 1] = 0.0
    free = np.linalg.lstsq(A, y, rcond=None)[0]
    free_loss = float(np.mean((A @ free - y) ** 2))
    if lock:
        kept = scipy_optimize.lsq_linear(A, y, bounds=(lb, ub), method="bvls", tol=1e-12).x
        kept_loss = float(np.mean((A @ kept - y) ** 2))
    else:
        kept, kept_loss = free, free_loss
    kept_loss = max(kept_loss, free_loss)  # the free problem is the relaxation: never above kept
    scale = float(np.max(np.abs(kept), initial=0.0))
    held = [k for k in lock if abs(kept[k - 1]) <= 1e-9 * max(scale, 1e-300)]
    tol = FLIP_RTOL * float(np.mean(y * y)) + 1e-12
    return {
        "kept_loss": kept_loss,
        "free_loss": free_loss,
        "better_fit_needs_flip": bool(kept_loss - free_loss > tol),
        "held_at_zero": held,
        "how": "output layer least squares on the loaded hidden features; locked signs as bounds",
    }


def report(net: TwoLayer) -> dict:
    """Everything ``main.py obstruction`` prints without --train."""
    out = {
        "file": net.path,
        "format": net.kind,
        "d": net.d,
        "l": net.l,
        "e": net.e,
        "activation": net.activation,
        "slope": net.gamma,
        "hidden_bias": net.b1 is not None,
        "output_bias": net.b2 is not None,
        **invariants_of(net),
    }
    if net.X is not None:
        fit = sign_kept_fit(net, net.X, net.Y)
        out |= {
            "samples": int(net.X.shape[0]),
            "loss": mse(net, net.X, net.Y),
            "fit": fit,
            "better_fit_needs_flip": False if fit is None else fit["better_fit_needs_flip"],
        }
    return out


def training_net(net: TwoLayer) -> tuple[TwoLayerNet, TwoLayerParams]:
    """The engine's trainable network of exactly these weights (MSE loss)."""
    if (net.b1 is None) != (net.b2 is None):
        which = "a hidden-layer bias but no output bias" if net.b1 is not None else "an output bias but no hidden bias"
        raise EngineInputError(
            f"{net.path}: it has {which}; training here needs biases on both Linear layers or on neither "
            "(the report without training covers it)"
        )
    slope = net.slope if net.activation == "leaky_relu" else 0.01
    shallow = TwoLayerNet(net.d, net.l, net.e, activation=net.activation, leaky_slope=slope, bias=net.b1 is not None)
    return shallow, TwoLayerParams(net.W1.copy(), net.W2.copy(), net.b1, net.b2).copy()


@dataclass(frozen=True, eq=False)
class LoadedNetwork:
    """A job's partial or result once the file is read: the network, its report, and the
    engine's trainable twin (None when its biases cannot be trained here)."""

    network: TwoLayer
    report: dict
    net: TwoLayerNet | None
    params: TwoLayerParams | None
    message: str = ""


def _loaded(network: TwoLayer) -> LoadedNetwork:
    try:
        net, params = training_net(network)
    except EngineInputError:
        net = params = None
    rep = report(network)
    lock = rep["locked"]
    what = f"locked neuron(s) {', '.join(map(str, lock))}" if lock else "no locked neuron"
    message = f"loaded {network.kind} {network.d}—{network.l}—{network.e} {network.activation} net: {what}"
    return LoadedNetwork(network, rep, net, params, message)


DataSource = Callable[[int, int], tuple[np.ndarray, np.ndarray]]  # (d, e) -> (X, Y)


def load_two_layer_job(
    path, activation=None, slope=None, data=None, data_source: DataSource | None = None, max_l: int | None = None
) -> Job[LoadedNetwork]:
    """Job: read and check the file, compute its invariants (and fits, with data).

    ``data_source(d, e)`` supplies data when ``data`` names no file and the file carries none
    (the GUI's toy target for this d, say); ``max_l``: refuse wider networks (a view per neuron)."""
    yield Progress(0.0, f"loading {path}")
    configure_torch_threads()
    network = load_two_layer(path, activation, slope, data)
    if max_l is not None and network.l > max_l:
        raise EngineInputError(
            f"{path}: {network.l} hidden neurons; this view draws at most {max_l} (main.py obstruction takes any)"
        )
    if network.X is None and data_source is not None:
        X, Y = check_data_width("the chosen data", network.d, network.e, *data_source(network.d, network.e))
        network = dataclasses.replace(network, X=X, Y=Y)
    return _loaded(network)


@dataclass(frozen=True, eq=False)
class NetworkRun:
    """A partial or final result of training on a loaded network: the network and the run so far
    (every partial carries both, since a live view may skip partials)."""

    loaded: LoadedNetwork
    trajectory: Trajectory

    @property
    def message(self) -> str:
        return self.trajectory.message


def continue_training_job(
    path,
    activation,
    slope,
    data,
    config: TrainConfig,
    data_source: DataSource | None = None,
    max_l: int | None = None,
) -> Job[NetworkRun]:
    """Job for the GUI: load (yielding the LoadedNetwork as a partial), then train on from the
    loaded weights with ``config``; partials and the result are NetworkRuns."""
    loaded = yield from load_two_layer_job(path, activation, slope, data, data_source, max_l)
    yield Progress(0.0, loaded.message, loaded)
    network = loaded.network
    if network.X is None:
        raise EngineInputError(f"{path}: training needs data: a data file, or X and Y in the network's .npz")
    net, params = training_net(network)
    wrap = lambda traj: NetworkRun(loaded, traj)  # noqa: E731
    traj = yield from subjob(train(net, params, network.X, network.Y, config), 0.0, 1.0, partial=wrap)
    return wrap(traj)


def obstruction_job(path, activation=None, slope=None, data=None, config: TrainConfig | None = None) -> Job[dict]:
    """Job: what ``main.py obstruction`` prints, training on when ``config`` is given."""
    loaded = yield from load_two_layer_job(path, activation, slope, data)
    out = dict(loaded.report)
    if config is None:
        return out
    network = loaded.network
    if network.X is None:
        raise EngineInputError(f"{path}: --train needs data: --data FILE, or X and Y in the network's .npz")
    net, params = training_net(network)
    traj = yield from subjob(train(net, params, network.X, network.Y, config), 0.0, 1.0, "training: ")
    return out | training_summary(traj, config)


def training_summary(traj: Trajectory, config: TrainConfig) -> dict:
    """c at the end, the largest relative drift max_t,k |c_k(t) − c_k(0)| / max(1, |c_k(0)|), the loss
    curve's ends, and whether the component label s(θ) stayed what it was at every recorded row."""
    c0 = traj.c[0]
    drift = np.abs(traj.c - c0) / np.maximum(1.0, np.abs(c0))
    labels = inv.component_label(traj.W1, traj.W2, traj.b1)
    events = inv.sign_flip_events(traj.step, traj.c, traj.sign_flips)
    return {
        "optimizer": config.optimizer,
        "lr": config.lr,
        "steps": config.steps,
        "c_end": [float(x) for x in traj.c[-1]],
        "max_abs_dc": float(drift.max()),
        "loss_start": float(traj.loss[0]),
        "loss_end": float(traj.loss[-1]),
        "stayed_in_component": bool(np.all(labels == labels[0])),
        "component_end": [int(s) for s in labels[-1]],
        "sign_flips": [[e.step, e.neuron + 1] for e in events],
        "barrier_jumps": [[e.step, e.neuron + 1] for e in events if e.jumped],
        "diverged_at": traj.diverged_at,
    }
