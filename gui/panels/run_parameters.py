"""The Training run tab's parameter panel: what it follows (a run folder, or the edge-of-stability
demo trained here) and how a checkpoint clicked on its path opens in the landscape toolkit."""

from __future__ import annotations

from engine.runs.edge_of_stability import EdgeSettings

from ..models.run import TOOLKIT_MODES
from . import choice, group

SOURCES = {"a run folder (File ▸ Open run…)": "folder", "the edge-of-stability demo (trained here)": "demo"}
DEMO = EdgeSettings()

PARAMETERS = [
    choice("source", "Follow", SOURCES, "folder"),
    {"name": "folder", "title": "run folder", "type": "str", "value": "", "tip": "a folder written by ll.Recorder"},
    group(
        "demo",
        "Edge-of-stability demo",
        [
            {"name": "lr", "title": "step size η", "type": "float", "value": DEMO.lr, "limits": (1e-4, 9.9)},
            {"name": "steps", "type": "int", "value": DEMO.steps, "limits": (1, 1_000_000)},
            {
                "name": "sharpness_every",
                "title": "sharpness every",
                "type": "int",
                "value": DEMO.sharpness_every,
                "limits": (1, 100_000),
            },
            {"name": "every", "title": "checkpoint every", "type": "int", "value": DEMO.every, "limits": (1, 100_000)},
        ],
    ),
    group(
        "toolkit",
        "A checkpoint in the toolkit",
        [
            choice(
                "mode",
                "toolkit mode",
                {name: name for name in TOOLKIT_MODES},
                next(iter(TOOLKIT_MODES)),
                tip="what Open in toolkit runs around the checkpoint selected on the PCA path",
            ),
            {"name": "on_click", "title": "a click opens it", "type": "bool", "value": False},
            {
                "name": "data",
                "title": "data",
                "type": "str",
                "value": "",
                "tip": "the data the checkpoint is evaluated on: .npz with X, Y or .csv (the demo brings its own)",
            },
            {"name": "activation", "title": "activation", "type": "str", "value": "", "tip": "an MLP's (relu, tanh…)"},
            {
                "name": "model",
                "title": "model factory",
                "type": "str",
                "value": "",
                "tip": "package.module:factory building the nn.Module, for any other model",
            },
        ],
    ),
]
