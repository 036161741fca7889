"""The construction inspector: steps, per-neuron B and D, the λ slider, load and export.

It only displays engine results and emits what the user asked for; the workspace turns the
requests into engine jobs.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.core.mlp import LOSSES
from engine.minima.report import NEURONS_FROM
from engine.minima.verdicts import Verdict

# the load dialog's, imported from here by the tabs that load networks
from .network_file_dialog import NETWORK_FILES as NETWORK_FILES
from .network_file_dialog import TorchFileDialog as TorchFileDialog

SLIDER_RANGE = (-1.0, 2.0)  # λ beyond [0, 1] on both sides, so the verdict can flip
SLIDER_STEPS = 300
VERDICT_COLORS = {"minimum": "#009E73", "saddle": "#D62728", "other": "#8a6d00"}
BADGE_COLORS = {"definite": "#d9f2e6", "indefinite": "#fde0dc", "other": "#f3f0d8"}
TINTED_TEXT = "#111111"


def verdict_kind(verdict: Verdict) -> str:
    if verdict is Verdict.SADDLE:
        return "saddle"
    return "minimum" if verdict.is_minimum else "other"


# Table cells get a word or two; the full verdict (and why Theorem 9 fails) is the cell's tooltip.
SHORT_VERDICT = {
    Verdict.SADDLE: "saddle",
    Verdict.STRICT_MINIMUM: "strict min",
    Verdict.NON_ATTRACTING: "non-attracting",
    Verdict.DEGENERATE_MINIMUM: "degenerate",
    Verdict.CONDITIONS_NOT_MET: "not met",
    Verdict.NOT_CRITICAL: "not critical",
}


def verdict_text(verdict: Verdict, unmet=()) -> str:
    return verdict.value + (": " + "; ".join(unmet) if unmet else "")


def _table(headers) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setWordWrap(True)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.verticalHeader().hide()  # row numbers cost a column the pane does not have at 1600×960
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(len(headers) - 1, QHeaderView.ResizeMode.Stretch)
    # A table takes the height its pane has left, at least three rows: the inspector's scroll area
    # sizes it to its preferred height (its word-wrapped labels ask for height-for-width), and a
    # table's preferred 192 px ran that past the pane at 1600×960, cutting the steps' note in half.
    table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
    table.setMinimumHeight(header.sizeHint().height() + 3 * table.verticalHeader().defaultSectionSize())
    return table


def _fill(table: QTableWidget, rows: list[list], backgrounds: list | None = None):
    """Fill ``table`` afresh, keeping its current row. Emptied first, signals blocked: replacing
    the items of a filled table one by one re-announced the selection at each, many times slower
    for the 41 steps of nonattr-fig3."""
    current = table.currentRow()
    blocked = table.blockSignals(True)
    try:
        table.setRowCount(0)
        table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                item = QTableWidgetItem(value if isinstance(value, str) else f"{value:.3g}")
                item.setTextAlignment(
                    Qt.AlignmentFlag.AlignVCenter
                    | (Qt.AlignmentFlag.AlignLeft if isinstance(value, str) else Qt.AlignmentFlag.AlignRight)
                )
                if backgrounds and backgrounds[i] and backgrounds[i][j]:
                    item.setBackground(QBrush(QColor(backgrounds[i][j])))
                    item.setForeground(QBrush(QColor(TINTED_TEXT)))  # pastel tints stay pastel in dark
                table.setItem(i, j, item)
        if 0 <= current < len(rows):
            table.setCurrentCell(current, 0)
    finally:
        table.blockSignals(blocked)
    table.resizeRowsToContents()


class LambdaBox(QGroupBox):
    """The slider that moves λ of one split (the last, or the steps table's selected row), with
    the live loss, λ_min(H) and verdict."""

    moved = Signal(float)  # while dragging: cheap readouts only
    released = Signal(float)  # on release: recompute the slices
    changed = Signal(float)  # the value shown changed, by the user or by the program

    def __init__(self, parent=None):
        super().__init__("λ of the last split", parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setEnabled(False)
        self._exact = None
        self.value_label = QLabel("λ = –")
        self.loss_label = QLabel("loss –")
        self.hmin_label = QLabel("λ_min(H) –")
        self.verdict_label = QLabel("no construction yet")
        self.verdict_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = QFont()
        font.setPointSize(12)
        font.setBold(True)
        self.verdict_label.setFont(font)
        self.verdict_label.setWordWrap(True)
        grid = QGridLayout(self)
        grid.addWidget(QLabel(f"{SLIDER_RANGE[0]:g}"), 0, 0)
        grid.addWidget(self.slider, 0, 1)
        grid.addWidget(QLabel(f"{SLIDER_RANGE[1]:g}"), 0, 2)
        grid.addWidget(self.value_label, 1, 0, 1, 3)  # beside the slider, presentation type cut it off
        # One readout per line: side by side they set the inspector's minimum width, and in
        # presentation type pushed it past its pane.
        grid.addWidget(self.loss_label, 2, 0, 1, 3)
        grid.addWidget(self.hmin_label, 3, 0, 1, 3)
        grid.addWidget(self.verdict_label, 4, 0, 1, 3)
        self.slider.valueChanged.connect(lambda _: self._on_value())
        self.slider.sliderReleased.connect(lambda: self.released.emit(self.value()))

    @property
    def exact(self) -> float | None:
        """The λ last set or moved to, unrounded (the slider holds it to a step); None before any."""
        return self._exact

    def value(self) -> float:
        lo, hi = SLIDER_RANGE
        return lo + (hi - lo) * self.slider.value() / SLIDER_STEPS

    def set_value(self, lam: float, emit: bool = False):
        lo, hi = SLIDER_RANGE
        self.slider.blockSignals(not emit)
        self.slider.setValue(round((lam - lo) / (hi - lo) * SLIDER_STEPS))
        self.slider.blockSignals(False)
        self.value_label.setText(f"λ = {lam:.3g}")
        self._exact = float(lam)
        self.changed.emit(self.value())

    def _on_value(self):
        self._exact = self.value()
        self.value_label.setText(f"λ = {self.value():.3g}")
        self.changed.emit(self.value())
        self.moved.emit(self.value())
        if not self.slider.isSliderDown():  # keyboard and clicks have no "release"
            self.released.emit(self.value())

    def set_split(self, description: str | None):
        self.slider.setEnabled(description is not None)
        self.setTitle(f"λ of split {description}" if description else "λ (no split)")
        self.setToolTip("select a row of the construction steps to move that split's λ")

    def show_probe(self, lam: float | None, loss: float, hessian_min: float, verdict: str, unmet=()):
        """``verdict``: a Verdict or its value (sessions keep values); ``unmet``: Theorem 9's failed
        conditions; ``lam`` None: a network with no split to move."""
        verdict = Verdict(verdict)
        self.loss_label.setText(f"loss L = {loss:.10g}")
        self.hmin_label.setText(f"λ_min(H) = {hessian_min:.3e}" + ("" if lam is None else f"  at λ = {lam:.3g}"))
        color = VERDICT_COLORS[verdict_kind(verdict)]
        self.verdict_label.setText(verdict_text(verdict, unmet))
        self.verdict_label.setStyleSheet(f"color: white; background: {color}; border-radius: 4px; padding: 4px;")

    def show_pending(self):
        self.hmin_label.setText("λ_min(H) … computing")

    @property
    def verdict(self) -> str:
        return self.verdict_label.text()


class SplitBox(QWidget):
    """Every neuron of the current network with B's definiteness, ‖D‖ and whether Theorem 9 covers
    a split of it (and if not, why), each with a Split button; λ of the next split; Undo."""

    split_requested = Signal(int, int, float)  # layer, neuron, λ
    undo_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lam = QDoubleSpinBox()
        self.lam.setRange(-10.0, 10.0)
        self.lam.setDecimals(3)
        self.lam.setSingleStep(0.05)
        self.lam.setValue(0.5)
        self.lam.setToolTip(
            "λ of the next split: inside I = (0, 1) for B > 0, outside [0, 1] for B < 0 "
            "gives a non-attracting region of minima"
        )
        self.undo = QPushButton("Undo last split")
        self.undo.setEnabled(False)
        self.undo.clicked.connect(self.undo_requested.emit)
        self.table = _table(["layer", "neuron", "B is", "‖D‖", "Theorem 9", ""])
        header = self.table.horizontalHeader()
        # B and the reasons share what the pane leaves and wrap: sized to its content, B's column
        # ("positive definite") left the reasons ~60 px at 1600×960, "covers it" and the header
        # "Theorem 9" cut. Rows fit their wrapped text at whatever widths the columns have (fitted
        # once when filled, a hidden tab's rows kept the heights of its old widths).
        for column in (2, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(5, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        row = QHBoxLayout()
        row.addWidget(QLabel("γ-split with λ"))
        row.addWidget(self.lam)
        row.addStretch(1)
        row.addWidget(self.undo)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.table)

    def show_neurons(self, rows: list, n_splits: int):
        """``rows``: [layer, neuron index, badge, ‖D‖, reasons Theorem 9 does not cover it] for every
        neuron; ``n_splits``: splits made so far (Undo needs one). Neurons are counted from 1."""
        cells, colors = [], []
        for layer, r, badge, d_norm, reasons in rows:
            why = "covers it" if not reasons else "outside: " + "; ".join(reasons)
            cells.append([str(layer), str(r + NEURONS_FROM), badge, d_norm, why, ""])
            colors.append([None, None, None, None, BADGE_COLORS["other" if reasons else "definite"], None])
        _fill(self.table, cells, colors)
        for i, (layer, neuron, _, _, reasons) in enumerate(rows):
            button = QPushButton("Split")
            button.setToolTip(
                "Theorem 9 does not cover this split: " + "; ".join(reasons) + ". It is made and verified all the same."
                if reasons
                else "B definite, D = 0 at a minimum: λ in I gives a non-attracting region of minima"
            )
            button.clicked.connect(lambda _=False, l=layer, r=neuron: self.split_requested.emit(l, r, self.lam.value()))
            self.table.setCellWidget(i, 5, button)
            self.table.item(i, 4).setToolTip(button.toolTip())
        self.undo.setEnabled(n_splits > 0)

    def button(self, layer: int, neuron: int) -> QPushButton:
        """The Split button of ``neuron`` (an index, as the signal carries it) of ``layer``."""
        for i in range(self.table.rowCount()):
            if (self.table.item(i, 0).text(), self.table.item(i, 1).text()) == (str(layer), str(neuron + NEURONS_FROM)):
                return self.table.cellWidget(i, 5)
        raise KeyError(f"neuron {neuron + NEURONS_FROM} of layer {layer} is not in the table")

    def clear(self):
        self.table.setRowCount(0)
        self.undo.setEnabled(False)


class HypothesesBox(QWidget):
    """Which of paper B's hypotheses hold under the chosen loss, and the verdicts there
    (engine.minima.report.loss_verdict, one entry per loss in the construction's view data)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.loss = QComboBox()
        for kind in LOSSES:  # the keys of the view data
            self.loss.addItem(kind, kind)
        self.loss.setToolTip("the loss whose hypotheses and verdicts are shown (the landscape tab's choices)")
        self.loss.currentIndexChanged.connect(lambda _: self._render())
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        row = QHBoxLayout()
        row.addWidget(QLabel("loss"))
        row.addWidget(self.loss, 1)
        layout = QVBoxLayout(self)
        heading = QLabel("Paper B's hypotheses under the chosen loss, and the verdicts there")
        heading.setWordWrap(True)  # unwrapped, its width set the inspector's and cut it in presentation type
        layout.addWidget(heading)
        layout.addLayout(row)
        layout.addWidget(self.text)
        layout.addStretch(1)
        self._losses: dict = {}

    def show_losses(self, losses: dict):
        """``losses``: {kind: LossVerdict.as_json()}."""
        self._losses = dict(losses)
        self._render()

    def _render(self):
        shown = self._losses.get(self.loss.currentData())
        if shown is None:
            self.text.setText("")
            self.text.setToolTip("")
            return
        marks = [("✓ " if h["holds"] else "✗ ") + h["name"] for h in shown["hypotheses"]]
        lines = [" · ".join(marks), f"verdict: {shown['verdict']}"]
        if shown["split_verdict"] is not None:
            lines.append(f"last split: {shown['split_verdict']}")
        self.text.setText("\n".join(lines))
        self.text.setToolTip("\n".join([shown["note"]] + [f"{h['name']}: {h['note']}" for h in shown["hypotheses"]]))

    @property
    def verdict(self) -> str:
        shown = self._losses.get(self.loss.currentData())
        return "" if shown is None else shown["verdict"]

    def clear(self):
        self.show_losses({})


CRITICAL_TIP = (
    "Levenberg–Marquardt and Newton steps (float64) to a gradient norm below 1e-8; if it stops short, "
    "the message bar says where and why, and this button goes on from there. Cancel stops it"
)


class InspectorPanel(QWidget):
    load_requested = Signal(str, str, str)  # path, activation ("" for .npz/.pt2), data ("" for .npz)
    export_requested = Signal(str)
    critical_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lam = LambdaBox()
        self.split = SplitBox()
        self.hypotheses = HypothesesBox()
        # Six columns fit the inspector's width; max e and the zero count are in each row's tooltip.
        self.steps = _table(["layers", "verdict", "loss", "‖∇L‖", "min e", "#<0"])
        self.neurons = _table(["layer", "neuron", "B is", "‖D‖", "eigenvalues of B"])
        self.restarts_label = QLabel("")
        self.restarts_label.setWordWrap(True)
        # Short labels: in presentation type the longer ones set the pane's minimum width past its edge.
        load, export = QPushButton("Load network…"), QPushButton("Export .npz…")
        load.setToolTip("a network: the app's .npz, a PyTorch state_dict (.pt, .pth) or a torch.export .pt2")
        export.setToolTip("the network on screen with its data and construction history, as .npz")
        load.clicked.connect(self.ask_load)
        self.critical_button = QPushButton("Find critical point")
        self.critical_button.setToolTip(CRITICAL_TIP)
        self.critical_button.clicked.connect(self.critical_requested.emit)
        self.critical_button.setEnabled(False)
        export.clicked.connect(self._ask_export)
        self.export_button = export
        export.setEnabled(False)
        files = QHBoxLayout()
        files.addWidget(load)
        files.addWidget(export)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(files)
        layout.addWidget(self.critical_button)
        layout.addWidget(self.lam)
        # The tables as tabs: stacked, at 1600×960 the last ones lay below the pane's edge.
        steps = QWidget()
        QVBoxLayout(steps).addWidget(self.steps, 1)
        steps.layout().addWidget(self.restarts_label)
        neurons = QWidget()
        QVBoxLayout(neurons).addWidget(self.neurons, 1)
        self.tables = QTabWidget()
        self.tables.addTab(steps, "Steps")
        self.tables.addTab(self.split, "Split")
        self.tables.addTab(neurons, "B, D")
        self.tables.addTab(self.hypotheses, "Loss")
        for i, tip in enumerate(
            (
                "the construction steps, one Hessian each; select a split's row to move its λ",
                "split any neuron of the current network (γ), with why Theorem 9 does or does not cover it",
                "B and D of every neuron of the small network (Theorem 9's conditions)",
                "paper B's hypotheses and verdicts under the sum, mean or cross-entropy loss",
            )
        ):
            self.tables.setTabToolTip(i, tip)
        layout.addWidget(self.tables, 1)

    def show_search(self, reached: bool | None):
        """After a search that stopped short (``reached`` False) the button offers to go on from there."""
        self.critical_button.setText("Go on searching" if reached is False else "Find critical point")

    def ask_load(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load network", "", NETWORK_FILES)
        if not path:
            return
        if path.lower().endswith(".npz"):
            self.load_requested.emit(path, "", "")
            return
        dialog = TorchFileDialog(path, self, hand_over_relu=True)
        if dialog.exec():
            self.load_requested.emit(path, *dialog.choice())

    def _ask_export(self):
        path, _ = QFileDialog.getSaveFileName(self, "Export network", "network.npz", "Networks (*.npz)")
        if path:
            self.export_requested.emit(path if path.endswith(".npz") else path + ".npz")

    def show_steps(self, rows: list[dict], restarts_note: str = ""):
        """One row per construction step (the engine's Step fields as plain data)."""
        table, colors = [], []
        for r in rows:
            verdict = Verdict(r["verdict"])
            table.append(
                [
                    "—".join(map(str, r["widths"])),
                    SHORT_VERDICT[verdict],
                    r["loss"],
                    r["grad_norm"],
                    r["min"],
                    str(r["n_negative"]),
                ]
            )
            tint = {"saddle": "#fde0dc", "minimum": "#e3f4ec"}.get(verdict_kind(verdict))
            colors.append([None, tint] + [None] * 4)
        _fill(self.steps, table, colors)
        for row, r in enumerate(rows):
            tip = (
                f"{r['description']}: {r['verdict']}\nHessian: min e = {r['min']:.3g}, max e = {r['max']:.3g}, "
                f"{r['n_zero']} zero, {r['n_negative']} negative"
            )
            for column in range(self.steps.columnCount()):
                self.steps.item(row, column).setToolTip(tip)
        # The newest step stays in view at whatever size the table is laid out: a scrollToBottom()
        # made before the first layout (a session opened into a hidden tab) scrolled the viewport of
        # the wrong size, and the reopened table showed its first rows instead.
        bar = self.steps.verticalScrollBar()
        if not getattr(self, "_steps_follow_bottom", False):
            bar.rangeChanged.connect(lambda _low, high: bar.setValue(high))
            self._steps_follow_bottom = True
        bar.setValue(bar.maximum())
        self.restarts_label.setText(restarts_note)

    def show_neurons(self, neurons: list[dict]):
        rows, colors = [], []
        for n in neurons:
            eigs = ", ".join(f"{e:.3g}" for e in np.asarray(n["B_eigs"]))
            badge = n["badge"]
            rows.append([str(n["layer"]), str(n["neuron"] + NEURONS_FROM), badge, n["D_norm"], eigs])
            kind = n["badge_kind"]
            colors.append([None, None, BADGE_COLORS[kind], None, None])
        _fill(self.neurons, rows, colors)

    def clear(self):
        self.steps.setRowCount(0)
        self.neurons.setRowCount(0)
        self.restarts_label.setText("")
        self.lam.set_split(None)
        self.lam.verdict_label.setText("no construction yet")
        self.lam.verdict_label.setStyleSheet("")
        self.export_button.setEnabled(False)
        self.critical_button.setEnabled(False)
        self.split.clear()
        self.hypotheses.clear()
