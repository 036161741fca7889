"""The invariant-sets tab's parameter panel, and turning its values into engine inputs.

Everything here is bookkeeping: the tree, and handing its values to the engine, whose
constructors refuse bad values with an EngineInputError the window shows verbatim. A training
run's values are read into data, network and weights inside its job (gui.present.training_setup).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import QStandardPaths

from engine.core.errors import EngineInputError
from engine.topology.probability import MapSettings, probability_maps_job
from engine.topology.training import TrainConfig
from engine.topology.two_layer import INITS
from engine.topology.width_sweep import SweepSettings, breast_cancer_sweep

from ..parameter_values import SEED_RANGE
from ..present import resolve
from ..present.training_setup import breast_cancer_source, toy_source, train_config
from . import choice, group

MODES = {
    "training (quadrics, or layers)": "training",
    "Fig. 4: sweep over (l, l₊)": "fig4",
    "Fig. 5: probability (d, l)": "fig5",
}
# Where a sweep runs (engine.sweeps): all at once in this process (the batched program, fastest on
# one machine), or cell by cell through the sweep runner, here or on Ray, with a resumable store.
EXECUTORS = {
    "this process, all at once": "batched",
    "this process, cell by cell": "local",
    "Ray (a local one, or a cluster)": "ray",
}
RAY_ADDRESS_TIP = "empty: start a local Ray with this machine's cores; ray://HOST:PORT or auto: join a cluster"
FOLDER_TIP = "empty: one per settings under the app's cache, so the same sweep finds its finished cells"
# Where the Fig. 4 and Fig. 5 groups run their sweep (read back by ``sweep_place``).
SWEEP_PLACE = [
    {
        "name": "executor",
        "title": "run on",
        "type": "list",
        "value": "batched",
        "limits": EXECUTORS,
        "tip": "cell by cell and Ray keep each finished cell on disk: a cancelled sweep resumes",
    },
    {"name": "address", "title": "Ray address", "type": "str", "value": "", "tip": RAY_ADDRESS_TIP},
    {"name": "folder", "title": "results folder", "type": "str", "value": "", "tip": FOLDER_TIP},
]

PARAMETERS = [
    choice("mode", "View", MODES, "training"),
    group(
        "network",
        "Network",
        [
            choice(
                "source",
                "weights",
                {"new: d, l, e and init below": "fresh", "from a network file": "file"},
                "fresh",
                tip="a file: the app's .npz, a PyTorch state_dict (.pt/.pth) or a .pt2 archive",
            ),
            {
                "name": "file",
                "title": "network file",
                "type": "str",
                "value": "",
                "tip": ".npz, .pt, .pth or .pt2 of Linear → ReLU | LeakyReLU → Linear",
            },
            {"name": "d", "title": "d (inputs)", "type": "int", "value": 2, "limits": (1, 64)},
            {"name": "l", "title": "l (hidden neurons)", "type": "int", "value": 2, "limits": (1, 9)},
            {"name": "e", "title": "e (outputs)", "type": "int", "value": 1, "limits": (1, 8)},
            {
                "name": "activation",
                "type": "list",
                "value": "relu",
                "limits": {"ReLU": "relu", "leaky ReLU": "leaky_relu"},
            },
            {
                "name": "slope",
                "title": "leaky slope γ",
                "type": "float",
                "value": 0.01,
                "limits": (0.0, 1.0),
                "step": 0.01,
            },
            {"name": "bias", "title": "biases", "type": "bool", "value": False},
        ],
    ),
    {
        "name": "data",
        "title": "Data",
        "type": "group",
        "children": [
            {
                "name": "source",
                "type": "list",
                "value": "toy",
                "limits": {
                    "toy −Σ xᵢ on [0, 1]ᵈ": "toy",
                    "breast cancer (d = 30)": "breast_cancer",
                    "file (.npz / .csv)": "file",
                },
            },
            {"name": "points", "title": "toy points", "type": "int", "value": 8000, "limits": (1, 10**6)},
            {"name": "file", "title": "file path", "type": "str", "value": ""},
        ],
    },
    {
        "name": "init",
        "title": "Initialization",
        "type": "group",
        "children": [
            {"name": "scheme", "type": "list", "value": "uniform", "limits": list(INITS)},
            {
                "name": "a",
                "title": "uniform bound a",
                "type": "float",
                "value": 2**0.5,
                "step": 0.1,
                "limits": (1e-6, 1e3),
            },
            {
                "name": "positive_inputs",
                "title": "input weights ≥ 0",
                "type": "bool",
                "value": False,
                "tip": "every neuron alive on the data in [0, 1]ᵈ",
            },
            {
                "name": "c",
                "title": "target c_k",
                "type": "str",
                "value": "-0.1, 0.1",
                "tip": "one value per neuron; blank: as drawn",
            },
            {
                "name": "signs",
                "title": "output signs",
                "type": "str",
                "value": "+, +",
                "tip": "one sign per neuron (e = 1); blank: as drawn",
            },
            {"name": "seed", "type": "int", "value": 0, "limits": SEED_RANGE},
        ],
    },
    {
        "name": "optimizer",
        "title": "Optimizer",
        "type": "group",
        "children": [
            {
                "name": "name",
                "title": "method",
                "type": "list",
                "value": "gd",
                "limits": {
                    "gradient descent": "gd",
                    "exact gradient flow": "flow",
                    "SGD": "sgd",
                    "Adam": "adam",
                    "momentum": "momentum",
                },
            },
            {
                "name": "lr",
                "title": "step size h",
                "type": "float",
                "value": 0.01,
                "step": 0.001,
                "limits": (1e-12, 1e3),
            },
            {"name": "steps", "type": "int", "value": 500, "limits": (1, 10**7)},
            {"name": "stride", "title": "record every", "type": "int", "value": 1, "limits": (1, 10**6)},
            {"name": "batch", "title": "SGD batch size", "type": "int", "value": 64, "limits": (1, 10**6)},
            {
                "name": "weight_decay",
                "title": "weight decay",
                "type": "float",
                "value": 0.0,
                "step": 0.001,
                "limits": (0.0, 1e3),
            },
            {"name": "rtol", "title": "flow tolerance (rtol)", "type": "float", "value": 1e-8, "limits": (1e-13, 1e-2)},
        ],
    },
    {
        "name": "display",
        "title": "Display",
        "type": "group",
        "children": [
            {
                "name": "layout",
                "type": "list",
                "value": "side by side",
                "limits": ["side by side", "one neuron enlarged"],
            },
            {"name": "neuron", "title": "enlarged neuron", "type": "int", "value": 1, "limits": (1, 9)},
            {"name": "log_drift", "title": "log |c_k(t) − c_k(0)|", "type": "bool", "value": False},
        ],
    },
    {
        "name": "fig4",
        "title": "Fig. 4 sweep",
        "type": "group",
        "children": [
            {
                "name": "inits",
                "title": "inits per (l, l₊)",
                "type": "int",
                "value": 4,
                "tip": "the paper uses 100",
                "limits": (1, 1000),
            },
            {"name": "l_max", "title": "largest l", "type": "int", "value": 9, "limits": (2, 9)},
            {"name": "c0", "title": "|c| = c₀", "type": "float", "value": 1.0, "step": 0.1, "limits": (1e-6, 1e3)},
            choice(
                "sign_policy",
                "pathological signs",
                {
                    "shared positive (paper)": "positive",
                    "shared negative": "negative",
                    "random common sign": "random_common",
                    "independent random": "independent",
                },
                "positive",
            ),
            {"name": "lr", "title": "step size h", "type": "float", "value": 0.1, "step": 0.01, "limits": (1e-12, 1e3)},
            {"name": "steps", "type": "int", "value": 1000, "limits": (1, 10**6)},
            {"name": "seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            *SWEEP_PLACE,
        ],
    },
    {
        "name": "fig5",
        "title": "Fig. 5 probability",
        "type": "group",
        "children": [
            {"name": "d_max", "title": "largest d", "type": "int", "value": 30, "limits": (1, 200)},
            {"name": "l_max", "title": "largest l", "type": "int", "value": 30, "limits": (1, 200)},
            {"name": "mc_samples", "title": "Monte Carlo draws", "type": "int", "value": 2000, "limits": (0, 10**6)},
            {
                "name": "mc_stride",
                "title": "Monte Carlo stride",
                "type": "int",
                "value": 5,
                "tip": "checked by Monte Carlo at every n-th (d, l)",
                "limits": (1, 100),
            },
            {"name": "seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            *SWEEP_PLACE,
        ],
    },
]


def create_parameters() -> Parameter:
    return Parameter.create(name="topology", type="group", children=PARAMETERS)


@dataclass(frozen=True)
class NetworkRequest:
    """What a run from a network file needs; the file itself is read in the engine job."""

    path: Path
    activation: str | None  # a state_dict's activation; None where the file names its own
    slope: float | None
    data: Path | None  # a data file, else None (data_source then supplies it, or the .npz does)
    data_source: object  # callable (d, e) -> (X, Y), picklable (it goes to a worker process), or None
    config: TrainConfig

    @property
    def key(self) -> tuple:
        return (str(self.path), self.activation, self.slope, None if self.data is None else str(self.data))


def network_request(p: Parameter, steps: int | None = None) -> NetworkRequest:
    """The network-file run's inputs, checked cheaply here (paths, suffixes, numbers)."""
    from engine.io.two_layer_file import NETWORK_SUFFIXES

    path = resolve(p["network", "file"], "network file")
    if path.suffix.lower() not in NETWORK_SUFFIXES:
        raise EngineInputError(f"network file {path.name!r}: expected one of {', '.join(NETWORK_SUFFIXES)}")
    state_dict = path.suffix.lower() in (".pt", ".pth")
    activation = p["network", "activation"] if state_dict else None
    slope = p["network", "slope"] if state_dict and activation == "leaky_relu" else None
    source, seed, data, data_source = p["data", "source"], p["init", "seed"], None, None
    if source == "file":
        if p["data", "file"].strip() or path.suffix.lower() != ".npz":  # an .npz may carry its data
            data = resolve(p["data", "file"], "data file")
    elif source == "toy":
        data_source = partial(toy_source, p["data", "points"], seed)
    else:
        data_source = partial(breast_cancer_source, seed)
    return NetworkRequest(path, activation, slope, data, data_source, train_config(p, steps))


def fig4_settings(p: Parameter, steps: int | None = None) -> SweepSettings:
    """The Fig. 4 group's values as the engine's sweep settings (l = 2..largest l)."""
    return SweepSettings(
        ls=range(2, p["l_max"] + 1),
        n_inits=p["inits"],
        steps=steps or p["steps"],
        lr=p["lr"],
        c0=p["c0"],
        sign_policy=p["sign_policy"],
        seed=p["seed"],
    )


def sweep_place(p: Parameter) -> dict:
    """The Fig. 4 or Fig. 5 group's executor, Ray address and results folder (engine.sweeps.window)."""
    return {"executor": p["executor"], "address": p["address"].strip() or None, "folder": p["folder"].strip() or None}


def fig5_settings(p: Parameter) -> MapSettings:
    return MapSettings(p["d_max"], p["l_max"], p["mc_samples"], p["mc_stride"], p["seed"])


def show_fields_of(parameters) -> None:
    """Only the groups and fields of the chosen view (and network source) are shown."""
    mode = parameters["mode"]
    training = mode == "training"
    for name in ("network", "data", "init", "optimizer", "display"):
        parameters.child(name).setOpts(visible=training)
    fresh = parameters["network", "source"] == "fresh"
    for name in ("d", "l", "e", "bias"):
        parameters.child("network", name).setOpts(visible=training and fresh)
    parameters.child("network", "file").setOpts(visible=training and not fresh)
    parameters.child("init").setOpts(visible=training and fresh)
    parameters.child("fig4").setOpts(visible=mode == "fig4")
    parameters.child("fig5").setOpts(visible=mode == "fig5")


def sweep_job(parameters: Parameter, steps: int | None):
    """Fig. 4 or 5, as the tree asks: the batched program in this process, or the sweep runner
    (cells kept in a folder under the app's cache)."""
    mode = parameters["mode"]
    group = parameters.child(mode)
    place = sweep_place(group)
    settings = fig4_settings(group, steps) if mode == "fig4" else fig5_settings(group)
    if place["executor"] == "batched":
        return breast_cancer_sweep(settings) if mode == "fig4" else probability_maps_job(settings)
    from engine.sweeps import window as sweeps

    root = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)) / "sweeps"
    job = sweeps.fig4_job if mode == "fig4" else sweeps.fig5_job
    return job(settings, root, place["folder"], place["executor"], place["address"])
