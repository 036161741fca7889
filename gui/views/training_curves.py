"""Loss against step with sign-flip events, and the drift c_k(t) − c_k(0) of each neuron.

During a live run the axes hold still (``live``): x spans the whole run from its first step and
y only grows, in generous steps, when the data leaves it. A rescaled axis is a redrawn axis
(10+ ms a plot under llvmpipe), and axes rescaling at every update read as jitter. ``finish``
fits both axes to the data again.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont

from ..present.topology import drift_state, loss_state, sub
from ..rendering.plot_style import clear_plot, fit_text_space, follow_theme, own_menus, set_title, sparse_log_labels
from ..style import neuron_color

CALLOUT_GAP = 0.06  # of the step axis: flips closer than this share one call-out


def event_callouts(events: list[tuple[int, int, bool]], span: float) -> list[str | None]:
    """Each event line's call-out. Flips (or jumps) within ``CALLOUT_GAP`` of the step axis of a
    group's first share one call-out, on the first line, naming them all; one call-out per flip
    overlapped when three flips came within a few steps."""
    groups: list[list[int]] = []  # indices into events
    for i, (step, _k, jumped) in enumerate(events):
        first = events[groups[-1][0]] if groups else None
        if first is not None and jumped == first[2] and step - first[0] <= CALLOUT_GAP * span:
            groups[-1].append(i)
        else:
            groups.append([i])
    callouts: list[str | None] = [None] * len(events)
    for group in groups:
        names = ", ".join(f"v{sub(events[i][1] + 1)}" for i in group)
        one = len(group) == 1
        if events[group[0]][2]:
            callouts[group[0]] = f"{names} {'jumps' if one else 'jump'} the barrier (finite step)"
        else:
            callouts[group[0]] = f"{names} {'flips' if one else 'flip'} sign"
    return callouts


def _plot(title: str, left: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(title=title)
    plot.setLabel("bottom", "step")
    plot.setLabel("left", left)
    plot.showGrid(x=True, y=True, alpha=0.25)
    plot.getAxis("left").enableAutoSIPrefix(False)  # "(x0.001)" on a loss axis reads as a typo
    sparse_log_labels(plot.getAxis("left"))
    return own_menus(plot)


class TrainingCurves:
    """Two plots the workspace lays out; kept together because they share events and width."""

    def __init__(self):
        self.loss_plot = _plot("loss", "L(θ)")
        self.loss_curve = self.loss_plot.plot()
        self.drift_plot = _plot("drift of the invariants", "c<sub>k</sub>(t) − c<sub>k</sub>(0)")
        self.drift_curves: list[pg.PlotDataItem] = []
        for curve in [self.loss_curve]:
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
        self._events: list[pg.InfiniteLine] = []
        self._callouts: list[str | None] = []  # each event line's call-out (None: a group's later line)
        self._held_steps: int | None = None  # a live run's length: the step axis it holds
        self._log_drift = False
        self._width = 2.0
        self._twins: dict[int, bool] = {}
        self._fg = "#222222"
        self._held: dict[int, tuple] = {}  # id(plot) -> (log?, y range) while live
        follow_theme(self.loss_plot, self._set_foreground)  # the loss is drawn in the text colour

    def _set_foreground(self, color):
        self._fg = color
        self.loss_curve.setPen(pg.mkPen(color, width=self._width))

    def configure(self, l: int, log_drift: bool):
        clear_plot(self.drift_plot)
        # The key sits in the title: the drifts are flat lines across the whole width, so a legend
        # box in any corner would cover one of them.
        key = " ".join(f'<span style="color:{neuron_color(k).name()}">━ c{sub(k + 1)}</span>' for k in range(l))
        set_title(self.drift_plot, f"drift of the invariants&nbsp;&nbsp;{key}")
        self.drift_curves = []
        self._twins = {}  # the new curves have the plain pen
        for k in range(l):
            curve = self.drift_plot.plot(pen=pg.mkPen(neuron_color(k), width=self._width))
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
            self.drift_curves.append(curve)
        self.set_log_drift(log_drift)
        self.clear()

    def set_log_drift(self, on: bool):
        self._log_drift = on
        self.drift_plot.setLogMode(y=on)
        self.drift_plot.setLabel(
            "left", "|c<sub>k</sub>(t) − c<sub>k</sub>(0)|" if on else "c<sub>k</sub>(t) − c<sub>k</sub>(0)"
        )

    def clear(self):
        self.loss_curve.setData([], [])
        for curve in self.drift_curves:
            curve.setData([], [])
        self._set_events([])

    def show(self, step: np.ndarray, loss: np.ndarray, c: np.ndarray, flips: list[tuple[int, int]], jumps: list[bool]):
        """flips: (step, k) output-sign changes; jumps[i]: flip i was a pathological neuron's
        finite-step jump over v = 0 (engine.topology.invariants.sign_flip_events), not a free flip.
        The clips' way in: a live run's states come made (gui.present.topology)."""
        self.show_loss(loss_state(step, loss, [(s, k, j) for (s, k), j in zip(flips, jumps)]))
        self.show_drift(drift_state(step, c))

    def show_loss(self, state: dict, live: bool = False):
        """The loss plot from its state (gui.present.topology.loss_state). The y axis turns
        logarithmic once the loss spans a decade, mid-run too; pyqtgraph's switch re-enables
        auto-range, so a live run's step axis is held again (left to auto-range, it followed the
        data and was redrawn at every update for the rest of the run)."""
        if self.loss_plot.getPlotItem().ctrl.logYCheck.isChecked() != state["log"]:
            self.loss_plot.setLogMode(y=state["log"])
            if self._held_steps is not None:
                self.loss_plot.setXRange(0, self._held_steps, padding=0.02)
        self.loss_curve.setData(state["step"], state["loss"])
        if live:
            self._hold_y(self.loss_plot, state["range"], state["log"])
        self._set_events(state["events"])

    def hold_steps(self, total: int):
        """A live run of ``total`` steps: x spans all of it from the start."""
        self._held.clear()
        self._held_steps = max(total, 1)
        for plot in (self.loss_plot, self.drift_plot):
            plot.setXRange(0, max(total, 1), padding=0.02)  # also turns x auto-range off

    def finish(self, only: pg.PlotWidget | None = None):
        """The run is over: the axes fit the data again, of plot ``only`` when given (a run's end
        fits each in its own turn: both at once were one long repaint of four axes)."""
        plots = (self.loss_plot, self.drift_plot) if only is None else (only,)
        for plot in plots:
            self._held.pop(id(plot), None)
            if plot is self.loss_plot:
                self._held_steps = None  # the loss plot's alone to read
            plot.enableAutoRange()
            for side in ("left", "bottom"):
                fit_text_space(plot.getAxis(side))

    def _hold_y(self, plot: pg.PlotWidget, span: tuple[float, float] | None, log: bool):
        """Grow ``plot``'s y range to hold ``span`` (the values' (lo, hi), in decades when ``log``)
        with room to spare; never shrink it."""
        if span is None:
            return
        lo, hi = span
        held = self._held.get(id(plot))
        if held is not None and held[0] == log and held[1][0] <= lo and hi <= held[1][1]:
            return
        if log:  # whole half-decades
            lo, hi = math.floor(2 * lo) / 2, math.ceil(2 * hi) / 2 + (0.5 if math.ceil(2 * hi) == 2 * hi else 0)
        else:
            pad = 0.5 * max(hi - lo, abs(hi), abs(lo), 1e-12)
            lo, hi = lo - pad, hi + pad
        if held is not None and held[0] == log:
            lo, hi = min(lo, held[1][0]), max(hi, held[1][1])
        self._held[id(plot)] = (log, (lo, hi))
        plot.setYRange(lo, hi, padding=0)

    def show_drift(self, state: dict, live: bool = False):
        """The drift plot from its state (gui.present.topology.drift_state), on the chosen scale."""
        log = self._log_drift
        curves, twins = (state["magnitude"], state["log_twins"]) if log else (state["drift"], state["twins"])
        for k, curve in enumerate(self.drift_curves):
            if self._twins.get(k) != twins[k]:  # a new pen is a curve drawn afresh: only on a change
                self._twins[k] = twins[k]
                curve.setPen(self._drift_pen(k))
            curve.setData(state["step"], curves[:, k], connect="finite")
        if live:
            self._hold_y(self.drift_plot, state["log_range"] if log else state["range"], log)

    def _set_events(self, events: list[tuple[int, int, bool]]):
        steps = self.loss_curve.getData()[0]
        span = self._held_steps or (float(steps[-1]) if steps is not None and len(steps) else 1.0)
        callouts = event_callouts(events, span)
        if callouts == self._callouts:
            return
        for line in self._events:
            self.loss_plot.removeItem(line)
            line.deleteLater()  # removed, only Python owns it: never leave a Qt object to the cycle collector
        self._events, self._callouts = [], callouts
        Qt = pg.QtCore.Qt
        labelled = 0
        for (step, k, jumped), text in zip(events, callouts):
            # A jump must not read as the free flip the topology allows: other words, dotted line.
            style = Qt.PenStyle.DotLine if jumped else Qt.PenStyle.DashLine
            line = pg.InfiniteLine(pos=step, angle=90, pen=pg.mkPen(neuron_color(k), width=2, style=style))
            if text:
                line.label = pg.InfLineLabel(
                    line, text, position=0.85 - 0.12 * (labelled % 4), color=neuron_color(k), fill=(255, 255, 255, 200)
                )
                line.label.setFont(self._label_font())
                labelled += 1
            self.loss_plot.addItem(line)
            self._events.append(line)

    def _label_font(self) -> QFont:
        font = QFont()
        font.setPointSize(15 if self._width > 2 else 9)  # wider lines: presentation mode
        return font

    def event_labels(self) -> list[str]:
        return [line.label.toPlainText() for line in self._events if getattr(line, "label", None) is not None]

    def set_line_width(self, width: float):
        self._width = width
        self.loss_curve.setPen(pg.mkPen(self._fg, width=width))
        for line in self._events:
            if getattr(line, "label", None) is not None:
                line.label.setFont(self._label_font())
        for k, curve in enumerate(self.drift_curves):
            curve.setPen(self._drift_pen(k))

    def _drift_pen(self, k: int):
        if self._twins.get(k):
            return pg.mkPen(neuron_color(k), width=self._width, style=pg.QtCore.Qt.PenStyle.DashLine)
        return pg.mkPen(neuron_color(k), width=self._width)
