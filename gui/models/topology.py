"""The topology tab's model: its result, what the training views are laid out for, the network
file last read, and a reopened session's run while it is drawn; the session's plain data. No Qt.

The workspace (gui/workspaces/topology.py) lays its views out and routes each view state to them;
what it holds between results, and how a result, a replay frame or a session changes that, is
here, tested headless (tests/gui/models/).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.core.errors import EngineInputError
from engine.topology.obstruction import LoadedNetwork
from engine.topology.training import Trajectory
from engine.topology.width_sweep import SweepProgress

from ..present import Presented


def fits(traj: Trajectory, d: int, l: int, e: int) -> bool:
    """Whether a saved run's weights are a d-l-e network's."""
    return traj.W1.shape[1:] == (l, d) and traj.W2.shape[1] == e


@dataclasses.dataclass(frozen=True)
class Arrival:
    """What a presented training update asks of the views: ``lay_out`` a context first (or None:
    the layout stays), then ``draw`` its view state (or None: the layout alone, nothing has run)."""

    lay_out: object
    draw: dict | None


class TopologyModel:
    """What the topology tab holds and how it changes; see the module's docstring."""

    def __init__(self):
        self.context = None  # what the views are laid out for (gui.present.topology.Context)
        self.state: dict | None = None  # the view state drawn last
        self.result = None  # the latest partial or final result (a Trajectory in the training view)
        self.frame_shown = (None, 0)  # (result, row) that a replay frame drew last
        self.loaded: tuple[LoadedNetwork, object] | None = None  # the network file last read by a job
        self.loaded_key: tuple | None = None  # ... and the request it answered
        self.starting = False  # a job was made: its first update lays the views out
        self.pending_cameras: list[dict] | None = None  # a session's, while its run is drawn (a job)
        self.frame_wanted: int | None = None  # the replay frame asked for meanwhile
        self.preview_shown = False  # the views show the layout's picture before a run, not a run

    def clear(self) -> None:
        """No run, no session waiting to be drawn."""
        self.result = self.state = self.pending_cameras = self.frame_wanted = None

    def laid_out(self, context) -> None:
        """The views are laid out for ``context`` and show its picture before a run."""
        self.context, self.state = context, None
        self.preview_shown = True

    def layers_shown(self) -> None:
        """A network that is not two-layer is shown (its layers' c): no run, no layout, no two-layer file."""
        self.clear()
        self.context = self.loaded = self.loaded_key = None
        self.preview_shown = self.starting = False  # the job that read it has ended: a Reset previews again

    def drawn(self, state: dict) -> None:
        """``state`` (a run's view state) is on screen."""
        self.preview_shown = False
        self.state = state

    # ------------------------------------------------------------------ results
    def take(self, presented: Presented, final: bool) -> Arrival:
        """A presented training update: the layout it needs, and the state to draw."""
        self.starting = False
        state = presented.state
        context = state["context"]
        shown = self.preview_shown and self.context is not None
        kept = shown and (context is self.context or context.layout_kept)
        lay_out = None
        if kept:  # a run of the network previewed: its job kept the layout, nothing is laid out again
            self.context = context
        elif context is not self.context:  # the job's first update, or a network file read
            if isinstance(presented.result, LoadedNetwork):
                self.loaded = (presented.result, context)
            elif hasattr(presented.result, "loaded"):  # a NetworkRun
                self.loaded = (presented.result.loaded, context)
            lay_out = context
        if "loss" not in state:  # the layout alone: nothing has run yet
            if final:
                self.result = None
            return Arrival(lay_out, None)
        self.result = getattr(presented.result, "trajectory", presented.result)
        return Arrival(lay_out, state)

    # ------------------------------------------------------------------ replay
    def trajectory(self, mode: str) -> Trajectory | None:
        """The run the training view shows (finished or latest); else None."""
        if mode == "training" and isinstance(self.result, Trajectory):
            return self.result
        return None

    def timeline_length(self, mode: str) -> int:
        traj = self.trajectory(mode)
        return 0 if traj is None else len(traj.step)

    def frame_row(self, index: int) -> int:
        """The run's row for replay frame ``index``, remembered as shown."""
        row = int(np.clip(index, 0, len(self.result.step) - 1))
        self.frame_shown = (self.result, row)
        return row

    def shown_frame(self) -> int | None:
        full, index = self.frame_shown
        return index if full is self.result else None  # a newer result is drawn whole

    # ------------------------------------------------------------------ sessions
    def session_state(self, mode: str, page_state, loaded_from_file: bool) -> dict:
        """The result as a session saves it; ``page_state(result)``: a sweep page's."""
        if self.result is None or isinstance(self.result, SweepProgress):
            # a sweep cancelled part-way is no result to save: its finished cells stay in its
            # folder for Run to resume
            return {}
        if mode != "training":
            return {"mode": mode, "result": page_state(self.result)}
        fields = {f.name: getattr(self.result, f.name) for f in dataclasses.fields(Trajectory)}
        fields["sign_flips"] = np.asarray(fields["sign_flips"], dtype=np.int64).reshape(-1, 2)
        # Not the panel: the session saves it beside the results and applies it checked, first.
        state = {"mode": "training", "trajectory": {k: v for k, v in fields.items() if v is not None}}
        if loaded_from_file and self.loaded is not None:  # the file may be gone when the talk reopens
            n = self.loaded[0].network
            state["loaded"] = {"report": self.loaded[0].report, "activation": n.activation, "slope": n.slope}
            state["loaded"] |= {k: v for k, v in (("X", n.X), ("Y", n.Y)) if v is not None}
        return state

    @staticmethod
    def saved_trajectory(state: dict) -> Trajectory:
        """A session's training run, or EngineInputError."""
        try:
            t = dict(state["trajectory"])
            t["sign_flips"] = [tuple(int(x) for x in row) for row in np.asarray(t.get("sign_flips", []))]
            t.setdefault("b1", None), t.setdefault("b2", None)
            return Trajectory(**{k: t.get(k) for k in (f.name for f in dataclasses.fields(Trajectory))})
        except (KeyError, TypeError, ValueError) as error:
            raise EngineInputError(f"saved training state does not fit: {error}") from None

    @staticmethod
    def saved_network(traj: Trajectory, saved: dict) -> LoadedNetwork:
        """A session's loaded network, checked as a network file is: its weights are the
        trajectory's first row, its data the session's."""
        from engine.io.two_layer_file import TwoLayer, check_activation, check_data_width
        from engine.topology.obstruction import training_net

        first = lambda a: None if a is None else np.asarray(a[0], dtype=np.float64)  # noqa: E731
        act = saved.get("activation")
        act, slope = check_activation("the session", act, saved.get("slope") if act == "leaky_relu" else None)
        X, Y = saved.get("X"), saved.get("Y")
        if X is not None:
            X, Y = check_data_width("the session's data", traj.W1.shape[2], traj.W2.shape[1], X, Y)
        report = saved.get("report")
        if not isinstance(report, dict) or not {"activation", "slope", "format", "d", "l", "e"} <= set(report):
            raise EngineInputError("the session's loaded network has no report")
        n = TwoLayer(
            first(traj.W1),
            first(traj.W2),
            first(traj.b1),
            first(traj.b2),
            act,
            slope,
            X,
            Y,
            report.get("file", ""),
            report["format"],
        )
        net, params = training_net(n)
        return LoadedNetwork(n, report, net, params)

    def restoring(self, traj: Trajectory) -> None:
        """A session's run is the result from now (saved again as it was opened, the scrubber's
        timeline) and its cameras wait until it is drawn."""
        self.result, self.context, self.pending_cameras = traj, None, []

    def restored(self, loaded, presented: Presented) -> tuple:
        """The session's run is laid out: (its cameras, the replay frame asked for meanwhile)."""
        cameras, self.pending_cameras = self.pending_cameras, None
        wanted, self.frame_wanted = self.frame_wanted, None
        if loaded is not None:
            self.loaded, self.loaded_key = (loaded[0], presented.state["context"]), loaded[1]
        return cameras, wanted
