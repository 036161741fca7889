"""The replay dock: a timeline scrubber over the current tab's finished run.

Every view follows through ``Workspace.show_frame``. At 1× the whole run plays in
``BASE_SECONDS`` whatever its length, because runs range from a hundred to millions of
recorded steps and a talk needs a predictable pace. Playback follows the wall clock: when
drawing a frame is slow, frames are skipped rather than the replay slowing down.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QSlider,
    QStyle,
    QToolButton,
    QWidget,
)

from .style import set_icon

BASE_SECONDS = 10.0
TICK_MS = 33
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)


class ReplayDock(QDockWidget):
    frame_shown = Signal(int)

    def __init__(self, window):
        super().__init__("Replay")
        self.setObjectName("replay")
        self.window = window
        self._position, self._clock = 0.0, 0.0
        self._timer = QTimer(self, interval=TICK_MS)
        self._timer.timeout.connect(self._advance)

        icon = lambda name: self.style().standardIcon(getattr(QStyle.StandardPixmap, name))
        button = lambda name, tip, slot: self._button(icon(name), tip, slot)
        self.back_button = button("SP_MediaSeekBackward", "Step back one frame", lambda: self.step(-1))
        self.play_button = button("SP_MediaPlay", "Play / pause the replay", self.toggle_play)
        self.forward_button = button("SP_MediaSeekForward", "Step forward one frame", lambda: self.step(1))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.valueChanged.connect(self._on_slider)
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.speed.setToolTip(f"At 1× the whole run plays in {BASE_SECONDS:g} s")
        self.loop = QCheckBox("Loop")
        self.label = QLabel()
        self.label.setMinimumWidth(130)

        bar = QWidget()
        bar.setObjectName("replayBar")
        layout = QHBoxLayout(bar)
        layout.setContentsMargins(6, 2, 6, 2)
        for widget in (self.back_button, self.play_button, self.forward_button):
            layout.addWidget(widget)
        layout.addWidget(self.slider, 1)
        for widget in (self.label, self.speed, self.loop):
            layout.addWidget(widget)
        self.setWidget(bar)
        self.setTitleBarWidget(QWidget())  # one slim row; View ▸ Replay shows or hides it
        self.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetClosable | QDockWidget.DockWidgetFeature.DockWidgetMovable
        )
        window.run_finished.connect(self.refresh)
        window.tabs.currentChanged.connect(self.refresh)
        window.controller.state_changed.connect(self.refresh)
        self.refresh()

    def _button(self, icon, tip, slot) -> QToolButton:
        b = QToolButton(toolTip=tip, autoRaise=True)
        set_icon(b, icon)
        b.clicked.connect(slot)
        return b

    def _show_playing(self, playing: bool):
        name = "SP_MediaPause" if playing else "SP_MediaPlay"
        set_icon(self.play_button, self.style().standardIcon(getattr(QStyle.StandardPixmap, name)))

    @property
    def length(self) -> int:
        # A live run owns the views; the scrubber waits until it has finished.
        return 0 if self.window.controller.running else self.window.workspace.timeline_length()

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def refresh(self, *_):
        """Re-read the timeline (a run finished, the tab changed, a session was opened)."""
        n = self.length
        if n < 2:
            self.pause()
        for w in (self.slider, self.back_button, self.play_button, self.forward_button):
            w.setEnabled(n > 1)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(n - 1, 0))
        # the frame the views show: a finished run's end, or the frame scrubbed to before the
        # tab changed (the slider used to jump to the end, the views staying at that frame)
        shown = self.window.workspace.shown_frame() if n else None
        self.slider.setValue(max(n - 1, 0) if shown is None else shown)
        self.slider.blockSignals(False)
        # the controller's frame is the scrubber's (a key frame captures it, a clip's end shows
        # it): it kept the frame scrubbed to in an earlier run. While a job runs there is no
        # timeline, and the frame stays where the user left it.
        if n:
            self.window.controller.set_frame(self.slider.value(), self.window.workspace.key)
        self._position = float(self.slider.value())
        self._update_label()

    def seek(self, index: int):
        self.slider.setValue(index)  # -> _on_slider -> show_frame

    def step(self, delta: int):
        self.pause()
        self.seek(self.slider.value() + delta)

    def play(self):
        if self.length < 2:
            return
        if self.slider.value() >= self.slider.maximum():
            self.seek(0)
        self._position = float(self.slider.value())
        self._clock = time.monotonic()
        self._timer.start()
        self._show_playing(True)

    def pause(self):
        self._timer.stop()
        self._show_playing(False)

    def toggle_play(self):
        self.pause() if self.playing else self.play()

    def _advance(self):
        n = self.length
        if n < 2:
            self.pause()
            return
        now = time.monotonic()
        elapsed, self._clock = now - self._clock, now
        self._position += elapsed * (n - 1) / BASE_SECONDS * self.speed.currentData()
        if self._position > n - 1:
            if not self.loop.isChecked():
                self.seek(n - 1)
                self.pause()
                return
            self._position = 0.0
        self.seek(int(self._position))

    def _on_slider(self, index: int):
        if not self.playing:
            self._position = float(index)
        if self.length > 0:
            self.window.workspace.show_frame(index)
            self.window.controller.set_frame(index, self.window.workspace.key)
            self.frame_shown.emit(index)
        self._update_label()

    def _update_label(self):
        n = self.length
        # a tab whose runs are not replayed says so (the Training run tab follows its runs)
        empty = getattr(self.window.workspace, "replay_note", "no finished run")
        self.label.setText(f"frame {self.slider.value() + 1} / {n}" if n else empty)
