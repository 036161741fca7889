"""Experiments for "non-attracting regions of local minima" (MATH.md B7–B11).

Each data product is also a plain function (the GUI presets plot them): ``deep_construction_job``,
``loss_vs_bias``, ``gd_from_infinity``, ``nonincreasing_path``. Experiments write metrics.json,
.npz networks (engine.netio format) and PNG figures.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.optimize
from matplotlib.figure import Figure
from scipy.special import expit

from . import construction as C
from . import deep, landscape, netio
from .deep import Arch
from .errors import EngineInputError
from .progress import Job, Progress, subjob
from .runtime import configure_torch_threads


def teacher_data(widths, n_samples: int, seed: int, scale: float = 4.0, input_scale: float = 1.0):
    """Samples of a random teacher net: the student of the same widths fits them exactly (loss 0)."""
    rng = np.random.default_rng(seed)
    arch = Arch(tuple(widths), "sigmoid", False)
    theta = deep.init_params(arch, rng, scale)
    X = input_scale * rng.standard_normal((n_samples, widths[0]))
    return X, deep.predict(arch, theta, X)


def deep_construction_job(seed: int = 0, small=(2, 1, 1, 1), teacher=(2, 5, 5, 1), n_samples: int = 20,
                          schedule=((1, 20), (2, 20)), data_tries: int = 10, restarts: int = 15) -> Job:
    """B7: draw teacher data and search a strict minimum with definite B(1), B(2); if a data draw
    has none within ``restarts``, draw new data (reported in the result's ``data_seed``)."""
    for k in range(data_tries):
        X, Y = teacher_data(teacher, n_samples, seed + 1000 * k)
        try:
            c = yield from subjob(C.construct_job(X, Y, small, schedule=schedule, seed=seed + k,
                                                  max_restarts=restarts), k / data_tries, (k + 1) / data_tries,
                                  f"data draw {k + 1}: ")
            return c, seed + 1000 * k
        except EngineInputError:
            continue
    raise EngineInputError(f"no suitable minimum of {small} in {data_tries} data draws × {restarts} restarts")


def _write(out_dir: Path, metrics: dict) -> dict:
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=float))
    return metrics


def _plot_slices(path, s: landscape.Slices, title: str, n_curves: int = 500):
    fig = Figure(figsize=(5, 6))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(s.t, s.curves[:n_curves].T - s.L_star, lw=0.3, alpha=0.4)
    top.set_ylabel("L − L*")
    top.set_title(f"{title}: {len(s.curves)} random directions")
    bottom.plot(s.t, s.envelope - s.L_star, "k")
    bottom.axhline(0, color="r", lw=0.6)
    bottom.set_ylabel("min over directions − L*")
    bottom.set_xlabel("t")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _plot_xy(path, xs, ys, xlabel, ylabel, title, labels=None, logy=False):
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    for i, (x, y) in enumerate(zip(xs, ys)):
        ax.plot(x, y, label=None if labels is None else labels[i])
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if labels:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _bd_metrics(neurons) -> tuple[dict, dict]:
    return ({str(n.layer): n.B_eigs.tolist() for n in neurons if n.neuron == 0},
            {str(n.layer): n.D_norm for n in neurons if n.neuron == 0})


def run_deep(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    configure_torch_threads()
    K, P = (200, 21) if quick else (5000, 101)
    c, data_seed = yield from subjob(deep_construction_job(seed), 0.0, 0.3, "construction: ")
    small_eigs = np.linalg.eigvalsh(deep.hessian(c.small_arch, c.small_params, c.X, c.Y))
    B, D = _bd_metrics(c.small_neurons)
    big = c.steps[-1]
    saddle = C.move_last_lambda(c, 2.0)
    path = yield from subjob(C.degenerate_path_job(c, np.linspace(0.5, 2.0, 7 if quick else 31)), 0.3, 0.45,
                             "degenerate path: ")
    ts = np.linspace(-3, 3, 121)
    descent = C.descent_curve(c, saddle, ts)
    slices = {}
    for i, (name, theta) in enumerate((("minimum", c.params), ("saddle", saddle.params))):
        slices[name] = yield from subjob(landscape.slices_job(c.arch, theta, c.X, c.Y, K, P, T=1.0, seed=seed),
                                         0.45 + 0.25 * i, 0.7 + 0.25 * i, f"slices at the {name}: ")
    netio.save_network(out_dir / "small_min.npz", c.small_arch, c.small_params, c.X, c.Y)
    netio.save_network(out_dir / "big_min.npz", c.arch, c.params, c.X, c.Y)
    netio.save_network(out_dir / "saddle.npz", c.arch, saddle.params, c.X, c.Y,
                       descent_direction=descent["direction"])
    _plot_slices(out_dir / "fig3a_minimum.png", slices["minimum"], "(a) local minimum")
    fig = Figure(figsize=(5, 5))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(path["lam"], np.array(path["loss"]) - big.loss)
    ax1.set(ylabel="L − L*", title="(b) degenerate path: last split's λ")
    ax2.plot(path["lam"], path["hessian_min"])
    ax2.axhline(0, color="r", lw=0.6)
    ax2.set(xlabel="λ", ylabel="min Hessian eigenvalue")
    fig.tight_layout()
    fig.savefig(out_dir / "fig3b_degenerate_path.png", dpi=110)
    _plot_slices(out_dir / "fig3c_saddle.png", slices["saddle"], "(c) saddle, λ = 2")
    _plot_xy(out_dir / "fig3d_descent.png", [ts], [np.array(descent["loss"])], "t", "loss",
             "(d) loss along the B6 descent direction")
    return _write(out_dir, {
        "data_seed": data_seed,
        "restarts": len(c.restarts),
        "restart_reasons": [r.reason for r in c.restarts if not r.accepted],
        "small": {"widths": list(c.small_arch.widths), "loss": c.steps[0].loss, "grad_norm": c.steps[0].grad_norm,
                  "hessian_eigs": small_eigs.tolist(), "B": B, "D_norm": D},
        "splits": [[s.layer, s.origin, s.new, s.lam] for s in c.splits],
        "big": {"widths": list(c.arch.widths), "loss": big.loss, "grad_norm": big.grad_norm,
                "hessian_min": big.hessian.min, "hessian_max": big.hessian.max, "n_zero": big.hessian.n_zero,
                "n_negative": big.hessian.n_negative, "zero_tol": big.hessian.tol, "verdict": big.verdict,
                "interval": c.verification.interval},
        "saddle": {"lambda": saddle.lam, "loss": saddle.loss, "hessian_min": saddle.hessian_min,
                   "verdict": saddle.verdict},
        "degenerate_path": {k: list(v) for k, v in path.items()},
        "descent": {"t": descent["t"], "loss": descent["loss"],
                    "min_loss": float(min(descent["loss"])),
                    "relative_decrease": float(1 - min(descent["loss"]) / saddle.loss)},
        "landscape": {"K": K, "P": P, "T": 1.0, "envelope_gap_at_min": slices["minimum"].envelope_gap,
                      "envelope_gap_at_saddle": slices["saddle"].envelope_gap,
                      "frac_below_at_min": slices["minimum"].frac_below,
                      "frac_below_at_saddle": slices["saddle"].frac_below},
    })


def run_shallow(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    configure_torch_threads()
    N = 6 if quick else 10
    for k in range(10):
        X, Y = teacher_data((1, 2, 1), N, seed + 1000 * k, input_scale=2.0)
        try:
            c = yield from subjob(C.construct_job(X, Y, (1, 1, 1), schedule=((1, N + 2),), seed=seed + k,
                                                  max_restarts=10), 0.0, 0.8, "construction: ")
            break
        except EngineInputError:
            continue
    else:
        raise EngineInputError("no 1—1—1 minimum with nonzero B found in 10 data draws")
    saddle = C.move_last_lambda(c, 2.0)
    ts = np.linspace(-3, 3, 121)
    descent = C.descent_curve(c, saddle, ts)
    netio.save_network(out_dir / "small_min.npz", c.small_arch, c.small_params, c.X, c.Y)
    netio.save_network(out_dir / "wide_min.npz", c.arch, c.params, c.X, c.Y)
    _plot_xy(out_dir / "descent.png", [ts], [descent["loss"]], "t", "loss",
             f"{'—'.join(map(str, c.arch.widths))}, λ = 2: B6 descent")
    step = lambda s: {"widths": list(s.widths), "loss": s.loss, "grad_norm": s.grad_norm,
                      "hessian_min": s.hessian.min, "n_zero": s.hessian.n_zero,
                      "n_negative": s.hessian.n_negative, "verdict": s.verdict}
    B, D = _bd_metrics(c.small_neurons)
    yield Progress(1.0, "done")
    return _write(out_dir, {
        "n_samples": N, "restarts": len(c.restarts), "small": {**step(c.steps[0]), "B": B},
        "fukumizu_amari": step(c.steps[1]), "wide": step(c.steps[-1]),
        "wider_than_samples": c.arch.widths[1] > N,
        "saddle": {"lambda": 2.0, "loss": saddle.loss, "hessian_min": saddle.hessian_min, "verdict": saddle.verdict},
        "descent": {"t": descent["t"], "loss": descent["loss"],
                    "relative_decrease": float(1 - min(descent["loss"]) / saddle.loss)},
    })


# ---------------------------------------------------------------- B10: minima at infinity

def infinity_data(seed: int, n_samples: int = 20):
    """B10's data: a noisy sine on 20 1-D inputs, which no constant fits well (so L∞ is suboptimal)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n_samples)


def infinity_point(X, Y, width: int = 2):
    """B10 recipe for one hidden layer with biases: incoming weights W (width, n0) and output weights
    v (width,) (output bias 0, Σv = mean y) such that L(b) > L∞ for all large shared biases b."""
    X, y = np.asarray(X, float), deep.as_targets(Y)
    c = y.mean()
    r = c - y
    g = r @ X
    if np.linalg.norm(g) < 1e-12:
        raise EngineInputError("Σ_α (mean(y) − y_α) x_α = 0: the B10 recipe needs it nonzero")
    gh = g / np.linalg.norm(g)
    t = 1 / np.std(X @ gh)
    s = np.where(np.arange(width) % 2 == 0, 1.0, -1.0)
    for _ in range(60):  # S_i must have sign −s_i; true for t small enough
        S = np.array([r @ np.exp(-si * t * (X @ gh)) for si in s])
        if np.all(np.sign(S) == -s):
            break
        t /= 2
    else:
        raise EngineInputError("B10 recipe: could not find t with sign(S_i) = −s_i")
    W = np.outer(s * t, gh)
    v = s.copy()
    gap = c - v.sum()  # add to a neuron whose sign matches, so every v_i keeps sign s_i
    v[0 if gap > 0 else 1 if width > 1 else 0] += gap
    return W, v


def _shallow_theta(W, b, v, b_out=0.0):
    return deep.pack([W, v[None, :]], [b, np.array([b_out])])


def _excess(W, b, v, b_out, X, y):
    """L − L∞ as 2 r·d + d·d, with d = f − mean(y) written via σ(z) − 1 = −σ(−z): keeps every digit."""
    c = y.mean()
    z = X @ W.T + b
    d = (v.sum() + b_out - c) - expit(-z) @ v
    return 2 * (c - y) @ d + d @ d


def loss_vs_bias(X, Y, W, v, bs) -> dict:
    y = deep.as_targets(Y)
    L_inf = float(((y.mean() - y) ** 2).sum())
    excess = [float(_excess(W, np.full(len(v), b), v, 0.0, X, y)) for b in bs]
    return {"b": list(map(float, bs)), "loss_minus_Linf": excess, "L_inf": L_inf}


def gd_from_infinity(X, Y, W, v, b0: float = 15.0, lr: float = 0.01, steps: int = 200_000,
                     record: int = 400) -> Job[dict]:
    """Plain GD on all parameters of the one-hidden-layer net from shared bias b0 (analytic numpy
    gradient: ~20x faster than autograd at this size). Records loss − L∞ and the mean bias.
    Near infinity the Hessian in (v, b_out) is ≈ 2N·11ᵀ, so stability needs lr < 1/(N (width + 1))."""
    X, y = np.asarray(X, float), deep.as_targets(Y)
    W, v = np.array(W, float), np.array(v, float)
    b, b_out = np.full(len(v), float(b0)), 0.0
    L_inf = float(((y.mean() - y) ** 2).sum())
    every = max(1, steps // record)
    rec = {"step": [], "loss_minus_Linf": [], "mean_bias": [], "L_inf": L_inf, "escape_step": None}
    for k in range(steps + 1):
        z = X @ W.T + b
        a = expit(z)
        res = a @ v + b_out - y
        if k % every == 0 or k == steps:
            rec["step"].append(k)
            rec["loss_minus_Linf"].append(float(_excess(W, b, v, b_out, X, y)))
            rec["mean_bias"].append(float(b.mean()))
            if rec["escape_step"] is None and rec["loss_minus_Linf"][-1] < -1e-3 * L_inf:
                rec["escape_step"] = k  # below the limit at infinity: GD left the flat set
            if k % (every * 20) == 0:
                yield Progress(k / steps, f"GD step {k}", None)
        if k == steps:
            break
        gz = 2 * res[:, None] * v * a * (1 - a)  # (N, width)
        W -= lr * gz.T @ X
        b -= lr * gz.sum(0)
        v -= lr * 2 * a.T @ res
        b_out -= lr * 2 * res.sum()
    rec["final"] = {"W": W.tolist(), "b": b.tolist(), "v": v.tolist(), "b_out": b_out}
    return rec


def lbfgs_from(X, Y, W, b, v) -> float:
    arch = Arch((X.shape[1], len(v), 1), "sigmoid", True)
    fun = lambda p: deep.loss_and_grad(arch, p, X, Y)
    configure_torch_threads()  # one BLAS thread for scipy's L-BFGS too
    res = scipy.optimize.minimize(fun, _shallow_theta(W, b, v), jac=True, method="L-BFGS-B",
                                  options=dict(maxiter=5000))
    return float(res.fun)


def run_infinity(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    configure_torch_threads()
    X, Y = infinity_data(seed)
    W, v = infinity_point(X, Y, 2)
    curve = loss_vs_bias(X, Y, W, v, np.linspace(0, 40, 81))
    b0 = 15.0
    gd = yield from subjob(gd_from_infinity(X, Y, W, v, b0, steps=2_000 if quick else 200_000), 0.0, 0.9, "GD: ")
    # At b0 the gradient is ~e^{-b0}: L-BFGS stops at once there, so start it from the recipe's weights with b = 0.
    lower = lbfgs_from(X, Y, W, np.zeros(len(v)), v)
    excess = np.array(curve["loss_minus_Linf"])
    _plot_xy(out_dir / "loss_vs_bias.png", [curve["b"]], [np.maximum(excess, 1e-300)], "shared bias b",
             "L − L∞", "loss approaches L∞ from above", logy=True)
    fig = Figure(figsize=(5, 5))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(gd["step"], gd["loss_minus_Linf"])
    ax1.set(ylabel="L − L∞", title=f"GD from b0 = {b0:g}" + ("" if gd["escape_step"] is None
                                                             else f", escape at step {gd['escape_step']}"))
    ax2.plot(gd["step"], gd["mean_bias"])
    ax2.set(xlabel="step", ylabel="mean bias")
    fig.tight_layout()
    fig.savefig(out_dir / "gd_from_infinity.png", dpi=110)
    yield Progress(1.0, "done")
    return _write(out_dir, {
        "L_inf": curve["L_inf"], "loss_vs_bias": curve,
        "excess_positive_for_all_b": bool((excess > 0).all()),
        "gd": {"b0": b0, "steps": gd["step"][-1], "bias_start": gd["mean_bias"][0], "bias_end": gd["mean_bias"][-1],
               "excess_start": gd["loss_minus_Linf"][0], "excess_end": gd["loss_minus_Linf"][-1],
               "escape_step": gd["escape_step"]},
        "lbfgs_loss_from_recipe_weights_b0": lower, "lbfgs_below_L_inf": lower < curve["L_inf"],
    })


# ---------------------------------------------------------------- B11: a non-increasing path

def _copies(rows: np.ndarray) -> bool:
    return bool((rows == rows[0]).all())


def nonincreasing_path(arch: Arch, theta, X, Y, n: int = 41) -> dict:
    """B11 by the robust route, for a net whose last two hidden layers consist of identical copies
    (a constructed minimum) and whose last hidden layer has ≥ N + 1 neurons: (A) gather the
    copies' outgoing weights, (B) re-point the freed copies to a constant and N − 1 staircase
    features, (C) move the output weights linearly so f(t) = z + t (y − z)."""
    X, y = deep.check_data(arch, X, Y)
    N, L = len(X), arch.n_layers
    if L < 3 or arch.widths[L - 1] < N + 1 or arch.widths[L - 2] < 3:
        raise EngineInputError(f"path needs two hidden layers, the last ≥ N + 1 = {N + 1} wide and the one before "
                               f"≥ 3 wide; got {arch.widths}")
    c0 = float(deep.sigma(arch.activation, deep.tensors(np.zeros(1))[0])[0])
    if c0 == 0:
        raise EngineInputError(f"{arch.activation}(0) = 0 gives no constant feature; use sigmoid")
    theta0 = np.asarray(theta, float)
    Ws, bs = deep.unpack(arch, theta0.copy())
    if not (_copies(Ws[L - 2]) and _copies(Ws[L - 3])):
        raise EngineInputError("the last two hidden layers must consist of identical copies (a constructed minimum)")
    # (A) gather: copies are identical, so only the sums of their outgoing weights matter.
    Ws[L - 1][0] = np.r_[Ws[L - 1][0].sum(), np.zeros(arch.widths[L - 1] - 1)]
    Ws[L - 2][0] = np.r_[Ws[L - 2][0].sum(), np.zeros(arch.widths[L - 2] - 1)]
    theta_a = deep.pack(Ws, bs if arch.bias else None)
    # (B) re-point: previous layer copy 1 -> constant σ(0), copy 2 -> a monotone feature g = σ(s ω·h)
    _, _, acts = deep.forward_batch(arch, deep.tensors(theta_a)[0][None], deep.tensors(X)[0], keep=True)
    h = X if L - 2 == 1 else acts[L - 3][0].T.numpy()
    omegas = np.random.default_rng(0).standard_normal((256, h.shape[1]))
    proj = np.sort(h @ omegas.T, axis=0)
    omega = omegas[np.argmax(np.diff(proj, axis=0).min(0) / np.ptp(proj, axis=0))]  # best-separating direction
    p = h @ omega
    s = 1 / p.std()
    Ws[L - 3][1], Ws[L - 3][2] = 0.0, s * omega
    if arch.bias:
        bs[L - 3][1:3] = 0.0
    g = np.sort(expit(s * p) if arch.activation == "sigmoid" else np.tanh(s * p))
    m, gap = (g[1:] + g[:-1]) / 2, np.diff(g)
    if gap.min() <= 0:
        raise EngineInputError("two samples coincide on every direction tried; the path needs distinct samples")
    kappa = 6 / gap
    rows = np.zeros((arch.widths[L - 1] - 1, arch.widths[L - 2]))
    rows[:N - 1, 2], rows[:N - 1, 1] = kappa, -kappa * m / c0  # staircases σ(κ_j (g − m_j)); row N−1 and on: σ(0)
    Ws[L - 2][1:] = rows
    if arch.bias:
        bs[L - 2][1:] = 0.0
    theta_b = deep.pack(Ws, bs if arch.bias else None)
    # (C) descend: minimum-norm output-weight change realizing f(t) = z + t (y − z).
    _, _, acts = deep.forward_batch(arch, deep.tensors(theta_b)[0][None], deep.tensors(X)[0], keep=True)
    H = acts[L - 1][0].T.numpy()
    if arch.bias:
        H = np.column_stack([H, np.ones(N)])
    sv = np.linalg.svd(H, compute_uv=False)
    cond = float(sv[0] / sv[N - 1])
    z = deep.predict(arch, theta_b, X)
    delta = np.linalg.lstsq(H, y - z, rcond=None)[0]
    step = np.zeros(arch.n_params)
    step[arch.block(f"W{L}").slice] = delta[:arch.widths[L - 1]]
    if arch.bias:
        step[arch.block(f"b{L}").slice] = delta[-1]
    theta_end = theta_b + step
    u = np.linspace(0, 1, n)[:, None]
    path = np.vstack([theta0 + u * (theta_a - theta0), theta_a + u[1:] * (theta_b - theta_a), theta_b + u[1:] * step])
    straight = theta0 + np.linspace(0, 1, len(path))[:, None] * (theta_end - theta0)
    Xt, yt = deep.tensors(X, y)
    import torch
    loss_path = deep.loss_batch(arch, torch.as_tensor(path), Xt, yt).numpy()
    loss_straight = deep.loss_batch(arch, torch.as_tensor(straight), Xt, yt).numpy()
    targets = z + u * (y - z)
    outputs = deep.forward_batch(arch, torch.as_tensor(path[-n:]), Xt).numpy()
    return {"s": np.linspace(0, 3, len(path)).tolist(), "loss_path": loss_path.tolist(),
            "loss_straight": loss_straight.tolist(), "condition_number": cond,
            "path_error": float(np.abs(outputs - targets).max()),
            "monotone": bool(np.all(np.diff(loss_path) <= 1e-12 * max(loss_path[0], 1.0))),
            "loss_start": float(loss_path[0]), "loss_end": float(loss_path[-1]),
            "straight_max": float(loss_straight.max()), "theta_end": theta_end}


def run_path(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    configure_torch_threads()
    big = out_dir / "big_min.npz"
    if big.exists():
        net = netio.load_network(big)
        arch, theta, X, Y = net.arch, net.params, net.X, net.Y
    else:  # build one; quick mode needs no landscape, so this is the construction alone
        c, _ = yield from subjob(deep_construction_job(seed), 0.0, 0.9, "construction: ")
        arch, theta, X, Y = c.arch, c.params, c.X, c.Y
        netio.save_network(big, arch, theta, X, Y)
    res = nonincreasing_path(arch, theta, X, Y)
    netio.save_network(out_dir / "global_min.npz", arch, res.pop("theta_end"), X, Y)
    _plot_xy(out_dir / "path.png", [res["s"], res["s"]], [res["loss_path"], res["loss_straight"]],
             "path parameter (A gather | B re-point | C descend)", "loss",
             "non-increasing path vs straight segment", labels=["B11 path", "straight segment"])
    yield Progress(1.0, "done")
    return _write(out_dir, res)
