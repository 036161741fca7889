"""Paper Fig. 4: mean test BCE on breast cancer over (l, l₊), and the same against l₊/l.

The sweep runs in the worker and fills in cell by cell; the caption shows how many runs are
done and an ETA from the elapsed time (the engine reports counts, the view keeps the clock).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.core.errors import EngineInputError
from engine.topology.width_sweep import SweepProgress, SweepResult, SweepSettings

from ..rendering.plot_style import (
    add_legend,
    clear_plot,
    densify,
    legend_to_empty_corner,
    own_menus,
    readable_colormap,
    set_plot_fonts,
)
from .heatmap_plot import HeatmapPlot

LINE_CMAP = readable_colormap("plasma")


BURST_S = 0.5  # arrivals this soon after the first are its burst (workers that started together)


class SweepClock:
    """The caption's count and ETA. The rate is taken from the first cells' arrival on, not from
    the start: a sweep's start-up (Ray's workers, each task's first imports) is no rate, and
    counted in, it made the first estimates several times too long. The first arrival is a burst:
    workers that started together finish their first cells almost at once, and a rate over that
    burst gave a far too short ETA with 46 of 50 runs to go."""

    def __init__(self, now=time.monotonic):
        self._now = now
        self.restart()

    def restart(self) -> None:
        self._started = self._now()
        self._first: tuple[float, int] | None = None  # (when, done) at the end of the first burst
        self._burst_began = float("nan")

    def _arrived(self, now: float, done: int) -> None:
        if self._first is None:
            self._first, self._burst_began = (now, done), now
        elif done > self._first[1] and now - self._burst_began <= BURST_S:
            self._first = (now, done)

    def text(self, done: int, total: int) -> str:
        now = self._now()
        if done <= 0 or total <= 0:
            return "starting…"
        if done >= total:
            return f"{total} runs in {now - self._started:.0f} s"
        self._arrived(now, done)
        since, done_then = self._first
        if done == done_then or now <= since:
            return f"{done} / {total} runs · estimating the time left…"
        remaining = (now - since) * (total - done) / (done - done_then)
        return f"{done} / {total} runs · ETA {remaining:.0f} s"


class Fig4View(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setStyleSheet("padding: 6px; font-size: 11pt;")
        self.heat = HeatmapPlot(
            "mean test BCE",
            "l (hidden neurons)",
            "l₊ (non-pathological neurons)",
            cmap=readable_colormap("magma", 0.25, 0.95),
        )
        self.lines_widget = pg.PlotWidget(title="mean test BCE against l₊ / l")
        self.lines = self.lines_widget.getPlotItem()
        self.lines.setLabel("bottom", "l₊ / l")
        self.lines.setLabel("left", "mean test BCE")
        self.lines.showGrid(x=True, y=True, alpha=0.25)
        self.lines.getAxis("left").enableAutoSIPrefix(False)
        add_legend(self.lines, offset=(-8, 8))
        own_menus(self.lines_widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        row = QHBoxLayout()
        row.addWidget(self.heat, 1)
        row.addWidget(self.lines_widget, 1)
        layout.addLayout(row, 1)
        self.result = None
        self.clock = SweepClock()
        self.reset()

    def reset(self):
        self.result = None
        self.clock.restart()
        self.heat.clear_grid()
        clear_plot(self.lines)
        self.caption.setText(
            "Breast cancer, two-layer ReLU, BCE: each cell averages the test loss "
            "over random inits with l₊ neurons at c = +c₀ and the rest at −c₀."
        )

    def show_partial(self, partial: SweepProgress):
        self._show(partial, final=False)

    def show_result(self, result: SweepResult):
        self._show(result, final=True)

    def _show(self, result: SweepProgress | SweepResult, final: bool):
        """Cells (l, l₊) of result.mean, NaN where not run (yet)."""
        self.result = result
        l, lp, mean = result.ls, result.l_plus, result.mean
        self.heat.set_grid(l, lp, mean)
        self.heat.describe = lambda i, j: (
            f"l = {l[i]}, l₊ = {lp[j]}\nmean test BCE = {mean[i, j]:.4f}"
            if np.isfinite(mean[i, j])
            else f"l = {l[i]}, l₊ = {lp[j]}"
        )
        clear_plot(self.lines)
        if self.lines.legend is not None:
            self.lines.legend.clear()
        xs, ys = [], []
        for i, li in enumerate(l):
            ok = np.isfinite(mean[i]) & (lp <= li)
            if ok.any():
                color = LINE_CMAP.map(i / max(len(l) - 1, 1), mode="qcolor")
                self.lines.plot(
                    lp[ok] / li,
                    mean[i, ok],
                    pen=pg.mkPen(color, width=2),
                    symbol="o",
                    symbolSize=6,
                    symbolBrush=color,
                    symbolPen=None,
                    name=f"l = {li}",
                )
                x, y = densify(lp[ok] / li, mean[i, ok])
                xs.append(x)
                ys.append(y)
        if xs:
            legend_to_empty_corner(self.lines, np.concatenate(xs), np.concatenate(ys))
        self._frame_lines(np.concatenate(ys) if ys else np.array([]))
        self.caption.setText(
            f"Fig. 4 sweep: {self.clock.text(result.done, result.total)}" + (" — done" if final else "")
        )

    def _frame_lines(self, losses: np.ndarray) -> None:
        """x is a fraction, always [0, 1]; y spans the losses with room, even for one point
        (pyqtgraph's autorange framed a single point in an axis ±0.001 wide)."""
        self.lines.setXRange(0.0, 1.0, padding=0.04)
        finite = losses[np.isfinite(losses)]
        if finite.size:
            low, high = float(finite.min()), float(finite.max())
            middle, half = (low + high) / 2, 0.54 * (high - low)
            half = max(half, 0.1 * max(abs(middle), 0.01))  # one point, or a nearly flat line
            self.lines.setYRange(middle - half, middle + half, padding=0)

    def has_data(self) -> bool:
        return self.result is not None and np.isfinite(self.result.mean).any()

    def plot_widgets(self):
        return {"Fig. 4 heatmap": self.heat, "Fig. 4 against l₊ / l": self.lines_widget}

    def set_presentation(self, on: bool):
        for plot in (self.heat.plot, self.lines):
            set_plot_fonts(plot, on)
        self.heat.set_presentation(on)
        self.caption.setStyleSheet(f"padding: 6px; font-size: {16 if on else 11}pt;")

    def result_state(self, result: SweepResult) -> dict:
        """The finished sweep as plain data: its arrays, counts and settings."""
        state = {f.name: getattr(result, f.name) for f in dataclasses.fields(SweepResult)}
        state["settings"] = dataclasses.asdict(result.settings)
        return state

    def result_from_state(self, state: dict) -> SweepResult:
        try:
            fields = {f.name: state[f.name] for f in dataclasses.fields(SweepResult)}
            fields["settings"] = SweepSettings(**fields["settings"])
            fields["n_diverged"] = int(fields["n_diverged"])
            return SweepResult(**fields)
        except (KeyError, TypeError) as error:
            raise EngineInputError(f"saved Fig. 4 sweep does not fit: {error}") from None
