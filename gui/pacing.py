"""Live updates drawn one part per turn of the event loop, each part at its own pace.

A live run changes every view of a workspace at once. Drawn together, Qt repaints them all in
one turn of the event loop, a long one for the topology tab under Mesa's llvmpipe, during which
nothing else (a click, a timer, the next update) is handled. ``Pacer`` keeps the latest pending
draw of each named part and runs one per turn, so a turn costs one part's repaint.
Parts that are costly and change slowly (plots) run at most every ``intervals[name]`` seconds;
the rest as often as turns allow. A final result is drawn one part per turn with no part held
to its interval (``drain``: the tab's one long last repaint became a few short turns), or at
once (``flush``: a replayed frame, a session, whose next step needs it drawn).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer


class Pacer(QObject):
    def __init__(
        self, intervals: dict[str, float] | None = None, parent=None, clock: Callable[[], float] = time.monotonic
    ):
        super().__init__(parent)
        self.intervals = dict(intervals or {})
        self._clock = clock  # seconds; a test passes its own, to count intervals without timing them
        self._pending: dict[str, Callable[[], None]] = {}  # insertion order: oldest first
        self._last: dict[str, float] = {}
        self._draining = False  # every pending part is due now (drain)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self._run_next)

    def submit(self, name: str, draw: Callable[[], None]) -> None:
        """Draw ``name`` with ``draw`` in its turn; a newer draw of a part replaces its older one."""
        self._pending.pop(name, None)
        self._pending[name] = draw
        self._schedule()

    def flush(self) -> None:
        """Draw every pending part now."""
        self._timer.stop()
        self._draining = False
        while self._pending:
            name, draw = next(iter(self._pending.items()))
            del self._pending[name]
            self._last[name] = self._clock()
            draw()

    def drain(self) -> None:
        """Draw every pending part, oldest first, one per turn and none held to its interval;
        ``pending`` is empty once all are drawn."""
        self._draining = True
        self._timer.stop()
        self._schedule()

    def clear(self) -> None:
        """Forget pending draws (a reset: they would draw the old run over the empty views)."""
        self._timer.stop()
        self._pending.clear()
        self._last.clear()
        self._draining = False

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(self._pending)

    def _due(self, name: str) -> float:
        return -1e9 if self._draining else self._last.get(name, -1e9) + self.intervals.get(name, 0.0)

    def _schedule(self) -> None:
        if self._pending and not self._timer.isActive():
            wait = min(self._due(name) for name in self._pending) - self._clock()
            self._timer.start(max(0, round(1000 * wait)))

    def _run_next(self) -> None:
        now = self._clock()
        due = [name for name in self._pending if self._due(name) <= now]
        if due:
            name = due[0]  # the oldest waiting part that may run
            draw = self._pending.pop(name)
            self._last[name] = now
            draw()
        self._draining = self._draining and bool(self._pending)
        self._schedule()
