"""Small reusable widgets."""

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget


def connected(obj, **slots):
    """``obj`` with each of its signals named in ``slots`` connected to its slot: use this, not
    a constructor's keyword (``QAction(..., triggered=f)``). PySide6 (6.11.3) keeps a
    ``QMetaObject.Connection`` for every signal a constructor connects, for the process's life,
    after its object and slot are gone: 31 for each main window, so a closed window left them
    (tests/gui/test_ownership.py; found counting the soak's objects by type)."""
    for signal, slot in slots.items():
        getattr(obj, signal).connect(slot)
    return obj


class SlideTitle(QWidget):
    """The preset's title and its one line on what to look at, so every screenshot is a slide."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("slideTitle")
        self.description = ""  # the preset's one line
        self.title = QLabel(objectName="slideTitleText")
        self.subtitle = QLabel(objectName="slideSubtitle")
        for label in (self.title, self.subtitle):
            label.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.subtitle)
        self.hide()

    def show_slide(self, title: str, subtitle: str = "") -> None:
        self.description = subtitle
        self.title.setText(title)
        self.show_changes("")
        self.setVisible(bool(title))

    def show_changes(self, changes: str) -> None:
        """Say after the preset's line what the panel changed since, so a slide never claims
        numbers its run no longer has: in the same paragraph, not a line of its own, which in
        presentation mode took the height of a third line from the plots."""
        text = " ".join(filter(None, (self.description, changes and f"Changed since the preset: {changes}.")))
        self.subtitle.setText(text)
        self.subtitle.setVisible(bool(text))


class MessageBar(QWidget):
    """A dismissable one-line message above the views: errors stay visible but never block."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.label = QLabel()
        self.label.setWordWrap(True)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.clicked.connect(self.clear)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.hide()

    @property
    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def show_error(self, message: str):
        self.setProperty("kind", "error")
        self._show(message)

    def show_info(self, message: str):
        self.setProperty("kind", "info")
        self._show(message)

    def _show(self, message: str):
        self.style().unpolish(self)
        self.style().polish(self)
        self.label.setText(message)
        self.show()

    def clear(self):
        self.label.clear()
        self.hide()


class ActionButton(QToolButton):
    """A tool bar's button for one action, following the action's changes itself.

    Qt 6.11's QToolButton answers each change of its default action (enabled, checked, text,
    icon) by calling setDefaultAction again, which connects the action's changed() once more:
    the run controls gained 8 connections per run (12 → 100 after 11 runs; 144 bytes each, and
    every later change of an action calls all of its connections). Measured with
    tests/gui/test_action_button.py."""

    def __init__(self, action, parent=None):
        super().__init__(parent)
        self.setDefaultAction(action)

    def actionEvent(self, event):
        action = event.action()
        if event.type() != QEvent.Type.ActionChanged or action is not self.defaultAction():
            super().actionEvent(event)
            return
        self.setText(action.iconText())
        self.setIcon(action.icon())
        self.setToolTip(action.toolTip())
        self.setStatusTip(action.statusTip())
        self.setCheckable(action.isCheckable())
        self.setChecked(action.isChecked())
        self.setEnabled(action.isEnabled())
