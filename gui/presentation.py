"""Presentation mode: one toggle for a projector — full screen, no parameter panel, large
type, thick lines — and the light/dark theme it (and the normal window) uses.

Entering remembers how the window looked and leaving restores exactly that, so a talk can
flip in and out without losing the layout. Nothing here touches results or parameters.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication

from .style import THEMES, apply_theme
from .widgets import connected


def remembered_theme() -> str:
    """The theme the View menu chose last: the window's (and a headless clip's) at start-up."""
    theme = QSettings().value("view/theme", "light")
    return theme if theme in THEMES else "light"


class Presentation(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.on = False
        self.theme = remembered_theme()
        self._saved = None  # (geometry, window state, parameter dock visible)
        self.toggle_action = connected(
            QAction("&Presentation mode", window, checkable=True, shortcut=QKeySequence("F11")), toggled=self.set_on
        )
        self.theme_actions = QActionGroup(window)
        for name in THEMES:
            action = QAction(
                f"{name.title()} theme (high contrast)", window, checkable=True, checked=name == self.theme
            )
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            self.theme_actions.addAction(action)
        self._restyle()

    def add_to_menu(self, menu):
        menu.addAction(self.toggle_action)
        menu.addSeparator()
        for action in self.theme_actions.actions():
            menu.addAction(action)

    def set_theme(self, name: str, remember: bool = True):
        """Switch theme; ``remember`` makes it the next session's default (the menu does, a
        command-line flag does not)."""
        self.theme = name
        if remember:
            QSettings().setValue("view/theme", name)
        for action in self.theme_actions.actions():
            action.setChecked(action.text().lower().startswith(name))
        self._restyle()

    def set_on(self, on: bool):
        if on == self.on:
            return
        self.on = on
        w = self.window
        if on:
            self._saved = (w.saveGeometry(), w.windowState(), w.parameter_dock.isVisible())
            w.parameter_dock.hide()
            w.setGeometry(w.screen().geometry())  # fill the screen without a window manager too
            w.showFullScreen()
        else:
            geometry, state, dock_visible = self._saved
            w.setWindowState(state)
            w.restoreGeometry(geometry)
            w.parameter_dock.setVisible(dock_visible)
        for workspace in w.workspaces.values():
            workspace.set_presentation(on)
        self._restyle()
        if self.toggle_action.isChecked() != on:
            self.toggle_action.setChecked(on)

    def _restyle(self):
        apply_theme(QApplication.instance(), self.theme, self.on, self.window)
