"""The application controller: the one owner of running work and of the app's shared state.

Everything that starts work asks this object for it; nothing reaches through the window into
another part's widgets. It owns four job lanes, each a ``JobRunner`` (one job at a time,
stale updates dropped, see gui/worker.py):

- ``main``: Run, Step, re-slices, splits, loads: what the run controls pause and cancel;
- ``preview``: the λ drag's coarse slices (and the drag slices made ahead of the first move);
- ``probe``: the Hessian at the previewed λ, started only once its preview has been drawn;
- ``walk``: the clip dock's slices along λ before a paper B clip renders.

It also holds what several parts read: the preset loaded last, how the last main job ended,
the λ the minima tab shows and the replay frame, each published as a signal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from engine.core.progress import Job

from .worker import JobRunner

LANES = ("main", "preview", "probe", "walk")


class AppController(QObject):
    message = Signal(str, str)  # ("error" | "info", text): the message bar shows it
    run_started = Signal(object, bool)  # (owner workspace, keep) as the main job's thread starts
    run_finished = Signal()  # after a main job succeeded, failed or was cancelled
    preset_changed = Signal(str)
    lambda_changed = Signal(float)  # the minima tab's λ (what a clip key frame captures)
    frame_changed = Signal(int)  # the replay frame shown
    clip_requested = Signal(object, str)  # (Clip, out path): Record asks the clip dock to render
    workspace_requested = Signal(str)  # a workspace key: the window shows that tab

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lanes: dict[str, JobRunner] = {name: JobRunner(self) for name in LANES}
        self.workspaces: dict[str, Any] = {}  # key -> workspace: registered once by the window
        self.preset_name: str | None = None
        self.last_outcome = ""  # "succeeded", "failed" or "cancelled": how the last main job ended
        self.lam: float | None = None
        self.frame = 0
        self.clip_job = None  # the clip render the dock started on the last clip_requested
        self._owner = None  # whose main job runs; None once it was superseded
        self._follow: Callable | None = None  # makes the probe job from the preview's result
        main = self.lanes["main"]
        main.started.connect(self._on_started)
        main.progressed.connect(self._on_progress)
        main.succeeded.connect(self._on_succeeded)
        main.failed.connect(lambda text: self._on_ended("failed", text))
        main.cancelled.connect(lambda last: self._on_ended("cancelled", last))
        self.lanes["preview"].succeeded.connect(self._on_preview)

    # ---------------------------------------------------------------- lanes
    @property
    def main(self) -> JobRunner:
        return self.lanes["main"]

    def lane(self, name: str) -> JobRunner:
        return self.lanes[name]

    def start(self, owner, job: Job, keep: bool = False, step: bool = False) -> None:
        """Run ``job`` on the main lane for ``owner`` (a workspace, which draws its updates). A
        running job is cancelled and its remaining updates dropped; this one starts when that
        thread has finished. Unless ``keep``, the owner's views are cleared as it starts."""
        self.main.submit(job, step=step, tag=(owner, keep))

    def preview(self, job: Job, follow: Callable[[Any], Job | None] | None = None) -> None:
        """A preview on its lane; once its result has arrived, ``follow(result)`` (if it gives a
        job) runs on the probe lane. Side by side on two cores the probe's Hessian slowed the
        preview from ~30 ms to 0.5 s now and then, so the probe always waits for its preview."""
        self._follow = follow
        self.lanes["preview"].submit(job)

    def _on_preview(self, result):
        follow, self._follow = self._follow, None
        probe = follow(result) if follow is not None else None
        if probe is not None:
            self.lanes["probe"].submit(probe)

    def discard(self, *names: str) -> None:
        """Cancel whatever runs or waits on these lanes (all, by default) and drop its updates."""
        for name in names or LANES:
            self.lanes[name].discard()
        if not names or "main" in names:
            self._owner = None
        if not names or "preview" in names:
            self._follow = None

    def wait(self, ms: int) -> bool:
        """Block until every lane's thread has ended (only for shutdown); True if all did."""
        return all([runner.wait(ms) for runner in self.lanes.values()])

    @property
    def busy(self) -> bool:
        """Any lane still running or waiting, up to its last queued signal."""
        return any(runner.busy for runner in self.lanes.values())

    @property
    def owner(self):
        return self._owner

    def _on_started(self, tag):
        owner, keep = tag
        self._owner = owner
        self.last_outcome = ""
        if not keep and owner is not None:
            owner.reset()
        self.run_started.emit(owner, keep)

    def _on_progress(self, update):
        if update.partial is not None and self._owner is not None:
            self._owner.show_partial(update.partial)

    def _on_succeeded(self, result):
        if self._owner is not None:
            self._owner.show_result(result)
        self._on_ended("succeeded", result)

    def _on_ended(self, outcome: str, _payload):
        self.last_outcome = outcome
        # After the owner has drawn the result (its slots are connected after this one's).
        QTimer.singleShot(0, self, self.run_finished.emit)  # not if the controller is gone by then

    # ---------------------------------------------------------------- shared state
    def register(self, workspace) -> None:
        self.workspaces[workspace.key] = workspace
        workspace.attach(self)

    def hand_network(self, key: str, path: str, data: str | None = None) -> None:
        """A network file one tab cannot use goes to the tab ``key`` that can (a two-layer ReLU
        net loaded on the minima tab belongs to paper A's topology tab), which is shown."""
        self.workspace_requested.emit(key)
        self.workspaces[key].load_network(path, data or None)

    def set_preset(self, name: str) -> None:
        self.preset_name = name
        self.preset_changed.emit(name)

    def set_lambda(self, lam: float) -> None:
        self.lam = float(lam)
        self.lambda_changed.emit(self.lam)

    def set_frame(self, index: int) -> None:
        self.frame = int(index)
        self.frame_changed.emit(self.frame)

    def render_clip(self, clip, out: str):
        """Ask the clip dock (the subscriber of ``clip_requested``) to render ``clip`` to ``out``;
        returns the job it started, or None when it could not start (it said why)."""
        self.clip_job = None
        self.clip_requested.emit(clip, out)
        return self.clip_job

    # ---------------------------------------------------------------- messages
    def error(self, text: str) -> None:
        self.message.emit("error", text)

    def info(self, text: str) -> None:
        self.message.emit("info", text)
