"""Invariant hyperquadrics: train a shallow ReLU network and watch each neuron on Q(c_k)."""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from engine.datasets import toy_dataset
from engine.errors import EngineInputError
from engine.shallow import ShallowNet, init_params
from engine.training import TrainConfig, Trajectory, train

from ..views.quadric_view import QuadricView
from ..workspace import Workspace

PARAMETERS = [
    {"name": "network", "title": "Network", "type": "group", "children": [
        {"name": "d", "type": "int", "value": 2, "limits": (1, 64)},
        {"name": "l", "title": "l (hidden)", "type": "int", "value": 2, "limits": (1, 9)},
        {"name": "e", "type": "int", "value": 1, "limits": (1, 8)},
    ]},
    {"name": "init", "title": "Initialization", "type": "group", "children": [
        {"name": "c", "title": "target c_k", "type": "str", "value": "-0.1, 0.1"},
        {"name": "seed", "type": "int", "value": 0},
    ]},
    {"name": "optimizer", "title": "Optimizer", "type": "group", "children": [
        {"name": "name", "title": "method", "type": "list", "value": "gd",
         "limits": {"gradient descent": "gd", "exact gradient flow": "flow", "SGD": "sgd",
                    "Adam": "adam", "momentum": "momentum"}},
        {"name": "lr", "title": "step size h", "type": "float", "value": 0.01, "step": 0.001},
        {"name": "steps", "type": "int", "value": 500, "limits": (1, 10**7)},
    ]},
]


def parse_floats(text: str, what: str) -> list[float]:
    try:
        return [float(part) for part in text.replace("−", "-").split(",") if part.strip()]
    except ValueError:
        raise EngineInputError(f"{what}: {text!r} is not a comma-separated list of numbers") from None


class TopologyWorkspace(Workspace):
    key = "topology"
    title = "Invariant sets (topological obstruction)"

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="topology", type="group", children=PARAMETERS), parent)
        self.view = QuadricView(neuron=0)
        self.loss_plot = pg.PlotWidget(title="loss")
        self.loss_plot.setLogMode(y=True)
        self.loss_curve = self.loss_plot.plot(pen=pg.mkPen("#0072B2", width=2))
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.view)
        splitter.addWidget(self.loss_plot)
        splitter.setSizes([900, 500])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    def make_job(self, steps: Optional[int] = None):
        p = self.parameters
        net = ShallowNet(d=p["network", "d"], l=p["network", "l"], e=p["network", "e"])
        c = parse_floats(p["init", "c"], "target c_k")
        params = init_params(net, "uniform", seed=p["init", "seed"], a=np.sqrt(2.0), c=c,
                             signs=[1] * net.l if net.e == 1 else None)
        X, Y = toy_dataset(seed=p["init", "seed"])
        config = TrainConfig(optimizer=p["optimizer", "name"], lr=p["optimizer", "lr"],
                             steps=steps or p["optimizer", "steps"])
        self.view.set_surface(float(c[0]))
        return train(net, params, X, Y, config)

    def show_partial(self, trajectory: Trajectory):
        points = np.column_stack([trajectory.W1[:, 0, :2], trajectory.W2[:, 0, 0]])
        self.view.set_trajectory(points)
        self.loss_curve.setData(trajectory.step, trajectory.loss)

    def reset(self):
        self.view.clear_trajectory()
        self.loss_curve.setData([], [])

    def gl_views(self):
        return [self.view]
