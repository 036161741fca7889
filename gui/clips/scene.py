"""What a workspace offers a clip: its 3D views, 2-D widgets, and the facts of each run row.

Only the topology workspace's training view has a story today (paper A). The scene films the
finished trajectory in views of its own, laid out as the tab's (its context) and drawn from the
view state of each row (gui.present.topology.present_row), never the window's: the frame the
user scrubbed to, and the window's views, stay as they are while a clip renders. The cameras a
key frame captures are the tab's views' (``user_cameras``): the user turns those.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

from engine.core.errors import EngineInputError
from engine.topology.invariants import sign_flip_events

from ..panels.invariants_panel import InvariantsPanel
from ..present.topology import present_row, shape_name, sign_change_words, sub
from ..rendering.camera import camera_of
from ..style import neuron_color
from ..views.neuron_quadrics import NeuronQuadrics
from ..views.training_curves import TrainingCurves
from .minima_scene import MinimaScene, minima_story_clip, walk_of
from .off_screen import adopt_off_screen, dispose_widgets


def key_frame_camera(view) -> dict:
    """A 3D view's camera as a key frame holds it: gui.rendering.camera's, without the fov (a clip
    keeps each view's own), the azimuth in [0, 360)."""
    camera = camera_of(view)
    del camera["fov"]
    camera["azimuth"] %= 360.0
    return camera


CLIP_MESH_QUANTUM = 2e-4  # × extent² in c: surfaces quantised, so a frame is a function of its row


class TopologyScene:
    def __init__(self, workspace):
        traj = workspace.trajectory() if hasattr(workspace, "trajectory") else None
        if traj is None or len(traj.step) == 0:
            raise EngineInputError(
                "clips film a finished training run of the invariant-sets workspace; run a training preset first"
            )
        self.workspace = workspace
        self.traj = traj
        theirs = workspace.gl_views()  # every neuron's, or the one enlarged
        if not theirs:  # the compositor lays out one cell per view (it divided by zero)
            raise EngineInputError(
                "story clips film each neuron's 3D view; a d = 1 run draws its (w, v) plane instead: "
                "export that plot, or record the window live (Record…, Live)"
            )
        self.context = workspace.context
        layout = self.context.layout
        # The clip's own views, never shown, laid out as the tab's: its 3D views and panel stay
        # as the user left them, whatever the clip poses.
        self.quadrics = NeuronQuadrics()
        self.quadrics.configure(layout["l"], layout["exact"], layout["labels"], layout["extent"])
        self.views = [self.quadrics.cells[view.neuron].view for view in theirs]
        for mine, view in zip(self.views, theirs):  # a view's default camera fits its shape
            mine.resize(view.size())
        self.invariants = InvariantsPanel()
        self._extra = layout["extra"]
        self.events = [(e.step, e.neuron, e.jumped) for e in sign_flip_events(traj.step, traj.c, traj.sign_flips)]
        # The clip's own curves, never shown: they keep the cell's size from frame to frame
        # (resizing the window's plots back and forth cost more than drawing them), their x axis
        # spans the whole run so the curves grow across it, and the window's plots stay as they are.
        self.curves = TrainingCurves()
        for widget in (self.quadrics, self.invariants, self.curves.loss_plot, self.curves.drift_plot):
            adopt_off_screen(widget, workspace)  # never shown, only rendered
        self.curves.configure(traj.c.shape[1], bool(workspace.parameters["display", "log_drift"]))
        self.curves.set_line_width(3.0)
        # The loss axis too is the whole run's, decided once: TrainingCurves would switch to a
        # log scale mid-clip, the moment the partial loss spans a decade.
        positive = traj.loss[np.isfinite(traj.loss) & (traj.loss > 0)]
        self._log_loss = bool(positive.size and positive.max() > 10 * positive.min())
        lo, hi = (positive.min(), positive.max()) if positive.size else (0.0, 1.0)
        self._loss_range = (np.log10(lo), np.log10(hi)) if self._log_loss else (0.0, float(hi))
        self.widgets = {
            "loss": self.curves.loss_plot,
            "drift": self.curves.drift_plot,
            "invariants": self.invariants,
        }
        self._shown = None
        self._state = None  # the view state drawn last: its meshes are kept while c has not moved
        # Neurons whose parameters never change (e.g. a ReLU unit no data point activates):
        # the header says so, or a still view would read as a broken clip.
        still = (np.ptp(traj.W1, axis=0).max(axis=-1) == 0) & (np.ptp(traj.W2, axis=0).max(axis=0) == 0)
        self.still = [bool(x) for x in still]

    @property
    def steps(self) -> np.ndarray:
        return self.traj.step

    def event_steps(self) -> list[int]:
        return [s for s, _, _ in self.events]

    def default_cameras(self) -> list[dict]:
        return [
            {k: (list(v) if k == "center" else float(v)) for k, v in view.default_camera().items()}
            for view in self.views
        ]

    def user_cameras(self) -> list[dict]:
        """The cameras of the tab's own 3D views, as the user turned them (a key frame's)."""
        return [key_frame_camera(view) for view in self.workspace.gl_views()]

    def camera_of(self, view) -> dict:
        return key_frame_camera(view)

    # ------------------------------------------------------------------ posing
    def show(self, row: int) -> None:
        if row != self._shown:  # re-slicing the run costs more than any other part of a frame
            # Surfaces quantized, not tolerance-skipped: a frame must not depend on which frames
            # were shown before it.
            state = present_row(self.traj, row, self.context, self._state, CLIP_MESH_QUANTUM)
            self.quadrics.show_state(state["quadrics"], state["c_now"])
            self.invariants.show_values(state["summary"], state["c_start"], state["step"], state["note"], self._extra)
            self._state, self._shown = state, row
            self._show_curves(row)

    def _show_curves(self, row: int) -> None:
        t = self.traj
        past = [e for e in self.events if e[0] <= t.step[row]]
        self.curves.show(
            t.step[: row + 1], t.loss[: row + 1], t.c[: row + 1], [(s, k) for s, k, _ in past], [j for _, _, j in past]
        )
        self.curves.loss_plot.setLogMode(y=self._log_loss)
        self.curves.loss_plot.setYRange(*self._loss_range, padding=0.05)
        for plot in (self.curves.loss_plot, self.curves.drift_plot):  # a log switch resets it
            plot.setXRange(float(t.step[0]), float(t.step[-1]), padding=0.02)

    def forget(self) -> None:
        """Pose again next time."""
        self._shown = None

    def user_row(self) -> int:
        """The row the replay scrubber is at on this tab (a run's end unless the user scrubbed)."""
        controller, end = self.workspace.controller, len(self.steps) - 1
        return end if controller is None else min(controller.frames.get(self.workspace.key, end), end)

    def close(self) -> None:
        """Nothing of the window's was changed: the scene's views are its own."""

    def dispose(self) -> None:
        """Delete the clip's own views now, when the scene is dropped; otherwise they go with
        the workspace, their Qt parent."""
        dispose_widgets((self.quadrics, self.invariants, self.curves.loss_plot, self.curves.drift_plot))

    def apply_cameras(self, cameras) -> None:
        for view, cam in zip(self.views, cameras):
            view.opts.update(
                distance=cam["distance"],
                elevation=cam["elevation"],
                azimuth=cam["azimuth"],
                center=pg.Vector(*cam["center"]),
            )

    # ------------------------------------------------------------------ words
    def facts(self, row: int) -> dict:
        """The caption's fields at ``row``: what the invariants panel and the loss plot show."""
        traj = self.traj
        c = traj.c[row]
        step = int(traj.step[row])
        return {
            "step": step,
            "last_step": int(traj.step[-1]),
            "c": "   ".join(f"c{sub(k + 1)} = {x:+.4f}" for k, x in enumerate(c)),
            "loss": f"{traj.loss[row]:.4g}",
            "events": self.event_text(step),
        }

    def event_text(self, step: int) -> str:
        """The latest sign change up to ``step``, in the loss plot's words."""
        past = [e for e in self.events if e[0] <= step]
        if not past:
            return (
                "no output weight has changed sign yet" if self.events else "no output weight changes sign in this run"
            )
        s, k, jumped = past[-1]
        more = f"   (+{len(past) - 1} earlier)" if len(past) > 1 else ""
        return sign_change_words(k, s, jumped) + more

    def headers(self, row: int) -> list[tuple[str, QColor]]:
        """One line over each neuron's view: which neuron, its c_k and the shape of Q(c_k)."""
        c, c0 = self.traj.c[row], self.traj.c[0]
        out = []
        for view in self.views:
            k = view.neuron
            drift = "" if c[k] == c0[k] else f" (start {c0[k]:+.4f})"
            shape = shape_name(c[k]) if self.quadrics.exact else "projection"
            note = "   ·   does not move in this run" if self.still[k] else ""
            out.append((f"neuron {k + 1}   c{sub(k + 1)} = {c[k]:+.4f}{drift}   ·   {shape}{note}", neuron_color(k)))
        return out


def story_for(preset: str, size=(1920, 1080), fps: int = 30, seconds: float = 8.0, orbit: bool = False):
    """The preset's default clip: paper A's training story, or paper B's walk along λ (which
    has no orbit: its story has no 3D view)."""
    from ..presets import preset_named
    from .model import story_clip

    if preset_named(preset).workspace == "minima":
        return minima_story_clip(preset, size, fps, seconds)
    return story_clip(preset, size, fps, seconds, orbit)


def scene_for(workspaces: dict, preset: str, on_progress=None):
    """The scene of ``preset``'s workspace (``workspaces``: key -> workspace; the preset must
    have run): paper A's
    training story, or paper B's walk along the degenerate path, sliced here and now
    (``on_progress``: the slicing job's updates; the window runs it on a worker instead)."""
    from engine.core.progress import run_to_completion

    from ..presets import preset_named

    key = preset_named(preset).workspace
    if key == "minima":
        return MinimaScene(workspaces[key], run_to_completion(walk_of(workspaces[key]), on_progress))
    return TopologyScene(workspaces[key])
