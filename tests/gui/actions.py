"""What a person does to the real window, and what must hold after each thing they do.

Shared by the stateful test (tests/gui/test_state_machine.py, hypothesis picks the actions) and
the soak (benchmarks/soak_gui.py, a seeded random generator picks them for minutes). Nothing
here uses pytest or qtbot: the soak runs without them. Every action is a method of ``Driver``
taking plain arguments (what a strategy draws); ``Driver.check()`` raises AssertionError when an
invariant fails, naming it.

Presets run shortened (few steps, small slices, one split per layer) so that a construction
takes seconds on a shared 2-core machine.
"""

from __future__ import annotations

import gc
import io
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtTest import QTest

from gui.parameter_values import field_values

# Every preset of the Presets menu; fig4-breast-cancer is opened by ``load_sweep`` (with its
# executor and folder). nonattr-path, shrunk (N = 5 samples), takes about 20 s here.
TOPOLOGY_PRESETS = (
    "fig3-free",
    "fig3-obstructed",
    "adam-drift",
    "fig5-probability",
    "fig3-free-d3",
    "fig3-free-flow",
    "fig3-obstructed-flow",
    "d1-input-signs",
    "biases",
    "your-network",
)
MINIMA_PRESETS = (
    "nonattr-shallow",
    "nonattr-fig3",
    "nonattr-infinity",
    "nonattr-fig3-filter",
    "nonattr-fig3-flat",
    "nonattr-path",
)
# The toolkit tab's presets run on the shipped networks/your-network.pt (File ▸ Load network's
# kind of file: a state_dict with its data).
TOOLKIT_PRESETS = ("toolkit-plane", "toolkit-pca", "toolkit-density", "toolkit-extremes")
RUN_PRESETS = ("edge-of-stability",)  # the training-run tab follows the demo run it records
PRESETS = TOPOLOGY_PRESETS + MINIMA_PRESETS + TOOLKIT_PRESETS + RUN_PRESETS
TABS = 4  # topology, minima, the landscape toolkit, the training run
STEPS = 30  # training steps of a topology run; minima at infinity: GD steps

# Like tests/gui/workspaces/test_minima_workspace.py's QUICK, plus one split per layer and few restarts.
MINIMA_QUICK = {
    "slices": {"K": 300, "P": 41},
    "path": {"points": 7},
    "plane": {"points": 15},
}
RUN_QUICK = {"demo": {"steps": 60, "every": 20, "sharpness_every": 20}}  # edge-of-stability, shortened
MINIMA_SMALL = {"construction": {"schedule": "1:1, 2:1", "restarts": 15}}  # the 2—1—1—1 presets
# B11's path needs the last hidden layer ≥ N + 1 wide and the one before ≥ 3: N = 5 samples.
PATH_SMALL = {"experiment": {"samples": 5}, "construction": {"schedule": "1:2, 2:5", "restarts": 15}}
TOPOLOGY_QUICK = {
    "optimizer": {"steps": STEPS},  # Step (run(step=True)) takes the parameter's steps
    "fig5": {"d_max": 8, "l_max": 8, "mc_samples": 200},
    # Fig. 4: 2 + 3 = 5 cells (l, l₊) of one init each; Run passes STEPS as the runs' steps
    "fig4": {"inits": 1, "l_max": 3, "steps": STEPS},
}
TOOLKIT_QUICK = {
    "plane": {"points": 9},
    "training": {"steps": STEPS, "optimizers": "gd, adam"},
    "density": {"probes": 3, "steps": 20},
}
# Fields a person edits in each tab's panel, and values they type: "abc" is refused in one line
# when Run reads it (the message names the field).
FIELD_EDITS = {
    "topology": (
        (("optimizer", "lr"), (0.005, 0.02)),
        (("init", "seed"), (1, 7)),
        (("init", "c"), ("-0.2, 0.3", "abc")),
        (("display", "log_drift"), (True, False)),
    ),
    "minima": (
        (("slices", "seed"), (1, 3)),
        (("slices", "normalize"), ("neuron", "unit")),
        (("path", "points"), (5, 9)),
    ),
    "landscape": (
        (("plane", "seed"), (1, 2)),
        (("plane", "directions"), ("layer", "filter")),
        (("plane", "points"), (7, 11)),
    ),
    "run": (  # the edge-of-stability demo, kept short
        (("demo", "steps"), (40, 60)),
        (("demo", "lr"), (0.1, 0.05)),
        (("demo", "sharpness_every"), (20, 40)),
    ),
}
REFUSED_EDIT_MESSAGES = ("target c_k: 'abc' is not a comma-separated list of numbers",)
WINDOW_SIZES = ((1600, 960), (1280, 800), (1920, 1200), (1100, 760))
CLOSED_MID_RUN = ("fig3-free", "nonattr-fig3", "toolkit-density", "fig5-probability")
SWEEP_EXECUTORS = ("batched", "local", "ray")  # Fig. 4 all at once, cell by cell here, on a local Ray
# File ▸ Load network on the toolkit tab: files a user brings, good and bad.
NETWORK_FILES = ("your-network.pt", "mlp.npz", "garbage.pt", "missing.npz", "wrong-arrays.npz")
GOOD_NETWORK_FILES = ("your-network.pt", "mlp.npz")
EXPORT_SUFFIXES = (".png", ".svg", ".csv")
# Messages a rule may put on the message bar (substrings). Anything else, or any "Internal
# error", fails the check.
SESSION_MESSAGES = ("Opened session",)
CLIP_MESSAGES = (
    "load a training preset first",
    "load and run a training preset first",
    "clips film a finished training run",
    "the minima clip films a finished Fig. 3 construction",
    "shows no degenerate path to walk",
    "the walk needs a finished Fig. 3 construction with its degenerate path",
    "paper B's clip slices along λ first",
    "a clip needs at least two key frames",
    "Clip saved to",
    "Clip rendering cancelled",
    "the toolkit tab films no clip",
    "story clips film each neuron's 3D view",
)
EXPORT_MESSAGES = ("Exported ",)
# Run or Step on the toolkit tab with the minima tab's network (its default source) before there
# is one, or on the Training run tab before a folder is chosen: allowed from the start
TOOLKIT_MESSAGES = ("build or load a network in the minima tab first", "choose a run folder: File ▸ Open run…")
SPLIT_MESSAGES = (
    "build or load a network first",
    "build or load a network before splitting a neuron",
    "there is no split to undo",
)
NOT_DRAWN_FROM_THE_FIGURE = {"probe", "spectrum"}  # the probe lane redraws them at the slider's λ


# ---------------------------------------------------------------------------- event loop
def wait(ms: int) -> None:
    """Turn the event loop for ``ms`` milliseconds."""
    QTest.qWait(ms)


def wait_until(predicate, timeout_ms: int, step_ms: int = 10) -> bool:
    deadline = time.monotonic() + timeout_ms / 1000
    while not predicate():
        if time.monotonic() > deadline:
            return False
        QTest.qWait(step_ms)
    return True


def open_window(shortened: bool = True):
    """A shown main window, with shortened parameters as the conftest ``window`` fixture makes it
    (or, not ``shortened``, as a user's File ▸ Open session finds it: the defaults)."""
    from gui.main_window import MainWindow
    from gui.presets import apply_values

    win = MainWindow()
    win.resize(1600, 960)
    win.show()
    QTest.qWaitForWindowExposed(win, 10000)
    if shortened:
        apply_values(win.workspaces["minima"].parameters, {**MINIMA_QUICK, **MINIMA_SMALL})
        apply_values(win.workspaces["topology"].parameters, TOPOLOGY_QUICK)
    return win


def readable(state: dict) -> dict:
    """A tab's session state with its network's .npz bytes read into arrays (a zip's bytes hold
    the time it was written, so two saves of one network differ)."""
    network = state.get("network")
    if not isinstance(network, dict) or "npz" not in network:
        return state
    with np.load(io.BytesIO(network["npz"].tobytes()), allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files}
    return {**state, "network": {**network, "npz": arrays}}


def close_window(win, timeout_ms: int = 120000) -> bool:
    """Stop everything the window started (clip render, recording, every lane), then close and
    delete it, processing the deferred delete here. True if every job had stopped in time."""
    win.clip_dock.cancel()
    win.recording.stop()
    win.controller.discard()
    stopped = wait_until(lambda: not win.computing, timeout_ms)
    # KNOWN BUG (reported with issue #23): a main job's end schedules
    # QTimer.singleShot(0, controller.run_finished.emit) with no context object; when the window
    # is deleted before that zero timer fires (a job ended in the last turn of the loop), the
    # timer fires on a deleted controller: "RuntimeError: Signal source has been deleted"
    # reaches the error relay, i.e. the next window. One more turn of the loop lets it fire here.
    wait(50)
    win.close()
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()
    # Its ~17,000 Python wrappers, in reference cycles, freed on this (the GUI) thread: here, or,
    # while the caller still holds the window, by the caller's own collection once it lets go. Left
    # to the collector's next full run, on whichever thread allocated then, they made the soak's
    # long collections: 47 in 20 minutes, up to 1.6 s (~50,000 objects) on a worker; with this,
    # 2 full collections in 20 minutes fell outside the second windows' actions, 32 and 37 ms.
    # The app frees a window only as it quits; a second window is the soak's stand-in for a restart.
    gc.collect()
    return stopped


# ---------------------------------------------------------------------------- comparisons
def same(a, b) -> bool:
    """Deep equality of view data: dicts (and the stage states that read as them), lists, tuples,
    numpy arrays, numbers, strings."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def differences(a, b, path: str = "", most: int = 4) -> list[str]:
    """Where ``a`` and ``b`` differ (``same``'s deep equality), as "network/lam: 0.93 ≠ 2.0", down
    to the first level that is not a dict; at most ``most``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for key in sorted(a.keys() | b.keys(), key=str):
            if key not in a or key not in b:
                out.append(f"{path}{key}: only in the {'saved' if key in b else 'reopened'}")
            elif not same(a[key], b[key]):
                out += differences(a[key], b[key], f"{path}{key}/", most)
        return out[:most]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return [f"{path.rstrip('/')}: shape {a.shape} {a.dtype} ≠ {b.shape} {b.dtype}" if a.shape != b.shape
                else f"{path.rstrip('/')}: {int(np.sum(a != b))} of {a.size} elements differ"]  # fmt: skip
    text = lambda v: repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."  # noqa: E731
    return [f"{path.rstrip('/')}: {text(a)} ≠ {text(b)}"]


def live_threads(runner) -> list:
    """The lane's QThreads still running: its current one and the superseded (stale) ones."""
    threads = {runner._thread, *runner._stale} - {None}
    return [t for t in threads if t.isRunning()]


# ---------------------------------------------------------------------------- the driver
def action(method):
    """Log the call (``Driver.log``): a failed check names the sequence that led to it."""

    def logged(self, *args):
        self.log.append(f"{method.__name__}({', '.join(repr(a) for a in args)})")
        return method(self, *args)

    logged.__name__ = method.__name__
    logged.__doc__ = method.__doc__
    return logged


@dataclass
class Driver:
    """One window and what the actions expect of it."""

    window: object
    tmp: Path
    errors: list = field(default_factory=list)  # what reached the error relay
    allowed: set = field(default_factory=set)  # message-bar substrings the rules so far may show
    outcome: dict = field(default_factory=dict)  # workspace key -> how its last main job ended
    log: list = field(default_factory=list)  # the actions so far, for a report
    minima_saved: dict | None = None  # the minima tab's drawn state a reopened session holds
    # the reopened session's live figure, once a job ran on it (None: none has)
    minima_resumed: object = None
    landscape_saved: dict | None = None  # the toolkit tab's, likewise
    loading: dict | None = None  # File ▸ Load network in progress: the file and the fields before it
    problems: list = field(default_factory=list)  # what an action saw at once (an export's file, a refusal)
    scrubbed: tuple = (None, 0)  # (topology result, row) the replay scrubber was moved to last
    # the soak's watchdog.pause: building or closing a second window blocks the event loop as
    # the app's start does (2–2.7 s in the soak), which is not a block in what the window does
    pause_watchdog: Callable[[bool], None] = lambda on: None

    def __post_init__(self):
        from gui.error_reporting import error_relay

        self.tmp = Path(self.tmp)
        self._allow(*TOOLKIT_MESSAGES)
        self.relay = error_relay()
        self.relay.raised.connect(self.errors.append)
        c = self.window.controller
        self._owner = None
        c.run_started.connect(self._on_started)
        c.main.succeeded.connect(lambda _r: self._ended("succeeded"))
        c.main.failed.connect(lambda _m: self._ended("failed"))
        c.main.cancelled.connect(lambda _l: self._ended("cancelled"))

    def detach(self):
        try:
            self.relay.raised.disconnect(self.errors.append)
        except (RuntimeError, TypeError):
            pass

    def _on_started(self, owner, keep):
        self._owner = owner
        if owner is not self.landscape:
            self._load_dropped("another tab's job took the lane from it")
        elif not keep:
            self.loading = None  # this tab's Run or Step reads the loaded file: it is the user's
        if owner is not None:
            self.outcome[owner.key] = "running"
        if owner is self.minima and not keep:
            self.minima_saved = self.minima_resumed = None  # a new run: the figure is what is drawn again
        elif owner is self.minima and self.minima_saved is not None and self.minima_resumed is None:
            self.minima_resumed = self.minima.figure  # a job on the reopened network (a re-slice, a split)
        if owner is self.landscape:
            self.landscape_saved = None

    def _ended(self, outcome):
        if self._owner is not None:
            self.outcome[self._owner.key] = outcome
        if self._owner is self.landscape and outcome == "succeeded" and self.loading is not None:
            # The load's own job (another run would have cleared it) drew its result: the file
            # loaded, whatever comes next before a quiet moment lets check_network_load look
            # (a load followed at once by another took the first one's "before" for its own).
            from gui.workspaces.landscape import FILE_FIELDS

            fields = {f: self.landscape.parameters["network", f] for f in FILE_FIELDS}
            if fields != self.loading["after"]:
                self.problems.append(f"loaded {self.loading['name']}, but the network fields are {fields}")
            self.loading = None

    @property
    def minima(self):
        return self.window.workspaces["minima"]

    @property
    def topology(self):
        return self.window.workspaces["topology"]

    @property
    def landscape(self):
        return self.window.workspaces["landscape"]

    def _load_dropped(self, why: str):
        """A load in progress that will not end (discarded, or another tab's job took the lane):
        the network fields are as they were before it at once."""
        if self.loading is None:
            return
        from gui.workspaces.landscape import FILE_FIELDS

        fields = {f: self.landscape.parameters["network", f] for f in FILE_FIELDS}
        if fields != self.loading["before"]:
            self.problems.append(f"{why}, yet the fields of {self.loading['name']} stayed: {fields}")
        self.loading = None

    def _submitted(self, press):
        """Run or Step (``press``): on the toolkit tab, a job it made and submitted reads the loaded
        file, so the load is the user's (a paused or running job resumed or stepped is not one, nor
        a job that could not be made)."""
        main = self.window.controller.main
        before = (main._thread, main._waiting)
        press()
        if self.window.workspace is self.landscape and (main._thread, main._waiting) != before:
            self.loading = None

    def forget_reopened(self, key: str):
        """A tab cleared (a preset, Reset) no longer shows what a reopened session saved."""
        if key == "minima":
            self.minima_saved = self.minima_resumed = None
        elif key == "landscape":
            self.landscape_saved = None

    def settle(self, ms: int = 30):
        wait(ms)

    def _allow(self, *patterns):
        self.allowed.update(patterns)

    # ------------------------------------------------------------------ run controls
    @action
    def load_preset(self, name: str):
        """A preset opened in its tab (shortened) and started, as the Presets menu does."""
        from gui.presets import apply_values

        w = self.window
        w.load_preset(name, run=False)
        key = w.workspace.key  # the preset's tab, which it switched to
        params = w.workspaces[key].parameters
        if key == "minima":
            small = MINIMA_SMALL if params["construction", "widths"].replace(" ", "") == "2,1,1,1" else {}
            apply_values(params, {**MINIMA_QUICK, **(PATH_SMALL if name == "nonattr-path" else small)})
        else:
            quick = {"landscape": TOOLKIT_QUICK, "run": RUN_QUICK}.get(key, TOPOLOGY_QUICK)
            apply_values(params, quick)
        self.forget_reopened(key)  # the preset cleared the tab: it draws its own run, not a session
        if key == "landscape":
            self.loading = None  # the preset wrote the network fields: its values stay
        else:
            self._load_dropped("a preset dropped it")
        w.run(steps=STEPS)
        self.settle()

    @action
    def run(self):
        self._submitted(lambda: self.window.run(steps=STEPS))
        self.settle()

    @action
    def pause(self):
        self.window.toggle_pause()
        self.settle()

    @action
    def step(self):
        self._submitted(self.window.step)
        self.settle()

    @action
    def cancel(self):
        self.window.cancel()
        self.settle()

    @action
    def reset(self):
        self.forget_reopened(self.window.workspace.key)
        self.window.reset()
        self._load_dropped("Reset dropped it")
        self.settle()

    @action
    def switch_tab(self, index: int):
        self.window.tabs.setCurrentIndex(index)
        self.settle()

    @action
    def wait_idle(self, seconds: float = 20.0):
        """Let the jobs finish (as someone watching would): up to ``seconds``."""
        wait_until(lambda: not self.window.computing, int(1000 * seconds))
        self.settle(50)

    # ------------------------------------------------------------------ minima: λ and splits
    @action
    def drag_lambda(self, fraction: float, hold_ms: int = 0):
        """Drag the λ slider to ``fraction`` of its range, hold, release (as the slider does)."""
        from gui.panels.inspector import SLIDER_RANGE

        ws = self.minima
        box = ws.inspector.lam
        if box.slider.isEnabled():
            lo, hi = SLIDER_RANGE
            box.set_value(lo + fraction * (hi - lo))  # the label and controller.lam, as a drag sets them
            lam = box.value()  # on the slider's grid
            ws.move_lambda(lam)
            if hold_ms:
                wait(hold_ms)
            ws.release_lambda(lam)
        else:  # a disabled slider cannot be dragged; the handlers must ignore a stray call
            ws.move_lambda(0.5)
            ws.release_lambda(0.5)
        self.settle()

    @action
    def split(self, pick: int, lam: float):
        """Split an admissible neuron (Theorem 9) of the construction on screen, or try to with none."""
        ws = self.minima
        admissible = ws.shown.get("construction", {}).get("admissible", [])
        from engine.minima.pipeline import Figure3

        if isinstance(ws.figure, Figure3) and ws.figure.construction is not None and admissible:
            layer, neuron, _badge = admissible[pick % len(admissible)]
            ws.split_neuron(int(layer), int(neuron), lam)
        elif not isinstance(ws.figure, Figure3):
            self._allow(*SPLIT_MESSAGES)
            ws.split_neuron(1, 0, lam)
        self.settle()

    @action
    def undo_split(self):
        self._allow(*SPLIT_MESSAGES)
        self.minima.undo_split()
        self.settle()

    # ------------------------------------------------------------------ sweeps, files, exports
    @action
    def load_sweep(self, executor: str):
        """The Fig. 4 sweep (shortened) on ``executor``, its cells kept in one folder per executor,
        so Cancel then Run resumes it (Run and Cancel are the rules above)."""
        from gui.presets import apply_values

        w = self.window
        w.load_preset("fig4-breast-cancer", run=False)
        self._load_dropped("a preset dropped it")
        folder = "" if executor == "batched" else str(self.tmp / f"sweep-{executor}")
        apply_values(
            self.topology.parameters,
            {**TOPOLOGY_QUICK, "fig4": {**TOPOLOGY_QUICK["fig4"], "executor": executor, "folder": folder}},
        )
        w.run(steps=STEPS)
        self.settle()

    def network_file(self, name: str) -> tuple[str, str, str]:
        """(path, activation, data) of one of NETWORK_FILES, written on first use."""
        import resources

        data = str(resources.path("data/your-network.csv"))
        path = self.tmp / name
        if name == "your-network.pt":
            return str(resources.path("networks/your-network.pt")), "relu", data
        if name == "mlp.npz" and not path.exists():
            from engine.core import mlp
            from engine.io.netfile import save_network

            rng = np.random.default_rng(0)
            arch = mlp.Arch((2, 3, 1), "sigmoid")
            X = rng.normal(size=(12, 2))
            save_network(path, arch, mlp.init_params(arch, rng), X, np.tanh(X[:, 0]))
        elif name == "garbage.pt" and not path.exists():
            path.write_bytes(np.random.default_rng(1).bytes(256))
        elif name == "wrong-arrays.npz" and not path.exists():
            np.savez(path, weights=np.zeros(3))
        return str(path), ("relu" if name.endswith(".pt") else ""), (data if name.endswith(".pt") else "")

    @action
    def load_network(self, name: str):
        """File ▸ Load network on the toolkit tab, the dialogs answered: one of NETWORK_FILES."""
        path, activation, data = self.network_file(name)
        w = self.window
        w.show_workspace("landscape")
        from gui.workspaces.landscape import FILE_FIELDS

        ws = self.landscape
        current = {f: ws.parameters["network", f] for f in FILE_FIELDS}
        self._allow(Path(path).name)  # a bad file's one line names it
        ws.load_network(path, activation, data)
        if name == "missing.npz":  # refused at once: nothing changes, a load in progress goes on
            now = {f: ws.parameters["network", f] for f in FILE_FIELDS}
            if now != current:
                self.problems.append(f"a missing file was refused, yet the network fields became {now}")
        else:  # over a load in progress, "as they were" is before the first of them
            before = self.loading["before"] if self.loading is not None else current
            after = {"source": "file", "path": path, "activation": activation, "data": data, "model": ""}
            self.loading = {"name": name, "before": before, "after": after}
            # not the tab's last job's outcome: a Cancel while the lane still ran another tab's
            # job drops the queued load before it starts (and its fields go back)
            self.outcome["landscape"] = "waiting"
        self.settle()

    @action
    def export(self, pick: int, suffix: str):
        """File ▸ Export of one of the tab's plots or 3D views, the dialogs answered (a 3D view at its
        own size); the file read back must hold what was drawn (``check_actions_saw_nothing_wrong``)."""
        from unittest import mock

        from PySide6.QtWidgets import QFileDialog, QInputDialog

        from gui import export

        w = self.window
        targets = export.export_targets(w.workspace)
        label = list(targets)[pick % len(targets)]
        kind, widget = targets[label]
        if kind == "3d":
            suffix = ".png"
        path = self.tmp / f"export{suffix}"
        path.unlink(missing_ok=True)
        self._allow(*EXPORT_MESSAGES)
        # what the file must measure: the view's size, the plot's as laid out when it is exported
        if kind == "3d":
            own_size = (widget.width(), widget.height())
        else:
            # the whole pixels it covers: a laid-out plot may be 230.6 wide (pyqtgraph's exporter
            # truncates; rounding here failed an export of one 230 px wide)
            rect = widget.getPlotItem().sceneBoundingRect()
            own_size = (int(rect.width()), int(rect.height()))
        save = mock.patch.object(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
        size = mock.patch.object(QInputDialog, "getItem", lambda parent, title, text, items, *a: (items[-1], True))
        with save, size:
            export.export_interactively(w, label)
        problem = exported_problem(kind, widget, path, own_size)
        if w.message_bar.text != f"Exported {label} to {path}":
            problem = f"message bar says {w.message_bar.text!r}"
        if problem:
            self.problems.append(f"export of {label!r} as {suffix}: {problem}")
        self.settle()

    # ------------------------------------------------------------------ sessions, clips, looks
    @action
    def save_and_open_session(self):
        path = str(self.tmp / "state.lens")
        w = self.window
        w.save_session(path)
        assert "could not save" not in w.message_bar.text, w.message_bar.text
        self._allow(*SESSION_MESSAGES)
        shown = dict(self.minima.shown)
        toolkit = dict(self.landscape.shown)
        w.open_session(path)
        assert "cannot open" not in w.message_bar.text, w.message_bar.text
        self.loading = None  # dropped; the fields are the session's (the file's, if saved during it)
        # A reopened minima tab draws what the session saved; its figure is rebuilt from the saved
        # network alone (construction and steps), so check_minima_drawn compares with the save.
        self.minima_saved, self.minima_resumed = (shown if self.minima.shown else None), None
        self.landscape_saved = toolkit or None  # the toolkit tab draws its saved state, no job
        self.settle()

    @action
    def capture_key_frame(self):
        """Capture in the clip dock (paper B's first capture slices the walk on its lane first)."""
        dock = self.window.clip_dock
        dock.show()
        self._allow(*CLIP_MESSAGES)
        dock.capture()
        self.settle()

    @action
    def record_story_clip(self):
        """Record ▸ story clip of the finished run, tiny: 0.4 s at 5 fps, 320 × 180."""
        self._allow(*CLIP_MESSAGES)
        out = str(self.tmp / "story.mp4")
        self.window.recording._start_clip((320, 180), 5, 0.4, False, out)
        self.settle()

    @action
    def cancel_clip(self):
        self._allow(*CLIP_MESSAGES)
        self.window.clip_dock.cancel()
        self.settle()

    @action
    def scrub_replay(self, fraction: float):
        """Move the replay scrubber to ``fraction`` of the finished run (or path) on this tab."""
        dock = self.window.replay_dock
        if dock.length > 1:
            index = int(round(fraction * (dock.length - 1)))
            dock.seek(index)
            if self.window.workspace is self.topology:
                self.scrubbed = (self.topology.model.result, index)
        self.settle()

    @action
    def edit_field(self, pick: int, choice: int):
        """Type a value into one of this tab's fields (FIELD_EDITS); the next Run reads it."""
        path, values = FIELD_EDITS[self.window.workspace.key][pick % len(FIELD_EDITS[self.window.workspace.key])]
        self._allow(*REFUSED_EDIT_MESSAGES)
        self.window.workspace.parameters.child(*path).setValue(values[choice % len(values)])
        self.settle()

    @action
    def resize(self, pick: int):
        """Resize the window (a projector's 1280 × 800 to a full 1920 × 1200 screen)."""
        self.window.resize(*WINDOW_SIZES[pick % len(WINDOW_SIZES)])
        self.settle(100)

    @action
    def interpolate(self):
        """The toolkit's interpolation from the shipped network to a perturbed copy of it, run."""
        from gui.presets import apply_values

        w = self.window
        w.load_preset("toolkit-plane", run=False)  # the shipped network's fields
        self.forget_reopened("landscape")
        self.loading = None  # the preset wrote the network fields: its values stay
        second = self.second_network()
        # a later load of another file interpolates it to this one: refused in one line if they differ
        self._allow(Path(second).name)
        apply_values(
            self.landscape.parameters, {"mode": "interpolation", "interpolation": {"second": second, "points": 21}}
        )
        self._submitted(lambda: w.run(steps=STEPS))
        self.settle()

    def second_network(self) -> str:
        """networks/your-network.pt with every weight moved a little: interpolation's θb."""
        path = self.tmp / "second-network.pt"
        if not path.exists():
            import torch

            import resources

            state = torch.load(resources.path("networks/your-network.pt"), weights_only=True)
            generator = torch.Generator().manual_seed(0)
            moved = {k: v + 0.3 * torch.randn(v.shape, generator=generator, dtype=v.dtype) for k, v in state.items()}
            torch.save(moved, path)
        return str(path)

    @action
    def reopen_in_fresh_window(self):
        """Save a session, open it in a second window, compare every field and every drawn state
        with this window's, close the second window."""
        path = str(self.tmp / "fresh.lens")
        w = self.window
        w.save_session(path)
        assert "could not save" not in w.message_bar.text, w.message_bar.text
        self._allow(*SESSION_MESSAGES)
        saved = {key: field_values(ws.parameters) for key, ws in w.workspaces.items()}
        drawn = {key: ws.session_state() for key, ws in w.workspaces.items()}
        fresh = self._second_window(shortened=False)
        try:
            fresh.open_session(path)
            # a reopened minima network is made live on its lane; until then its λ is the drawn probe's
            if not wait_until(lambda: not fresh.computing, 120000):
                self.problems.append("a fresh window was still computing 120 s after opening the session")
                return
            if "cannot open" in fresh.message_bar.text:
                self.problems.append(f"a fresh window could not open the session: {fresh.message_bar.text}")
            self._compare_reopened(fresh, saved, drawn)
        finally:
            self._close_second_window(fresh, "the fresh window's jobs did not stop")
            fresh = None  # the last reference: the collection below frees the window
            gc.collect()  # see _close_second_window
        self.settle()

    def _compare_reopened(self, fresh, saved: dict, drawn: dict):
        """Every field and drawn state of the reopened window against the saved ones. A method of
        its own, so that no local of the action (a workspace) keeps the window past its close."""
        for key, ws in fresh.workspaces.items():
            for name, value in field_values(ws.parameters).items():
                if not same(value, saved[key][name]):
                    self.problems.append(
                        f"reopened in a fresh window, {key} {name} is {value!r}, saved {saved[key][name]!r}"
                    )
            state, want = readable(ws.session_state()), readable(drawn[key])
            if not same(state, want):
                differ = sorted(k for k in state.keys() | want.keys() if not same(state.get(k), want.get(k)))
                where = "; ".join(differences(state, want))  # reopened ≠ saved, down to the field
                self.problems.append(
                    f"reopened in a fresh window, the {key} tab's {differ} differ from the saved\n  ({where})"
                )

    @action
    def close_mid_run(self, pick: int):
        """A second window runs a preset, and is closed while its job runs: every job stops, and
        nothing raises (in this window's error relay)."""
        fresh = self._second_window()
        try:
            fresh.load_preset(CLOSED_MID_RUN[pick % len(CLOSED_MID_RUN)], run=False)
            fresh.run(steps=5000)
            wait(100 * (pick % 4))
        finally:
            self._close_second_window(fresh, "a window closed mid-run left its job running")
            fresh = None  # the last reference: the collection below frees the window
            gc.collect()  # see _close_second_window
        self.settle()

    def _second_window(self, shortened: bool = True):
        self.pause_watchdog(True)
        try:
            return open_window(shortened)
        finally:
            self.pause_watchdog(False)

    def _close_second_window(self, window, problem: str):
        """Close ``window``; the caller then drops its own reference and collects. close_window's
        collection cannot free a window its caller still holds: each action's window waited, in
        reference cycles, for the next full collection (the next close's, or once in a 20-minute
        soak a job thread's: 342 ms, 14,922 objects)."""
        self.pause_watchdog(True)
        try:
            if not close_window(window):
                self.problems.append(problem)
        finally:
            self.pause_watchdog(False)

    @action
    def toggle_theme(self):
        p = self.window.presentation
        p.set_theme("dark" if p.theme == "light" else "light", remember=False)
        self.settle()

    @action
    def toggle_presentation(self):
        p = self.window.presentation
        p.set_on(not p.on)
        self.settle()

    # ------------------------------------------------------------------ invariants
    def invariants(self) -> list:
        """Every check but the error relay's (the soak counts what reached it by itself)."""
        return [
            self.check_one_job_per_lane,
            self.check_cancel_lands,
            self.check_controls,
            self.check_message_bar,
            self.check_lambda_box,
            self.check_topology_drawn,
            self.check_sweep_drawn,
            self.check_minima_drawn,
            self.check_landscape_drawn,
            self.check_network_load,
            self.check_actions_saw_nothing_wrong,
        ]

    def check(self):
        """Every invariant; AssertionError naming the first that fails, and the actions before it."""
        try:
            self.check_no_uncaught_exception()
            for check in self.invariants():
                check()
        except AssertionError as error:
            steps = "\n  ".join(self.log[-20:])
            raise AssertionError(f"{error}\nafter these actions (last 20):\n  {steps}") from None

    def check_no_uncaught_exception(self):
        assert self.errors == [], f"reached the error relay: {self.errors}"

    def check_cancel_lands(self):
        """A cancelled job is never left waiting for a resume that only the user could give."""
        for name, runner in self.window.controller.lanes.items():
            t = runner._thread
            if t is not None and t.isRunning() and t._cancel.is_set():
                assert t._resume.is_set(), f"lane {name!r}: cancelled, but its thread waits paused"

    def check_one_job_per_lane(self):
        for name, runner in self.window.controller.lanes.items():
            live = live_threads(runner)
            current = [t for t in live if t not in runner._stale]
            assert len(current) <= 1, f"lane {name!r}: {len(current)} current threads run"
            assert len(live) <= 1, f"lane {name!r}: {len(live)} threads run at once (stale included)"
        job = self.window.clip_dock.job
        assert job is None or not job.active or self.window.clip_dock._walk is None, "a clip renders while sliced"

    def check_controls(self):
        w, state = self.window, self.window.runner.state
        assert w.cancel_action.isEnabled() == (state != "idle"), state
        assert w.pause_action.isEnabled() == (state == "running"), state
        assert w.run_action.isEnabled() == (state != "running"), state
        assert w.run_action.text() == ("Resume" if state == "paused" else "Run"), state

    def check_message_bar(self):
        # The rules' messages arrive late (a clip saved seconds after Record), so what a rule
        # allowed stays allowed for the window's life: the patterns are specific enough.
        text = self.window.message_bar.text
        if not text:
            return
        assert "Internal error" not in text, f"message bar: {text!r}"
        assert any(p in text for p in self.allowed), f"unexpected message {text!r} (allowed: {sorted(self.allowed)})"

    def check_lambda_box(self):
        lam = self.window.controller.lam
        box = self.minima.inspector.lam
        assert lam is None or box.value() == lam, f"λ box shows {box.value()} but controller.lam is {lam}"

    @property
    def clip_busy(self) -> bool:
        dock = self.window.clip_dock
        return (dock.job is not None and dock.job.active) or dock._walk is not None

    def _quiet(self, *lanes) -> bool:
        c = self.window.controller
        return not self.clip_busy and not any(c.lane_busy(n) for n in lanes)

    def check_topology_drawn(self):
        """Idle after a finished run: the loss curve is the trajectory's loss."""
        from engine.topology.training import Trajectory

        ws = self.topology
        if ws.mode != "training" or not isinstance(ws.model.result, Trajectory) or ws.pacer.pending:
            return
        # A reopened session's run is drawn by a job on the setup lane: until then nothing is
        # (the soak, loaded: "0 points drawn, the run has 31" right after a session was opened).
        if not self._quiet("main", "setup") or self.outcome.get("topology") != "succeeded":
            return
        result, row = self.scrubbed
        rows = row + 1 if result is ws.model.result else len(ws.model.result.step)  # the frame scrubbed to
        curve = ws.curves.loss_curve
        drawn, loss = curve.yData, ws.model.result.loss[:rows]
        assert drawn is not None and same(drawn, loss), (
            f"loss curve is not the run's loss: {0 if drawn is None else len(drawn)} points drawn, "
            f"the run has {len(loss)}; drawn[-3:] {None if drawn is None else drawn[-3:]}, run {loss[-3:]}"
        )
        assert same(curve.xData, ws.model.result.step[:rows]), "loss curve's steps are not the run's"
        dock = self.window.replay_dock
        if self.window.workspace is ws and dock.length > 1:
            assert dock.slider.value() == rows - 1, (
                f"the scrubber shows frame {dock.slider.value() + 1}, the views {rows}"
            )

    def check_sweep_drawn(self):
        """Idle in Fig. 4 (finished, or cancelled with some cells): the map is the result's mean,
        cell (l, l₊) centred on its grid point, and each line is the row's finite cells at l₊ / l."""
        from engine.topology.width_sweep import SweepProgress, SweepResult

        from .drawn import assert_cells_centred, plotted

        ws = self.topology
        result = ws.model.result
        if ws.mode != "fig4" or not isinstance(result, (SweepProgress, SweepResult)) or not self._quiet("main"):
            return
        if self.outcome.get("topology") not in ("succeeded", "cancelled"):
            return
        heat = ws.fig4.heat
        mean = np.asarray(result.mean, float)
        if not np.isfinite(mean).any():
            return  # nothing arrived before Cancel: the map is blank
        assert same(heat.image.image, mean), "Fig. 4 map is not the sweep's mean test BCE"
        assert_cells_centred(heat.image, result.ls, result.l_plus)
        rows = [i for i, l in enumerate(result.ls) if (np.isfinite(mean[i]) & (result.l_plus <= l)).any()]
        lines = [item for item in plotted(ws.fig4.lines) if item.xData is not None and len(item.xData)]
        assert len(lines) == len(rows), f"Fig. 4 draws {len(lines)} lines for {len(rows)} rows with cells"
        for i, line in zip(rows, lines):
            ok = np.isfinite(mean[i]) & (result.l_plus <= result.ls[i])
            want = np.column_stack([result.l_plus[ok] / result.ls[i], mean[i, ok]])
            assert same(np.column_stack(line.getData()), want), f"Fig. 4 line of l = {result.ls[i]} is not its cells"
        if isinstance(result, SweepResult) and self.outcome.get("topology") == "succeeded":
            cells = sum(int(l) + 1 for l in result.ls)
            assert np.isfinite(mean).sum() == cells, (
                f"a finished sweep shows {np.isfinite(mean).sum()} of {cells} cells"
            )

    def check_minima_drawn(self):
        """Idle after a finished job: every stage drawn is the figure's (probe and spectrum aside)."""
        from gui.present.minima import stages

        ws = self.minima
        if ws.figure is None or not self._quiet("main", "preview", "probe"):
            return
        if self.minima_saved is not None and self.minima_resumed is None:  # reopened, nothing run since
            saved = {k: v for k, v in self.minima_saved.items() if k not in NOT_DRAWN_FROM_THE_FIGURE}
            shown = {k: v for k, v in ws.shown.items() if k not in NOT_DRAWN_FROM_THE_FIGURE}
            assert set(shown) == set(saved), f"reopened, drawn stages {sorted(shown)} but saved {sorted(saved)}"
            for stage, data in saved.items():
                assert same(shown[stage], data), f"stage {stage!r} drawn is not the session's"
            return
        if self.outcome.get("minima") != "succeeded":
            return
        expected = {k: v for k, v in stages(ws.figure, {}).items() if k not in NOT_DRAWN_FROM_THE_FIGURE}
        resumed = self.minima_resumed
        if resumed is not None and ws.figure.construction is resumed.construction:
            # A job on a reopened network redraws what it changes: the construction it kept, and
            # the steps table with it, are still the session's (its figure is rebuilt from the
            # network alone: "base", not "trained", and no restart search)
            expected.update({k: self.minima_saved[k] for k in ("construction", "steps") if k in self.minima_saved})
        shown = {k: v for k, v in ws.shown.items() if k not in NOT_DRAWN_FROM_THE_FIGURE}
        assert set(shown) == set(expected), f"drawn stages {sorted(shown)} but the figure has {sorted(expected)}"
        for stage, data in expected.items():
            assert same(shown[stage], data), f"stage {stage!r} drawn is not the latest result's"

    def check_landscape_drawn(self):
        """Idle after a finished job (or a reopened session): the toolkit's page draws the job's
        arrays. The plane's image is its loss grid, cell (i, j) centred on (α_i, β_j), each contour
        on its level; a PCA path is its run's parameters projected here on the components; the
        density is the Lanczos quadrature rebuilt here from each probe's tridiagonal."""
        from .drawn import assert_cells_centred, assert_contours_on_their_levels, assert_density_is_the_quadrature

        ws = self.landscape
        if not self._quiet("main"):
            return
        if self.landscape_saved is not None:  # reopened: what is drawn is what the session saved
            assert same(ws.shown, self.landscape_saved), "the toolkit tab's reopened state is not the session's"
            plane = ws.shown.get("plane")
            if plane is not None:
                assert same(ws.plane.image.image, plane["loss"].T), "reopened toolkit plane is not the saved loss"
            return
        result = ws.result
        if result is None or self.outcome.get("landscape") != "succeeded":
            return
        plane = result.plane if result.plane is not None else getattr(result.pca, "plane", None)
        if plane is not None:
            assert same(ws.plane.image.image, np.asarray(plane.loss).T), "toolkit plane is not the job's loss grid"
            assert_cells_centred(ws.plane.image, plane.alpha, plane.beta)
            assert_contours_on_their_levels(ws.plane, plane.alpha, plane.beta, plane.loss)
        if result.pca is not None:
            pca = result.pca
            lines = [item for item in ws.plane.paths if isinstance(item, pg.PlotDataItem)]
            assert len(lines) == len(pca.runs), f"{len(lines)} paths drawn for {len(pca.runs)} runs"
            for run, line in zip(pca.runs, lines):
                want = (run.params - pca.center) @ pca.components.T
                scale = np.abs(want).max() + np.abs(run.params).max()
                np.testing.assert_allclose(
                    np.column_stack(line.getData()), want, atol=1e-12 * scale, err_msg=f"PCA path of {run.optimizer}"
                )
        if result.density is not None:
            assert_density_is_the_quadrature(ws.density, result.density)
        if result.interpolation is not None:
            line = ws.interpolation._items[0]
            i = result.interpolation
            assert same(np.column_stack(line.getData()), np.column_stack([i.alpha, i.loss])), (
                "interpolation drawn is not L(α)"
            )

    def check_network_load(self):
        """File ▸ Load network, once its job ended: a good file's fields are the file's, a bad
        file (or a cancelled load) leaves them as they were."""
        from gui.workspaces.landscape import FILE_FIELDS

        if self.loading is None or not self._quiet("main") or self.landscape.model.loading is not None:
            return
        ws, load = self.landscape, self.loading
        fields = {f: ws.parameters["network", f] for f in FILE_FIELDS}
        outcome = self.outcome.get("landscape")
        if outcome == "succeeded":
            assert fields == load["after"], f"loaded {load['name']}, but the network fields are {fields}"
        elif outcome in ("failed", "cancelled", "waiting") or load["name"] not in GOOD_NETWORK_FILES:
            assert fields == load["before"], f"{load['name']} did not load, yet the fields became {fields}"
        self.loading = None

    def check_actions_saw_nothing_wrong(self):
        problems, self.problems = self.problems, []
        assert not problems, "; ".join(problems)


def exported_problem(kind: str, widget, path: Path, own_size) -> str:
    """What the exported file at ``path`` fails to hold of what ``widget`` drew ("" when nothing):
    a PNG the view's size (``own_size``, as the export saw it), a plot's SVG a vector path for every curve
    drawn, its CSV every curve's points to the last digit."""
    from PySide6.QtGui import QImage

    from .drawn import plotted

    if not path.exists():
        return "no file was written"
    if path.suffix == ".png":
        image = QImage(str(path))
        size = (image.width(), image.height())
        return "" if size == tuple(own_size) else f"PNG is {size}, the {kind} view {own_size}"
    if path.suffix == ".svg":
        curves = [item for item in plotted(widget) if item.xData is not None and len(item.xData) > 1]
        import xml.etree.ElementTree as ET

        paths = list(ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}path"))
        return "" if len(paths) >= len(curves) else f"SVG has {len(paths)} paths for {len(curves)} curves"
    import csv

    from pyqtgraph import ErrorBarItem

    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    # pyqtgraph's CSV: two columns per data item (as added), its original data, rows padded with ""
    items = [item for item in widget.getPlotItem().items if hasattr(item, "implements") and item.implements("plotData")]
    if any(isinstance(item, ErrorBarItem) for item in widget.getPlotItem().items):
        return ""  # error bars take columns of their own: no plot here draws them
    column = 0
    for item in items:
        x, y = item.getOriginalDataset() if hasattr(item, "getOriginalDataset") else item.getData()
        if x is None:
            continue
        try:
            table = np.array([row[column : column + 2] for row in rows[: len(x)]], dtype=float).reshape(-1, 2)
        except ValueError:
            return f"CSV columns {column}, {column + 1} are not {item.name() or 'a curve'}'s numbers"
        if not same(table, np.column_stack([x, y]).astype(float)):
            return f"CSV columns {column}, {column + 1} are not {item.name() or 'a curve'}'s {len(x)} points"
        column += 2
    return ""


# The actions a random sequence is made of, with how each draws its arguments from ``rng``
# (random.Random); the soak uses this table, the state machine its own strategies.
def random_action(driver: Driver, rng) -> str:
    """Do one action drawn from ``rng``; returns it as text ("drag_lambda(0.31, 50)")."""
    name = rng.choices(list(ACTIONS), weights=[weight for weight, _ in ACTIONS.values()])[0]
    args = ACTIONS[name][1](rng)
    getattr(driver, name)(*args)
    return driver.log[-1]


def actions_without_ray() -> dict:
    """ACTIONS with the Fig. 4 sweep all at once or cell by cell only: a local Ray's start-up
    (seconds of several processes' CPU) is the long soak's, not a 2-minute CI run's."""
    local = [e for e in SWEEP_EXECUTORS if e != "ray"]
    return {**ACTIONS, "load_sweep": (ACTIONS["load_sweep"][0], lambda r: [r.choice(local)])}


ACTIONS = {
    "load_preset": (3, lambda r: [r.choice(PRESETS)]),
    "run": (3, lambda r: []),
    "pause": (2, lambda r: []),
    "step": (2, lambda r: []),
    "cancel": (2, lambda r: []),
    "reset": (1, lambda r: []),
    "switch_tab": (2, lambda r: [r.randrange(TABS)]),
    "wait_idle": (3, lambda r: [r.choice([2.0, 10.0, 30.0])]),
    "drag_lambda": (3, lambda r: [r.random(), r.choice([0, 0, 50, 300])]),
    "split": (2, lambda r: [r.randrange(8), r.choice([0.5, 1.5, -0.5])]),
    "undo_split": (1, lambda r: []),
    "load_sweep": (1, lambda r: [r.choice(SWEEP_EXECUTORS)]),
    "load_network": (1, lambda r: [r.choice(NETWORK_FILES)]),
    "export": (1, lambda r: [r.randrange(16), r.choice(EXPORT_SUFFIXES)]),
    "save_and_open_session": (1, lambda r: []),
    "capture_key_frame": (1, lambda r: []),
    "record_story_clip": (1, lambda r: []),
    "cancel_clip": (1, lambda r: []),
    "toggle_theme": (1, lambda r: []),
    "toggle_presentation": (1, lambda r: []),
    "scrub_replay": (2, lambda r: [r.random()]),
    "edit_field": (2, lambda r: [r.randrange(4), r.randrange(2)]),
    "resize": (1, lambda r: [r.randrange(len(WINDOW_SIZES))]),
    "interpolate": (1, lambda r: []),
    "reopen_in_fresh_window": (1, lambda r: []),
    "close_mid_run": (1, lambda r: [r.randrange(16)]),
}
