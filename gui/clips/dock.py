"""The key-frame editor: capture the window's state as key frames, order and time them,
scrub a preview, save/load the clip as JSON, and render it as a job.

Paper A's preview poses the window's own 3D views; paper B's scene draws its own plots off
screen, so its preview is the composed frame itself, drawn small in the dock. Paper B's scene
slices the landscape at every λ of the walk first (seconds): Capture, Preview and Render start
that on a worker when it is missing and carry on once it is done."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from engine.core.errors import EngineInputError

from ..presets import preset_named
from .minima_scene import MinimaScene, walk_of
from .model import CAPTION_FIELDS, TEXT_SOURCES, Clip, KeyFrame, load_clip, save_clip
from .render import ClipJob, ClipRenderer
from .scene import scene_for, story_for

NEW_LINE = " ↵ "  # how the one-line caption field shows a caption's line break
PREVIEW_WIDTH = 400  # the preview frame, in pixels: a thumbnail of the composed frame


class ClipDock(QDockWidget):
    def __init__(self, controller, parent=None):
        super().__init__("Clip", parent)
        self.setObjectName("clip")
        self.controller = controller
        self.clip: Clip | None = None  # layout, size, timing; its key frames are self.keys
        self.keys: list[KeyFrame] = []
        self.job: ClipJob | None = None
        self._scene = None
        # Paper B's clip slices the landscape at every λ of its walk before the first frame,
        # on the controller's walk lane (_slice_walk).
        self._walk: tuple | None = None  # (workspace, its figure, what to do next) while slicing
        self._previewer: ClipRenderer | None = None  # the thumbnail's renderer
        controller.run_finished.connect(self.forget_scene)  # a new run: the old scene is stale
        controller.run_started.connect(lambda _owner, keep: keep or self.forget_scene(cancel_walk=True))
        controller.serve_clips(self._on_clip_requested)

        self.list = QListWidget()
        self.list.currentRowChanged.connect(self._on_select)
        buttons = QHBoxLayout()
        for text, slot in (
            ("Capture", self.capture),
            ("Delete", self.delete),
            ("Up", lambda: self.move(-1)),
            ("Down", lambda: self.move(1)),
        ):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        self.seconds = QDoubleSpinBox(minimum=0.0, maximum=600.0, value=3.0, suffix=" s", singleStep=0.5)
        self.seconds.setToolTip("Time from the previous key frame to this one")
        self.seconds.valueChanged.connect(self._on_seconds)
        self.caption = QLineEdit()
        self.caption.editingFinished.connect(self._on_caption)
        # Which of the layout's panels the selected key frame shows (all: the key's panels are None).
        self.panels = QHBoxLayout()
        self.panel_boxes: dict[str, QCheckBox] = {}
        self.preview = QSlider(Qt.Orientation.Horizontal)
        self.preview.valueChanged.connect(self.show_preview)
        self.thumbnail = QLabel()
        self.thumbnail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.thumbnail.hide()
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
        form.addRow("Panels", self.panels)
        form.addRow("Preview", self.preview)
        layout.addLayout(form)
        layout.addWidget(self.thumbnail)
        layout.addLayout(files)
        layout.addLayout(running)
        self.setWidget(body)
        self._refresh()

    # ------------------------------------------------------------------ model
    def _base(self) -> Clip:
        """The clip being edited; a preset's story layout until one is loaded."""
        preset = self.controller.preset_name or (self.clip.preset if self.clip else None)
        if self.clip is None or self.clip.preset != preset:
            if preset is None:
                raise EngineInputError("load a training preset first: a clip films a preset's run")
            self.use_clip(story_for(preset), keys=[])
        return self.clip

    def use_clip(self, clip: Clip, keys: list | None = None):
        """Edit ``clip``: its layout and timing, and its key frames unless ``keys`` are given."""
        scene_fits = self.clip is not None and self.clip.preset == clip.preset
        self.clip, self.keys = clip, list(clip.keyframes if keys is None else keys)
        if not scene_fits:
            self._drop_scene()
        self._close_previewer()
        workspace = self._workspace()
        self._set_caption(clip.keyframes[0].caption if clip.keyframes else "")
        self.caption.setToolTip(
            "Fields: " + " ".join(f"{{{f}}}" for f in CAPTION_FIELDS[workspace]) + f";{NEW_LINE}starts a new line"
        )
        for box in self.panel_boxes.values():
            self.panels.removeWidget(box)
            box.deleteLater()
        self.panel_boxes = {}
        for cell in clip.layout:
            if cell.source not in TEXT_SOURCES and cell.source not in self.panel_boxes:
                box = QCheckBox(cell.source, checked=True)
                box.toggled.connect(self._on_panels)
                self.panels.addWidget(box)
                self.panel_boxes[cell.source] = box
        self._refresh(0 if self.keys else -1)

    def _workspace(self) -> str:
        return preset_named(self.clip.preset).workspace if self.clip else "topology"

    def current_clip(self) -> Clip:
        """The clip as edited; with no key frame captured yet, the story's own."""
        base = self._base()
        if not self.keys:
            return base
        if len(self.keys) < 2:
            raise EngineInputError("a clip needs at least two key frames")
        return dataclasses.replace(base, keyframes=tuple(self.keys))

    def scene(self):
        if self._scene is None:
            if self._is_walk():  # its slices take seconds: only _slice_walk computes them, on a worker
                raise EngineInputError("paper B's clip slices along λ first")
            self._scene = scene_for(self.controller.workspaces, self._base().preset)
        return self._scene

    def forget_scene(self, *_, cancel_walk: bool = False):
        """The run the scene was made of is gone (a run ended, a new run, a reset); with
        ``cancel_walk`` (a new run, a reset) so is a walk being sliced for it. A walk that lands
        on a replaced figure is dropped on arrival (_on_walked)."""
        if cancel_walk and self._walk is not None:
            self.controller.discard("walk")
            self._walk = None
            self._show_running(False)
        self._close_previewer()
        self._drop_scene()

    def _drop_scene(self):
        """Delete the scene's own plots now, or, while a render still poses them, when it ends.
        (Left to their Qt parent, the workspace, every scene a run or a Reset dropped mid-render
        kept its two plots, about 200 widgets, for the window's life.)"""
        scene, job = self._scene, self.job
        if scene is not None and job is not None and job.active:
            for ended in (job.finished, job.failed, job.cancelled):
                ended.connect(lambda *_: scene.dispose())
        elif scene is not None:
            scene.dispose()
        self._scene = None

    def _is_walk(self) -> bool:
        preset = self.controller.preset_name
        return bool(preset) and preset_named(preset).workspace == "minima"

    def _with_scene(self, then) -> bool:
        """True when the scene is ready; otherwise paper B's walk is sliced on the worker and
        ``then()`` runs once it is (False). An error goes to the message bar (False)."""
        try:
            self._base()
            if self._is_walk() and self._scene is None:
                self._slice_walk(then)
                return False
            self.scene()
            return True
        except EngineInputError as error:
            self.controller.error(str(error))
            return False

    # ------------------------------------------------------------------ editing
    def capture(self) -> bool:
        """Add the window's state after the last key frame: the cameras and replay step (paper A)
        or the λ slider's value (paper B), the panels ticked, the caption. Paper B's first capture
        slices the walk first and captures when that is done (False until then)."""
        if self._walk is not None or not self._with_scene(self.capture):
            return False
        scene = self._scene
        if isinstance(scene, MinimaScene):
            row = scene.row_of(self.controller.lam)
        else:
            row = scene.user_row()
        at = (self.keys[-1].at + self.seconds.value()) if self.keys else 0.0
        self.keys.append(
            KeyFrame(
                at,
                int(scene.steps[row]),
                scene.user_cameras() or None,
                self._ticked_panels(),
                self._caption(),
            )
        )
        self._refresh(len(self.keys) - 1)
        return True

    def _ticked_panels(self) -> tuple[str, ...] | None:
        """The layout's sources the key frame shows: None for all (the words always show)."""
        ticked = [name for name, box in self.panel_boxes.items() if box.isChecked()]
        if len(ticked) == len(self.panel_boxes):
            return None
        return tuple(c.source for c in self.clip.layout if c.source in TEXT_SOURCES or c.source in ticked)

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

    def _caption(self) -> str:
        return self.caption.text().replace(NEW_LINE.strip(), "\n").replace(" \n ", "\n")

    def _set_caption(self, caption: str):
        self.caption.setText(caption.replace("\n", NEW_LINE))

    def _on_caption(self):
        self._edit_selected(caption=self._caption())

    def _on_panels(self):
        self._edit_selected(panels=self._ticked_panels())

    def _edit_selected(self, **change):
        i = self.list.currentRow()
        if 0 <= i < len(self.keys):
            self.keys[i] = dataclasses.replace(self.keys[i], **change)
            self._refresh(i)

    def _on_select(self, i: int):
        if 0 <= i < len(self.keys):
            key = self.keys[i]
            for widget, apply in (
                (self.seconds, lambda: self.seconds.setValue(self._durations()[i])),
                *(
                    (box, lambda b=box, n=name: b.setChecked(key.panels is None or n in key.panels))
                    for name, box in self.panel_boxes.items()
                ),
            ):
                widget.blockSignals(True)
                apply()
                widget.blockSignals(False)
            self._set_caption(key.caption)

    def _describe(self, key: KeyFrame) -> str:
        """A key frame's list line: its time, then its λ (paper B) or step and first camera."""
        if self._workspace() == "minima":
            if self._scene is None:
                return f"{key.at:5.1f} s   row {key.step}"
            row = len(self._scene.lams) - 1 if key.step == "end" else min(int(key.step), len(self._scene.lams) - 1)
            return f"{key.at:5.1f} s   λ = {self._scene.lams[row]:.3f}"
        cam = key.camera[0] if isinstance(key.camera, list) and key.camera else (key.camera or {})
        return f"{key.at:5.1f} s   step {key.step}   az {cam.get('azimuth', 0):.0f}°  el {cam.get('elevation', 0):.0f}°"

    def _refresh(self, select: int = -1):
        self.list.blockSignals(True)
        self.list.clear()
        for i, k in enumerate(self.keys):
            self.list.addItem(f"{i + 1}.  {self._describe(k)}")
        self.list.blockSignals(False)
        if select >= 0:
            self.list.setCurrentRow(select)
        frames = self.clip.fps * self.keys[-1].at if len(self.keys) > 1 and self.clip else 0
        self.preview.setRange(0, max(int(round(frames)), 0))

    # ------------------------------------------------------------------ preview
    def show_preview(self, i: int):
        """Frame ``i`` of the clip, composed and drawn small in the dock: a scene's views are
        its own, off screen (the window's stay as the user left them)."""
        if self._walk is not None or not self._with_scene(lambda: self.show_preview(self.preview.value())):
            return
        try:
            clip, scene = self.current_clip(), self.scene()
        except EngineInputError:
            return
        self._show_thumbnail(clip, scene, i)

    def _show_thumbnail(self, clip: Clip, scene, i: int):
        w, h = clip.size
        small = dataclasses.replace(clip, size=(PREVIEW_WIDTH, round(PREVIEW_WIDTH * h / w) // 2 * 2))
        if self._previewer is None or self._previewer.clip != small:
            self._close_previewer()
            self._previewer = ClipRenderer(small, scene)
        frame = self._previewer.frame(min(i, self._previewer.frames - 1))
        image = QImage(frame.data, frame.shape[1], frame.shape[0], frame.strides[0], QImage.Format.Format_RGBX8888)
        self.thumbnail.setPixmap(QPixmap.fromImage(image))  # fromImage copies: frame may go
        self.thumbnail.show()

    def _close_previewer(self):
        if self._previewer is not None:
            self._previewer.close()
            self._previewer = None
        self.thumbnail.hide()

    # ------------------------------------------------------------------ files
    def save(self, path: str | None = None):
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Save clip", "clip.json", "Clips (*.json)")
        if path:
            try:
                save_clip(self.current_clip(), path)
            except (EngineInputError, OSError) as error:
                self.controller.error(f"could not save the clip: {error}")

    def load(self, path: str | None = None):
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Load clip", "", "Clips (*.json)")
        if not path:
            return
        try:
            clip = load_clip(path)
        except EngineInputError as error:
            self.controller.error(str(error))
            return
        self.use_clip(clip)

    # ------------------------------------------------------------------ rendering
    def _on_clip_requested(self, clip: Clip, out: str) -> ClipJob | None:
        """Record's replay and orbit (controller.render_clip): render ``clip``, showing this
        dock's progress and Cancel."""
        self.use_clip(clip)
        self.show()
        return self.render(out)

    def render(self, out: str | None = None) -> ClipJob | None:
        """Render the clip to ``out`` as a job (None while paper B's walk is sliced first: the
        render then starts by itself)."""
        if (self.job is not None and self.job.active) or self._walk is not None:
            return None
        if not out:
            out, _ = QFileDialog.getSaveFileName(
                self,
                "Render clip to",
                str(Path.home() / "clip.mp4"),
                "MP4 video (*.mp4);;GIF (*.gif);;PNG frames (folder) (*)",
            )
        if not out or not self._with_scene(lambda: self.render(out)):
            return None
        self._close_previewer()  # the render poses the same scene
        if self.job is not None:  # finished: its renderer, encoder and frames go now, not with the dock
            self.job.deleteLater()
            self.job = None
        try:
            self.job = ClipJob(ClipRenderer(self.current_clip(), self.scene()), out, self)
        except EngineInputError as error:
            self.controller.error(str(error))
            return None
        self.controller.adopt(self.job)  # with its encoder: cancel-all and shutdown end both
        self.job.progressed.connect(self._on_progress)
        self.job.finished.connect(lambda path: self._done(f"Clip saved to {path}"))
        self.job.failed.connect(lambda message: self._done(message, error=True))
        self.job.cancelled.connect(lambda: self._done("Clip rendering cancelled; no file written"))
        self._show_running(True)
        self.progress.setFormat("%v / %m frames")
        self.progress.setRange(0, self.job.renderer.frames)
        self.job.start()
        return self.job

    def _slice_walk(self, then) -> None:
        """Paper B's scene: the walk's slices on a worker (progress here, Cancel stops it), then
        ``then()``."""
        workspace = self.controller.workspaces["minima"]
        job = walk_of(workspace)  # EngineInputError before any work
        self._walk = (workspace, workspace.figure, then)
        self._show_running(True)
        self.progress.setRange(0, 100)
        self.progress.setFormat("slicing along λ: %p%")
        self.eta.setText("")
        self.controller.submit(
            "walk",
            job,
            self._on_walked,
            on_progress=lambda update: self.progress.setValue(round(100 * update.fraction)),
            on_failure=lambda message: self._done(message, error=True),
        )

    def _on_walked(self, walk):
        workspace, figure, then = self._walk
        self._walk = None
        if workspace.figure is not figure:  # a run or a reset replaced what was sliced
            self._show_running(False)
            return
        self._close_previewer()
        self._drop_scene()
        self._scene = MinimaScene(workspace, walk)
        self._show_running(False)
        self._refresh(self.list.currentRow())  # the key frames' λ values are known now
        then()

    def cancel(self):
        if self._walk is not None:
            self.controller.discard("walk")
            self._walk = None
            self._done("Clip rendering cancelled; no file written")
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, done: int, total: int, eta: float):
        self.progress.setValue(done)
        self.eta.setText(f"{int(eta) // 60}:{int(eta) % 60:02d} left")

    def _done(self, message: str, error: bool = False):
        self._show_running(False)
        (self.controller.error if error else self.controller.info)(message)

    def _show_running(self, on: bool):
        for w in (self.progress, self.eta, self.cancel_button):
            w.setVisible(on)
