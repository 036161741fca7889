"""Colours and fonts shared by every view, so neuron k has one colour everywhere.

Two themes, both high contrast for projectors. The stylesheet in resources/style.qss is a
template whose @tokens take the theme's colours and the font size, so light and dark (and
presentation's larger type) come from one file rather than drifting copies.
"""

from __future__ import annotations

import re

import pyqtgraph as pg
from pyqtgraph.opengl.GLViewWidget import GLViewMixin
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPalette
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QToolButton, QWidget

import resources

# Okabe–Ito: distinguishable for colour-blind viewers and on projectors; defined with the
# Qt-free view states, whose captions colour by neuron too.
from .present import NEURON_COLORS

STYLESHEET = resources.path("style.qss")

THEMES = {
    "light": {
        "bg": "#ffffff",
        "panel": "#ecece8",
        "fg": "#111111",
        "muted": "#858585",
        "border": "#c0c0bc",
        "accent": "#0072B2",
        "gl": "#f7f7f4",
        "error_bg": "#fde8e4",
        "error_fg": "#8a2b00",
        "info_bg": "#e6f1fa",
    },
    "dark": {
        "bg": "#121417",
        "panel": "#22262b",
        "fg": "#f2f2f2",
        "muted": "#7a7f86",
        "border": "#3a3f45",
        "accent": "#56B4E9",
        "gl": "#181b1f",
        "error_bg": "#4a1e12",
        "error_fg": "#ffcbb8",
        "info_bg": "#13304a",
    },
}
FONT_PT = {False: 10.5, True: 16}  # normal, presentation
TITLE_PT = {False: 14, True: 24}
_theme = "light"


def theme_colors() -> dict:
    """The current theme's colours, for views created after the theme was chosen."""
    return THEMES[_theme]


def neuron_color(k: int) -> QColor:
    return QColor(NEURON_COLORS[k % len(NEURON_COLORS)])


def stylesheet(theme: str = "light", presentation: bool = False) -> str:
    colors = dict(THEMES[theme], font=f"{FONT_PT[presentation]}pt", title_font=f"{TITLE_PT[presentation]}pt")
    return re.sub(r"@(\w+)", lambda m: colors.get(m.group(1), m.group(0)), STYLESHEET.read_text())


def set_icon(target, icon: QIcon) -> None:
    """Give an action or tool button ``icon``, repainted in the text colour on dark themes.

    Qt's standard icons are drawn dark and vanish on a dark background; the plain icon is
    kept as a property so a theme switch can repaint it again.
    """
    target.setProperty("plainIcon", icon)
    if _theme != "dark" or icon.isNull():
        target.setIcon(icon)
        return
    pixmap = icon.pixmap(32, 32)
    painter = QPainter(pixmap)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
    painter.fillRect(pixmap.rect(), QColor(THEMES[_theme]["fg"]))
    painter.end()
    target.setIcon(QIcon(pixmap))


def palette(theme: str, app) -> QPalette:
    """The widget palette for the theme. The stylesheet sets the text colour everywhere, but
    buttons, tables, headers and sliders take their backgrounds from the palette: with the light
    palette under the dark theme the inspector was white text on white."""
    if theme == "light":
        return app.style().standardPalette()
    c = {k: QColor(v) for k, v in THEMES[theme].items()}
    pal = QPalette()
    R = QPalette.ColorRole
    for role, color in (
        (R.Window, c["bg"]),
        (R.Base, c["bg"]),
        (R.AlternateBase, c["panel"]),
        (R.Button, c["panel"]),
        (R.ToolTipBase, c["panel"]),
        (R.Text, c["fg"]),
        (R.WindowText, c["fg"]),
        (R.ButtonText, c["fg"]),
        (R.ToolTipText, c["fg"]),
        (R.BrightText, c["fg"]),
        (R.PlaceholderText, c["muted"]),
        (R.Mid, c["border"]),
        (R.Dark, c["border"]),
        (R.Light, c["panel"]),
        (R.Midlight, c["panel"]),
        (R.Highlight, c["accent"]),
        (R.HighlightedText, c["bg"]),
        (R.Link, c["accent"]),
    ):
        pal.setColor(role, color)
    for role in (R.Text, R.WindowText, R.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, c["muted"])
    return pal


def apply_theme(app, theme: str = "light", presentation: bool = False, window=None) -> None:
    """Restyle the widgets, and the plot and 3D backgrounds Qt stylesheets cannot reach."""
    global _theme
    _theme, colors = theme, THEMES[theme]
    pg.setConfigOptions(background=colors["bg"], foreground=colors["fg"])  # plots made later
    # The palette is the application's: under a style sheet Qt takes widgets' colours from the
    # application palette, not a parent's (the inspector went light under the dark theme). The
    # style sheet is only ever a window's (or a headless workspace's): an app-wide one
    # repolishes every widget of the process, pyqtgraph's ~270 parentless menus per window of
    # plots included (a theme switch grew to seconds as windows came and went), and Qt keeps
    # ~600 bytes for every widget ever made under it (measured with heaptrack: each closed
    # window left 0.31 MB in the heap, 0.12 MB without; and 1.9 MB against 12 KB for 3,000
    # plain widgets made and deleted with and without one), part of the soak's RSS trend.
    app.setPalette(palette(theme, app))
    if window is None:
        return
    window.setStyleSheet(stylesheet(theme, presentation))
    for target in window.findChildren(QAction) + window.findChildren(QToolButton):
        plain = target.property("plainIcon")
        if plain is None and isinstance(target, QAction) and not target.icon().isNull():
            plain = target.icon()
        if plain is not None:
            set_icon(target, plain)
    # Every plot, also those a workspace shows only for some presets (a view made visible after
    # the switch would otherwise keep the old theme's background under the new theme's text).
    plots = {id(p): p for w in window.workspaces.values() for p in w.plot_widgets().values()}
    plots.update({id(p): p for p in window.findChildren(pg.PlotWidget)})
    gl_views = {id(v): v for w in window.workspaces.values() for v in w.gl_views()}
    # pyqtgraph's GL mixin, not the app's view class: the style is below the views, never above
    gl_views.update({id(v): v for v in window.findChildren(QWidget) if isinstance(v, GLViewMixin)})
    for plot in plots.values():
        plot.setBackground(colors["bg"])
        # A plain colour needs no cache. pyqtgraph's default kept a pixmap of every plot shown,
        # at its size: 21 of the 65 MB of heap a window gained by showing every preset once
        # (benchmarks/heap_tour.py). Without it the view paints the fill itself.
        plot.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        item = plot.getPlotItem()
        for name in ("left", "bottom", "right", "top"):
            axis = item.getAxis(name)
            axis.setPen(colors["fg"])
            axis.setTextPen(colors["fg"])
            # An axis draws its grid across the whole plot, so every change of a curve repainted
            # it: a replay of its tick labels, the costliest part of a plot's repaint under a
            # live run. Cached as a picture it is redrawn only when its range or style changes.
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        if item.legend is not None:  # a light card under light text would be unreadable
            card = pg.mkColor(colors["bg"])
            card.setAlpha(200)
            item.legend.setBrush(pg.mkBrush(card))
            item.legend.setLabelTextColor(colors["fg"])
            for _, label in item.legend.items:  # the colour applies when the text is set again
                label.setText(label.text)
        item.titleLabel.setAttr("color", colors["fg"])
        item.titleLabel.setText(item.titleLabel.text)
    for view in gl_views.values():
        view.setBackgroundColor(pg.mkColor(colors["gl"]))
        if hasattr(view, "set_ink"):
            view.set_ink(colors["fg"])
