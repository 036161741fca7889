"""One bridge that runs engine jobs (generators yielding ``Progress``) on a worker thread.

The GUI thread never computes. Updates are throttled to ~60 per second, and a new one is sent
only after the GUI has drawn the last: a job may yield far faster than a software-rendered
window can draw, and since partials are cumulative snapshots only the newest matters, so the
rest are dropped instead of queueing up behind a busy GUI. Pause, step and cancel are checked
between yields, which engine jobs keep well under 200 ms apart.
"""
from __future__ import annotations

import threading
import time
import traceback

from PySide6.QtCore import QObject, QThread, Signal, Slot

from engine.errors import EngineInputError
from engine.progress import Job, Progress
from engine.runtime import configure_torch_threads

MIN_EMIT_INTERVAL_S = 1 / 60


class _JobThread(QThread):
    progressed = Signal(object)   # Progress
    succeeded = Signal(object)    # the job's return value
    failed = Signal(str)
    cancelled = Signal(object)    # the last Progress seen (what was computed), or None

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
        return not self._resume.is_set()

    def run(self):
        configure_torch_threads()
        last_emit, pending, latest = 0.0, None, None
        try:
            while True:
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
                now = time.monotonic()
                due = self._gui_ready.is_set() and now - last_emit >= MIN_EMIT_INTERVAL_S
                if self._pause_after_next or due:
                    self._gui_ready.clear()
                    self.progressed.emit(latest)
                    last_emit, pending = now, None
                else:
                    pending = latest
                if self._pause_after_next:
                    self._pause_after_next = False
                    self._resume.clear()
        except EngineInputError as error:
            self.failed.emit(str(error))
        except Exception as error:  # an engine bug must not take the window down
            traceback.print_exc()
            self.failed.emit(f"{type(error).__name__}: {error}")


class JobRunner(QObject):
    """Runs one job at a time; the window's Run/Pause/Step/Cancel buttons talk to this.

    Signals from a thread that was cancelled and waited for are stale and dropped, so a new
    job never receives its predecessor's results.
    """

    progressed = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal(object)
    state_changed = Signal(str)  # "idle", "running", "paused"

    def __init__(self, parent=None):
        super().__init__(parent)
        self._thread: _JobThread | None = None

    @property
    def busy(self) -> bool:
        # Busy until the thread's last queued signal has been delivered, not just until it exits.
        return self._thread is not None

    @property
    def state(self) -> str:
        if self._thread is None:
            return "idle"
        return "paused" if self._thread.paused else "running"

    def start(self, job: Job, start_paused: bool = False):
        if self.busy:
            raise RuntimeError("a job is already running; cancel it first")
        thread = _JobThread(job, start_paused)
        thread.progressed.connect(self._relay_progress)
        thread.succeeded.connect(self._relay_success)
        thread.failed.connect(self._relay_failure)
        thread.cancelled.connect(self._relay_cancel)
        thread.finished.connect(self._on_thread_finished)
        self._thread = thread
        thread.start()
        self.state_changed.emit(self.state)

    def pause(self):
        if self.busy:
            self._thread.pause()
            self.state_changed.emit("paused")

    def resume(self):
        if self.busy:
            self._thread.resume()
            self.state_changed.emit("running")

    def step(self):
        if self.busy:
            self._thread.step()
            self.state_changed.emit("paused")

    def cancel(self, wait_ms: int = 0) -> bool:
        """Stop the job at its next yield. With ``wait_ms``, wait for the thread and forget it.

        Returns True once no thread of this runner is running.
        """
        thread = self._thread
        if thread is None:
            return True
        thread.cancel()
        if not wait_ms:
            return False
        if not thread.wait(wait_ms):
            return False
        self._forget(thread)
        return True

    def _forget(self, thread: _JobThread):
        if self._thread is thread:
            self._thread = None
            thread.deleteLater()
            self.state_changed.emit("idle")

    def _is_current(self) -> bool:
        return self._thread is not None and self.sender() is self._thread

    @Slot(object)
    def _relay_progress(self, update):
        if self._is_current():
            self.progressed.emit(update)
            self._thread.acknowledge()

    @Slot(object)
    def _relay_success(self, result):
        if self._is_current():
            self.succeeded.emit(result)

    @Slot(str)
    def _relay_failure(self, message):
        if self._is_current():
            self.failed.emit(message)

    @Slot(object)
    def _relay_cancel(self, last):
        if self._is_current():
            self.cancelled.emit(last)

    @Slot()
    def _on_thread_finished(self):
        self._forget(self.sender())
