"""The minima tab's parameter tree (gui/workspaces/minima.py): the experiment, the construction
and its splits, the slices (a, c), the degenerate path (b) and the 2-D slice, with their limits;
and the engine's settings read from it.

Kept apart from the tab's layout, as the topology tab's tree is (panels/topology_parameters.py).
"""

from __future__ import annotations

from engine.minima.pipeline import Figure3Settings, SliceSettings

from ..parameter_values import SEED_RANGE, plane_grid_fields
from ..present.minima import parse_schedule, parse_widths
from . import choice

LAMBDA_RANGE = (-1e3, 1e3)  # λ far outside [0, 1] only scales one pair's weights towards overflow

PARAMETERS = [
    {
        "name": "experiment",
        "title": "Experiment",
        "type": "group",
        "children": [
            {
                "name": "kind",
                "title": "show",
                "type": "list",
                "value": "deep",
                "limits": {
                    "deep construction (Fig. 3)": "deep",
                    "shallow Fukumizu–Amari": "shallow",
                    "minima at infinity": "infinity",
                    "non-increasing path": "path",
                },
            },
            {"name": "seed", "title": "data seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            {"name": "samples", "title": "samples N", "type": "int", "value": 20, "limits": (1, 10000)},
        ],
    },
    {
        "name": "construction",
        "title": "Construction",
        "type": "group",
        "children": [
            {"name": "widths", "title": "small network", "type": "str", "value": "2, 1, 1, 1"},
            {"name": "activation", "type": "list", "value": "sigmoid", "limits": ["sigmoid", "tanh"]},
            {"name": "bias", "title": "biases", "type": "bool", "value": False},
            {
                "name": "schedule",
                "title": "splits",
                "type": "str",
                "value": "1:20, 2:20",
                "tip": "layer:count pairs: split that many neurons of each layer",
            },
            {
                "name": "lam",
                "title": "split λ (B > 0)",
                "type": "float",
                "value": 0.5,
                "step": 0.05,
                "limits": LAMBDA_RANGE,
            },
            {
                "name": "lam_outside",
                "title": "split λ (B < 0)",
                "type": "float",
                "value": -1.0,
                "step": 0.05,
                "limits": LAMBDA_RANGE,
            },
            {"name": "restarts", "title": "max restarts", "type": "int", "value": 100, "limits": (1, 10000)},
            {
                "name": "saddle_lam",
                "title": "saddle λ (c, d)",
                "type": "float",
                "value": 2.0,
                "step": 0.1,
                "limits": LAMBDA_RANGE,
            },
        ],
    },
    {
        "name": "slices",
        "title": "Slices (a, c)",
        "type": "group",
        "children": [
            {"name": "K", "title": "K directions", "type": "int", "value": 500, "limits": (1, 100000)},
            {"name": "P", "title": "P points", "type": "int", "value": 101, "limits": (3, 2001)},
            {"name": "T", "title": "t range ±T", "type": "float", "value": 1.0, "step": 0.1, "limits": (1e-6, 1e3)},
            choice(
                "normalize",
                "directions",
                {
                    "unit norm": "unit",
                    "per neuron": "neuron",
                    "filter-normalised (Li et al.)": "filter",
                    "layer-normalised (Li et al.)": "layer",
                },
                "unit",
                tip="how each random direction is scaled (engine.landscape.directions); filter and layer "
                "also give the 2-D slice Li et al.'s random plane",
            ),
            {
                "name": "ignore_biases",
                "title": "ignore biases",
                "type": "bool",
                "value": False,
                "tip": "directions with no bias components (Li et al.'s --xignore biasbn)",
            },
            {"name": "seed", "title": "direction seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            {
                "name": "family",
                "title": "directions over",
                "type": "list",
                "value": "all",
                "limits": {
                    "all parameters": "all",
                    "one layer's block": "layer",
                    "one neuron's incoming weights": "neuron",
                    "the split pair's incoming weights": "pair",
                    "k lowest Hessian eigenvectors": "eigen",
                },
            },
            {"name": "family_layer", "title": "layer", "type": "int", "value": 1, "limits": (1, 100)},
            {
                "name": "family_neuron",
                "title": "neuron",
                "type": "int",
                "value": 1,
                "limits": (1, 100000),
                "tip": "counted from 1 within the layer, as everywhere in the app",
            },
            {"name": "family_k", "title": "k eigenvectors", "type": "int", "value": 5, "limits": (1, 1000)},
        ],
    },
    {
        "name": "path",
        "title": "Degenerate path (b)",
        "type": "group",
        "children": [
            {
                "name": "lam_from",
                "title": "λ from",
                "type": "float",
                "value": -0.5,
                "step": 0.1,
                "limits": LAMBDA_RANGE,
            },
            {"name": "lam_to", "title": "λ to", "type": "float", "value": 2.0, "step": 0.1, "limits": LAMBDA_RANGE},
            {"name": "points", "type": "int", "value": 26, "limits": (2, 1000)},
        ],
    },
    {
        "name": "plane",
        "title": "2-D slice",
        "type": "group",
        "children": plane_grid_fields(),
    },
]


def slice_settings(p) -> SliceSettings:
    """The slices (a, c) the tree ``p`` asks for."""
    return SliceSettings(
        p["slices", "K"],
        p["slices", "P"],
        p["slices", "T"],
        p["slices", "normalize"],
        p["slices", "seed"],
        p["slices", "family"],
        p["slices", "family_layer"],
        p["slices", "family_neuron"] - 1,
        p["slices", "family_k"],
        "biases" if p["slices", "ignore_biases"] else "none",
    )


def plane_settings(p) -> tuple:
    """The 2-D slice's (points, extent)."""
    return (p["plane", "points"], p["plane", "extent"])


def path_range(p) -> tuple:
    """The degenerate path's (λ from, λ to, points)."""
    return (p["path", "lam_from"], p["path", "lam_to"], p["path", "points"])


def figure3_settings(p) -> Figure3Settings:
    """The whole Fig. 3 build the tree ``p`` asks for; EngineInputError on a malformed field."""
    return Figure3Settings(
        kind="shallow" if p["experiment", "kind"] == "shallow" else "deep",
        seed=p["experiment", "seed"],
        widths=parse_widths(p["construction", "widths"]),
        activation=p["construction", "activation"],
        bias=p["construction", "bias"],
        schedule=parse_schedule(p["construction", "schedule"]),
        lam=p["construction", "lam"],
        lam_outside=p["construction", "lam_outside"],
        max_restarts=p["construction", "restarts"],
        n_samples=p["experiment", "samples"],
        saddle_lam=p["construction", "saddle_lam"],
        slices=slice_settings(p),
        path=path_range(p),
        plane=plane_settings(p),
    )
