"""The minima tab's views and their layout: the figures' tabs (Fig. 3 (a)–(d), the 2-D slice, minima
at infinity, the non-increasing path), the inspector, and the spectrum and network diagram under it
(beside the figures in presentation type).

The workspace (gui/workspaces/minima.py) adds the routing from its model's stage states to these
views, and the requests it forwards to the model.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..panels.inspector import InspectorPanel
from ..rendering.plot_style import set_plot_fonts
from ..views.curves_view import CurvesView
from ..views.degenerate_path_view import DegeneratePathView
from ..views.network_diagram import NetworkDiagram
from ..views.plane_view import PlaneView
from ..views.slice_view import SliceView
from ..views.spectral_density_view import SpectralDensityView
from ..views.spectrum_view import SpectrumView
from ..workspace import Workspace

# The figures' tabs, and their titles in presentation type (where the spectrum and network join them).
FIGURE_TABS = (
    ("Fig. 3 (a)–(d)", "Fig. 3 (a)–(d)"),
    ("2-D slice", "2-D slice"),
    ("Minima at infinity", "At infinity"),
    ("Non-increasing path", "Path"),
)


class MinimaLayout(Workspace):
    """The minima tab's views, laid out; no results and no jobs (the workspace's)."""

    def __init__(self, parameters, parent=None):
        super().__init__(parameters, parent)
        self.slice_min = SliceView("(a) at the embedded minimum")
        self.path_view = DegeneratePathView()
        self.slice_saddle = SliceView("(c) at the saddle")
        self.descent_view = CurvesView("(d) descent at the saddle", "t", "loss L")
        self.plane = PlaneView()
        self.bias_view = CurvesView("loss against the shared last-layer bias b", "bias b", "L(b) − L∞")
        self.gd_view = CurvesView("gradient descent from large b", "step", "L − L∞")
        self.descend_view = CurvesView("non-increasing path vs straight segment", "path parameter t", "loss L")
        self.spectrum = SpectrumView()
        self.density = SpectralDensityView()  # in the spectrum's place past the full-Hessian limit
        self.network = NetworkDiagram()
        self.inspector = InspectorPanel()
        self._build_layout()

    def _build_layout(self):
        fig3 = QWidget()
        grid = QGridLayout(fig3)
        grid.setContentsMargins(0, 0, 0, 0)
        for k, view in enumerate((self.slice_min, self.path_view, self.slice_saddle, self.descent_view)):
            grid.addWidget(view, k // 2, k % 2)
        infinity = QSplitter(Qt.Orientation.Vertical)
        infinity.addWidget(self.bias_view)
        infinity.addWidget(self.gd_view)
        self.figures = QTabWidget()
        for page, (title, _) in zip((fig3, self.plane, infinity, self.descend_view), FIGURE_TABS):
            self.figures.addTab(page, title)
        self._details = details = QTabWidget()
        self._curvature = QStackedWidget()
        for view in (self.spectrum, self.density):
            self._curvature.addWidget(view)
        self._curvature_title = "Hessian spectrum"
        details.addTab(self._curvature, self._curvature_title)
        details.addTab(self.network, "Network")
        # Scrollable, so the inspector never sets the window's minimum width (small recordings).
        inspector = QScrollArea()
        inspector.setWidgetResizable(True)
        inspector.setFrameShape(QFrame.Shape.NoFrame)
        inspector.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # its tables scroll instead
        inspector.setWidget(self.inspector)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(inspector)
        right.addWidget(details)
        right.setSizes([600, 300])  # the inspector's λ box and tables whole, without a scroll bar
        self._splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.figures)
        splitter.addWidget(right)
        splitter.setSizes([960, 500])  # the inspector's tables and the spectrum need ~500 px
        splitter.setStretchFactor(0, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    def _show_curvature(self, view, title: str):
        """The spectrum, or past the full-Hessian limit the density, in the details' first tab."""
        self._curvature.setCurrentWidget(view)
        self._curvature_title = title
        for tabs in (self._details, self.figures):
            if tabs.indexOf(self._curvature) >= 0:
                tabs.setTabText(tabs.indexOf(self._curvature), self._tab_title(tabs))

    def _tab_title(self, tabs: QTabWidget) -> str:
        """Beside the figures' four tabs, in large type, only a word fits: "Spectrum", "Density"."""
        return self._curvature_title.split()[-1].capitalize() if tabs is self.figures else self._curvature_title

    def _place_details(self, tabs: QTabWidget):
        """The spectrum and the network diagram as tabs of ``tabs``: under the inspector, or in
        presentation type beside the figures, so that the inspector has the right column's whole
        height (under it, in large type, the steps table kept two rows and the spectrum a sliver)."""
        for view, title in ((self._curvature, self._tab_title(tabs)), (self.network, "Network")):
            if tabs.indexOf(view) < 0:
                tabs.addTab(view, title)
        self._details.setVisible(tabs is self._details)

    def _fit_layout_to(self, kind: str):
        """Minima at infinity have no construction: the inspector and spectrum would stand empty
        beside them, so the figures take the whole width. The non-increasing path computes no
        spectrum: its tab shows the network the path starts from instead."""
        self._splitter.widget(1).setVisible(kind != "infinity")
        if kind == "path" and self._details.indexOf(self.network) >= 0:  # not beside the figures (presentation)
            self._details.setCurrentWidget(self.network)

    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        return {
            "slices at the minimum": self.slice_min,
            "degenerate path": self.path_view,
            "slices at the saddle": self.slice_saddle,
            "descent at the saddle": self.descent_view,
            "2-D slice heatmap": self.plane.heatmap,
            "loss against bias": self.bias_view,
            "gradient descent from large bias": self.gd_view,
            "non-increasing path": self.descend_view,
            "Hessian spectrum": self.spectrum,
            "spectral density": self.density,
            "network diagram": self.network,
        }

    def gl_views(self):
        return [self.plane.surface_view]

    def set_presentation(self, on: bool):
        # Large type needs a wider inspector; the figures keep two thirds of the width.
        self._splitter.setSizes([900, 700] if on else [960, 500])
        self._place_details(self.figures if on else self._details)
        for k, (title, short) in enumerate(FIGURE_TABS):  # large type: short titles make room for two more
            self.figures.setTabText(k, short if on else title)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot, on)
            if hasattr(plot, "set_presentation"):
                plot.set_presentation(on)
