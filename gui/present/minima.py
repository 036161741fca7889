"""What the minima workspace's views draw, as plain data, from the engine's typed results.

``stages(result, seen)`` turns a ``Figure3``, ``DescendingPath``, ``InfinityResult`` or
``LambdaProbe`` into {stage: view data} for the fields not drawn yet: a field that is the identical
object as last time (``seen``) is skipped, so a partial and the final result draw the same way and
nothing is drawn twice. View data holds numpy arrays, numbers and strings only (verdicts as their
enum values), which is what a session saves. Nothing here computes.
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.mlp import LOSSES
from engine.core.progress import Job, Progress
from engine.minima.construction import HessianSummary, LambdaProbe, critical_point_kind
from engine.minima.descending_path import DescendingPath
from engine.minima.infinity import InfinityResult
from engine.minima.pipeline import ANALYTIC_AXES, SCALING_LABELS, DragSlices, Figure3
from engine.minima.report import NEURONS_FROM, loss_verdict, uncovered
from engine.minima.verdicts import Definiteness, Verdict
from engine.minima.workbench import admissible_neurons

from . import Presented, dips_below
from .landscape import density_state

STAGES = (
    "steps",
    "construction",
    "spectrum",
    "density",
    "slices_min",
    "path",
    "probe",
    "slices_saddle",
    "descent",
    "plane",
    "infinity_bias",
    "infinity_gd",
    "descending_path",
)

# Plot titles name the verdict in a word or two; the inspector shows it whole, with its reasons.
SHORT = {
    Verdict.NON_ATTRACTING: "non-attracting minimum",
    Verdict.SADDLE: "saddle",
    Verdict.CONDITIONS_NOT_MET: "conditions not met",
    Verdict.STRICT_MINIMUM: "strict minimum",
    Verdict.DEGENERATE_MINIMUM: "degenerate minimum",
    Verdict.NOT_CRITICAL: "not critical",
}


def parse_widths(text: str) -> tuple:
    """ "2, 1, 1, 1" or "2—1—1—1"; a minus sign is an error, not a separator."""
    try:
        widths = tuple(int(p) for p in text.replace("—", ",").split(",") if p.strip())
    except ValueError:
        raise EngineInputError(f"small network {text[:60]!r}: write layer widths like 2, 1, 1, 1") from None
    if len(widths) < 2 or min(widths) < 1:
        raise EngineInputError(f"small network {text[:60]!r}: at least two layers, each of width ≥ 1")
    return widths


def parse_schedule(text: str) -> tuple:
    try:
        pairs = [part.split(":") for part in text.split(",") if part.strip()]
        schedule = tuple((int(l), int(c)) for l, c in pairs)
    except ValueError:
        raise EngineInputError(f"splits {text[:60]!r}: write layer:count pairs like 1:20, 2:20") from None
    if any(layer < 1 or count < 0 for layer, count in schedule):
        raise EngineInputError(f"splits {text[:60]!r}: layers count from 1 and counts are ≥ 0")
    return schedule


def split_label(s) -> str:
    return f"layer {s.layer}, neuron {s.origin + NEURONS_FROM} → copy {s.new + NEURONS_FROM}"


def stages(result, seen: dict) -> dict:
    """{stage: view data} for every field of ``result`` not drawn yet; updates ``seen``."""
    out = {}
    for name, value in _fields(result):
        if seen.get(name) is not value:
            seen[name] = value
            out.update(_field_stages(result, name, value))
    return out


def _fields(result):
    """The fields that draw something: not None, not an empty tuple."""
    return [(n, v) for n, v in vars(result).items() if v is not None and not (isinstance(v, tuple) and not v)]


def _field_stages(result, name: str, value) -> dict:
    return _FIELD_STAGES.get((type(result), name), lambda v, r: {})(value, result)


def probe_data(probe) -> dict:
    return {
        "lam": probe.lam,
        "loss": probe.loss,
        "hessian_min": probe.hessian_min,
        "verdict": probe.verdict.value,
        "unmet": list(probe.unmet),
    }


def _steps(steps, result) -> dict:
    rows = [
        {
            "description": s.description,
            "widths": list(s.widths),
            "verdict": s.verdict.value,
            "loss": s.loss,
            "grad_norm": s.grad_norm,
            "min": s.hessian.min,
            "max": s.hessian.max,
            "n_zero": s.hessian.n_zero,
            "n_negative": s.hessian.n_negative,
        }
        for s in steps
    ]
    return {"steps": {"rows": rows, "note": _note(result)}}


def _note(result) -> str:
    c = result.construction
    moved = getattr(result, "moved", None)
    if moved is not None:
        return f"critical point search on {'—'.join(map(str, c.arch.widths))}: {moved.summary()}"
    if getattr(result, "loaded_from", ""):
        return f"loaded {'—'.join(map(str, c.arch.widths))} from {result.loaded_from}"
    if c is None:
        return ""
    if not c.restarts:
        return "small network trained from the given start"
    rejected = sum(not r.accepted for r in c.restarts)
    return f"restart search: {len(c.restarts)} tried, {rejected} rejected"


def _badge_kind(badge: Definiteness) -> str:
    """How the neurons table colours B: definite, indefinite, or other (semidefinite, zero)."""
    if badge.definite:
        return "definite"
    return "indefinite" if badge is Definiteness.INDEFINITE else "other"


def _construction(c, result) -> dict:
    lams = c.split_lams
    badge = {(n.layer, n.neuron): n.badge.value for n in c.neurons}
    neurons = [
        {
            "layer": n.layer,
            "neuron": n.neuron,
            "B_eigs": np.asarray(n.B_eigs),
            "badge": n.badge.value,
            "badge_kind": _badge_kind(n.badge),
            "D_norm": n.D_norm,
        }
        for n in c.small_neurons
    ]
    # Every neuron of the current network can be split; Theorem 9 covers those with no reason against.
    here = c.steps[-1]
    split_rows = [
        [n.layer, n.neuron, n.badge.value, n.D_norm, list(uncovered(n, here.verdict, here.grad_norm))]
        for n in c.neurons
    ]
    out = {
        "construction": {
            "neurons": neurons,
            "widths": list(c.arch.widths),
            "weights": c.weights,
            "splits": [[s.layer, s.origin, s.new] for s in c.splits],
            "split_labels": [split_label(s) for s in c.splits],
            "split_lams": lams,
            "admissible": [[l, r, badge[l, r]] for l, r in admissible_neurons(c)],
            "split_rows": split_rows,
            "verdict": here.verdict.value,
            "losses": {
                kind: loss_verdict(kind, c.arch, here.verdict, here.grad_norm, _split_verdict(c)).as_json()
                for kind in LOSSES
            },
        }
    }
    return dict(out, **_steps(result.steps, result))  # the note changes once the construction is known


def _split_verdict(c):
    return None if c.verification is None else c.verification.verdict


def slices_min_title(fig) -> str:
    """Panel (a) names the point it slices by what the point is (the one rule of
    construction.critical_point_kind on the steps table's last row), not by Theorem 9's verdict."""
    last = fig.steps[-1] if fig.steps else None
    verdict = None if last is None else critical_point_kind(last.hessian, last.grad_norm)
    if verdict is not None and verdict.is_minimum:
        return "(a) at the embedded minimum" if fig.construction.splits else "(a) at the minimum"
    return f"(a) at the network ({SHORT[verdict]})" if verdict is not None else "(a) slices"


def _spectrum(eigs, fig) -> dict:
    caption = _built(fig.construction)
    return {"spectrum": {"eigs": np.asarray(eigs), "tol": fig.hessian.tol, "caption": caption}}


def _network(c) -> str:
    return f"{'—'.join(map(str, c.arch.widths))}, {c.arch.n_params} params"


def _built(c) -> str:
    """Where the built network's spectrum (or density) was taken: the split's λ, when there is one."""
    return f"{_network(c)}, " + (f"at the built network (λ = {c.splits[-1].lam:.3g})" if c.splits else "at the network")


def probe_details(probe, fig) -> dict:
    """The spectrum at the λ slider's point (the probe's Hessian, not the built network's), or past
    the full-Hessian limit its spectral density: {stage: view data}, empty when the probe has neither."""
    c = fig.construction
    # the verdict is the λ box's, beside it: in the caption it ran past the pane at 1600×960
    where = f"{_network(c)}, at the slider's λ = {probe.lam:.3g}"
    if probe.density is not None:
        return {"density": dict(density_state(probe.density), note=where)}
    if probe.hessian_eigs is None:
        return {}
    eigs = np.asarray(probe.hessian_eigs)
    return {"spectrum": {"eigs": eigs, "tol": HessianSummary.of(eigs).tol, "caption": where}}


def _density(d, fig) -> dict:
    return {"density": dict(density_state(d), note=_built(fig.construction))}


def slices_data(s, **extra) -> dict:
    return dict(
        {
            "t": s.t,
            "losses": s.curves,
            "envelope": s.envelope,
            "lstar": s.L_star,
            "gap": s.envelope_gap,
            "n_below": s.n_below,
            "family": s.family,
            "predicted": s.predicted,
            "directions": SCALING_LABELS.get(s.normalization, ""),
            "frame": slice_frame(s.t, s.curves, s.envelope, s.L_star, extra.get("descent")),
        },
        **extra,
    )


def slice_frame(t, losses, envelope, lstar: float, descent=None) -> list:
    """The box a slice view shows, [x0, x1, y0, y1]: the envelope and L*, not the tallest of K
    curves; with a descent line (t, loss) that dips, that line too, or its dip (~1e−4 of L* at
    the Fig. 3 saddle) is invisible."""
    t = np.asarray(t, float)
    low = min(float(np.nanmin(envelope)), lstar)
    top = float(np.nanpercentile(losses, 40))
    if descent is not None:
        line = np.asarray(descent[1], float)
        lowest = float(np.min(line))
        low = min(low, lowest)
        if dips_below(lowest, lstar):  # a flat line (inside I): nothing to magnify
            top = min(top, float(np.max(line)))
    pad = 0.08 * max(top - low, 1e-12)
    margin = 0.02 * (t[-1] - t[0])  # pyqtgraph's padding=0.02, as the x range had
    return [float(t[0] - margin), float(t[-1] + margin), low - pad, top + pad]


def _path(path, fig) -> dict:
    return {
        "path": {
            "lam": path.lam,
            "loss": path.loss,
            "hessian_min": path.hessian_min,
            "verdicts": [v.value for v in path.verdicts],
            "intervals": [list(p) for p in path.interval.parts],
            "label": split_label(fig.construction.splits[path.split]),
            "split": path.split,
        }
    }


def _saddle(saddle, fig) -> dict:
    probe, line = saddle.probe, saddle.descent
    out = {"probe": probe_data(probe)}
    if line is not None:
        title = f"(c) at λ = {probe.lam:g}: {SHORT[probe.verdict]}"
        if saddle.slices is not None:
            out["slices_saddle"] = slices_data(saddle.slices, title=title, descent=(line.t, line.loss))
        out["descent"] = {
            "curves": [
                {"name": "L(θ + t·e)", "x": line.t, "y": line.loss},
                {"name": "L*", "hline": probe.loss, "color": "fg", "style": "dash"},
            ],
            "note": f"λ = {probe.lam:g}; λ_min(H) = {probe.hessian_min:.2e}<br>"
            f"dip {np.min(line.loss) - probe.loss:.2g}",
            "frame": dip_frame(line.t, line.loss, probe.loss),
        }
    return out


def dip_frame(t, loss, level: float) -> list | None:
    """x and y ranges that show a dip below ``level`` at a readable size: the descent line at a
    saddle can dip 0.0016 on a curve rising to 0.9, which autoscaling flattens into a minimum."""
    t, loss = np.asarray(t, float), np.asarray(loss, float)
    if not dips_below(float(np.min(loss)), level):
        return None
    depth = level - float(np.min(loss))
    top = level + 2 * depth
    near = np.flatnonzero(loss <= top)
    lo, hi = t[max(near[0] - 1, 0)], t[min(near[-1] + 1, len(t) - 1)]
    return [float(lo), float(hi), float(level - 1.2 * depth), float(top)]


def _plane(plane, fig) -> dict:
    # The engine indexes loss[i, j] by (d1_i, d2_j); the heatmap wants rows along d2. A session
    # saves these keys (a, b, loss), so it does not depend on the engine's names.
    return {
        "plane": {
            "a": plane.alpha,
            "b": plane.beta,
            "loss": plane.loss.T,
            "center": (0.0, 0.0),
            "labels": tuple(plane.labels) or ANALYTIC_AXES,
        }
    }


def preview_data(preview) -> dict:
    """A λ drag's preview, in the same stages as the refined result it stands in for."""
    out = {
        "slices_saddle": slices_data(
            preview.slices,
            title=f"(c) preview at λ = {preview.lam:.3g} ({len(preview.slices.t)} points; refines on release)",
        )
    }
    if preview.plane is not None:
        out.update(_plane(preview.plane, None))
    return out


def _bias(curve, r) -> dict:
    return {
        "infinity_bias": {
            "curves": [
                {
                    "name": "L(b) − L∞ (above the limit for every b)",
                    "x": curve.b,
                    "y": np.maximum(curve.loss_minus_Linf, 1e-300),
                }
            ],
            "note": f"L∞ = {curve.L_inf:.4g} (constant output mean(y)); log scale",
        }
    }


def _gd(gd, r) -> dict:
    # One axis, one quantity: GD's L − L∞ against the level L-BFGS reaches. The bias drift is
    # a number in the note (on the same axis it drew a third flat line in other units).
    curves = [{"name": "GD: L − L∞", "x": gd.step, "y": gd.loss_minus_Linf}]
    if r.lower is not None:
        curves.append(
            {
                "name": "L-BFGS from the same start: L − L∞",
                "hline": r.lower.loss - gd.L_inf,
                "color": "fg",
                "style": "dash",
            }
        )
    escape = gd.escape_step
    where = (
        f"escapes below L∞ at step {escape}"
        if escape is not None
        else f"stays within {np.max(np.abs(gd.loss_minus_Linf)):.1e} of L∞ (escape takes ~e^b0 steps)"
    )
    return {
        "infinity_gd": {
            "curves": curves,
            "note": f"GD from b0 = {r.b0:g} {where};<br>mean bias {gd.mean_bias[0]:.6g} → {gd.mean_bias[-1]:.6g}",
        }
    }


def _descending(p, r) -> dict:
    return {
        "descending_path": {
            "curves": [
                {"name": "B11 path (A gather | B re-point | C descend)", "x": p.s, "y": p.loss_path},
                {"name": "straight segment, same endpoints", "x": p.s, "y": p.loss_straight, "style": "dash"},
            ],
            "note": f"monotone: {'yes' if p.monotone else 'NO'} · end loss {p.loss_path[-1]:.2g} · "
            f"condition number {p.condition_number:.2g}",
        }
    }


_FIELD_STAGES = {
    (Figure3, "steps"): _steps,
    (Figure3, "construction"): _construction,
    (Figure3, "eigs"): _spectrum,
    (Figure3, "density"): _density,
    (Figure3, "slices_min"): lambda s, fig: {"slices_min": slices_data(s, title=slices_min_title(fig))},
    (Figure3, "path"): _path,
    (Figure3, "saddle"): _saddle,
    (Figure3, "plane"): _plane,
    (DescendingPath, "steps"): _steps,
    (DescendingPath, "construction"): _construction,
    (DescendingPath, "path"): _descending,
    (InfinityResult, "curve"): _bias,
    (InfinityResult, "gd"): _gd,
    (InfinityResult, "lower"): lambda lower, r: _gd(r.gd, r),
}


# ---------------------------------------------------------------------------- on the worker
class _Presenter:
    """A job's results as view states: {"stages": the stages of every field not drawn before the
    job, "probe_details": the λ box's spectrum or density}. Each state holds every such stage (a
    field's stage data made once, by identity), not only the new ones: the runner may drop a
    partial for a newer one, and the tab draws a stage only when its data object changes."""

    def __init__(self, drawn: dict):
        self.drawn = dict(drawn)  # field -> value the tab shows already (a kept job's unchanged fields)
        self.made: dict[str, tuple] = {}  # field -> (value, its stages)

    def __call__(self, result) -> Presented:
        if not hasattr(result, "__dataclass_fields__"):
            return Presented(result, {"stages": {}, "seen": dict(self.drawn)})
        out, seen = {}, dict(self.drawn)
        for name, value in _fields(result):
            seen[name] = value
            if self.drawn.get(name) is value:
                continue
            if name not in self.made or self.made[name][0] is not value:
                self.made[name] = (value, _field_stages(result, name, value))
            out.update(self.made[name][1])
        state = {"stages": out, "seen": seen}
        if isinstance(result, Figure3) and "probe" in out:
            probe = result.saddle.probe
            if self.made.get("probe_details", (None,))[0] is not probe:
                self.made["probe_details"] = (probe, probe_details(probe, result))
            state["probe_details"] = self.made["probe_details"][1]
        return Presented(result, state)


def presented_job(job: Job, drawn: dict | None = None) -> Job[Presented]:
    """``job``'s partials and result presented on its own (worker) thread. ``drawn``: the fields
    (name -> value) the tab shows already, not presented again (a split, an undo or a re-slice
    keeps the panels its result does not change). The result's state also names ``current``:
    every stage the result has, so the tab clears the ones it no longer has."""
    present = _Presenter(drawn or {})
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            result = stop.value
            break
        partial = update.partial
        yield Progress(update.fraction, update.message, None if partial is None else present(partial))
    presented = present(result)
    if isinstance(result, (Figure3, DescendingPath)):
        presented.state["current"] = sorted(stages(result, {}))
    return presented


def presented_preview(job: Job) -> Job:
    """A λ drag's preview job: its preview presented (a DragSlices or None passes as it is)."""
    preview = yield from job
    if preview is None or isinstance(preview, DragSlices):
        return preview
    return Presented(preview, preview_data(preview))


def presented_probe(job: Job[LambdaProbe], fig) -> Job[Presented]:
    """A probe at the slider's λ: the λ box's numbers and, for a Fig. 3 network, the spectrum or
    density beside it."""
    probe = yield from job
    state = {"probe": probe_data(probe)}
    if isinstance(fig, Figure3):
        state.update(probe_details(probe, fig))
    return Presented(probe, state)


def presented_resume(job: Job[Figure3]) -> Job[Presented]:
    """A reopened session's network made live: its figure and the construction panel's data."""
    fig = yield from job
    return Presented(fig, {"construction": _field_stages(fig, "construction", fig.construction)["construction"]})
