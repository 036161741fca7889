"""The key-frame editor: capture the window's state as key frames, order and time them,
scrub a preview in the live views, save/load the clip as JSON, and render it as a job."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDockWidget, QDoubleSpinBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QListWidget, QProgressBar, QPushButton, QSlider,
                               QVBoxLayout, QWidget)

from engine.errors import EngineInputError

from ..presets import preset_named
from ..worker import JobRunner
from .minima_scene import MinimaScene, minima_story_clip, walk_of
from .model import STORY_CAPTION, Clip, KeyFrame, load_clip, save_clip, story_clip
from .render import ClipJob, ClipRenderer
from .scene import scene_for
from .timeline import Timeline


class ClipDock(QDockWidget):
    def __init__(self, window):
        super().__init__("Clip")
        self.setObjectName("clip")
        self.window = window
        self.clip: Optional[Clip] = None   # layout, size, timing; its key frames are self.keys
        self.keys: list[KeyFrame] = []
        self.job: Optional[ClipJob] = None
        self._scene = None
        # Paper B's clip slices the landscape at every λ of its walk before the first frame.
        self.walker = JobRunner(self)
        self.walker.progressed.connect(lambda update: self.progress.setValue(round(100 * update.fraction)))
        self.walker.succeeded.connect(self._on_walked)
        self.walker.failed.connect(lambda message: self._done(message, error=True))
        self._walk: Optional[tuple] = None  # (workspace, λ values, output) while slicing
        window.run_finished.connect(self._forget_scene)  # a new run: the old scene is stale

        self.list = QListWidget()
        self.list.currentRowChanged.connect(self._on_select)
        buttons = QHBoxLayout()
        for text, slot in (("Capture", self.capture), ("Delete", self.delete),
                           ("Up", lambda: self.move(-1)), ("Down", lambda: self.move(1))):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        self.seconds = QDoubleSpinBox(minimum=0.0, maximum=600.0, value=3.0, suffix=" s", singleStep=0.5)
        self.seconds.setToolTip("Time from the previous key frame to this one")
        self.seconds.valueChanged.connect(self._on_seconds)
        self.caption = QLineEdit(STORY_CAPTION.replace("\n", " · "))
        self.caption.setToolTip("Fields: {step} {last_step} {c} {loss} {events}")
        self.caption.editingFinished.connect(self._on_caption)
        self.preview = QSlider(Qt.Orientation.Horizontal)
        self.preview.valueChanged.connect(self.show_preview)
        files = QHBoxLayout()
        for text, slot in (("Save…", self.save), ("Load…", self.load), ("Render…", self.render)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            files.addWidget(button)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m frames")
        self.eta = QLabel()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        running = QHBoxLayout()
        for w in (self.progress, self.eta, self.cancel_button):
            running.addWidget(w)
        self._show_running(False)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        form = QFormLayout()
        form.addRow("After previous", self.seconds)
        form.addRow("Caption", self.caption)
        form.addRow("Preview", self.preview)
        layout.addLayout(form)
        layout.addLayout(files)
        layout.addLayout(running)
        self.setWidget(body)
        self._refresh()

    # ------------------------------------------------------------------ model
    def _base(self) -> Clip:
        """The clip being edited; a preset's story layout until one is loaded."""
        preset = getattr(self.window, "preset_name", None) or (self.clip.preset if self.clip else None)
        if self.clip is None or self.clip.preset != preset:
            if preset is None:
                raise EngineInputError("load a training preset first: a clip films a preset's run")
            self.clip, self.keys, self._scene = story_clip(preset), [], None
        return self.clip

    def current_clip(self) -> Clip:
        base = self._base()
        if len(self.keys) < 2:
            raise EngineInputError("a clip needs at least two key frames")
        return dataclasses.replace(base, keyframes=tuple(self.keys))

    def scene(self):
        if self._scene is None:
            if self._is_walk():  # its slices take seconds: only render_walk computes them, on a worker
                raise EngineInputError("paper B's clip slices along λ first: use Render…")
            self._scene = scene_for(self.window, self._base().preset)
        return self._scene

    def _forget_scene(self, *_):
        self._scene = None

    def _is_walk(self) -> bool:
        preset = getattr(self.window, "preset_name", None)
        return bool(preset) and preset_named(preset).workspace == "minima"

    # ------------------------------------------------------------------ editing
    def capture(self) -> bool:
        """Add the window's state (cameras, replay step, caption) after the selected key frame."""
        try:
            self._base()
            scene = self.scene()
        except EngineInputError as error:
            self.window.message_bar.show_error(str(error))
            return False
        row = min(self.window.replay_dock.slider.value(), len(scene.steps) - 1)
        at = (self.keys[-1].at + self.seconds.value()) if self.keys else 0.0
        key = KeyFrame(at, int(scene.steps[row]), [scene.camera_of(v) for v in scene.views], None,
                       self.caption.text())
        self.keys.append(key)
        self._refresh(len(self.keys) - 1)
        return True

    def delete(self):
        i = self.list.currentRow()
        if 0 <= i < len(self.keys):
            durations = self._durations()
            del self.keys[i], durations[i]
            self._retime(durations)
            self._refresh(min(i, len(self.keys) - 1))

    def move(self, delta: int):
        i, j = self.list.currentRow(), self.list.currentRow() + delta
        if 0 <= i < len(self.keys) and 0 <= j < len(self.keys):
            durations = self._durations()
            self.keys[i], self.keys[j] = self.keys[j], self.keys[i]
            self._retime(durations)  # the gaps stay where they were; the states swap
            self._refresh(j)

    def _durations(self) -> list[float]:
        return [0.0] + [b.at - a.at for a, b in zip(self.keys, self.keys[1:])]

    def _retime(self, durations: list[float]):
        at = 0.0
        for i, gap in enumerate(durations):
            at += gap if i else 0.0
            self.keys[i] = dataclasses.replace(self.keys[i], at=at)

    def _on_seconds(self, value: float):
        i = self.list.currentRow()
        if 1 <= i < len(self.keys):
            durations = self._durations()
            durations[i] = value
            self._retime(durations)
            self._refresh(i)

    def _on_caption(self):
        i = self.list.currentRow()
        if 0 <= i < len(self.keys):
            self.keys[i] = dataclasses.replace(self.keys[i], caption=self.caption.text())
            self._refresh(i)

    def _on_select(self, i: int):
        if 0 <= i < len(self.keys):
            self.seconds.blockSignals(True)
            self.seconds.setValue(self._durations()[i])
            self.seconds.blockSignals(False)
            self.caption.setText(self.keys[i].caption)

    def _refresh(self, select: int = -1):
        self.list.blockSignals(True)
        self.list.clear()
        for i, k in enumerate(self.keys):
            cam = k.camera[0] if isinstance(k.camera, list) and k.camera else (k.camera or {})
            self.list.addItem(f"{i + 1}.  {k.at:5.1f} s   step {k.step}   "
                              f"az {cam.get('azimuth', 0):.0f}°  el {cam.get('elevation', 0):.0f}°")
        self.list.blockSignals(False)
        if select >= 0:
            self.list.setCurrentRow(select)
        frames = self.clip.fps * self.keys[-1].at if len(self.keys) > 1 and self.clip else 0
        self.preview.setRange(0, max(int(round(frames)), 0))

    # ------------------------------------------------------------------ preview
    def show_preview(self, i: int):
        """Pose the window's own views as frame ``i`` of the clip (scrubbing)."""
        try:
            clip, scene = self.current_clip(), self.scene()
        except EngineInputError:
            return
        state = Timeline(clip, scene.steps, scene.event_steps(), scene.default_cameras()).state(i)
        scene.show(state.row)
        scene.apply_cameras(state.cameras)
        for view in scene.views:
            view.update()

    # ------------------------------------------------------------------ files
    def save(self, path: Optional[str] = None):
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Save clip", "clip.json", "Clips (*.json)")
        if path:
            try:
                save_clip(self.current_clip(), path)
            except (EngineInputError, OSError) as error:
                self.window.message_bar.show_error(f"could not save the clip: {error}")

    def load(self, path: Optional[str] = None):
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Load clip", "", "Clips (*.json)")
        if not path:
            return
        try:
            clip = load_clip(path)
        except EngineInputError as error:
            self.window.message_bar.show_error(str(error))
            return
        self.clip, self.keys, self._scene = clip, list(clip.keyframes), None
        self._refresh(0)

    # ------------------------------------------------------------------ rendering
    def render(self, out: Optional[str] = None) -> Optional[ClipJob]:
        if self.job is not None and self.job.active:
            return None
        if not out:
            out, _ = QFileDialog.getSaveFileName(self, "Render clip to", str(Path.home() / "clip.mp4"),
                                                 "MP4 video (*.mp4);;GIF (*.gif);;PNG frames (folder) (*)")
        if not out:
            return None
        if self._is_walk() and self._scene is None:
            try:
                clip = self.clip if self.clip and self.clip.preset == self.window.preset_name else \
                    minima_story_clip(self.window.preset_name)
                self.render_walk(clip, self.window.workspaces["minima"], out)
            except EngineInputError as error:
                self.window.message_bar.show_error(str(error))
            return None
        try:
            self.job = ClipJob(ClipRenderer(self.current_clip(), self.scene()), out, self)
        except EngineInputError as error:
            self.window.message_bar.show_error(str(error))
            return None
        self.job.progressed.connect(self._on_progress)
        self.job.finished.connect(lambda path: self._done(f"Clip saved to {path}"))
        self.job.failed.connect(lambda message: self._done(message, error=True))
        self.job.cancelled.connect(lambda: self._done("Clip rendering cancelled; no file written"))
        self._show_running(True)
        self.progress.setRange(0, self.job.renderer.frames)
        self.job.start()
        return self.job

    def render_walk(self, clip: Clip, workspace, out: str) -> None:
        """Paper B's clip from the window: the walk's slices on a worker (progress here, Cancel
        stops it), then the frames as any clip's."""
        lams, job = walk_of(workspace)  # EngineInputError before any work
        self.clip, self.keys, self._scene = clip, list(clip.keyframes), None
        self._refresh(0)
        self._walk = (workspace, lams, out)
        self._show_running(True)
        self.progress.setRange(0, 100)
        self.progress.setFormat("slicing along λ: %p%")
        self.eta.setText("")
        self.walker.submit(job)

    def _on_walked(self, cuts):
        workspace, lams, out = self._walk
        self._walk = None
        self._scene = MinimaScene(workspace, lams, cuts)
        self.progress.setFormat("%v / %m frames")
        self.render(out)

    def cancel(self):
        if self._walk is not None:
            self.walker.discard()
            self._walk = None
            self._done("Clip rendering cancelled; no file written")
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, done: int, total: int, eta: float):
        self.progress.setValue(done)
        self.eta.setText(f"{int(eta) // 60}:{int(eta) % 60:02d} left")

    def _done(self, message: str, error: bool = False):
        self._show_running(False)
        (self.window.message_bar.show_error if error else self.window.message_bar.show_info)(message)

    def _show_running(self, on: bool):
        for w in (self.progress, self.eta, self.cancel_button):
            w.setVisible(on)
