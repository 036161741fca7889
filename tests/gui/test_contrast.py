"""Every text item on the topology tab is legible in both themes: WCAG contrast ≥ 3:1.

The ratio is computed from the colours the items are drawn with, not from pixels: axis text
pens, titles (LabelItem), legend labels, TextItems and colour-bar axes against the plot
background (a legend's translucent card composited over it), QLabel palettes against the
background behind them, and GLTextItem colours against the 3D view's clear colour.
"""

from __future__ import annotations

import pyqtgraph as pg
import pyqtgraph.opengl as gl
import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QPushButton, QTableWidget, QWidget

from gui.rendering.offscreen_gl import OffscreenGLView

from .conftest import wait_until_idle

MIN_RATIO = 3.0
NO_BRUSH = pg.QtCore.Qt.BrushStyle.NoBrush
TOPOLOGY_PRESETS = [
    "fig3-free",
    "fig3-obstructed",
    "fig3-free-flow",
    "fig3-obstructed-flow",
    "fig3-free-d3",
    "d1-input-signs",
    "adam-drift",
    "biases",
    "fig4-breast-cancer",
    "fig5-probability",
]


# ------------------------------------------------------------------ WCAG 2.x
def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def luminance(color: QColor) -> float:
    r, g, b = (_linear(x) for x in (color.redF(), color.greenF(), color.blueF()))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def over(top: QColor, bottom: QColor) -> QColor:
    """``top`` composited over the opaque ``bottom`` (source-over)."""
    a = top.alphaF()
    mix = lambda t, b: t * a + b * (1 - a)
    return QColor.fromRgbF(
        mix(top.redF(), bottom.redF()), mix(top.greenF(), bottom.greenF()), mix(top.blueF(), bottom.blueF()), 1.0
    )


def contrast(fg: QColor, bg: QColor) -> float:
    bg = over(bg, QColor("white")) if bg.alphaF() < 1 else bg
    fg = over(fg, bg)
    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# ------------------------------------------------------------------ what is on screen
def _paints_background(widget: QWidget) -> bool:
    sheet = widget.styleSheet().replace(" ", "").lower()
    own = "background" in sheet and "background:transparent" not in sheet
    return own or widget.autoFillBackground() or widget.isWindow()


def _label_background(label: QWidget) -> QColor:
    """The colour behind a widget: its own filled background, else the nearest filled parent's."""
    widget = label
    while widget is not None:
        if _paints_background(widget):
            return widget.palette().color(QPalette.ColorRole.Window)
        widget = widget.parentWidget()
    return label.palette().color(QPalette.ColorRole.Window)


def text_items(window) -> list[tuple[str, QColor, QColor]]:
    """(what, text colour, background colour) for every visible text: the current tab, the slide
    title and the status bar (hidden tabs' widgets are not visible to the window)."""
    tab = window
    found = []
    for plot in tab.findChildren(pg.PlotWidget):
        if not plot.isVisibleTo(window) or plot.width() < 2:
            continue
        bg = plot.backgroundBrush().color()
        name = plot.getPlotItem().titleLabel.text or plot.objectName() or type(plot).__name__
        for item in plot.scene().items():
            if not item.isVisible():
                continue
            if isinstance(item, pg.AxisItem):
                if item.style.get("showValues", True) and item.height() > 0 and item.width() > 0:
                    found.append((f"{name}: {item.orientation} axis ticks", item.textPen().color(), bg))
                if item.label.isVisible() and item.label.toPlainText():
                    # the label is HTML whose span carries labelStyle's colour
                    color = item.labelStyle.get("color") or item.label.defaultTextColor()
                    found.append((f"{name}: {item.orientation} axis label", pg.mkColor(color), bg))
            elif isinstance(item, pg.LabelItem) and item.text:
                parent = item.parentItem()
                back = bg
                if isinstance(parent, pg.LegendItem):
                    back = over(parent.opts["brush"].color(), bg) if parent.opts["brush"] else bg
                color = item.opts.get("color") or pg.getConfigOption("foreground")
                found.append((f"{name}: label {item.text[:30]!r}", pg.mkColor(color), back))
            elif isinstance(item, pg.TextItem) and item.toPlainText():
                back = over(item.fill.color(), bg) if item.fill.style() != pg.QtCore.Qt.BrushStyle.NoBrush else bg
                found.append((f"{name}: text {item.toPlainText()[:30]!r}", item.color, back))
    for label in tab.findChildren(QLabel):
        if label.isVisibleTo(window) and label.text().strip():
            found.append(
                (
                    f"QLabel {label.text()[:40]!r}",
                    label.palette().color(QPalette.ColorRole.WindowText),
                    _label_background(label),
                )
            )
    for button in tab.findChildren(QPushButton):  # the inspector's: white on white once
        if button.isVisibleTo(window) and button.text().strip():
            palette = button.palette()
            found.append(
                (
                    f"button {button.text()[:30]!r}",
                    palette.color(QPalette.ColorRole.ButtonText),
                    palette.color(QPalette.ColorRole.Button),
                )
            )
    for table in tab.findChildren(QTableWidget):
        if not table.isVisibleTo(window):
            continue
        palette = table.palette()
        for row in range(table.rowCount()):
            for column in range(table.columnCount()):
                cell = table.item(row, column)
                if cell is not None and cell.text().strip():
                    fg, bg = cell.foreground(), cell.background()  # a brush with no style: the palette's
                    fg = fg.color() if fg.style() != NO_BRUSH else palette.color(QPalette.ColorRole.Text)
                    bg = bg.color() if bg.style() != NO_BRUSH else palette.color(QPalette.ColorRole.Base)
                    found.append((f"table cell {cell.text()[:20]!r}", fg, bg))
    for view in tab.findChildren(OffscreenGLView):
        if not view.isVisibleTo(window):
            continue
        bg = QColor.fromRgbF(*view.opts["bgcolor"])
        for item in view.items:
            if isinstance(item, gl.GLTextItem) and item.visible() and item.text:
                found.append((f"3D label {item.text!r}", pg.mkColor(item.color), bg))
    return found


def low_contrast(window) -> list[str]:
    return [
        f"{what}: {contrast(fg, bg):.2f} ({fg.name()} on {bg.name()})"
        for what, fg, bg in text_items(window)
        if contrast(fg, bg) < MIN_RATIO
    ]


# ------------------------------------------------------------------ tests
def test_ratio_matches_wcag():
    assert contrast(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert contrast(QColor("#777777"), QColor("white")) == pytest.approx(4.48, abs=0.01)
    assert contrast(QColor("#888888"), QColor("#777777")) < 1.5


def assert_legible_in_both_themes(qtbot, window, name: str, enough) -> None:
    """Switch to dark then light; in each, ``enough(items)`` holds and no text is below 3:1."""
    try:
        for theme in ("dark", "light"):
            window.presentation.set_theme(theme, remember=False)
            qtbot.wait(50)
            items = text_items(window)
            assert enough(items), f"{name}/{theme}: too few text items ({len(items)})"
            bad = low_contrast(window)
            assert not bad, f"{name} in the {theme} theme:\n" + "\n".join(bad)
    finally:
        window.presentation.set_theme("light", remember=False)


@pytest.mark.parametrize("preset", TOPOLOGY_PRESETS)
def test_topology_preset_text_is_legible_in_both_themes(qtbot, window, preset):
    # Dark first, then load: views a preset reveals must take the theme already chosen.
    window.presentation.set_theme("dark", remember=False)
    window.load_preset(preset, steps=20)
    wait_until_idle(qtbot, window, timeout_ms=120000)
    qtbot.wait(100)
    assert_legible_in_both_themes(qtbot, window, preset, lambda items: len(items) >= 5)


def test_minima_preset_text_is_legible_in_both_themes(qtbot, window):
    """The minima tab too: plots, the inspector's labels, buttons and tables (verdict cells)."""
    from gui.presets import apply_values

    window.presentation.set_theme("dark", remember=False)
    window.load_preset("nonattr-shallow", run=False)
    apply_values(window.workspaces["minima"].parameters, {"slices": {"K": 300, "P": 41}})
    window.run()
    wait_until_idle(qtbot, window, timeout_ms=180000)
    qtbot.wait(100)
    assert_legible_in_both_themes(
        qtbot, window, "nonattr-shallow", lambda items: sum(what.startswith("table cell") for what, _, _ in items) >= 4
    )


def test_check_catches_grey_on_grey(qtbot, window):
    """The check can fail: a grey label on a grey panel is reported."""
    window.load_preset("fig3-free", steps=20)
    wait_until_idle(qtbot, window)
    tab = window.tabs.currentWidget() if hasattr(window, "tabs") else window
    bad = QLabel("grey on grey", tab)
    bad.setAutoFillBackground(True)
    bad.setStyleSheet("color: #8a8a8a; background-color: #7a7a7a;")
    bad.show()
    qtbot.wait(50)
    assert any("grey on grey" in line for line in low_contrast(window))
    bad.setStyleSheet("color: #111111; background-color: #f0f0f0;")
    assert not any("grey on grey" in line for line in low_contrast(window))
    bad.deleteLater()


def test_check_box_squares_stand_out_in_both_themes(qtbot, window):
    """An unchecked box's square, against the panel around it, at 3:1 at least (WCAG's ratio for
    controls). On the dark theme the style drew it at 1.03:1, invisible."""
    from PySide6.QtWidgets import QStyle, QStyleOptionButton

    box = window.replay_dock.loop
    try:
        for theme in ("dark", "light"):
            window.presentation.set_theme(theme, remember=False)
            qtbot.wait(50)
            option = QStyleOptionButton()
            option.initFrom(box)
            square = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
            image = box.grab().toImage()
            around = image.pixelColor(image.width() - 1, 0)  # the panel behind, past the text
            rows = (square.top(), square.center().y())
            inside = [image.pixelColor(x, y) for x in range(square.left(), square.right() + 1) for y in rows]
            best = max(contrast(c, around) for c in inside)
            assert best >= 3.0, f"{theme}: the check box's square stands out at {best:.2f}:1"
    finally:
        window.presentation.set_theme("light", remember=False)
