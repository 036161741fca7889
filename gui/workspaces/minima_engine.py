"""The engine entry points the minima workspace calls, in one place, renamed to what the views draw.

Nothing here computes: each function calls the engine and renames its results.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from types import SimpleNamespace

import numpy as np

from engine import construction as cons
from engine import landscape, netio
from engine import nonattracting as NA
from engine.progress import Progress, subjob


# ----------------------------------------------------------------- data
def construction_job(kind: str, seed: int, widths, activation, bias, schedule, lam, lam_outside, max_restarts,
                     n_samples):
    """Job -> Construction: the paper's deep recipe (new data draws if one has no suitable minimum),
    or the shallow Fukumizu–Amari case on 1—2—1 teacher data."""
    if kind == "deep":
        c, _ = yield from NA.deep_construction_job(seed, small=widths, n_samples=n_samples, schedule=schedule,
                                                   restarts=max_restarts)
        return c
    X, Y = NA.teacher_data((widths[0], 2, 1), n_samples, seed, input_scale=2.0)
    return (yield from cons.construct_job(X, Y, widths, activation, bias, schedule, lam=lam, lam_outside=lam_outside,
                                          seed=seed, max_restarts=max_restarts))


# --------------------------------------------------------------- slices
def slices_job(arch, theta, X, Y, K, P, T, normalize, seed):
    """Job: engine.landscape slices, renamed to what the SliceView draws."""
    res = yield from landscape.slices_job(arch, theta, X, Y, K=K, P=P, T=T, normalization=normalize, seed=seed)
    return {"t": res.t, "losses": res.curves, "envelope": res.envelope, "lstar": res.L_star,
            "gap": res.envelope_gap, "n_below": res.n_below}


# ---------------------------------------------------------------- plane
def plane_job(c, probe, points: int, extent: float):
    """Job: the loss on the plane of the degenerate direction and the B6 descent direction."""
    split = c.splits[probe.split]
    B = cons.verify_split(c.arch, probe.params, c.X, c.Y, split).pair_B
    d1 = cons.degenerate_direction(c.arch, probe.params, split)
    d2 = cons.descent_direction(c.arch, probe.params, split, B)
    res = yield from landscape.plane_job(c.arch, probe.params, c.X, c.Y, d1, d2, n=points, T=extent)
    # The engine indexes losses[i, j] by (d1_i, d2_j); the heatmap wants rows along d2.
    return {"a": res.s, "b": res.t, "loss": res.losses.T, "center": (0.0, 0.0),
            "labels": ("degenerate direction (moves λ)", "descent direction e (B6)")}


# ------------------------------------------------- other experiments
def infinity_job(seed: int, steps: int | None):
    """Job: B10 — the loss against the shared bias, GD from b0 = 15, and L-BFGS's lower loss."""
    X, Y = NA.infinity_data(seed)
    W, v = NA.infinity_point(X, Y, 2)
    curve = NA.loss_vs_bias(X, Y, W, v, np.linspace(0, 40, 81))
    yield Progress(0.05, "loss against bias", ("infinity_bias", _bias_stage(curve)))
    gd = yield from subjob(NA.gd_from_infinity(X, Y, W, v, 15.0, steps=steps or 200_000), 0.05, 0.95, "GD: ")
    lower = NA.lbfgs_from(X, Y, W, np.zeros(len(v)), v)
    return {"infinity_bias": _bias_stage(curve), "infinity_gd": _gd_stage(gd, lower)}


def _bias_stage(curve: dict) -> dict:
    return {"curves": [{"name": "L(b) − L∞ (above the limit for every b)", "x": curve["b"],
                        "y": np.maximum(np.asarray(curve["loss_minus_Linf"]), 1e-300)}],
            "note": f"L∞ = {curve['L_inf']:.4g} (constant output mean(y)); log scale"}


def _gd_stage(gd: dict, lower: float) -> dict:
    escape = gd["escape_step"]
    return {"curves": [{"name": "L − L∞", "x": gd["step"], "y": gd["loss_minus_Linf"]},
                       {"name": "mean bias / 100", "x": gd["step"], "y": np.asarray(gd["mean_bias"]) / 100},
                       {"name": "L-BFGS loss − L∞", "hline": lower - gd["L_inf"], "color": "#000000", "style": "dash"}],
            "note": "GD from b0 = 15: " + (f"escapes below L∞ at step {escape}" if escape is not None
                                           else "still on the flat set at infinity (escape takes ~e^b0 steps)")}


def descending_path_job(c):
    """Job: B11 — the non-increasing path from the constructed minimum, beside the straight segment."""
    yield Progress(float("nan"), "non-increasing path")
    res = NA.nonincreasing_path(c.arch, c.params, c.X, c.Y)
    curves = [{"name": "B11 path (A gather | B re-point | C descend)", "x": res["s"], "y": res["loss_path"]},
              {"name": "straight segment, same endpoints", "x": res["s"], "y": res["loss_straight"],
               "style": "dash"}]
    note = (f"monotone: {'yes' if res['monotone'] else 'NO'} · end loss {res['loss_end']:.2g} · "
            f"condition number {res['condition_number']:.2g}")
    return {"curves": curves, "note": note}


# ------------------------------------------------------------ files
def save_network(c, path: str):
    netio.save_network(path, c.arch, c.params, c.X, c.Y)


def read_network(path: str):
    """The saved network (cheap: reading only), or EngineInputError naming what is wrong."""
    return netio.load_network(path)


def inspect_loaded(net):
    """A Construction-like record of a read network (no split history); costs one Hessian."""
    step = cons.step_of("loaded", net.arch, net.params, net.X, net.Y)
    return SimpleNamespace(arch=net.arch, params=net.params, X=net.X, Y=net.Y, steps=[step], splits=[],
                           restarts=[], small_neurons=cons.neuron_bd(net.arch, net.params, net.X, net.Y),
                           verification=None)


# ------------------------------------------------- session round trips
def step_as_dict(step) -> dict:
    return dict(asdict(step), widths=list(step.widths))


def step_from_dict(d: dict):
    return cons.Step(d["description"], tuple(d["widths"]), d["loss"], d["grad_norm"],
                     cons.HessianSummary(**d["hessian"]), d["verdict"])


def neuron_as_dict(n) -> dict:
    return {"layer": n.layer, "neuron": n.neuron, "B_eigs": np.asarray(n.B_eigs), "badge": n.badge,
            "D_norm": n.D_norm}


@dataclass(frozen=True)
class _Neuron:
    layer: int
    neuron: int
    B_eigs: np.ndarray
    badge: str
    D_norm: float


def neuron_from_dict(d: dict):
    return _Neuron(int(d["layer"]), int(d["neuron"]), np.asarray(d["B_eigs"]), str(d["badge"]), float(d["D_norm"]))
