"""The main window: parameter dock, workspace tabs, run controls and the status bar."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QProgressBar,
    QStackedWidget,
    QStyle,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from engine.core.errors import EngineInputError
from engine.core.progress import Progress

from . import export, session
from .clips.dock import ClipDock
from .controller import AppController
from .error_reporting import error_relay
from .ownership import own_parameters
from .panels.parameter_panel import ParameterPanel
from .parameter_values import changed_fields, field_values
from .presentation import Presentation
from .presets import available_presets
from .recording import RecordControl
from .replay import ReplayDock
from .widgets import ActionButton, MessageBar, SlideTitle, connected
from .worker import JobRunner
from .workspace import Workspace
from .workspaces import all_workspaces, workspace_classes

STATUS_INTERVAL_S = 0.1


class MainWindow(QMainWindow):
    """``keys``: build only these workspaces; the other tabs keep their place and title with an
    empty page (``screenshot --session`` draws one saved tab and builds nothing it does not show)."""

    def __init__(self, keys=None):
        super().__init__()
        self.setWindowTitle("Landscape Lens — loss landscapes of shallow and deep networks")
        self.controller = AppController(self)
        self._last_status_update = 0.0
        self._pending_status: Progress | None = None  # the newest update the ~10 Hz throttle held back
        self._status_timer = QTimer(self, singleShot=True)
        self._status_timer.timeout.connect(self._show_pending_status)
        self.workspaces: dict[str, Workspace] = {w.key: w for w in all_workspaces(keys)}
        for workspace in self.workspaces.values():
            self.controller.register(workspace)
        self._build_central()
        self._build_parameter_dock()
        self._build_run_controls()
        self._build_status_bar()
        self._build_talk_tools()
        self._build_menus()
        self.controller.run_started.connect(self._on_started)
        self.controller.workspace_requested.connect(self.show_workspace)
        self.controller.message.connect(self._show_message)
        self.controller.progressed.connect(self._on_progress)
        self.controller.succeeded.connect(self._on_succeeded)
        self.controller.failed.connect(self._on_failed)
        self.controller.cancelled.connect(self._on_cancelled)
        self.controller.state_changed.connect(self._on_state_changed)
        self._on_state_changed("idle")
        self._as_loaded = None  # (the preset's panel, its values as loaded): what the slide describes
        for workspace in self.workspaces.values():
            workspace.parameters.sigTreeStateChanged.connect(self._on_parameters_changed)
        error_relay().raised.connect(self.message_bar.show_error)
        self._relay_connected = True

    @property
    def runner(self) -> JobRunner:
        """The main lane, for inspection (tests): Run, Pause, Step and Cancel drive it through
        the controller."""
        return self.controller.main

    @property
    def run_finished(self):
        return self.controller.run_finished

    @property
    def preset_name(self) -> str | None:
        return self.controller.preset_name

    @property
    def last_outcome(self) -> str:
        return self.controller.last_outcome

    def _show_message(self, kind: str, text: str):
        (self.message_bar.show_error if kind == "error" else self.message_bar.show_info)(text)

    # ----------------------------------------------------------------- layout
    def _build_central(self):
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        for kind in workspace_classes():
            page = self.workspaces.get(kind.key)
            self.tabs.addTab(QWidget() if page is None else page, kind.title)
        self.tabs.setCurrentWidget(next(iter(self.workspaces.values())))
        self.message_bar = MessageBar()
        self.slide_title = SlideTitle()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.slide_title)
        layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self.tabs.currentChanged.connect(self._on_tab_changed)

    def _load_network(self):
        """File ▸ Load network: the current tab takes it if it can, otherwise the minima tab."""
        workspace = self.workspace if self.workspace.accepts_networks else self.workspaces["minima"]
        self.show_workspace(workspace.key)
        workspace.ask_load_network()

    def _build_parameter_dock(self):
        self.parameter_stack = QStackedWidget()
        self.parameter_trees: dict[str, ParameterPanel] = {}
        for kind in workspace_classes():  # one page per tab, in the tabs' order
            key, workspace = kind.key, self.workspaces.get(kind.key)
            if workspace is None:
                self.parameter_stack.addWidget(QWidget())
                continue
            tree = ParameterPanel(workspace.parameters)
            own_parameters(workspace.parameters, workspace)
            self.parameter_trees[key] = tree
            self.parameter_stack.addWidget(tree)
        self.parameter_stack.setCurrentIndex(self.tabs.currentIndex())
        self.parameter_dock = QDockWidget("Parameters")
        self.parameter_dock.setObjectName("parameters")
        self.parameter_dock.setWidget(self.parameter_stack)
        self.parameter_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.parameter_dock.setMinimumWidth(320)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.parameter_dock)
        self._dock_sized = False  # sized at the first show (see showEvent)

    def _build_run_controls(self):
        bar = QToolBar("Run")
        bar.setObjectName("run-controls")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        icon = lambda name: self.style().standardIcon(getattr(QStyle.StandardPixmap, name))
        control = lambda name, text, slot, keys="": connected(
            QAction(icon(name), text, self, shortcut=QKeySequence(keys)), triggered=slot
        )
        self.run_action = control("SP_MediaPlay", "Run", self.run, "Ctrl+R")
        self.pause_action = control("SP_MediaPause", "Pause", self.toggle_pause, "Space")
        self.step_action = control("SP_MediaSeekForward", "Step", self.step, "Ctrl+.")
        self.cancel_action = control("SP_MediaStop", "Cancel", self.cancel, "Esc")
        self.reset_action = control("SP_BrowserReload", "Reset", self.reset)
        for action in (self.run_action, self.pause_action, self.step_action, self.cancel_action, self.reset_action):
            # not bar.addAction: the tool button Qt makes for it keeps a connection per change
            button = ActionButton(action, bar)
            button.setToolButtonStyle(bar.toolButtonStyle())
            button.setAutoRaise(True)
            bar.addWidget(button)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)

    def _build_status_bar(self):
        self.status_label = QLabel("Ready")
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setFixedWidth(260)
        self.progress_bar.setTextVisible(True)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress_bar)

    def _build_menus(self):
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(
            connected(QAction("&Load network (.npz, .pt, .pth, .pt2)…", self), triggered=self._load_network)
        )
        if "run" in self.workspaces:
            file_menu.addAction(connected(QAction("Open &run… (a training run folder)", self), triggered=self.open_run))
        self._add_talk_menus(file_menu)
        file_menu.addAction(
            connected(QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit), triggered=self.close)
        )
        preset_menu = self.menuBar().addMenu("&Presets")
        for name, preset in available_presets().items():
            preset_menu.addAction(
                connected(QAction(preset.title, self), triggered=lambda _=False, n=name: self.load_preset(n))
            )

    # ------------------------------------------- talks: sessions, export, record, replay
    def _build_talk_tools(self):
        self.replay_dock = ReplayDock(self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.replay_dock)
        self.recording = RecordControl(self, self.controller)
        self.clip_dock = ClipDock(self.controller, self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.clip_dock)
        self.clip_dock.hide()  # View ▸ Clip: key frames are for preparing talks, not every session
        self.presentation = Presentation(self)

    def _add_talk_menus(self, file_menu):
        file_menu.addAction(
            connected(
                QAction("&Open session…", self, shortcut=QKeySequence.StandardKey.Open), triggered=self.open_session
            )
        )
        file_menu.addAction(
            connected(
                QAction("&Save session…", self, shortcut=QKeySequence.StandardKey.Save), triggered=self.save_session
            )
        )
        recent = file_menu.addMenu("Recent sessions")
        recent.aboutToShow.connect(
            lambda: self._fill_menu(
                recent, {f: (lambda _=False, f=f: self.open_session(f)) for f in session.recent_files()}
            )
        )
        exports = file_menu.addMenu("&Export")
        exports.aboutToShow.connect(
            lambda: self._fill_menu(
                exports,
                {
                    f"{label}…": (lambda _=False, t=label: export.export_interactively(self, t))
                    for label in export.export_targets(self.workspace)
                },
            )
        )
        file_menu.addSeparator()
        view_menu = self.menuBar().addMenu("&View")
        self.presentation.add_to_menu(view_menu)
        view_menu.addSeparator()
        view_menu.addAction(self.replay_dock.toggleViewAction())
        view_menu.addAction(self.clip_dock.toggleViewAction())
        self.menuBar().addMenu("&Record").addAction(self.recording.action)

    def _fill_menu(self, menu, entries: dict):
        menu.clear()
        for text, slot in entries.items():
            menu.addAction(connected(QAction(text, menu), triggered=slot))
        if not entries:
            menu.addAction(QAction("(none)", menu, enabled=False))

    def save_session(self, path: str | None = None):
        if not path:
            path, _ = QFileDialog.getSaveFileName(
                self, "Save session", "talk" + session.SUFFIX, f"Sessions (*{session.SUFFIX})"
            )
        if not path:
            return
        try:
            session.save_session(self, path)
        except (EngineInputError, OSError) as error:
            self.message_bar.show_error(f"could not save the session: {error}")
            return
        self.status_label.setText(f"Saved session {path}")

    def open_session(self, path: str | None = None):
        if not path:
            path, _ = QFileDialog.getOpenFileName(
                self, "Open session", "", f"Sessions (*{session.SUFFIX});;All files (*)"
            )
        if path:
            session.load_session(self, path)

    def open_run(self, folder: str | None = None, once: bool = False):
        """File ▸ Open run…: follow a run folder written by ll.Recorder in the Training run tab
        (``once``: draw it as it stands and stop, for a screenshot)."""
        workspace = self.workspaces["run"]
        self.show_workspace("run")
        self.show_slide("", "")
        if folder:
            workspace.open_run(folder, once=once)
        else:
            workspace.ask_open_run()

    def set_look(self, presentation: bool = False, theme: str | None = None) -> None:
        """Theme and presentation mode, as the View menu sets them (command-line flags)."""
        if theme is not None:
            self.presentation.set_theme(theme, remember=False)
        if presentation:
            self.presentation.set_on(True)

    # ------------------------------------------------------------ workspaces
    @property
    def workspace(self) -> Workspace:
        return self.tabs.currentWidget()

    def _on_tab_changed(self, index: int):
        self.parameter_stack.setCurrentIndex(index)

    def show_workspace(self, key: str):
        self.tabs.setCurrentWidget(self.workspaces[key])

    def load_preset(self, name: str, run: bool | None = None, steps: int | None = None):
        """Open a preset in its workspace and (by default) start it: the controller's
        ``load_preset``, which the headless commands take too, with the window's words."""
        # Untracked while the preset's fields are set: each set would compare every field.
        as_loaded, self._as_loaded = self._as_loaded, None
        try:
            preset = self.controller.load_preset(name, run=False)  # shows its tab
        except EngineInputError as error:  # raised before any field is set: the slide stands
            self._as_loaded = as_loaded
            self.message_bar.show_error(str(error))
            return
        self._end_status(f"Preset: {preset.title}")
        self.show_slide(preset.title, preset.description, self.workspaces[preset.workspace].parameters)
        if preset.autorun if run is None else run:
            self.run(steps=steps)

    # ------------------------------------------------------------ run control
    def show_slide(self, title: str, line: str, parameters=None) -> None:
        """Show a slide; ``parameters``: the panel whose values it describes as they are now, so
        that a later edit is named under its line."""
        self.slide_title.show_slide(title, line)
        self._as_loaded = None if parameters is None else (parameters, field_values(parameters))

    def _on_parameters_changed(self, parameters, _changes):
        if self._as_loaded is not None and parameters is self._as_loaded[0]:
            self.slide_title.show_changes(changed_fields(parameters, self._as_loaded[1]))

    def stop_jobs(self) -> None:
        """Cancel whatever runs or waits on every lane, and drop everything it would still draw."""
        self.controller.discard()

    def run(self, steps: int | None = None, step: bool = False):
        # Run resumes only a paused job. Otherwise it builds anew, queued behind whatever is still
        # finishing (a cancelled or superseded job slow to reach its next yield): never a re-slice.
        if self.controller.run_state == "paused":
            self.controller.resume()
            return
        try:
            self.controller.run(self.workspace, steps=steps if isinstance(steps, int) else None, step=step)
        except EngineInputError as error:
            self.message_bar.show_error(str(error))
            self.status_label.setText("Not started: fix the highlighted input")

    def toggle_pause(self):
        if self.controller.run_state == "running":
            self.controller.pause()
        elif self.controller.run_state == "paused":
            self.controller.resume()

    def step(self):
        if self.controller.run_active:
            self.controller.step()
        else:
            self.run(step=True)

    def cancel(self):
        self.controller.cancel()

    def reset(self):
        self.controller.discard(*self.controller.lanes_for(self.workspace))  # a run followed elsewhere goes on
        self.workspace.reset()
        self.clip_dock.forget_scene(cancel_walk=True)
        self.progress_bar.setValue(0)
        self._end_status("Reset")

    # ------------------------------------------------------------ job signals
    def _on_started(self, _owner, _keep: bool):
        self.message_bar.clear()
        self.progress_bar.setValue(0)

    def _on_progress(self, update: Progress):
        # Repainting the status bar recomposites the GL views beside it: profiled at a third of
        # a live run's time when done at the full 60 Hz, so text and bar update at ~10 Hz. The
        # newest update held back is shown when its turn comes: dropped, the bar said "0/12
        # cells" beside a map that showed one.
        self._pending_status = update
        wait_s = STATUS_INTERVAL_S - (time.monotonic() - self._last_status_update)
        if wait_s <= 0:
            self._show_pending_status()
        elif not self._status_timer.isActive():
            self._status_timer.start(int(1000 * wait_s) + 1)

    def _show_pending_status(self):
        update, self._pending_status = self._pending_status, None
        if update is None:
            return
        self._last_status_update = time.monotonic()
        if update.fraction == update.fraction:
            self.progress_bar.setValue(int(1000 * min(max(update.fraction, 0.0), 1.0)))
        if update.message:
            self.status_label.setText(update.message)

    def _end_status(self, text: str) -> None:
        """A job's last word (or a reset's): no held-back update may overwrite it."""
        self._status_timer.stop()
        self._pending_status = None
        self.status_label.setText(text)

    def _on_succeeded(self, result):
        self.progress_bar.setValue(1000)
        self._end_status(getattr(result, "message", "") or "Done")

    def _on_failed(self, message: str):
        self.message_bar.show_error(message)
        self._end_status("Stopped: " + message)

    def _on_cancelled(self, last: Progress | None):
        self._end_status("Cancelled — results so far are kept")

    def _on_state_changed(self, state: str):
        busy = state != "idle"
        self.run_action.setText("Resume" if state == "paused" else "Run")
        self.run_action.setEnabled(state != "running")
        self.pause_action.setEnabled(state == "running")
        self.step_action.setEnabled(state != "running")
        self.cancel_action.setEnabled(busy)

    @property
    def computing(self) -> bool:
        """Any job on any lane (main, preview, probe, walk, setup) still running or waiting."""
        return self.controller.busy

    def showEvent(self, event):
        super().showEvent(event)
        if not self._dock_sized:
            # Wide enough that no parameter name or value is cut off at 1600 px and up. Before
            # the first show Qt ignores the request and the dock kept its 320 px minimum.
            self._dock_sized = True
            self.resizeDocks([self.parameter_dock], [440], Qt.Orientation.Horizontal)

    def closeEvent(self, event):
        # Stop every worker (lanes, clip render, encoders, live recorder) before Qt tears the
        # widgets down, so no thread outlives the window.
        self.controller.shutdown(5000)
        if "run" in self.workspaces:  # its demo's temporary run folder, once no job writes it
            self.workspaces["run"].release_files()
        if self._relay_connected:  # the relay outlives windows; a second close must not disconnect again
            error_relay().raised.disconnect(self.message_bar.show_error)
            self._relay_connected = False
        super().closeEvent(event)
