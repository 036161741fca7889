"""A clip's own widgets, never shown on screen: how a scene gives them a Qt owner and how it
deletes them (both scenes, gui.clips.scene and gui.clips.minima_scene, use these)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from shiboken6 import isValid


def adopt_off_screen(widget, owner) -> None:
    """Make ``widget`` (a clip's own plot) an off-screen window that ``owner`` (the workspace,
    a QWidget of the window) owns. Only Python owned these plots before, through pyqtgraph's
    reference cycles, so the cycle collector destroyed them, at whatever allocation and on
    whatever thread it ran (plot_style.own_menus says how that deadlocked); now Qt deletes
    them with the window, or ``dispose_widgets`` when the scene is dropped. Shown off screen
    (MinimaScene.show): a widget never shown gets no resize events, so the compositor's resize
    would not lay it out (axes kept their first width, cut labels)."""
    widget.setParent(owner, Qt.WindowType.Window)
    widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)


def dispose_widgets(widgets) -> None:
    """Delete a dropped scene's own widgets on the GUI thread, at the event loop's next turn."""
    for widget in widgets:
        if isValid(widget):
            widget.hide()
            widget.deleteLater()
