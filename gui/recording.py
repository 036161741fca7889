"""The Record menu's dialog and the status-bar feedback (REC indicator, encoding bar).

The mechanics live in capture.py; this file only asks what to record and shows that it is.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets
from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

from engine.core.errors import EngineInputError

from .capture import STANDARD_SIZES, Encoder, LiveRecorder, sources_of
from .widgets import connected

WHEN = {
    "live": "Live, until stopped (runs, replays, camera moves)",
    "replay": "Story clip of the finished run over N seconds",
    "orbit": "Story clip with a 360° camera orbit over N seconds",
}


class RecordDialog(QtWidgets.QDialog):
    def __init__(self, window, last: dict):
        super().__init__(window)
        self.setWindowTitle("Record")
        self.source = QtWidgets.QComboBox()
        self.source.addItems(list(sources_of(window)))
        self.size = QtWidgets.QComboBox()
        self.size.addItems(["Source's own size"] + list(STANDARD_SIZES))
        self.fps = QtWidgets.QSpinBox(minimum=1, maximum=120, value=30, suffix=" fps")
        self.when = QtWidgets.QComboBox()
        for key, text in WHEN.items():
            self.when.addItem(text, key)
        self.seconds = QtWidgets.QDoubleSpinBox(minimum=0.5, maximum=600, value=8.0, suffix=" s")
        self.out = QtWidgets.QLineEdit(str(Path.home() / "landscape-lens.mp4"))
        self.out.setToolTip(".mp4 (H.264), .gif, or a folder name without suffix for PNG frames")
        browse = connected(QtWidgets.QPushButton("…"), clicked=self._browse)
        row = QtWidgets.QWidget()
        QtWidgets.QHBoxLayout(row).setContentsMargins(0, 0, 0, 0)
        row.layout().addWidget(self.out, 1)
        row.layout().addWidget(browse)
        for combo, key in ((self.source, "source"), (self.size, "size"), (self.when, "when")):
            if last.get(key) and combo.findText(last[key]) >= 0:
                combo.setCurrentText(last[key])
        self.fps.setValue(last.get("fps", 30))
        self.seconds.setValue(last.get("seconds", 8.0))
        self.out.setText(last.get("out", self.out.text()))
        form = QtWidgets.QFormLayout(self)
        for label, widget in (
            ("Source", self.source),
            ("Resolution", self.size),
            ("Frame rate", self.fps),
            ("When", self.when),
            ("Length (replay, orbit)", self.seconds),
            ("Save to", row),
        ):
            form.addRow(label, widget)
        Button = QtWidgets.QDialogButtonBox.StandardButton
        buttons = QtWidgets.QDialogButtonBox(Button.Ok | Button.Cancel)
        buttons.button(Button.Ok).setText("Record")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _browse(self):
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Record to", self.out.text(), "MP4 video (*.mp4);;GIF (*.gif);;PNG frames (folder) (*)"
        )
        if path:
            self.out.setText(path)

    def settings(self) -> dict:
        return {
            "source": self.source.currentText(),
            "size": self.size.currentText(),
            "fps": self.fps.value(),
            "when": self.when.currentData(),
            "seconds": self.seconds.value(),
            "out": self.out.text().strip(),
        }


class RecordControl(QObject):
    """Owns the Record action, the live recorder while it runs and the encoders' feedback."""

    def __init__(self, window, controller):
        super().__init__(window)
        self.window = window
        self.controller = controller
        self.recorder = None
        self._summary = ""  # how many distinct frames the live recording got
        self.last: dict = {}
        self.action = connected(
            QAction("&Record…", window, shortcut=QKeySequence("Ctrl+Shift+R")), triggered=self.toggle
        )
        self.indicator = QtWidgets.QLabel("● REC")
        self.indicator.setObjectName("recIndicator")
        self.indicator.hide()
        self.encoding = QtWidgets.QProgressBar()
        self.encoding.setFixedWidth(200)
        self.encoding.setFormat("encoding %v/%m")
        self.encoding.hide()
        window.statusBar().addPermanentWidget(self.indicator)
        window.statusBar().addPermanentWidget(self.encoding)

    def toggle(self):
        if self.recording:
            self.stop()
            return
        dialog = RecordDialog(self.window, self.last)
        if dialog.exec() == QtWidgets.QDialog.DialogCode.Accepted:
            self.last = dialog.settings()
            self.start(**self.last)

    @property
    def recording(self) -> bool:
        return self.recorder is not None and self.recorder.active

    def stop(self):
        if self.recording:
            self.recorder.stop()
            self._summary = (
                f": {self.recorder.distinct} distinct frames over "
                f"{self.recorder.frames / self.recorder.fps:.1f} s ({self.recorder.frames} "
                f"frames at {self.recorder.fps} fps; repeats fill the time between updates)"
            )
        self._show_recording(False)
        self.action.setText("&Record…")

    def start(self, source: str, size: str, fps: int, when: str, seconds: float, out: str):
        """Start recording; also the entry point tests use (no dialog).

        Live films the chosen source as things happen. Replay and orbit render the preset's
        story clip (every neuron, the loss, captions; the source is not used) as a job that
        keeps the window responsive and can be cancelled from the Clip dock.
        """
        window = self.window
        if when != "live":
            # A clip has no "own" size: it is a composition. 720p unless a standard size is chosen.
            return self._start_clip(STANDARD_SIZES.get(size) or (1280, 720), fps, seconds, when == "orbit", out)
        try:
            film = sources_of(window)[source](STANDARD_SIZES.get(size))
            encoder = Encoder(out, fps, self)
        except (EngineInputError, OSError) as error:
            self.controller.error(str(error))
            return None
        encoder.progress.connect(self._on_progress)
        encoder.finished.connect(self._on_finished)
        encoder.failed.connect(self._on_failed)
        self._show_recording(True)
        self.recorder = LiveRecorder(film, encoder, fps, parent=self)
        self.recorder.ticked.connect(self._on_ticked)
        # What counts as a new picture: a run's update, a scrubbed frame, a turned camera.
        self.controller.progressed.connect(self.recorder.mark_changed)
        self.controller.frame_changed.connect(self.recorder.mark_changed)
        for view in window.workspace.gl_views():
            if hasattr(view, "camera_moved"):
                view.camera_moved.connect(self.recorder.mark_changed)
        self.action.setText("Stop &recording")
        self.controller.adopt(self.recorder)  # cancel-all and shutdown end it, and its threads
        self.recorder.start()
        return encoder

    def _start_clip(self, size, fps: int, seconds: float, orbit: bool, out: str):
        """The preset's story clip, rendered by the clip dock (paper B slices its walk first)."""
        from .clips.scene import story_for

        preset = self.controller.preset_name
        try:
            if not preset:
                raise EngineInputError("load and run a training preset first")
            clip = story_for(preset, size, fps, seconds, orbit)
        except EngineInputError as error:
            self.controller.error(str(error))
            return None
        return self.controller.render_clip(clip, out)  # the clip dock shows progress, ETA and Cancel

    def _show_recording(self, on: bool):
        # Steady, not blinking: a whole-window recording films the status bar too.
        self.indicator.setText("● REC")
        self.indicator.setVisible(on)
        title = self.window.windowTitle().removeprefix("● REC — ")
        self.window.setWindowTitle(f"● REC — {title}" if on else title)
        if on:
            self.encoding.setRange(0, 0)
            self.encoding.show()

    def _on_ticked(self, seconds: float):
        self.indicator.setText(f"● REC {int(seconds) // 60}:{int(seconds) % 60:02d}")

    def _on_progress(self, done: int, total: int):
        self.encoding.setRange(0, max(total, 1))
        self.encoding.setValue(done)

    def _on_finished(self, path: str):
        self.encoding.hide()
        self.controller.info(f"Recording saved to {path}{self._summary}")

    def _on_failed(self, message: str):
        self.encoding.hide()
        self._show_recording(False)
        self.controller.error(message)
