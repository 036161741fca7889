"""The minima workspace's jobs: engine calls in the order the figures need them.

Each job yields ``Progress`` whose partial is ``(stage, data)``; ``data`` holds exactly the
keyword arguments of the view that draws it, so the workspace stays a dispatcher. Nothing
here computes: numbers come from engine.construction, engine.landscape, engine.nonattracting.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import construction as cons
from engine import deep
from engine.errors import EngineInputError
from engine.progress import Progress, subjob

from . import minima_engine as eng


@dataclass(frozen=True)
class SliceSettings:
    K: int
    P: int
    T: float
    normalize: str
    seed: int


@dataclass(frozen=True)
class ConstructionSettings:
    kind: str            # "deep" or "shallow"
    seed: int
    widths: tuple
    activation: str
    bias: bool
    schedule: tuple
    lam: float
    lam_outside: float   # λ for splits whose B is negative definite (I = (−∞, 0) ∪ (1, ∞))
    max_restarts: int
    n_samples: int
    saddle_lam: float
    path: tuple          # (λ from, λ to, points)
    plane: tuple         # (points, extent)


def parse_widths(text: str) -> tuple:
    try:
        return tuple(int(p) for p in text.replace("—", ",").replace("-", ",").split(",") if p.strip())
    except ValueError:
        raise EngineInputError(f"small network {text!r}: write layer widths like 2, 1, 1, 1") from None


def parse_schedule(text: str) -> tuple:
    try:
        pairs = [part.split(":") for part in text.split(",") if part.strip()]
        return tuple((int(l), int(c)) for l, c in pairs)
    except ValueError:
        raise EngineInputError(f"splits {text!r}: write layer:count pairs like 1:20, 2:20") from None


def _yield(fraction: float, message: str, stage: str, data) -> Progress:
    return Progress(fraction, message, (stage, data))


def interval_bounds(interval: str) -> list[tuple]:
    """The engine names I as a string; the view shades it as (a, b) pairs."""
    return {"(0, 1)": [(0.0, 1.0)],
            "(-inf, 0) ∪ (1, inf)": [(-np.inf, 0.0), (1.0, np.inf)]}.get(interval, [])


def split_label(s) -> str:
    return f"layer {s.layer}, neuron {s.origin} → copy {s.new}"


def construction_stage(c) -> dict:
    eigs, h = cons.hessian_spectrum(c.arch, c.params, c.X, c.Y)
    Ws, _ = deep.unpack(c.arch, c.params)
    lams = [cons.split_lambda(c.arch, c.params, s) for s in c.splits]
    return {"construction": c, "neurons": c.small_neurons, "eigs": eigs, "tol": h.tol,
            "caption": f"{'—'.join(map(str, c.arch.widths))}, {c.arch.n_params} params",
            "widths": c.arch.widths, "weights": [np.asarray(W) for W in Ws],
            "splits": [(s.layer, s.origin, s.new) for s in c.splits],
            "split_labels": [split_label(s) for s in c.splits], "split_lams": lams,
            "split_label": split_label(c.splits[-1]) if c.splits else None, "lam": lams[-1] if lams else None}


def slices_stage(arch, theta, X, Y, s: SliceSettings, seed_offset: int = 0):
    """Job: K slices through θ; returns the SliceView's keyword arguments."""
    return (yield from eng.slices_job(arch, theta, X, Y, s.K, s.P, s.T, s.normalize, s.seed + seed_offset))


def _saddle(c, lam: float, s: SliceSettings, split: int = -1):
    """Job: the saddle at ``lam`` — its slices (c), with the B6 descent line over them, and (d)."""
    probe = cons.move_lambda(c, lam, split)
    yield _yield(float("nan"), f"saddle at λ = {lam:g}: {probe.verdict}", "probe", probe_stage(probe))
    data = yield from slices_stage(c.arch, probe.params, c.X, c.Y, s)
    descent = cons.descent_curve(c, probe, data["t"])
    # Random directions in P dimensions almost never see the one negative eigenvalue (B8); the
    # analytic direction, at the same unit norm, shows the saddle is there.
    data_c = dict(data, title=f"(c) slices at λ = {lam:g}: {short(probe.verdict)}",
                  descent=(descent["t"], descent["loss"]))
    d = {"curves": [{"name": "L(θ + t·e)", "x": descent["t"], "y": descent["loss"]},
                    {"name": "L*", "hline": probe.loss, "color": "#000000", "style": "dash"}],
         "note": f"λ = {lam:g}; λ_min(H) = {probe.hessian_min:.2e}"}
    return probe, data_c, d


def short(verdict: str) -> str:
    """Plot titles keep the verdict's first clause; the inspector shows it whole."""
    return verdict.split(":")[0]


def probe_stage(probe) -> dict:
    return {"lam": probe.lam, "loss": probe.loss, "hessian_min": probe.hessian_min, "verdict": probe.verdict}


def figure3_job(config: ConstructionSettings, s: SliceSettings):
    c = yield from _construct(config, 0.4)
    out = {"steps": {"steps": c.steps, "note": _restarts_note(c)}}
    yield _yield(0.4, "construction done", "steps", out["steps"])
    out["construction"] = construction_stage(c)
    yield _yield(0.45, "Hessian spectrum", "construction", out["construction"])
    out["slices_min"] = yield from _mapped(subjob(slices_stage(c.arch, c.params, c.X, c.Y, s), 0.45, 0.65))
    yield _yield(0.65, "slices at the minimum", "slices_min", out["slices_min"])
    if not c.splits:
        return out
    out["path"] = yield from _mapped(subjob(path_job(c, config.path), 0.65, 0.8))
    yield _yield(0.8, "degenerate path", "path", out["path"])
    probe, out["slices_saddle"], out["descent"] = yield from _mapped(
        subjob(_saddle(c, config.saddle_lam, s), 0.8, 0.92))
    out["probe"] = probe_stage(probe)
    for stage in ("slices_saddle", "descent"):
        yield _yield(0.92, stage, stage, out[stage])
    out["plane"] = yield from _mapped(subjob(eng.plane_job(c, probe, *config.plane), 0.92, 1.0))
    return out


def _steps_partial(update: Progress) -> Progress:
    """The construction yields its list of Steps so far; the table shows them as they come."""
    if isinstance(update.partial, list) and update.partial and hasattr(update.partial[0], "widths"):
        return Progress(update.fraction, update.message, ("steps", {"steps": list(update.partial)}))
    return Progress(update.fraction, update.message)


def _construct(config: ConstructionSettings, stop: float):
    inner = eng.construction_job(config.kind, config.seed, config.widths, config.activation, config.bias,
                                 config.schedule, config.lam, config.lam_outside, config.max_restarts,
                                 config.n_samples)
    return (yield from _mapped(subjob(inner, 0.0, stop), _steps_partial))


def path_job(c, path: tuple, split: int = -1):
    """Job: (b), the degenerate path of one split; ``path`` is (λ from, λ to, points)."""
    lams = np.linspace(*path[:2], int(path[2]))
    res = yield from cons.degenerate_path_job(c, lams, split)
    interval = cons.verify_split(c.arch, c.params, c.X, c.Y, c.splits[split]).interval
    return dict(res, intervals=interval_bounds(interval), split=split % len(c.splits),
                label=split_label(c.splits[split]))


def _restarts_note(c) -> str:
    if not c.restarts:
        return "small network trained from the given start"
    rejected = sum(not r.accepted for r in c.restarts)
    return f"restart search: {len(c.restarts)} tried, {rejected} rejected"


def _mapped(job, fn=None):
    """Re-yield a sub-job's progress; partials that are not (stage, data) are dropped or mapped."""
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            return stop.value
        if fn is not None:
            update = fn(update)
        elif not (isinstance(update.partial, tuple) and len(update.partial) == 2):
            update = Progress(update.fraction, update.message)
        yield update


def reslice_job(c, lam: float, s: SliceSettings, split: int = -1, path: tuple | None = None):
    """After the λ slider is released: the saddle (or minimum) views at the new λ, and (b) again
    when ``path`` is given (another split was chosen)."""
    if c is None:
        raise EngineInputError("build or load a construction before moving λ")
    out = {}
    if path is not None:
        out["path"] = yield from _mapped(subjob(path_job(c, path, split), 0.0, 0.4))
        yield _yield(0.4, "degenerate path", "path", out["path"])
    probe, out["slices_saddle"], out["descent"] = yield from _mapped(subjob(_saddle(c, lam, s, split), 0.4, 1.0))
    out["probe"] = probe_stage(probe)
    return out


def probe_job(c, lam: float, split: int = -1):
    """The slider's live readout (one Hessian) as a job, so it never blocks the window."""
    yield Progress(float("nan"), f"λ = {lam:.3g}")
    return probe_stage(cons.move_lambda(c, lam, split))


def infinity_job(seed: int, steps: int | None):
    return (yield from _mapped(eng.infinity_job(seed, steps)))


def descending_path_job(config: ConstructionSettings):
    """B11 starts from a constructed minimum: build it (table and diagram fill in), then walk."""
    c = yield from _construct(config, 0.8)
    out = {"steps": {"steps": c.steps, "note": _restarts_note(c)}, "construction": construction_stage(c)}
    yield _yield(0.85, "construction done", "construction", out["construction"])
    out["descending_path"] = yield from _mapped(eng.descending_path_job(c))
    return out


def load_job(path: str, s: SliceSettings):
    """Open a saved network: inspect it (steps row, B/D, spectrum, diagram) and slice it. Reading
    happens now (a bad file raises EngineInputError at once); the Hessians run in the job."""
    return _inspect_loaded(eng.read_network(path), s)


def _inspect_loaded(net, s: SliceSettings):
    yield Progress(float("nan"), "Hessian of the loaded network")
    c = eng.inspect_loaded(net)
    out = {"steps": {"steps": c.steps, "note": f"loaded {'—'.join(map(str, c.arch.widths))}"}}
    yield _yield(0.1, "loaded", "steps", out["steps"])
    out["construction"] = construction_stage(c)
    yield _yield(0.3, "Hessian spectrum", "construction", out["construction"])
    out["slices_min"] = yield from _mapped(subjob(slices_stage(c.arch, c.params, c.X, c.Y, s), 0.3, 1.0))
    return out


def export_network(c, path: str):
    if c is None:
        raise EngineInputError("nothing to export: build or load a construction first")
    eng.save_network(c, path)


PLAIN_STAGES = ("steps", "construction", "slices_min", "slices_saddle", "path", "descent", "plane",
                "probe", "infinity_bias", "infinity_gd", "descending_path")


def plain_state(result: dict) -> dict:
    """Sessions keep what is drawn, as plain data; the live construction object stays behind."""
    state = {}
    for stage, data in result.items():
        if stage not in PLAIN_STAGES:
            continue
        data = dict(data)
        if stage == "steps":
            data["steps"] = [eng.step_as_dict(step) for step in data["steps"]]
        if stage == "construction":
            data.pop("construction", None)
            data["neurons"] = [eng.neuron_as_dict(n) for n in data["neurons"]]
            data["split_label"] = None  # without the construction the slider cannot move
        state[stage] = data
    return state


def from_plain_state(state: dict) -> dict:
    out = {}
    for stage, data in state.items():
        if stage not in PLAIN_STAGES:
            raise EngineInputError(f"session has an unknown minima result {stage!r}")
        data = dict(data)
        if stage == "steps":
            data["steps"] = [eng.step_from_dict(d) for d in data["steps"]]
        if stage == "construction":
            data["neurons"] = [eng.neuron_from_dict(d) for d in data["neurons"]]
        out[stage] = data
    return out
