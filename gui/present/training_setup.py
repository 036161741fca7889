"""Paper A's training request: the panel's values read into a training setup, inside the job.

The panel's values are a plain snapshot (``Values``, taken by ``values_of`` on the GUI thread);
``training_setup(values, steps)`` turns them into the network, its data and its initial weights
(a target c_k per neuron rescales its weights onto Q(c_k), MATH A6), and ``check_request``
refuses before the job what can be refused without loading a data set. For a network read from
a file, ``loaded_setup`` is its setup and ``loaded_text`` the invariants panel's lines about it.
No Qt, no pyqtgraph.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import resources
from engine.core.datasets import breast_cancer, load_xy_file, toy_dataset
from engine.core.errors import EngineInputError
from engine.topology.initialization import initial_params
from engine.topology.obstruction import LoadedNetwork
from engine.topology.training import TrainConfig
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams

C_LIMIT = 1e6  # |c_k|: far beyond any useful scene, far below float overflow


class Values(dict):
    """The panel's values as plain nested dicts, read on the GUI thread (``values_of``) and used on
    the worker, indexed like a pyqtgraph Parameter: ``values["network", "d"]``."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            return dict.__getitem__(self, key)
        value = self
        for part in key:
            value = dict.__getitem__(value, part)
        return value


def values_of(parameter) -> Values:
    """A snapshot of a parameter tree's values (groups become nested ``Values``)."""
    return Values({c.name(): values_of(c) if c.type() == "group" else c.value() for c in parameter.children()})


def parse_floats(text: str, what: str, limit: float = C_LIMIT) -> list[float]:
    try:
        values = [float(part) for part in text.replace("−", "-").split(",") if part.strip()]
    except ValueError:
        raise EngineInputError(f"{what}: {text[:60]!r} is not a comma-separated list of numbers") from None
    if not all(abs(v) <= limit for v in values):  # also refuses nan and inf
        raise EngineInputError(f"{what}: every value must be a finite number with |value| ≤ {limit:g}")
    return values


def parse_signs(text: str) -> list[int]:
    words = [w.strip() for w in text.replace("−", "-").split(",") if w.strip()]
    table = {"+": 1, "+1": 1, "1": 1, "-": -1, "-1": -1}
    if any(w not in table for w in words):
        raise EngineInputError(f"output signs: {text!r} must be a comma-separated list of + and −")
    return [table[w] for w in words]


@dataclass
class TrainingSetup:
    """What one training run needs, plus the raw data for the function heatmaps."""

    net: TwoLayerNet
    params: TwoLayerParams
    X: np.ndarray
    Y: np.ndarray
    config: TrainConfig


def toy_source(points: int, seed: int, d: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """A network file's data from the toy target, for its d (``partial(toy_source, points,
    seed)`` is the ``data_source`` a loaded network's job calls; module-level, so that it
    reaches a worker process, which a lambda cannot)."""
    return toy_dataset(n=points, seed=seed, d=d)


def breast_cancer_source(seed: int, d: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """A network file's data from the breast-cancer training split (see ``toy_source``)."""
    split = breast_cancer(seed=seed)
    return split.X_train, split.Y_train


def _data(p, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    source = p["data", "source"]
    if source == "toy":
        # The toy target takes the network's d, so every d runs without a data file.
        return (*toy_source(p["data", "points"], seed, p["network", "d"], p["network", "e"]), "the toy target")
    if source == "breast_cancer":
        return (*breast_cancer_source(seed, p["network", "d"], p["network", "e"]), "breast cancer")
    name = p["data", "file"].strip()
    if not name:
        raise EngineInputError("data source is 'file' but no file path is given")
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        path = resources.path(name)  # presets name files shipped in resources/
    X, Y = load_xy_file(path)
    return X, Y, f"file {path.name!r}"


def train_config(p, steps: int | None = None, seed: int | None = None) -> TrainConfig:
    """The Optimizer group's values (``p``: a Parameter tree or its ``Values``)."""
    o = lambda name: p["optimizer", name]  # noqa: E731
    return TrainConfig(
        optimizer=o("name"),
        lr=o("lr"),
        steps=steps or o("steps"),
        stride=o("stride"),
        batch_size=o("batch") if o("name") == "sgd" else None,
        weight_decay=o("weight_decay"),
        seed=p["init", "seed"] if seed is None else seed,
        rtol=o("rtol"),
        atol=o("rtol") * 1e-2,
    )  # atol: weights are O(1)


def training_setup(p, steps: int | None = None, params: TwoLayerParams | None = None) -> TrainingSetup:
    """The data set, the network and its initial weights: run in the job (it loads data).
    ``params``: initial weights of its own (a session's, its trajectory's first row), so the init
    fields are not read: they may hold text that Run refuses (a session saved then could not be
    opened again)."""
    X, Y, what = _data(p, p["init", "seed"])
    _check_widths(p, what, X.shape[1], Y.shape[1])
    net = _network(p)
    return TrainingSetup(net, _initial_weights(p, net) if params is None else params, X, Y, train_config(p, steps))


def check_request(p) -> None:
    """Refuse now what can be refused without loading a data set: the typed fields, the network,
    its initial weights (a few numbers, drawn again in the job) and a shipped data set's width."""
    known = {"toy": ("the toy target", p["network", "d"], 1), "breast_cancer": ("breast cancer", 30, 1)}
    if p["data", "source"] in known:
        _check_widths(p, *known[p["data", "source"]])
    _initial_weights(p, _network(p))
    train_config(p)


def _check_widths(p, what: str, d_data: int, e_data: int) -> None:
    d, e = p["network", "d"], p["network", "e"]
    if d_data != d or e_data != e:
        raise EngineInputError(
            f"{what} has d = {d_data} inputs and e = {e_data} outputs; "
            f"the network has d = {d}, e = {e} — set Network d and e to match"
        )


def _network(p) -> TwoLayerNet:
    return TwoLayerNet(
        d=p["network", "d"],
        l=p["network", "l"],
        e=p["network", "e"],
        activation=p["network", "activation"],
        leaky_slope=p["network", "slope"],
        bias=p["network", "bias"],
        loss="bce" if p["data", "source"] == "breast_cancer" else "mse",
    )


def _initial_weights(p, net: TwoLayerNet) -> TwoLayerParams:
    c = parse_floats(p["init", "c"], "target c_k") or None
    signs = parse_signs(p["init", "signs"]) or None
    if signs is not None and net.e != 1:
        raise EngineInputError(f"output signs apply only when e = 1 (here e = {net.e}); leave the field blank")
    a = p["init", "a"] if p["init", "scheme"] == "uniform" else None
    return initial_params(
        net,
        p["init", "scheme"],
        seed=p["init", "seed"],
        a=a,
        c=c,
        signs=signs,
        positive_inputs=p["init", "positive_inputs"],
    )


def loaded_setup(loaded: LoadedNetwork, config: TrainConfig) -> TrainingSetup:
    """A loaded network's views: its own net and weights (a bias on one layer only: an untrained twin)."""
    n = loaded.network
    slope = n.slope if n.activation == "leaky_relu" else 0.01
    net = loaded.net or TwoLayerNet(n.d, n.l, n.e, n.activation, slope, n.b1 is not None)
    params = loaded.params or TwoLayerParams(n.W1, n.W2, n.b1, n.b2)
    return TrainingSetup(net, params, n.X, n.Y, config)


def loaded_text(loaded: LoadedNetwork) -> str:
    """The invariants panel's lines about a loaded file: what it is, and whether its fit is obstructed."""
    r, name = loaded.report, Path(loaded.network.path).name
    act = "ReLU" if r["activation"] == "relu" else f"leaky ReLU γ = {r['slope']:g}"
    lines = [f"<b>{name}</b>: {r['d']}—{r['l']}—{r['e']} {act}" + (f", loss {r['loss']:.3g}" if "loss" in r else "")]
    fit = r.get("fit")
    if fit is not None:
        verdict = "<b>yes</b>" if fit["better_fit_needs_flip"] else "<b>no</b>"
        lines.append(
            f"better fit needs a locked flip: {verdict} "
            f"(signs kept {fit['kept_loss']:.2g}, free {fit['free_loss']:.2g})"
        )
    if loaded.net is None:
        lines.append("<i>a bias on one layer only: training needs both or neither</i>")
    return "<br>".join(lines)
