"""A tab's parameter tree, its names column as wide as its longest name in the font it is drawn in."""

from __future__ import annotations

from pyqtgraph.parametertree import ParameterTree
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QHeaderView

from ..ownership import own_parameter_tree


def all_parameters(group):
    for child in group.children():
        yield child
        yield from all_parameters(child)


class ParameterPanel(ParameterTree):
    """Names whole, values in the rest. ParameterTree sizes both columns to their contents, and
    the longest value ("deep construction (Fig. 3)") then cut every name short; so the names
    column is fixed to the longest name. It is sized again whenever the tree's font changes: the
    window's style sheet (its font size) is applied after the dock is built, and a width taken
    from the default font cut "l (hidden neurons)" to "l (hidden neuro…" (seen comparing
    screenshots with those of 74c1e6a, when the style sheet was still the application's)."""

    def __init__(self, parameters, parent=None):
        super().__init__(parent, showHeader=False)
        self.setParameters(parameters, showTop=False)
        own_parameter_tree(self)  # pyqtgraph leaves its items' helpers parentless (gui/ownership.py)
        self._titles = [p.title() for p in all_parameters(parameters)]
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Fixed)
        self.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.size_names()

    def names_width(self) -> int:
        widest = max((self.fontMetrics().horizontalAdvance(title) for title in self._titles), default=0)
        return widest + 2 * self.indentation() + 12  # two levels of groups, and a margin

    def size_names(self) -> None:
        self.setColumnWidth(0, self.names_width())

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.size_names()
