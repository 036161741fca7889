"""Qt-free tab models: what each tab holds and how it changes, apart from how it is drawn.

A model owns a tab's result and the state that acting on it needs (the minima tab's split, λ drag
and live network; the topology tab's result and its context), takes requests through its public
methods and tells listeners what to draw as typed, frozen stage states. It imports no Qt and no
pyqtgraph, so it is tested headless (tests/gui/models/); the workspace that holds it is layout
and routing: a table from each stage state's type to the view method that draws it.
"""

from __future__ import annotations


class Listeners:
    """A tiny signal of the model's own (no Qt): callables connected to it are called, in the
    order they were connected, with what ``emit`` is given."""

    def __init__(self):
        self._callbacks: list = []

    def connect(self, callback) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):
            callback(*args)
