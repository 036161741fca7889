"""The application controller: the one owner of running work and of the app's shared state.

Everything that starts work asks this object for it; nothing reaches through the window into
another part's widgets, and nothing outside this object connects to a lane's signals. It owns
seven job lanes, each a ``JobRunner`` (one job at a time, stale updates dropped, see
gui/worker.py):

- ``main``: Run, Step, re-slices, splits, loads: what the run controls pause and cancel;
- ``preview``: the λ drag's coarse slices (and the drag slices made ahead of the first move);
- ``probe``: the Hessian at the previewed λ, started only once its preview has been drawn;
- ``walk``: the clip dock's slices along λ before a paper B clip renders;
- ``setup``: paper A's network laid out before a run (its data, initial weights and Q(c));
- ``raster``: the minima tab's slice curves counted per pixel for the box each view shows;
- ``follow``: the Training run tab following a run folder (or training its demo run): it goes on
  while other tabs run their jobs.

Every other worker (a clip render, an encoder, the live recorder and their threads) is
registered with ``adopt``, so ``busy``, ``cancel_all`` and ``shutdown`` cover them too.

It also holds what several parts read: the preset loaded last, how the last main job ended,
the λ the minima tab shows and the replay frame, each published as a signal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from engine.core.errors import EngineInputError
from engine.core.progress import Job

from .worker import JobRunner

LANES = ("main", "preview", "probe", "walk", "setup", "raster", "follow")
# The C heap's free pages go back to the system once every job has been idle this long (see
# engine.core.runtime.release_free_heap): longer than between a drag's previews, short enough
# that a window kept busy still gets there (a much longer wait, under the soak's pace of actions,
# seldom came). A release takes time in proportion to what it gives back.
RELEASE_HEAP_AFTER_MS = 500


class Worker(Protocol):
    """What ``adopt`` needs of a worker that is not a job lane (a clip render, an encoder, the
    live recorder): whether it still runs a thread or waits for one, how to stop it without a
    result, and how to wait for its threads to end."""

    @property
    def busy(self) -> bool: ...

    def cancel(self) -> None: ...

    def wait(self, ms: int) -> bool: ...


class AppController(QObject):
    message = Signal(str, str)  # ("error" | "info", text): the message bar shows it
    run_started = Signal(object, bool)  # (owner workspace, keep) as the main job's thread starts
    run_finished = Signal()  # after a main job succeeded, failed or was cancelled
    main_discarded = Signal()  # the main lane's jobs were dropped unended (Reset, a preset, a session)
    # The main lane's signals, relayed after the owner has drawn (what the status bar follows).
    progressed = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal(object)
    state_changed = Signal(str)  # "idle", "running", "paused"
    preset_changed = Signal(str)
    lambda_changed = Signal(float)  # the minima tab's λ (what a clip key frame captures)
    frame_changed = Signal(int)  # the replay frame shown
    workspace_requested = Signal(str)  # a workspace key: the window shows that tab
    heap_released = Signal()  # every job idle a while: the C heap's free pages are given back

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lanes: dict[str, JobRunner] = {name: JobRunner(self) for name in LANES}
        self.workspaces: dict[str, Any] = {}  # key -> workspace, each registered once
        self.preset_name: str | None = None
        self.last_outcome = ""  # "succeeded", "failed" or "cancelled": how the last main job ended
        self.last_error = ""  # why the last main job failed
        self.lam: float | None = None
        self.frames: dict[str, int] = {}  # workspace key -> its replay frame (set_frame)
        self._owner = None  # whose main job runs; None once it was superseded
        self._follow: Callable | None = None  # makes the probe job from the preview's result
        self._calls: dict[str, dict[str, Callable]] = {name: {} for name in LANES if name != "main"}
        self._workers: list[Worker] = []  # adopted: clip renders, encoders, the live recorder
        self._clip_service: Callable | None = None  # the clip dock's render(clip, out)
        self._release_timer = QTimer(self, singleShot=True, interval=RELEASE_HEAP_AFTER_MS)
        self._release_timer.timeout.connect(self._release_heap)
        self._finished_timer = QTimer(self, singleShot=True, interval=0)  # run_finished, once drawn
        self._finished_timer.timeout.connect(self._announce_finished)
        for lane in self.lanes.values():
            lane.state_changed.connect(self._on_lane_state)
        main = self.lanes["main"]
        main.started.connect(self._on_started)
        main.progressed.connect(self._on_progress)
        main.succeeded.connect(self._on_succeeded)
        main.failed.connect(self._on_failed)
        main.cancelled.connect(self._on_cancelled)
        main.state_changed.connect(self.state_changed)
        for name in self._calls:  # each lane's signals go to the callbacks of its current job
            lane = self.lanes[name]
            lane.progressed.connect(lambda update, n=name: self._calls[n].get("progress", _ignore)(update))
            lane.succeeded.connect(lambda result, n=name: self._calls[n].get("result", _ignore)(result))
            lane.failed.connect(lambda text, n=name: self._calls[n].get("failure", self.error)(text))

    # ---------------------------------------------------------------- the main lane
    @property
    def main(self) -> JobRunner:
        """The main lane, for inspection (tests); work starts through ``start`` and ``run``."""
        return self.lanes["main"]

    def start(self, owner, job: Job, keep: bool = False, step: bool = False) -> None:
        """Run ``job`` on the main lane for ``owner`` (a workspace, which draws its updates). A
        running job is cancelled and its remaining updates dropped; this one starts when that
        thread has finished. Unless ``keep``, the owner's views are cleared as it starts."""
        self.main.submit(job, step=step, tag=(owner, keep))

    def run(self, workspace, steps: int | None = None, step: bool = False) -> None:
        """Run: ``workspace``'s job from its parameters (EngineInputError: nothing started), on
        the main lane, or where the workspace follows its own (``workspace.follow``)."""
        job = workspace.make_job(steps=steps)
        if getattr(workspace, "lane", "main") == "main":
            self.start(workspace, job, step=step)
        else:
            workspace.follow(job)

    def load_preset(self, name: str, run: bool | None = None, steps: int | None = None):
        """Open preset ``name`` in its workspace and (by default, its ``autorun``) run it; the
        one path the window and the headless commands take, so both draw the same run.
        EngineInputError, with every value left as it was, for an unknown preset or workspace
        and a value its parameters refuse; a job that cannot be made leaves the preset loaded."""
        from .presets import apply_values, preset_named

        preset = preset_named(name)
        workspace = self.workspaces.get(preset.workspace)
        if workspace is None:
            raise EngineInputError(f"preset {name!r} names unknown workspace {preset.workspace!r}")
        try:
            apply_values(workspace.parameters, preset.values)  # all of them or none
        except EngineInputError as error:
            raise EngineInputError(f"preset {name!r}: {error}") from None
        self.discard(*self.lanes_for(workspace))
        self.workspace_requested.emit(preset.workspace)
        self.set_preset(name)  # what a clip of this run names as its preset
        workspace.reset()
        if preset.autorun if run is None else run:
            self.run(workspace, steps=steps)
        return preset

    @property
    def run_state(self) -> str:
        return self.main.state

    @property
    def running(self) -> bool:
        """A main job runs or waits (a live run owns the views: the replay waits for it)."""
        return self.main.busy

    @property
    def run_active(self) -> bool:
        """A main job that still counts runs or waits (not one superseded and winding down)."""
        return self.main.active

    def pause(self) -> None:
        self.main.pause()

    def resume(self) -> None:
        self.main.resume()

    def step(self) -> None:
        self.main.step()

    def cancel(self) -> None:
        """Cancel: the main job stops at its next yield, its results so far kept."""
        self.main.cancel()

    # ---------------------------------------------------------------- the other lanes
    def submit(
        self,
        lane: str,
        job: Job,
        on_result: Callable[[Any], None],
        on_progress: Callable | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        """Run ``job`` on ``lane`` (not main), replacing what runs or waits there; its updates
        and result go to these callbacks only (a failure, by default, to the message bar)."""
        if lane == "main":
            raise ValueError("the main lane's jobs start with start() or run()")
        calls = {"result": on_result, "progress": on_progress, "failure": on_failure}
        self._calls[lane] = {kind: call for kind, call in calls.items() if call is not None}
        self.lanes[lane].submit(job)

    def preview(
        self, job: Job, follow: Callable[[Any], Job | None], on_probe: Callable[[Any], None] | None = None
    ) -> None:
        """A preview on its lane; once its result has arrived, ``follow(result)`` (if it gives a
        job) runs on the probe lane, and its result goes to ``on_probe``. Side by side on two
        cores the probe's Hessian slowed the preview many times over now and then, so the
        probe always waits for its preview."""
        self._follow = (follow, on_probe)
        self.submit("preview", job, self._on_preview)

    def _on_preview(self, result):
        (follow, on_probe), self._follow = self._follow or (None, None), None
        probe = follow(result) if follow is not None else None
        if probe is not None:
            self.submit("probe", probe, on_probe or _ignore)

    def lane_busy(self, name: str) -> bool:
        return self.lanes[name].busy

    def lanes_for(self, workspace) -> tuple[str, ...]:
        """The lanes a Reset or a preset of ``workspace`` stops: every lane, but another tab's
        following of a run goes on."""
        follows = hasattr(workspace, "follow")  # the tab that follows runs (gui/workspaces/run.py)
        return tuple(name for name in LANES if name != "follow" or follows)

    def discard(self, *names: str) -> None:
        """Cancel whatever runs or waits on these lanes (all, by default) and drop its updates."""
        for name in names or LANES:
            self.lanes[name].discard()
        if not names or "main" in names:
            self._owner = None
            self.main_discarded.emit()
        if not names or "preview" in names:
            self._follow = None

    # ---------------------------------------------------------------- the heap between jobs
    def _on_lane_state(self, state: str) -> None:
        if state == "idle":
            self._release_timer.start()  # restarted by each lane's end: the last one counts

    def _release_heap(self) -> None:
        if self.busy:  # work still runs (an adopted clip render, say): the next lane idle tries again
            return
        from engine.core.runtime import release_free_heap

        # a thread of its own: malloc_trim walks the whole heap, and ctypes lets go of the GIL
        threading.Thread(target=release_free_heap, name="release-free-heap", daemon=True).start()
        self.heap_released.emit()

    # ---------------------------------------------------------------- every other worker
    def adopt(self, worker: Worker) -> Worker:
        """Count ``worker`` in ``busy``, ``cancel_all`` and ``shutdown`` until it has ended."""
        self._workers = [w for w in self._workers if w.busy] + [worker]
        return worker

    @property
    def workers(self) -> list[Worker]:
        """The adopted workers still running."""
        return [w for w in self._workers if w.busy]

    @property
    def busy(self) -> bool:
        """Any lane still running or waiting, up to its last queued signal, any adopted worker,
        or a workspace still drawing a finished result."""
        lanes = any(runner.busy for runner in self.lanes.values()) or bool(self.workers)
        return lanes or any(workspace.drawing for workspace in self.workspaces.values())

    def cancel_all(self) -> None:
        """Stop every lane's job and every adopted worker, keeping no result and writing no file."""
        self.discard()
        for worker in self.workers:
            worker.cancel()

    def wait(self, ms: int) -> bool:
        """Block until every lane's thread and every adopted worker's have ended (shutdown only);
        True if all did within ``ms`` each."""
        lanes = [runner.wait(ms) for runner in self.lanes.values()]
        ended = all(lanes) and all([worker.wait(ms) for worker in self._workers])
        self._workers = self.workers  # the ended ones are let go
        return ended

    def shutdown(self, ms: int = 5000) -> bool:
        """Cancel everything and wait for it: no thread outlives the window (or the command)."""
        self.cancel_all()
        return self.wait(ms)

    # ---------------------------------------------------------------- main lane's signals
    @property
    def owner(self):
        return self._owner

    def _on_started(self, tag):
        owner, keep = tag
        self._owner = owner
        self.last_outcome, self.last_error = "", ""
        if not keep and owner is not None:
            owner.reset()
        self.run_started.emit(owner, keep)

    def _on_progress(self, update):
        if update.partial is not None and self._owner is not None:
            self._owner.show_partial(update.partial)
        self.progressed.emit(update)

    def _on_succeeded(self, result):
        if self._owner is not None:
            self._owner.show_result(result)
        self._on_ended("succeeded")
        self.succeeded.emit(result)

    def _on_failed(self, text: str):
        self.last_error = text
        self._on_ended("failed")
        self.failed.emit(text)

    def _on_cancelled(self, last):
        self._on_ended("cancelled")
        self.cancelled.emit(last)

    def _on_ended(self, outcome: str):
        self.last_outcome = outcome
        self._finished_timer.start()

    def _announce_finished(self):
        """run_finished, once the owner has drawn the result: a turn after the job's end, and
        then at each turn until no workspace draws (a run's result is drawn a view per turn)."""
        if any(workspace.drawing for workspace in self.workspaces.values()):
            self._finished_timer.start()
        else:
            self.run_finished.emit()

    # ---------------------------------------------------------------- shared state
    def register(self, workspace) -> None:
        self.workspaces[workspace.key] = workspace
        workspace.attach(self)

    def hand_network(self, key: str, path: str, data: str | None = None) -> None:
        """A network file one tab cannot use goes to the tab ``key`` that can (a two-layer ReLU
        net loaded on the minima tab belongs to paper A's topology tab), which is shown."""
        self.workspace_requested.emit(key)
        self.workspaces[key].load_network(path, data or None)

    def open_checkpoint(self, request) -> None:
        """A training run's checkpoint (gui.models.run.ToolkitRequest) to the landscape toolkit
        tab, which is shown and runs the request's mode around it."""
        self.workspace_requested.emit("landscape")
        self.workspaces["landscape"].open_checkpoint(request)

    def set_preset(self, name: str) -> None:
        self.preset_name = name
        self.preset_changed.emit(name)

    def set_lambda(self, lam: float) -> None:
        self.lam = float(lam)
        self.lambda_changed.emit(self.lam)

    def set_frame(self, index: int, key: str) -> None:
        """The replay frame shown, on tab ``key``'s timeline (each tab has its own: a topology
        clip's end took the minima path's frame for a row of the run)."""
        self.frames[key] = int(index)
        self.frame_changed.emit(int(index))

    def serve_clips(self, render: Callable[[Any, str], Any]) -> None:
        """``render(clip, out)`` (the clip dock's) renders what ``render_clip`` is asked for."""
        self._clip_service = render

    def render_clip(self, clip, out: str):
        """Render ``clip`` to ``out`` through the clip dock, which shows progress and Cancel;
        returns the job it started (adopted), or None when it could not start (it said why)."""
        if self._clip_service is None:
            self.error("no clip dock to render the clip")
            return None
        return self._clip_service(clip, out)

    # ---------------------------------------------------------------- messages
    def error(self, text: str) -> None:
        self.message.emit("error", text)

    def info(self, text: str) -> None:
        self.message.emit("info", text)


def _ignore(_payload) -> None:
    pass
