"""The landscape toolkit tab's parameter panel: the tree, and its values as the engine's settings.

Bookkeeping only: the engine's ToolkitSettings refuses bad values with an EngineInputError the
window shows verbatim.
"""

from __future__ import annotations

from engine.landscape.dips import DIP_DIRECTIONS, MAX_DIP_DIRECTIONS
from engine.landscape.toolkit import ToolkitSettings

from ..parameter_values import SEED_RANGE, plane_grid_fields
from ..present.landscape import BASIN_SHARE
from . import choice, group

MODES = {
    "a plane around θ": "plane",
    "training paths on their PCA plane (optimizers, or a model's checkpoints)": "pca",
    "interpolation to a second network": "interpolation",
    "Hessian spectral density (SLQ)": "density",
}
NORMALIZATIONS = {
    "per filter (Li et al.)": "filter",
    "per layer": "layer",
    "unit norm": "random",
    "the Hessian's top two eigenvectors (a PyTorch model)": "hessian",
    "extreme curvature: bottom and top eigenvectors, beside a random plane": "hessian-extremes",
}
FILE_FIELDS = ("source", "path", "activation", "data", "model")  # the network group's fields a load sets

PARAMETERS = [
    choice("mode", "Show", MODES, "plane"),
    group(
        "network",
        "Network",
        [
            choice("source", "from", {"the minima tab's network": "minima", "a file": "file"}, "minima"),
            {"name": "path", "title": "file", "type": "str", "value": "", "tip": ".npz, .pt/.pth state_dict or .pt2"},
            {"name": "activation", "title": "activation", "type": "str", "value": "", "tip": "for an MLP's state_dict"},
            {
                "name": "model",
                "title": "model factory",
                "type": "str",
                "value": "",
                "tip": "package.module:factory building the nn.Module a state_dict is for (your own code, imported)",
            },
            {
                "name": "data",
                "title": "data",
                "type": "str",
                "value": "",
                "tip": ".npz with X, Y or .csv (last column y)",
            },
            {
                "name": "loss",
                "title": "loss",
                "type": "list",
                "value": "auto",
                # Short enough for the value column at 1600×960 ("summed squared error (papers" was
                # cut there); the tip says what each is.
                "limits": {
                    "auto (by the data)": "auto",
                    "summed squares (papers)": "sum",
                    "mean squared error": "mean",
                    "cross-entropy": "cross-entropy",
                },
                "tip": "auto: cross-entropy when the data's last column holds integer class labels, else "
                "the summed squared error; summed squares is the papers' loss, L = Σ (f(x) − y)²",
            },
        ],
    ),
    {
        "name": "plane",
        "title": "Plane",
        "type": "group",
        "children": [
            *plane_grid_fields(),
            {"name": "directions", "type": "list", "value": "filter", "limits": NORMALIZATIONS},
            {"name": "ignore_biases", "title": "ignore biases", "type": "bool", "value": False},
            {"name": "seed", "title": "direction seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            {
                "name": "dip_directions",
                "title": "dip directions",
                "type": "int",
                "value": DIP_DIRECTIONS,
                "limits": (1, MAX_DIP_DIRECTIONS),
                "tip": "extreme curvature: the random filter directions whose dips below L(θ) are counted",
            },
            {
                "name": "basin_share",
                "title": "basin threshold",
                "type": "float",
                "value": BASIN_SHARE,
                "limits": (0.0, 1.0),
                "step": 0.01,
                "tip": "a share of the plane's loss range: a minimum whose persistence (barrier to a lower "
                "basin) is at most this share of it is merged into the basin it drains to; redraws without a job",
            },
        ],
    },
    {
        "name": "training",
        "title": "PCA paths",
        "type": "group",
        "children": [
            {"name": "steps", "type": "int", "value": 200, "limits": (2, 100_000)},
            {"name": "optimizers", "type": "str", "value": "gd, adam", "tip": "comma-separated: gd, sgd, adam"},
            {"name": "lr", "title": "step size (0: default)", "type": "float", "value": 0.0, "limits": (0.0, 1e3)},
            {
                "name": "checkpoints",
                "type": "str",
                "value": "",
                "tip": "a PyTorch model's training state_dicts, oldest first, separated by ';' (at least 3)",
            },
        ],
    },
    {
        "name": "interpolation",
        "title": "Interpolation",
        "type": "group",
        "children": [
            {
                "name": "second",
                "title": "second network",
                "type": "str",
                "value": "",
                "tip": "a file of the same architecture; empty: the end of the minima tab's non-increasing path",
            },
            {"name": "points", "type": "int", "value": 201, "limits": (2, 100_000)},
        ],
    },
    {
        "name": "density",
        "title": "Spectral density",
        "type": "group",
        "children": [
            {"name": "probes", "type": "int", "value": 10, "limits": (1, 1000)},
            {"name": "steps", "title": "Lanczos steps", "type": "int", "value": 80, "limits": (1, 2000)},
        ],
    },
]


def settings(p) -> ToolkitSettings:
    """The panel's values (a Parameter made from PARAMETERS) as the toolkit job's settings."""
    optimizers = tuple(o.strip() for o in p["training", "optimizers"].split(",") if o.strip())
    return ToolkitSettings(
        mode=p["mode"],
        kind=p["network", "loss"],
        points=p["plane", "points"],
        extent=p["plane", "extent"],
        normalization=p["plane", "directions"],
        ignore="biases" if p["plane", "ignore_biases"] else "none",
        seed=p["plane", "seed"],
        dip_directions=p["plane", "dip_directions"],
        steps=p["training", "steps"],
        optimizers=optimizers,
        lr=p["training", "lr"] or None,
        interp_points=p["interpolation", "points"],
        probes=p["density", "probes"],
        lanczos_steps=p["density", "steps"],
    )
