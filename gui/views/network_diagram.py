"""Network diagram in the spirit of paper Fig. 2: layers as columns of nodes, edges weighted by |w|,
the split neurons and the neuron they were split from highlighted."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import own_menus, set_title

NODE, ORIGIN, COPY = "#BBBBBB", "#0072B2", "#E69F00"
EDGE_BINS = 4  # edges are drawn as a few items by weight class, not one item per edge


class NetworkDiagram(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        # The key's dots in the nodes' own colours (in the text colour, both read black)
        dot = "<span style='color:{}'>●</span>".format
        set_title(self, f"network: edges ∝ |w|; origin {dot(ORIGIN)} and split copies {dot(COPY)}")
        self.hideAxis("left")
        self.hideAxis("bottom")
        self.setMouseEnabled(x=False, y=False)
        self.getPlotItem().hideButtons()
        self.edges = [pg.PlotCurveItem() for _ in range(EDGE_BINS)]
        for item in self.edges:
            self.addItem(item)
        self.nodes = pg.ScatterPlotItem(pen=pg.mkPen("#333", width=1))
        self.addItem(self.nodes)
        self.labels: list[pg.TextItem] = []
        own_menus(self)

    @staticmethod
    def _positions(widths) -> list[np.ndarray]:
        # The widest layer spans y ∈ [−5, 5]; narrower layers keep its spacing, centred.
        gap = 10.0 / max(max(widths) - 1, 1)
        return [
            np.column_stack([np.full(n, float(l)), (np.arange(n) - (n - 1) / 2) * gap]) for l, n in enumerate(widths)
        ]

    def show_network(self, widths, weights, splits=()):
        """``weights[l]`` has shape (n_{l+1}, n_l); ``splits``: (layer, origin, new) triples."""
        pos = self._positions(widths)
        segments, strengths = [], []
        for l, W in enumerate(weights):
            W = np.asarray(W, float)
            for i in range(W.shape[0]):
                for j in range(W.shape[1]):
                    segments.append((pos[l][j], pos[l + 1][i]))
                    strengths.append(abs(W[i, j]))
        strengths = np.asarray(strengths)
        top = strengths.max() if len(strengths) and strengths.max() > 0 else 1.0
        classes = np.minimum((strengths / top * EDGE_BINS).astype(int), EDGE_BINS - 1)
        for k, item in enumerate(self.edges):
            chosen = [s for s, c in zip(segments, classes) if c == k]
            xy = np.array(chosen).reshape(-1, 2) if chosen else np.zeros((0, 2))
            item.setData(
                xy[:, 0], xy[:, 1], connect="pairs", pen=pg.mkPen(60, 60, 60, 40 + 50 * k, width=0.6 + 1.3 * k)
            )
        role = [np.zeros(n, int) for n in widths]
        for layer, origin, new in splits:
            role[layer][new] = 2
            if role[layer][origin] == 0:
                role[layer][origin] = 1
        colors = {0: NODE, 1: ORIGIN, 2: COPY}
        xy = np.vstack(pos)
        flat_roles = np.concatenate(role)
        size = 14 if max(widths) <= 25 else 9
        self.nodes.setData(xy[:, 0], xy[:, 1], size=size, brush=[pg.mkBrush(colors[r]) for r in flat_roles])
        for label in self.labels:
            self.removeItem(label)
            label.deleteLater()  # removed, only Python owns it: never leave a Qt object to the cycle collector
        self.labels = []
        for l, n in enumerate(widths):
            name = "input" if l == 0 else ("output" if l == len(widths) - 1 else f"layer {l}")
            label = pg.TextItem(f"{name}\n{n}", anchor=(0.5, 0), color="#222")
            label.setPos(l, -5.8)
            self.addItem(label)
            self.labels.append(label)
        self.setXRange(-0.4, len(widths) - 0.6, padding=0)
        self.setYRange(-7.5, 5.6, padding=0)

    def clear_network(self):
        for item in self.edges:
            item.setData([], [])
        self.nodes.setData([], [])
