"""Axis fonts shared by the 2-D plots, normal and projector-sized."""

from __future__ import annotations

import types

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFont

from ..ownership import delete_after
from ..style import theme_colors


def _update_min_height_only(label: pg.LabelItem) -> None:
    """LabelItem.updateMin without the minimum width. pyqtgraph calls updateMin at every resize
    of the label, so a minimum width zeroed once came back at the next layout pass, and a long
    title again pushed the plot past its widget (the Fig. 3 panels lost their right third)."""
    bounds = label.itemRect()
    label.setMinimumWidth(0)
    label.setMinimumHeight(bounds.height())
    label._sizeHint = {
        Qt.SizeHint.MinimumSize: (0, bounds.height()),
        Qt.SizeHint.PreferredSize: (bounds.width(), bounds.height()),
        Qt.SizeHint.MaximumSize: (-1, -1),
        Qt.SizeHint.MinimumDescent: (0, 0),
    }
    label.updateGeometry()


def fit_title(item: pg.PlotItem):
    """pyqtgraph fixes the title row at 30 px (a second or third line overflows into the plot) and
    makes the title's text width the plot's minimum width (a long title pushes the right axis off
    the widget). Size the row to the text, and let the title clip instead of the axes."""
    label = item.titleLabel
    height = label.itemRect().height()
    label.setMaximumHeight(height)
    item.layout.setRowFixedHeight(0, height)
    label.updateMin = types.MethodType(_update_min_height_only, label)
    label.updateMin()


SUBTITLE_PT = {False: 10, True: 14}  # normal, presentation: a little under the axis fonts


def set_title(plot, text: str, subtitle=()):
    """The title, and under it short subtitle lines (numbers the panel states) in a smaller type
    that grows with presentation mode."""
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    item._title_parts = (text, tuple(subtitle))
    if subtitle:
        size = SUBTITLE_PT[getattr(item, "_presentation", False)]
        text = f"{text}<br><span style='font-size:{size}pt'>{'<br>'.join(subtitle)}</span>"
    item.setTitle(text)
    fit_title(item)


def add_legend(plot, **kwargs) -> pg.LegendItem:
    """A legend on a translucent card, so curves behind it stay visible and it stays legible."""
    card = pg.mkColor(theme_colors()["bg"])
    card.setAlpha(190)
    return plot.addLegend(
        brush=pg.mkBrush(card), pen=pg.mkPen(180, 180, 180), labelTextColor=theme_colors()["fg"], **kwargs
    )


SOLID, DASHED, SHADED = "━━", "╍╍", "▇"


def densify(x, y, factor: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Points along the segments of a polyline, not only its vertices: what a legend must not
    cover is the drawn line."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2:
        return x, y
    s = np.linspace(0, x.size - 1, factor * (x.size - 1) + 1)
    index = np.arange(x.size)
    return np.interp(s, index, x), np.interp(s, index, y)


def key_text(entries) -> str:
    """An inline legend for a subtitle line, [(colour, glyph, label)] → coloured glyphs and labels.
    For plots whose data fill every corner (K slices, a path crossing the frame), where any
    legend box would cover curves."""
    return " &nbsp; ".join(
        f"<span style='color:{pg.mkColor(color).name()}'>{glyph}</span> {label}" for color, glyph, label in entries
    )


LEGEND_GRID = 40  # cells per side in which covered data is counted


def _legend_size(legend) -> tuple[float, float]:
    """The legend's size from its rows' text. Its own geometry lags: a legend refilled just now
    still reports its old (often empty) size until the next layout pass."""
    rows = [
        (20 + 3 + label.item.boundingRect().width(), max(20.0, label.item.boundingRect().height()))
        for _, label in legend.items
    ]
    if not rows:
        return 0.0, 0.0
    return max(w for w, _ in rows) + 10, sum(h for _, h in rows) + 10


def legend_to_empty_corner(plot, xs, ys, margin: int = 8, frame=None) -> None:
    """Anchor the plot's legend where it covers the least drawn data: a corner, or the middle of
    the left or right edge (two flat lines across the plot leave only the middle free).

    xs, ys: flat arrays of every drawn point (NaNs ignored); pass lines densified (``densify``).
    Coverage is counted in cells of a 40 × 40 grid, not in points, so a curve recorded at 2,000
    steps does not outweigh a reference line drawn from two. The legend's own size (in pixels,
    against the view box's) decides the patch tested at each place. frame = (x0, x1, y0, y1): the
    range the caller set; without it the data box, padded as pyqtgraph's auto-range pads it,
    stands in for the range pyqtgraph computes at the next paint."""
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    legend = item.legend
    if legend is None:
        return
    x, y = np.asarray(xs, dtype=float).ravel(), np.asarray(ys, dtype=float).ravel()
    if item.getAxis("left").logMode:
        y = np.log10(np.where(y > 0, y, np.nan))
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    best = (1, 1)  # top right
    if x.size:
        (width, height), view = _legend_size(legend), item.getViewBox()
        fx = min(0.9, (width + 2 * margin) / view.width()) if view.width() > 1 else 0.4
        fy = min(0.9, (height + 2 * margin) / view.height()) if view.height() > 1 else 0.4
        if frame is None:
            span = lambda a: (a.min(), max(a.max() - a.min(), 1e-300))
            (x0, dx), (y0, dy) = span(x), span(y)
            u, v = 0.02 + 0.96 * (x - x0) / dx, 0.02 + 0.96 * (y - y0) / dy  # auto-range's padding
        else:
            (x0, x1, y0, y1) = frame
            u, v = (x - x0) / max(x1 - x0, 1e-300), (y - y0) / max(y1 - y0, 1e-300)
        shown = (u >= 0) & (u <= 1) & (v >= 0) & (v <= 1)  # what lies outside is not drawn
        cells = np.unique(
            np.minimum((np.column_stack([u[shown], v[shown]]) * LEGEND_GRID).astype(int), LEGEND_GRID - 1), axis=0
        )
        cu, cv = (cells + 0.5).T / LEGEND_GRID
        counts = {}
        for cy in (1, 0.5, 0):  # on a tie: top before middle before bottom, right before left
            for cx in (1, 0):
                in_x = cu >= 1 - fx if cx else cu <= fx
                in_y = np.abs(cv - cy) <= (fy / 2 if cy == 0.5 else fy)
                counts[(cx, cy)] = int((in_x & in_y).sum())
        best = min(counts, key=lambda place: counts[place])  # dicts keep the tie order above
    cx, cy = best
    anchor = (cx, 1 - cy)  # scene y grows downwards
    offset = (-margin if cx else margin, 0 if cy == 0.5 else (margin if cy else -margin))
    legend.anchor(itemPos=anchor, parentPos=anchor, offset=offset)


def readable_colormap(name: str, low: float = 0.15, high: float = 0.85) -> pg.ColorMap:
    """A colour map without its near-black and near-white ends, so every value stays visible on
    both the light and the dark theme (magma's lowest cells vanished into the dark background,
    plasma's yellow into the light one)."""
    full = pg.colormap.get(name)
    positions = np.linspace(0.0, 1.0, 16)
    return pg.ColorMap(positions, full.map(low + (high - low) * positions, mode="byte"))


def set_plot_fonts(plot: pg.PlotWidget | pg.PlotItem, presentation: bool = False):
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    size = 15 if presentation else 10
    font = QFont()
    font.setPointSize(size)
    for name in ("left", "bottom", "right"):
        axis = item.getAxis(name)
        # "(x0.001)" beside λ or t reads as part of the symbol. pyqtgraph 0.14's
        # enableAutoSIPrefix(False) still scales by the current range (×1000 below 1) and then
        # never updates it, so tick numbers came out 1000× too large; no SI range at all avoids it.
        axis.setSIPrefixEnableRanges(())
        axis.enableAutoSIPrefix(False)
        axis.setTickFont(font)
        axis.label.setFont(font)
    item._presentation = presentation
    item.titleLabel.setText(item.titleLabel.text, size=f"{size + 2}pt")
    if getattr(item, "_title_parts", None):
        set_title(item, *item._title_parts)
    if item.legend is not None:  # the legend grows with the axes (and keeps growing for new rows)
        item.legend.setLabelTextSize(f"{size}pt")
        for _, label in item.legend.items:
            label.setText(label.text)
    if item.titleLabel.isVisible():
        fit_title(item)
    widget = plot if isinstance(plot, pg.PlotWidget) else None
    if widget is not None:
        widget.setMinimumSize(140, 110)  # let grids and splitters shrink plots instead of overlapping


def own_menus(widget: pg.PlotWidget) -> pg.PlotWidget:
    """Tie the lifetime of pyqtgraph's parentless Qt objects in ``widget`` to ``widget``.

    Every PlotItem (colour bars included) and ViewBox makes context menus without a Qt parent
    (PlotItem.ctrlMenu, ViewBox.menu) and WidgetGroup QObjects for their forms. Only Python owns
    them, through the reference cycles of pyqtgraph's objects, so once the plot was gone the
    cycle collector destroyed them, at whatever allocation it ran: once inside Qt's
    QObject::disconnect, which calls PySide's disconnectNotify while holding the signal-slot
    mutexes, and ~QObject then waited for a mutex its own thread held (a deadlock). They are
    held (``ownership.delete_after``) until the plot widget is destroyed, then deleted by Qt on
    the GUI thread; with ``destroyed`` connected straight to their deleteLater they stayed
    collectable until the event loop ran it. Not parented to the plot: a parented menu is
    repolished with the window at every theme switch (~270 menus a window).
    Call again after adding view boxes or colour bars; each object is tied once."""
    tied = widget.__dict__.setdefault("_tied_menus", set())
    owned = []
    for item in widget.scene().items():
        if isinstance(item, pg.PlotItem):
            owned += [item.ctrlMenu, getattr(item, "stateGroup", None)]
        if isinstance(item, pg.ViewBox) and item.menu is not None:
            owned += [item.menu, *item.menu.widgetGroups]
    fresh = [obj for obj in owned if obj is not None and obj.parent() is None and id(obj) not in tied]
    tied.update(map(id, fresh))
    delete_after(widget, fresh)
    return widget


def clear_plot(plot) -> None:
    """PlotItem.clear(), and the removed items deleted: a removed item is owned by Python alone,
    and pyqtgraph's items hold reference cycles, so only the cycle collector would free them
    (see own_menus)."""
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    removed = list(item.items)
    item.clear()
    for each in removed:
        if isinstance(each, QObject):
            each.deleteLater()


class _Restyled(QObject):
    def __init__(self, widget, callback):
        super().__init__(widget)
        self.callback = callback
        widget.installEventFilter(self)

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.StyleChange:
            self.callback(pg.getConfigOption("foreground"))
        return False


def follow_theme(widget, callback) -> None:
    """Call callback(foreground colour) now and after every theme switch, for what style.apply_theme
    cannot reach (a plot's own curves, a colour bar's axis); it restyles before Qt's StyleChange."""
    _Restyled(widget, callback)
    callback(pg.getConfigOption("foreground"))


def limit_ticks(axis: pg.AxisItem, count: int = 5) -> None:
    """At most about ``count`` major ticks (1-2-5 steps) and no minor ones: a colour bar over a
    wide range otherwise lists two dozen labels that run into each other."""
    original = axis.tickSpacing

    def spacing(min_val, max_val, size):
        span = abs(max_val - min_val)
        if not np.isfinite(span) or span <= 0:
            return original(min_val, max_val, size)
        raw = span / count
        magnitude = 10 ** np.floor(np.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        return [(float(step), 0)]

    axis.tickSpacing = spacing


class FittedAxis(pg.AxisItem):
    """A vertical axis as wide as the labels it shows now, not the widest within 10 px it showed
    before (pyqtgraph's hysteresis): a live run that laid the plot out at other heights on its
    way left a wider axis than a reopened session's, which draws the final data at once (1.8 %
    of nonattr-shallow's pixels differed, now and then). A vertical axis's labels depend on its
    height, not its width, so the width cannot feed back into them."""

    def _updateMaxTextSize(self, x: int):
        if self.orientation not in ("left", "right"):
            return super()._updateMaxTextSize(x)
        if x != self.textWidth:
            self.textWidth = x
            self._updateWidth()


def fit_text_space(axis: pg.AxisItem) -> None:
    """Let ``axis`` take, at its next drawing, exactly the room its tick labels need. pyqtgraph
    widens an axis for the widest labels it has drawn and narrows it only when they shrink by more
    than 10 px, so an axis that followed a live run kept room for labels long gone, and the same
    plot drawn afresh (a reopened session) was laid out up to 10 px apart (fig3-free's drift plot:
    99.36 % of a redrawn session's pixels the run's)."""
    axis.textWidth = axis.textHeight = 0  # the next labels drawn set them (AxisItem._updateMaxTextSize)
    axis.picture = None
    axis.update()


def sparse_log_labels(axis: pg.AxisItem) -> None:
    """On a log axis spanning about a decade pyqtgraph labels every minor tick (0.9, 0.8, …, 0.2)
    and the labels overlap: keep the labels of 1, 2 and 5 × 10ⁿ and leave the other ticks bare."""
    original = axis.logTickStrings

    def strings(values, scale, spacing):
        texts = original(values, scale, spacing)
        out = []
        for v, text in zip(values, texts):
            mantissa = 10 ** (float(v) - np.floor(float(v) + 1e-9))
            out.append(text if min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 0.05 else "")
        return out

    axis.logTickStrings = strings


def set_colorbar_font(colorbar: pg.ColorBarItem, presentation: bool = False) -> None:
    """Colour-bar tick labels and title grow with the plots' axes in presentation mode."""
    font = QFont()
    font.setPointSize(15 if presentation else 10)
    colorbar.axis.setTickFont(font)
    colorbar.axis.setWidth(None)  # re-fit the axis to the new labels
    title = colorbar.getAxis("bottom" if colorbar.horizontal else "left")  # holds "loss L"
    title.label.setFont(font)
    title._updateLabel()  # re-fit the axis to the title (pyqtgraph has no public call for a font)


def set_axis_colors(axis: pg.AxisItem, color) -> None:
    axis.setPen(color)
    axis.setTextPen(color)


def set_colorbar_colors(colorbar: pg.ColorBarItem, color) -> None:
    """The colour bar's value axis and its title in ``color``: the title ("loss L") sits on an axis
    of its own, which the theme's restyling of plot axes never reaches (dark on dark, unseen)."""
    set_axis_colors(colorbar.axis, color)
    for side in ("left", "bottom"):
        colorbar.getAxis(side).setTextPen(color)  # the title's colour follows the text pen
