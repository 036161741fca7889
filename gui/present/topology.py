"""Paper A's training view as plain data, made on the worker thread: no Qt, no pyqtgraph.

Two halves, as for every tab (gui.present):

- the request: ``training_setup(values, steps)`` (gui.present.training_setup) reads the panel's
  values (a plain snapshot, ``Values``) into the network, its data and its initial weights,
  inside the job;
- the state: ``layout_of(setup)`` is what the views are laid out for (made once per network),
  and ``present(traj, context, previous)`` everything they draw at one moment of the run.

``training_job`` and ``network_job`` wrap the engine's jobs so that every partial and the
result arrive as ``Presented(trajectory, state)``; the workspace only routes ``state`` to its
views. State keys: ``layout`` (the identical object through a run), ``step``, ``c_now``,
``c_start``, ``summary`` (the invariants panel's numbers), ``note``; ``quadrics`` (one dict per
neuron: ``line`` (n, 3), ``fraction`` (n,), ``start``, ``head``, ``flips``, ``jumps`` (m, 3),
``surface`` and ``ghost`` meshes or None, ``barrier``, ``locked``, ``extent``, ``caption``);
``reduced`` (``r``, ``v``, ``fraction`` decimated, ``start``, ``head``, and per neuron its
branches, ghost branches, flip and jump points); ``loss`` and ``drift`` for the two plots;
``function`` for the heatmaps (d ≤ 2). The surfaces' meshes, the reduced view's curves and the
views' frames are made in gui.present.quadric_meshes, the captions' words in
gui.present.topology_captions, the plots' and heatmaps' data in gui.present.topology_curves.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core.progress import Job, Progress, subjob
from engine.topology import invariants as inv
from engine.topology.obstruction import LoadedNetwork, NetworkRun, continue_training_job
from engine.topology.quadrics import reduced_coordinates
from engine.topology.training import TrainConfig, Trajectory, train
from engine.topology.two_layer import TwoLayerNet

from . import Presented
from .quadric_meshes import fitted_extent, neuron_surface, reduced_branches, start_wireframe

# The captions' words and the plots' data: the views, clips and the panel import them from here too.
from .topology_captions import (  # noqa: F401
    CONSERVED_TOL,
    DRIFT_WORTH_A_NOTE,
    SUBSCRIPT,
    drift_note,
    drift_text,
    drift_words,
    event_text,
    lock_text,
    shape_name,
    sign_change_words,
    sub,
)
from .topology_curves import (  # noqa: F401
    HEATMAP_CELLS,
    LINE_POINTS,
    data_state,
    drift_state,
    function_state,
    loss_state,
    twin,
    value_range,
)
from .training_setup import TrainingSetup, Values, loaded_setup, loaded_text, training_setup

MAX_SHOWN_POINTS = 1500  # per neuron and view; the stored trajectory keeps every row
PRESENT_INTERVAL_S = 0.1  # a live run's partials presented at most this often: presenting holds the GIL


# ------------------------------------------------------------------ small pure pieces
def neuron_coordinates(traj: Trajectory) -> tuple[np.ndarray, list[str]]:
    """θ_k = (w, b, v) of every neuron as (T, l, n) raw coordinates, with their names."""
    d, e = traj.W1.shape[2], traj.W2.shape[1]
    parts = [traj.W1] + ([traj.b1[..., None]] if traj.b1 is not None else []) + [np.swapaxes(traj.W2, 1, 2)]
    names = [f"w{chr(0x2080 + i + 1)}" if d > 1 else "w" for i in range(d)]
    names += ["b"] if traj.b1 is not None else []
    names += [f"v{chr(0x2080 + i + 1)}" if e > 1 else "v" for i in range(e)]
    return np.concatenate(parts, axis=2), names


def projection_axes(n_in: int, n_out: int) -> list[int] | None:
    """Which three coordinates a 3D view shows: two input-side, then the output side."""
    if n_in + n_out < 3:
        return None
    take_in = min(n_in, 3 - min(n_out, 1))
    axes = list(range(min(take_in, 2)))
    axes += list(range(n_in, n_in + min(n_out, 3 - len(axes))))
    axes += [i for i in range(n_in) if i not in axes][: 3 - len(axes)]
    return sorted(axes[:3])


def decimate(n: int, limit: int = MAX_SHOWN_POINTS) -> np.ndarray:
    """Row indices to draw: evenly spaced, always the first and the newest."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(int))


def locked_signs(net: TwoLayerNet, c: np.ndarray, W2: np.ndarray) -> list[int]:
    """Per neuron: the output sign it is locked to (e = 1, c_k < 0; MATH A5), else 0."""
    if net.e != 1:
        return [0] * len(c)
    return [int(np.sign(W2[0, k])) if c[k] < 0 else 0 for k in range(len(c))]


def summary(d: int, e: int, bias: bool, c: np.ndarray, label: np.ndarray) -> dict:
    """The invariants panel's numbers, straight from the engine (also what tests compare against)."""
    lp, lm, l0 = inv.counts(c)
    eff = inv.effective_components(d, e, c)
    locked = [k + 1 for k in range(len(c)) if e == 1 and c[k] < 0]  # MATH A5: sphere factor S⁰
    index = None if eff is None else inv.effective_component_index(label)
    return {
        "c": [float(x) for x in c],
        "l_plus": lp,
        "l_minus": lm,
        "l_zero": l0,
        "poincare": inv.poincare(d, e, c, bias),
        "beta0": inv.beta0(d, e, c, bias),
        "label": [int(s) for s in label],
        "effective_components": eff,
        "effective_index": index,
        "locked": locked,
        "e": e,
    }


# ------------------------------------------------------------------ the layout
def layout_of(setup: TrainingSetup, points: bool = False, extra: str = "") -> dict:
    """What the training views are laid out for, and the picture before a run: Q(c) at the start
    (with each neuron's current point when ``points``: a loaded network)."""
    net, params = setup.net, setup.params
    start = _start_trajectory(setup)
    coords, names = neuron_coordinates(start)
    exact = net.d == 2 and net.e == 1 and not net.bias
    axes = projection_axes(net.d + net.bias, net.e)
    extent = float(np.ceil(2 * max(1.0, 1.5 * np.abs(coords).max())) / 2)
    signed_w = net.d == 1 and not net.bias
    show_data = net.d <= 2 and setup.X is not None and setup.Y is not None and setup.Y.shape[1] >= 1
    c = inv.c_of(params)
    layout = {
        "l": net.l,
        "d": net.d,
        "e": net.e,
        "bias": bool(net.bias),
        "exact": exact,
        "axes": axes,
        "labels": tuple(names[i] for i in axes) if axes else ("", "", ""),
        "extent": extent,
        "signed_w": signed_w,
        "signed_v": net.e == 1,
        "w_name": "w" if signed_w else ("‖(w, b)‖" if net.bias else "‖w‖"),
        "v_name": "v" if net.e == 1 else "‖v‖",
        "total_steps": max(setup.config.steps, 1),
        "extra": extra,
        "data": data_state(setup.X, setup.Y, net.d) if show_data else None,
        "points": points,
    }
    lock = locked_signs(net, c, params.W2)
    shown = coords[0][:, axes] if (points and axes is not None) else None
    preview = {
        "c": c,
        "locked": lock,
        "summary": summary(net.d, net.e, net.bias, c, inv.component_label(params.W1, params.W2, params.b1)),
        "quadrics": _preview_quadrics(layout, c, shown, lock),
        "reduced": [reduced_branches(layout, float(ck)) for ck in c],
    }
    if points:
        preview["start"] = _present(start, Context(net, setup.config, layout), None, None)
    layout["preview"] = preview
    layout["room"] = _room(layout, setup.config, c, lock)
    return layout


def _room(layout: dict, config: TrainConfig, c: np.ndarray, locked: list[int]) -> dict:
    """The most text a live run of this layout shows, which its views hold room for from the
    preview on: each caption with its drift and, for a neuron free to flip, the flip line; the
    invariants with their start column and the drift note. Text that grew mid-run relaid the
    window out (the 3D views, then every plot under the invariants, on the GUI thread, a few
    times in a fig3-free run)."""
    l, steps = layout["l"], layout["total_steps"]
    captions = []
    for k in range(l):
        ck = float(c[k]) if k < len(c) else 0.0
        what = shape_name(ck) if layout["exact"] else "projection onto (" + ", ".join(layout["labels"]) + ")"
        lock = locked[k] if k < len(locked) else 0
        flips = [] if lock else [(0, steps, False), (0, steps, False)]  # "(+1 more)": the longest flip line
        captions.append(
            f"<b>neuron {k + 1}</b>{lock_text(k, lock)} &nbsp; c{sub(k + 1)} = {ck:+.4g}"
            f"{drift_text(ck + 1, ck)} &nbsp;·&nbsp; {what}{event_text(k, flips)}"
        )
    moved = f"c{sub(l)} moved 100 %"
    return {"captions": captions, "c_start": np.asarray(c, float), "step": steps, "note": drift_words(moved, config)}


def plain_equal(a, b) -> bool:
    """Whether two pieces of plain view data (dicts, lists, tuples, arrays, numbers, strings)
    hold the same values; a NaN anywhere but in an array makes them differ."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype):
            return False
        return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(plain_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(plain_equal, a, b))
    return type(a) is type(b) and a == b


def _start_trajectory(setup: TrainingSetup) -> Trajectory:
    p = setup.params
    b1 = None if p.b1 is None else p.b1[None]
    return Trajectory(np.zeros(1, dtype=np.int64), p.W1[None], p.W2[None], b1, None, np.zeros(1), inv.c_of(p)[None])


def _preview_quadrics(layout: dict, c: np.ndarray, points: np.ndarray | None, locked: list[int]) -> list[dict]:
    cells = []
    for k in range(layout["l"]):
        chip = lock_text(k, locked[k]) if k < len(locked) else ""
        extent = layout["extent"]
        cell = {"points": None if points is None else points[None, k].astype(np.float32), "surface": None}
        if layout["exact"] and k < len(c):
            cell["surface"] = neuron_surface(
                float(c[k]), extent, int(np.sign(locked[k])) if c[k] < 0 else 0, None, None
            )
            cell["barrier"] = bool(c[k] < 0)
            cell["caption"] = (
                f"<b>neuron {k + 1}</b>{chip} &nbsp; c{sub(k + 1)} = {c[k]:+.4g} &nbsp;·&nbsp; {shape_name(c[k])}"
            )
        else:
            if points is not None:
                extent = fitted_extent(extent, points[None, k])
            cell["barrier"] = False
            cell["caption"] = f"<b>neuron {k + 1}</b>{chip}" + (
                f" &nbsp; c{sub(k + 1)} = {c[k]:+.4g}" if k < len(c) else ""
            )
        cell["extent"] = extent
        cell["locked"] = locked[k] if k < len(locked) else 0
        cells.append(cell)
    return cells


def setup_context(setup: TrainingSetup) -> Context:
    """A panel's network, its training and its layout: what a run or a preview presents with."""
    return Context(setup.net, setup.config, layout_of(setup))


def loaded_context(loaded: LoadedNetwork, config: TrainConfig) -> Context:
    """A loaded network's views: laid out with each neuron's current point and the file's lines."""
    setup = loaded_setup(loaded, config)
    return Context(setup.net, config, layout_of(setup, True, loaded_text(loaded)))


# ------------------------------------------------------------------ the state of a run
@dataclass(frozen=True)
class Context:
    """What presenting a trajectory needs besides it: the network, its training and the layout;
    ``layout_kept``: the layout is the one the views showed before the run (``training_job``)."""

    net: TwoLayerNet
    config: TrainConfig
    layout: dict
    layout_kept: bool = False


def present(traj: Trajectory, context: Context, previous: dict | None = None, mesh_quantum: float | None = None):
    """Everything the training views draw for ``traj``; ``previous``: the state drawn before,
    whose meshes are kept while c has not moved; ``mesh_quantum``: a clip's, see ``neuron_surface``."""
    return _present(traj, context, previous, mesh_quantum)


def sliced(traj: Trajectory, rows: int) -> Trajectory:
    """The first ``rows`` recorded rows: the run as it was at that moment (for replay)."""
    cut = lambda a: None if a is None else a[:rows]
    last = traj.step[rows - 1]
    return dataclasses.replace(
        traj,
        step=traj.step[:rows],
        W1=traj.W1[:rows],
        W2=traj.W2[:rows],
        b1=cut(traj.b1),
        b2=cut(traj.b2),
        loss=traj.loss[:rows],
        c=traj.c[:rows],
        time=cut(traj.time),
        sign_flips=[f for f in traj.sign_flips if f[0] <= last],
    )


def present_row(
    traj: Trajectory, row: int, context: Context, previous: dict | None = None, mesh_quantum: float | None = None
) -> dict:
    """The training views' state for the run as it was at ``row`` (the replay's frame, a clip's)."""
    return present(sliced(traj, row + 1), context, previous, mesh_quantum)


def _present(traj: Trajectory, context: Context, previous: dict | None, quantum: float | None) -> dict:
    layout, net = context.layout, context.net
    frac = traj.step / layout["total_steps"]
    c_now, c_start = traj.c[-1], traj.c[0]
    flip_events = inv.sign_flip_events(traj.step, traj.c, traj.sign_flips)
    events = [[] for _ in range(net.l)]  # per neuron: (row, step, jumped)
    for e in flip_events:
        events[e.neuron].append((e.row, e.step, e.jumped))
    label = inv.component_label(traj.W1[-1], traj.W2[-1], None if traj.b1 is None else traj.b1[-1])
    locked = locked_signs(net, c_now, traj.W2[-1])
    state = {
        "layout": layout,
        "context": context,  # not drawn: what presenting another row of the run needs (replay)
        "step": int(traj.step[-1]),
        "c_now": c_now,
        "c_start": c_start,
        "summary": summary(net.d, net.e, net.bias, c_now, label),
        "note": drift_note(c_start, c_now, context.config),
        "loss": loss_state(traj.step, traj.loss, [(e.step, e.neuron, e.jumped) for e in flip_events]),
        "drift": drift_state(traj.step, traj.c),
    }
    if layout["axes"] is not None:
        coords = neuron_coordinates(traj)[0][:, :, layout["axes"]]
        # What the views show already: the previous state's, else the preview's (a run, a replay
        # and a reopened session all start from it, so each draws the same frame for one row).
        if previous is not None and previous["layout"] is layout:
            before = previous["quadrics"]
        else:
            before = layout["preview"]["quadrics"] if "preview" in layout else None
        state["quadrics"] = _quadrics(layout, coords, frac, c_now, c_start, events, locked, before, quantum)
    if not layout["exact"]:
        state["reduced"] = _reduced(layout, traj, frac, c_now, c_start, events)
    if layout["data"] is not None:
        state["function"] = function_state(net, traj.final_params(), layout["data"])
    return state


def _quadrics(layout, coords, frac, c_now, c_start, events, locked, before, quantum) -> list[dict]:
    rows = decimate(len(coords))
    fraction = frac[rows]
    cells = []
    for k in range(layout["l"]):
        points = coords[:, k].astype(np.float32)
        flips = [row for row, _, jumped in events[k] if not jumped]
        jumps = [row for row, _, jumped in events[k] if jumped]
        last = before[k] if before is not None else None
        cell = {
            "line": points[rows],
            "fraction": fraction,
            "start": points[:1],
            "head": points[-1:],
            "flips": points[flips],
            "jumps": points[jumps],
            "locked": locked[k],
        }
        ck, c0 = float(c_now[k]), float(c_start[k])
        if layout["exact"]:
            extent = layout["extent"]
            lock = int(np.sign(locked[k])) if ck < 0 else 0
            cell["surface"] = neuron_surface(ck, extent, lock, last["surface"] if last else None, quantum)
            cell["ghost"] = start_wireframe(ck, c0, extent)
            cell["barrier"] = bool(ck < 0)
            what = shape_name(ck)
        else:
            extent = fitted_extent(last["extent"] if last else layout["extent"], coords[:, k])
            cell["surface"] = cell["ghost"] = None
            cell["barrier"] = False
            what = "projection onto (" + ", ".join(layout["labels"]) + ")"
            if np.ptp(coords[:, k], axis=0).max() < 1e-3 * extent:
                what += ": still here (the run moves the other coordinates)"
        cell["extent"] = extent
        cell["caption"] = (
            f"<b>neuron {k + 1}</b>{lock_text(k, locked[k])} &nbsp; c{sub(k + 1)} = {c_now[k]:+.4g}"
            f"{drift_text(ck, c0)} &nbsp;·&nbsp; {what}{event_text(k, events[k])}"
        )
        cells.append(cell)
    return cells


def _reduced(layout, traj: Trajectory, frac, c_now, c_start, events) -> dict:
    r, v = reduced_coordinates(traj.W1, traj.W2, traj.b1)
    if layout["signed_w"]:
        r = traj.W1[:, :, 0]  # signed: the label of a c > 0 neuron is sign(w)
    rows = decimate(len(r))
    neurons = []
    for k in range(r.shape[1]):
        moved = abs(c_now[k] - c_start[k]) > 2e-3 * layout["extent"] ** 2
        flips = [row for row, _, jumped in events[k] if not jumped]
        jumps = [row for row, _, jumped in events[k] if jumped]
        neurons.append(
            {
                "c": float(c_now[k]),
                "twin": twin(c_now, k),
                "branches": reduced_branches(layout, float(c_now[k])),
                "ghost": reduced_branches(layout, float(c_start[k])) if moved else [],
                "flips": (r[flips, k], v[flips, k]),
                "jumps": (r[jumps, k], v[jumps, k]),
            }
        )
    return {"r": r[rows], "v": v[rows], "fraction": frac[rows], "start": (r[:1], v[:1]), "head": (r[-1:], v[-1:]),
            "neurons": neurons}  # fmt: skip


# ------------------------------------------------------------------ jobs
class _Paced:
    """Presents a run's partials at most every ``PRESENT_INTERVAL_S`` (the runner drops the rest
    anyway), keeping the previous state so meshes are reused while c has not moved."""

    def __init__(self, context_of, clock=time.monotonic):
        self.context_of, self.clock = context_of, clock
        self.previous: dict | None = None
        self._last = -math.inf

    def partial(self, result):
        now = self.clock()
        if now - self._last < PRESENT_INTERVAL_S:
            return None
        self._last = now
        return self.final(result)

    def final(self, result) -> Presented:
        traj, context = self.context_of(result)
        if traj is None or len(traj.step) == 0:  # nothing run yet (a network file read): the layout
            return Presented(result, {"layout": context.layout, "context": context})
        self.previous = present(traj, context, self.previous)
        return Presented(result, self.previous)


def preview_job(values: Values) -> Job[Context]:
    """Job: what the panel's network is laid out for before a run (Q(c) at its start): a Reset,
    or a preset that waits for Run. Loading a data set, drawing the weights and making the
    layout's meshes were done on the GUI thread before."""
    yield Progress(math.nan, "laying out the network")
    return setup_context(training_setup(values))


def restored_job(traj: Trajectory, context: Callable[[], Context]) -> Job[Presented]:
    """Job: a session's run drawn again. A session saves the run, not its data set or meshes:
    ``context()`` lays the views out again (the panel's network at the run's first row, or the
    session's loaded network), then the whole run is presented. On the GUI thread this took
    the data set's load, the layout's meshes and a pass over every row of the run."""
    yield Progress(math.nan, "drawing the session's run")
    return Presented(traj, present(traj, context()))


def training_job(values: Values, steps: int | None = None, laid_out: Context | None = None) -> Job[Presented]:
    """Job: the setup (data, initial weights), then training; every partial and the result a
    ``Presented(trajectory, state)``; the first partial lays the views out. ``laid_out``: the
    context the views show now (most often the preview of this very network): its layout is
    kept when the run's is the same, its context says so (``layout_kept``), and the window then
    lays nothing out again when it shows that preview (laying out again cost the GUI thread a
    layout and a repaint of every view as the run began)."""
    yield Progress(0.0, "loading the data and drawing the initial weights")
    setup = training_setup(values, steps)
    context = setup_context(setup)
    if laid_out is not None and plain_equal(laid_out.layout, context.layout):
        context = Context(context.net, context.config, laid_out.layout, layout_kept=True)
    yield Progress(0.0, "training", Presented(None, {"layout": context.layout, "context": context}))
    paced = _Paced(lambda traj: (traj, context))
    traj = yield from subjob(train(setup.net, setup.params, setup.X, setup.Y, setup.config), 0, 1, "", paced.partial)
    return paced.final(traj)


def continued_training_job(path, activation, slope, data, config: TrainConfig, data_source, max_l) -> Job[Presented]:
    """Job: a network file read, then trained on from its weights (``network_job`` of
    engine.topology.obstruction's ``continue_training_job``), made from plain arguments so that
    it can run in a worker process."""
    return network_job(continue_training_job(path, activation, slope, data, config, data_source, max_l), config)


def network_job(job: Job, config: TrainConfig) -> Job[Presented]:
    """A loaded network's job (read, or read and train on): its LoadedNetwork and NetworkRun
    partials and result presented, the layout made once per loaded network."""
    contexts: dict[int, tuple[LoadedNetwork, Context]] = {}  # by the LoadedNetwork's identity (kept alive)

    def context_of(result):
        loaded = result.loaded if isinstance(result, NetworkRun) else result
        if id(loaded) not in contexts:
            contexts[id(loaded)] = (loaded, loaded_context(loaded, config))
        return getattr(result, "trajectory", None), contexts[id(loaded)][1]

    paced = _Paced(context_of)
    result = yield from subjob(
        job, 0, 1, "", lambda r: paced.final(r) if isinstance(r, LoadedNetwork) else paced.partial(r)
    )
    return paced.final(result)
