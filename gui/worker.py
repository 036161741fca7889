"""One bridge that runs engine jobs (generators yielding ``Progress``) on a worker thread.

The GUI thread never computes. Updates are throttled to ~60 per second, and a new one is sent
only after the GUI has drawn the last: a job may yield far faster than a software-rendered
window can draw, and since partials are cumulative snapshots only the newest matters, so the
rest are dropped instead of queueing up behind a busy GUI. Pause, step and cancel are checked
between yields, which engine jobs keep close together (docs/ARCHITECTURE.md, "The job protocol").
"""

from __future__ import annotations

import threading
import time
import traceback

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress
from engine.core.runtime import configure_torch_threads

MIN_EMIT_INTERVAL_S = 1 / 60


class _JobThread(QThread):
    progressed = Signal(object)  # Progress
    succeeded = Signal(object)  # the job's return value
    failed = Signal(str)
    cancelled = Signal(object)  # the last Progress seen (what was computed), or None

    def __init__(self, job: Job, start_paused: bool = False):
        super().__init__()
        self._job = job
        self._resume = threading.Event()
        if not start_paused:
            self._resume.set()
        self._cancel = threading.Event()
        self._gui_ready = threading.Event()  # the GUI has handled the last update sent
        self._gui_ready.set()
        self._pause_after_next = False

    # Control, called from the GUI thread.
    def pause(self):
        if not self._cancel.is_set():  # a cancelled (or superseded) job runs on to its end
            self._resume.clear()

    def resume(self):
        self._pause_after_next = False
        self._resume.set()

    def step(self):
        self._pause_after_next = True
        self._resume.set()

    def cancel(self):
        self._cancel.set()
        self._resume.set()

    def acknowledge(self):
        """The GUI has drawn the last update; the next may be sent."""
        self._gui_ready.set()

    @property
    def paused(self) -> bool:
        # A step in progress counts as paused: it pauses by itself after one yield. A cancelled
        # job is winding down, not paused.
        return not self._cancel.is_set() and (not self._resume.is_set() or self._pause_after_next)

    def run(self):
        configure_torch_threads()
        last_emit, pending, latest = 0.0, None, None
        try:
            while True:
                if not self._resume.is_set():
                    # A paused view shows the job's latest state, not the last one the throttle let by.
                    if pending is not None:
                        self.progressed.emit(pending)
                        last_emit, pending = time.monotonic(), None
                    self._resume.wait()
                if self._cancel.is_set():
                    self._job.close()
                    if pending is not None:
                        self.progressed.emit(pending)
                    self.cancelled.emit(latest)
                    return
                try:
                    latest = next(self._job)
                except StopIteration as done:
                    if pending is not None:
                        self.progressed.emit(pending)
                    self.succeeded.emit(done.value)
                    return
                update = _with_unsent_partial(latest, pending)
                now = time.monotonic()
                due = self._gui_ready.is_set() and now - last_emit >= MIN_EMIT_INTERVAL_S
                if self._pause_after_next or due:
                    self._gui_ready.clear()
                    self.progressed.emit(update)
                    last_emit, pending = now, None
                else:
                    pending = update
                if self._pause_after_next:
                    self._pause_after_next = False
                    if not self._cancel.is_set():  # a Cancel during the step must not be undone
                        self._resume.clear()
        except EngineInputError as error:
            self.failed.emit(str(error))
        except Exception as error:  # an engine bug must not take the window down
            traceback.print_exc()
            self.failed.emit(f"{type(error).__name__}: {error}")


def _with_unsent_partial(update: Progress, held: Progress | None) -> Progress:
    """``update``, carrying the partial of the update the throttle held back if it has none of its
    own. Partials are snapshots, so the newest one is all a view needs; but a sweep yields a
    partial only when cells arrive and plain progress in between, and replacing the held update
    by the next one dropped its cells: the map lagged the count until the next arrival."""
    if update.partial is None and held is not None and held.partial is not None:
        return Progress(update.fraction, update.message, held.partial)
    return update


class JobRunner(QObject):
    """Runs one job at a time; the window's Run/Pause/Step/Cancel buttons talk to this.

    ``submit`` is the one way to start a job. If one is running it is cancelled, its remaining
    signals are dropped (they are stale: the user moved on), and the new job starts when the
    old thread has finished -- never after a timed wait, so two jobs never run at once.
    """

    started = Signal(object)  # the tag given to submit, as the job's thread starts
    progressed = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal(object)
    state_changed = Signal(str)  # "idle", "running", "paused"

    def __init__(self, parent=None):
        super().__init__(parent)
        self._thread: _JobThread | None = None
        self._stale: set[_JobThread] = set()  # cancelled, superseded or ended: their signals are dropped
        self._waiting: tuple | None = None  # (job, start_paused, step, tag) to start next

    @property
    def busy(self) -> bool:
        # Busy until the thread's last queued signal has been delivered, not just until it exits.
        return self._thread is not None or self._waiting is not None

    @property
    def active(self) -> bool:
        """A job that still counts runs or waits; a superseded one finishing its last yield does not."""
        return self._waiting is not None or (self._thread is not None and self._thread not in self._stale)

    @property
    def state(self) -> str:
        if self._thread is None or self._thread in self._stale:
            return "running" if self._waiting else "idle"
        return "paused" if self._thread.paused else "running"

    def submit(self, job: Job, start_paused: bool = False, step: bool = False, tag=None) -> None:
        """Run ``job`` next (``step``: start paused and advance one yield). A job submitted while
        another waits replaces it; the waiting one is closed without running."""
        if self._waiting is not None:
            self._waiting[0].close()
        self._waiting = (job, start_paused or step, step, tag)
        if self._thread is None:
            self._start_waiting()
        else:
            self._supersede()
        self.state_changed.emit(self.state)

    def start(self, job: Job, start_paused: bool = False) -> None:
        if self.busy:
            raise RuntimeError("a job is already running; submit() replaces it, cancel() stops it")
        self.submit(job, start_paused)

    def discard(self) -> None:
        """Stop everything: the waiting job never starts, the running one is cancelled and its
        remaining signals (even its partial) are dropped."""
        if self._waiting is not None:
            self._waiting[0].close()
            self._waiting = None
        if self._thread is not None:
            self._supersede()
        self.state_changed.emit(self.state)

    def _supersede(self):
        self._stale.add(self._thread)
        self._thread.cancel()

    def _start_waiting(self):
        job, start_paused, step, tag = self._waiting
        self._waiting = None
        thread = _JobThread(job, start_paused)
        thread.progressed.connect(self._relay_progress)
        thread.succeeded.connect(self._relay_success)
        thread.failed.connect(self._relay_failure)
        thread.cancelled.connect(self._relay_cancel)
        thread.finished.connect(self._on_thread_finished)
        self._thread = thread
        self.started.emit(tag)
        thread.start()
        if step:
            thread.step()

    def pause(self):
        if self._thread is not None:
            self._thread.pause()
            self.state_changed.emit(self.state)

    def resume(self):
        if self._thread is not None:
            self._thread.resume()
            self.state_changed.emit(self.state)

    def step(self):
        if self._thread is not None:
            self._thread.step()
            self.state_changed.emit(self.state)  # "paused", unless it was cancelled and winds down

    def cancel(self) -> None:
        """Stop the job at its next yield; its partial result and ``cancelled`` still arrive.
        A job still waiting for a superseded one to wind down is the job the user sees: it is
        dropped unstarted and ``cancelled`` (no partial) says so at once (cancelling the
        superseded one instead let the waiting one start and run after Cancel)."""
        if self._waiting is not None:
            self._waiting[0].close()
            self._waiting = None
            self.state_changed.emit(self.state)
            self.cancelled.emit(None)
        elif self._thread is not None:
            self._thread.cancel()
            self.state_changed.emit(self.state)  # a paused job is running again, to its end

    def wait(self, ms: int) -> bool:
        """Block until no thread runs (only for shutdown); True if it ended in time. An ended
        thread is let go here: the window may be deleted before its ``finished`` arrives, and
        a runner still holding it left it (alive, Python's alone) to the cycle collector. The
        state machine saw it 5 times in 50 windows, each a preview started just before a close."""
        thread = self._thread
        if thread is None:
            return True
        if not thread.wait(ms):
            return False
        self._stale.discard(thread)
        self._thread = None
        thread.deleteLater()
        return True

    def _is_current(self) -> bool:
        sender = self.sender()  # None once wait() has let its thread go
        return sender is not None and sender is self._thread and sender not in self._stale

    @Slot(object)
    def _relay_progress(self, update):
        thread = self.sender()
        if self._is_current():
            self.progressed.emit(update)
        # The next update may come once this one is drawn. A zero-delay timer fires only after
        # the repaints it caused and the input that waited: acknowledging at once let a stream
        # of updates starve Qt's timers (a short timer hardly ticked at all).
        if thread is not None:
            QTimer.singleShot(0, lambda: thread is self._thread and thread.acknowledge())

    def _relay_end(self, signal, value):
        if self._is_current():
            # Its end has been said: it no longer counts as active, though its thread may take a
            # turn of the loop more to finish (a tab that asked "does a job follow?" on the
            # deferred run_finished saw this one still running and kept a failed load's fields).
            self._stale.add(self._thread)
            self.state_changed.emit(self.state)  # the controls say so now, not a turn later
            signal.emit(value)

    @Slot(object)
    def _relay_success(self, result):
        self._relay_end(self.succeeded, result)

    @Slot(str)
    def _relay_failure(self, message):
        self._relay_end(self.failed, message)

    @Slot(object)
    def _relay_cancel(self, last):
        self._relay_end(self.cancelled, last)

    @Slot()
    def _on_thread_finished(self):
        thread = self.sender()
        if thread is None:  # let go by wait() already
            return
        self._stale.discard(thread)
        if self._thread is thread:
            self._thread = None
            thread.deleteLater()
            if self._waiting is not None:
                self._start_waiting()
            self.state_changed.emit(self.state)
