"""Probability of a topological obstruction (MATH A7) and the paper's experiments (MATH A8).

Experiments: ``topo-toy`` (Fig. 3), ``topo-breast-cancer`` (Fig. 4), ``topo-probability`` (Fig. 5).
"""
from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
from matplotlib.figure import Figure
from scipy import stats

from . import datasets
from .errors import EngineInputError
from .invariants import balances, component_label, rescale_to
from .progress import Job, Progress, subjob
from .quadrics import hyperbola, reduced_coordinates
from .runtime import configure_torch_threads
from .shallow import INITS, ShallowNet, ShallowParams, init_params, loss_and_grads, sample_init
from .training import TrainConfig, train

# --- probability of an obstruction at initialization (e = 1) ---------------------------------

Seed = int | Sequence[int]  # anything np.random.default_rng takes; a tuple gives independent streams
CLOSED_FORM_SCHEMES = ("xavier_normal", "kaiming_normal")

def _check_dl(d, l) -> None:
    for name, v in (("d", d), ("l", l)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise EngineInputError(f"{name} = {v!r} must be an integer >= 1")


def _ratio(d, l, scheme):
    """d σ1²/σ2² of the closed-form schemes (MATH A7); P = 1 − F_{1,d}(ratio)^l."""
    if scheme == "kaiming_normal":
        return l * np.ones_like(d, dtype=np.float64)
    if scheme == "xavier_normal":
        return d * (l + 1) / (d + l)
    raise EngineInputError(f"no closed form for init {scheme!r}; use Monte Carlo")


def obstruction_probability(d: int, l: int, scheme: str) -> float:
    """Closed form P[some c_k < 0] for "kaiming_normal" or "xavier_normal" (MATH A7)."""
    _check_dl(d, l)
    return float(probability_grid([d], [l], scheme)[0, 0])


def probability_grid(ds: Sequence[int], ls: Sequence[int], scheme: str) -> np.ndarray:
    """Closed-form P[obstruction] on the grid, shape (len(ds), len(ls)), in one vectorized call."""
    d, l = np.meshgrid(np.asarray(ds, dtype=np.float64), np.asarray(ls, dtype=np.float64), indexing="ij")
    return -np.expm1(l * stats.f.logcdf(_ratio(d, l, scheme), 1, d))  # 1 − F^l without cancellation


def obstruction_probability_mc(d: int, l: int, scheme: str, n_samples: int = 20000, seed: Seed = 0,
                               bias: bool = False, a: float | None = None) -> tuple[float, float]:
    """Monte Carlo P[some c_k < 0] for any init of INITS; returns (estimate, standard error)."""
    job = obstruction_probability_mc_job(d, l, scheme, n_samples, seed, bias, a)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def obstruction_probability_mc_job(d: int, l: int, scheme: str, n_samples: int = 20000, seed: Seed = 0,
                                   bias: bool = False, a: float | None = None) -> Job[tuple[float, float]]:
    """Job form of obstruction_probability_mc: draws in batches of ~2·10⁵ numbers, yielding after each."""
    _check_dl(d, l)
    if scheme not in INITS:
        raise EngineInputError(f"initialization {scheme!r} unknown; choose one of {INITS}")
    if int(n_samples) != n_samples or n_samples < 2:
        raise EngineInputError(f"n_samples = {n_samples!r} must be an integer >= 2")
    net, rng = ShallowNet(d, l, 1, bias=bias), np.random.default_rng(seed)
    batch = max(1, 200_000 // (l * (d + 2)))
    hits, done = 0, 0
    while done < n_samples:
        m = min(batch, n_samples - done)
        p = sample_init(net, scheme, rng, size=(m,), a=a)
        hits += int(np.sum(np.any(balances(p.W1, p.W2, p.b1) < 0, axis=-1)))
        done += m
        yield Progress(done / n_samples, f"Monte Carlo d={d}, l={l}: {done}/{n_samples}")
    est = hits / n_samples
    # The max(...) keeps the error bar nonzero when no (or every) sample is obstructed.
    return est, math.sqrt(max(est * (1 - est), 1.0 / n_samples) / n_samples)


def probability_maps_job(d_max: int, l_max: int, mc_samples: int = 2000, mc_stride: int = 5,
                         seed: int = 0) -> Job[dict]:
    """Job: Fig. 5's maps for d, l = 1..d_max, 1..l_max — both closed forms at once (cheap), then
    Monte Carlo at every mc_stride-th d and l (mc_samples = 0: none), one (d, l, scheme) at a time.

    Yields and returns {"d", "l", "closed": {scheme: (nd, nl)}, "mc": {scheme: (n, 4) rows
    (d, l, estimate, std error)}}; every partial is a fresh dict, so earlier ones never change.
    """
    _check_dl(d_max, l_max)
    if isinstance(mc_samples, bool) or int(mc_samples) != mc_samples or mc_samples < 0 or mc_samples == 1:
        raise EngineInputError(f"Monte Carlo draws = {mc_samples!r} must be 0 (none) or an integer >= 2")
    if isinstance(mc_stride, bool) or int(mc_stride) != mc_stride or mc_stride < 1:
        raise EngineInputError(f"Monte Carlo stride = {mc_stride!r} must be an integer >= 1")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise EngineInputError(f"seed = {seed!r} must be an integer >= 0")
    ds, ls = np.arange(1, int(d_max) + 1), np.arange(1, int(l_max) + 1)
    closed = {s: probability_grid(ds, ls, s) for s in CLOSED_FORM_SCHEMES}
    mc = {s: np.zeros((0, 4)) for s in CLOSED_FORM_SCHEMES}
    snapshot = lambda: {"d": ds, "l": ls, "closed": closed, "mc": dict(mc)}  # mc rows are replaced, never edited
    tasks = [(int(d), int(l), i, s) for d in ds[::mc_stride] for l in ls[::mc_stride]
             for i, s in enumerate(CLOSED_FORM_SCHEMES)] if mc_samples else []
    start = 0.05 if tasks else 1.0
    yield Progress(start, "closed forms done", snapshot())
    for n, (d, l, i, s) in enumerate(tasks):
        lo, hi = start + (1 - start) * n / len(tasks), start + (1 - start) * (n + 1) / len(tasks)
        # Its own stream per point, so neighbouring estimates' errors are independent.
        est, se = yield from subjob(obstruction_probability_mc_job(d, l, s, int(mc_samples), (seed, d, l, i)),
                                    lo, hi, f"Monte Carlo {s}: ")
        mc[s] = np.vstack([mc[s], [[d, l, est, se]]])
        yield Progress(hi, f"Monte Carlo {s}: d = {d}, l = {l} done", snapshot())
    return snapshot()


# --- helpers for experiments -----------------------------------------------------------------

def _write_json(out_dir: Path, metrics: dict) -> dict:
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics


def _grid_to_json(a: np.ndarray) -> list:
    return [[None if not np.isfinite(x) else float(x) for x in row] for row in a]


# --- topo-toy (Fig. 3) -----------------------------------------------------------------------

DEAD_NEURON_POLICY = ("input weights drawn from |U(-sqrt2, sqrt2)| (both positive), so both neurons "
                      "are alive on all of [0,1]^2 at initialization; output weights made positive")


def toy_init(seed: int) -> ShallowParams:
    """A8 toy init with the dead-neuron constraint: W ~ U(−√2, √2), then input weights made
    positive (alive on [0,1]²) and output weights made positive, s = (+1, +1)."""
    net = ShallowNet(2, 2, 1)
    p = init_params(net, "uniform", np.random.default_rng(seed), a=math.sqrt(2), signs=[1, 1])
    p.W1 = np.abs(p.W1)
    return p


def run_toy(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    configure_torch_threads()
    out_dir = Path(out_dir)
    n = 500 if quick else 8000  # the exact flow's cost grows with the kinks crossed, ~N
    X, Y = datasets.toy_dataset(n, seed)
    net, p0 = ShallowNet(2, 2, 1), toy_init(seed)
    plans = [(name, c, opt) for opt in ("gd", "flow")
             for name, c in (("obstructed", (-0.1, -0.1)), ("free", (-0.1, 0.1)))]
    runs, trajs = [], {}
    for i, (name, c, opt) in enumerate(plans):
        q = rescale_to(p0, c)
        job = train(net, q, X, Y, TrainConfig(opt, lr=0.01, steps=500, stride=1))
        tr = yield from subjob(job, i / len(plans), (i + 1) / len(plans), f"{name} {opt}: ")
        key = f"{name}_{opt}"
        trajs[key] = tr
        np.savez_compressed(out_dir / f"traj_{key}.npz", W1=tr.W1, W2=tr.W2, loss=tr.loss, c=tr.c,
                            step=tr.step, X=X, Y=Y)
        c0 = np.asarray(c)
        runs.append({"name": key, "optimizer": opt, "c_init": list(c),
                     "s_init": np.sign(tr.W2[0, 0]).astype(int).tolist(),
                     "label_init": component_label(tr.W1[0], tr.W2[0]).tolist(),
                     "label_final": component_label(tr.W1[-1], tr.W2[-1]).tolist(),
                     "s_final": np.sign(tr.W2[-1, 0]).astype(int).tolist(),
                     "final_loss": float(tr.loss[-1]),
                     "max_rel_c_drift": float(np.max(np.abs(tr.c - c0) / np.abs(c0))),
                     "sign_flips": [list(f) for f in tr.sign_flips], "diverged_at": tr.diverged_at})
    mean_y2 = float(np.mean(Y ** 2))
    by = {r["name"]: r for r in runs}
    effect = all(by[f"obstructed_{o}"]["final_loss"] > 0.9 * mean_y2 and by[f"free_{o}"]["final_loss"] < 1e-2
                 for o in ("gd", "flow"))
    metrics = {"runs": runs, "mean_Y2": mean_y2, "n_points": n, "seed": seed, "steps": 500, "lr": 0.01,
               "dead_neuron_policy": DEAD_NEURON_POLICY, "effect_shown": bool(effect),
               "caveat": ("the free neuron can still die during the first large steps, before its output "
                          "weight flips: with this init 21 of seeds 0-29 reached loss < 1e-2 in 500 GD steps "
                          "(checked at N = 2000); the default seed 0 does")}
    _toy_figures(out_dir, trajs, mean_y2)
    yield Progress(1.0, "topo-toy done")
    return _write_json(out_dir, metrics)


def _toy_figures(out_dir: Path, trajs: dict, mean_y2: float) -> None:
    fig = Figure(figsize=(11, 3.6))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    for key, tr in trajs.items():
        ax1.semilogy(tr.time, tr.loss, label=key, ls="-" if key.endswith("gd") else "--")
        ax2.plot(tr.time, (tr.c - tr.c[0]) / np.abs(tr.c[0]), ls="-" if key.endswith("gd") else "--")
    ax1.axhline(mean_y2, color="gray", lw=0.8)
    ax1.set(xlabel="time t = step·h", ylabel="MSE", title="loss")
    ax1.legend(fontsize=7)
    ax2.set(xlabel="time t = step·h", ylabel="(c_k(t) − c_k(0)) / |c_k(0)|", title="drift of c_k")
    for c in (-0.1, 0.1):
        for r, v in hyperbola(c, 1.5, 200):
            ax3.plot(r, v, color="lightgray", lw=0.8)
    for key in ("obstructed_gd", "free_gd"):
        r, v = reduced_coordinates(trajs[key].W1, trajs[key].W2)
        for k in range(r.shape[1]):
            ax3.plot(r[:, k], v[:, k], label=f"{key} neuron {k}")
            ax3.plot(r[0, k], v[0, k], "k.")
    ax3.set(xlabel="‖w_k‖", ylabel="v_k", title="reduced coordinates (GD)")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "toy.png", dpi=120)


# --- topo-breast-cancer (Fig. 4) ---------------------------------------------------------------

SIGN_POLICIES = ("positive", "negative", "random_common", "independent")


def sweep_init(d: int, l: int, l_plus: int, run: int, seed: int, c0: float = 1.0,
               sign_policy: str = "positive") -> ShallowParams:
    """Init of one sweep run, reproducible from (seed, l, l+, run): Kaiming normal, the first l+
    neurons rescaled to c = +c0 and the others to −c0.

    The policy sets the output signs of the pathological (c < 0) neurons only, which can never
    change them (MATH A8); the free neurons keep a random sign, as a plain init gives them.
    """
    if sign_policy not in SIGN_POLICIES:
        raise EngineInputError(f"sign policy {sign_policy!r} unknown; choose one of {SIGN_POLICIES}")
    if not 0 <= l_plus <= l:
        raise EngineInputError(f"l+ = {l_plus} must lie in 0..l = {l}")
    rng = np.random.default_rng([seed, l, l_plus, run])
    net = ShallowNet(d, l, 1)
    # Every option is drawn whatever the policy, so all policies share the same weights.
    n_path = l - l_plus
    free_signs = rng.choice([-1.0, 1.0], size=l_plus)
    path_signs = {"positive": np.ones(n_path), "negative": -np.ones(n_path),
                  "random_common": np.full(n_path, rng.choice([-1.0, 1.0])),
                  "independent": rng.choice([-1.0, 1.0], size=n_path)}[sign_policy]
    return init_params(net, "kaiming_normal", rng, signs=np.concatenate([free_signs, path_signs]),
                       c=[c0] * l_plus + [-c0] * (l - l_plus))


def train_run_bce(X: np.ndarray, Y: np.ndarray, p: ShallowParams, lr: float, steps: int) -> ShallowParams:
    """Plain per-run full-batch GD on BCE (the unbatched baseline the benchmark loops over)."""
    configure_torch_threads()
    net = ShallowNet(X.shape[1], p.W1.shape[0], 1, loss="bce")
    Xt, Yt = torch.from_numpy(X), torch.from_numpy(Y)
    W1, W2 = torch.tensor(p.W1), torch.tensor(p.W2)
    for _ in range(steps):
        _, g1, g2, _, _ = loss_and_grads(net, Xt, Yt, W1, W2)
        W1.sub_(lr * g1)
        W2.sub_(lr * g2)
    return ShallowParams(W1.numpy(), W2.numpy())


def _bce(F: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (torch.nn.functional.softplus(F) - y * F).mean(-1)


def _gd_batched(X, y, W1, W2, lr: float, steps: int):
    """Full-batch GD on BCE for R padded runs, in place: W1 (R, L, d), W2 (R, L), y (N,).

    The formulas of shallow.loss_and_grads, batched. All R·L neurons share one hidden layer
    of width R·L, so the two big products are single GEMMs (N × d × R·L) instead of R tiny
    ones. Padded neurons are all-zero and stay zero (both their gradients vanish), so the
    update needs no mask. Yields the step index after every step.
    """
    n, (R, L, d) = X.shape[0], W1.shape
    W1f = W1.view(R * L, d)
    for t in range(steps):
        Z = X @ W1f.T  # (N, R·L)
        A = Z.clamp_min(0.0).view(n, R, L)
        F = (A * W2).sum(-1)  # (N, R) logits
        G = (torch.sigmoid(F) - y[:, None]) / n
        g2 = (G.unsqueeze(2) * A).sum(0)  # (R, L)
        # ReLU'(Z) as sign(A) (1 where Z > 0, else 0): a float multiply, ~3x cheaper than a bool mask.
        dZ = (G.unsqueeze(2) * W2).view(n, R * L) * torch.sign(A.view(n, R * L))
        W1f.sub_(lr * (dZ.T @ X))
        W2.sub_(lr * g2)
        yield t


# Two chunks at once on two cores; 25 steps of a 64-run chunk take ~50 ms.
WORKER_THREADS = min(2, os.cpu_count() or 1)
STEPS_PER_SLICE = 25


@dataclass
class _Chunk:
    """One chunk of sweep runs being trained: its weights and the generator that steps them."""
    begin: int
    W1: torch.Tensor
    W2: torch.Tensor
    stepper: Iterator[int]
    steps_done: int = 0
    done: bool = False

    def advance(self, n: int) -> None:
        for _ in range(n):
            if next(self.stepper, None) is None:
                self.done = True
                return
            self.steps_done += 1


def breast_cancer_sweep(ls: Sequence[int] = range(2, 10), n_inits: int = 100, steps: int = 1000,
                        lr: float = 0.1, c0: float = 1.0, sign_policy: str = "positive", seed: int = 0,
                        chunk: int = 64, threads: int = WORKER_THREADS) -> Job[dict]:
    """Job: the (l, l+) sweep as one batched program over inits, in chunks of ``chunk`` runs
    (temporaries small enough to stay in cache: MATH A8), each padded with zero neurons to
    the widest l in the chunk; ``threads`` chunks train at once on Python threads with one
    torch thread each.

    Returns {"ls", "l_plus", "mean"/"std" (len(ls), max(ls)+1) test BCE with NaN where l+ > l,
    "test_bce" per run in the order of "runs" [(l, l+, i)], "n_diverged", "settings"}.
    Partials after each chunk: {"done", "total", "mean", "std"} over the runs finished so far.
    """
    configure_torch_threads()
    ls = [int(v) for v in ls]
    if not ls or min(ls) < 1:
        raise EngineInputError(f"hidden sizes {ls!r} must be integers >= 1")
    for name, v in (("n_inits", n_inits), ("steps", steps), ("chunk", chunk)):
        if int(v) != v or v < 1:
            raise EngineInputError(f"{name} = {v!r} must be an integer >= 1")
    if not (math.isfinite(lr) and lr > 0) or not (math.isfinite(c0) and c0 > 0):
        raise EngineInputError(f"lr = {lr!r} and c0 = {c0!r} must be positive finite numbers")
    if sign_policy not in SIGN_POLICIES:
        raise EngineInputError(f"sign policy {sign_policy!r} unknown; choose one of {SIGN_POLICIES}")
    split = datasets.breast_cancer(seed=0)
    X, y = torch.from_numpy(split.X_train), torch.from_numpy(split.Y_train[:, 0])
    Xte, yte = torch.from_numpy(split.X_test), torch.from_numpy(split.Y_test[:, 0])
    d, L = X.shape[1], max(ls)
    runs = [(l, lp, i) for l in ls for lp in range(l + 1) for i in range(n_inits)]
    cell = np.array([ls.index(l) * (L + 1) + lp for l, lp, _ in runs])  # flat (l, l+) cell of each run
    test_bce = np.full(len(runs), np.nan)

    finished = np.zeros(len(runs), dtype=bool)

    def summarize(done: np.ndarray):
        m, s = np.full((len(ls), L + 1), np.nan), np.full((len(ls), L + 1), np.nan)
        for c in np.unique(cell[done]):
            vals = test_bce[done & (cell == c)]
            m.flat[c], s.flat[c] = vals.mean(), vals.std()
        return m, s

    def init_chunk(begin: int) -> _Chunk:
        part = runs[begin:begin + chunk]
        width = max(l for l, _, _ in part)  # runs are ordered by l: pad to this chunk's widest
        W1 = torch.zeros(len(part), width, d, dtype=torch.float64)
        W2 = torch.zeros(len(part), width, dtype=torch.float64)
        for j, (l, lp, i) in enumerate(part):
            p = sweep_init(d, l, lp, i, seed, c0, sign_policy)
            W1[j, :l], W2[j, :l] = torch.from_numpy(p.W1), torch.from_numpy(p.W2[0])
        return _Chunk(begin, W1, W2, _gd_batched(X, y, W1, W2, lr, steps))

    # Independent chunks train side by side on the worker threads, a slice of steps at a time,
    # so the job still yields every few tens of milliseconds for pause and cancel.
    pending, active, finished_runs = list(range(0, len(runs), chunk)), [], 0
    with ThreadPoolExecutor(threads) as pool:
        while pending or active:
            while len(active) < threads and pending:
                active.append(init_chunk(pending.pop(0)))
            list(pool.map(lambda c: c.advance(STEPS_PER_SLICE), active))
            for c in [c for c in active if c.done]:
                F = torch.matmul(Xte, c.W1.transpose(1, 2)).clamp_min(0.0) @ c.W2.unsqueeze(2)
                test_bce[c.begin:c.begin + len(c.W1)] = _bce(F.squeeze(2), yte).numpy()
                finished[c.begin:c.begin + len(c.W1)] = True
                finished_runs += len(c.W1)
                active.remove(c)
                m, s = summarize(finished)
                yield Progress(finished_runs / len(runs), f"sweep: {finished_runs}/{len(runs)} runs",
                               {"done": finished_runs, "total": len(runs), "mean": m, "std": s})
            in_flight = sum(c.steps_done / steps * len(c.W1) for c in active)
            yield Progress((finished_runs + in_flight) / len(runs),
                           f"sweep: {finished_runs}/{len(runs)} runs done, {len(active)} chunk(s) training")
    mean, std = summarize(finished)
    return {"ls": ls, "l_plus": list(range(L + 1)), "mean": mean, "std": std, "test_bce": test_bce,
            "runs": runs, "n_diverged": int(np.sum(~np.isfinite(test_bce))),
            "settings": {"n_inits": n_inits, "steps": steps, "lr": lr, "c0": c0, "init": "kaiming_normal",
                         "sign_policy": sign_policy, "seed": seed, "chunk": chunk, "loss": "BCE with logits",
                         "optimizer": "full-batch GD", "split": "stratified 80/20, standardized on train"}}


def held_out_bce(p: ShallowParams) -> float:
    """Test BCE of one trained run on the sweep's split (for the per-run path)."""
    split = datasets.breast_cancer(seed=0)
    F = np.maximum(split.X_test @ p.W1.T, 0.0) @ p.W2.T
    return float(_bce(torch.from_numpy(F[:, 0]), torch.from_numpy(split.Y_test[:, 0])))


def run_breast_cancer(out_dir: Path, quick: bool = False, seed: int = 0, sign_policy: str = "positive") -> Job[dict]:
    out_dir = Path(out_dir)
    kw = dict(n_inits=4, steps=150) if quick else dict(n_inits=100, steps=1000)
    res = yield from subjob(breast_cancer_sweep(seed=seed, sign_policy=sign_policy, **kw), 0.0, 0.97)
    ls, mean, std = res["ls"], res["mean"], res["std"]
    np.savez_compressed(out_dir / "sweep.npz", ls=ls, mean=mean, std=std, test_bce=res["test_bce"],
                        runs=np.array(res["runs"]))
    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    im = ax1.imshow(np.ma.masked_invalid(mean), origin="lower", aspect="auto", cmap="viridis",
                    extent=(-0.5, mean.shape[1] - 0.5, ls[0] - 0.5, ls[-1] + 0.5))
    fig.colorbar(im, ax=ax1, label="mean test BCE")
    ax1.set(xlabel="l+ (non-pathological neurons)", ylabel="l (hidden neurons)",
            title=f"signs: {sign_policy}")
    for a, l in enumerate(ls):
        lp = np.arange(l + 1)
        ax2.plot(lp / l, mean[a, :l + 1], "o-", ms=3, label=f"l={l}")
    ax2.set(xlabel="l+ / l", ylabel="mean test BCE", title="vs fraction of free neurons")
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out_dir / "breast_cancer.png", dpi=120)
    metrics = {"ls": ls, "l_plus": res["l_plus"], "mean_test_bce": _grid_to_json(mean),
               "std_test_bce": _grid_to_json(std), "n_diverged": res["n_diverged"],
               "quick": quick, **res["settings"]}
    yield Progress(1.0, "topo-breast-cancer done")
    return _write_json(out_dir, metrics)


# --- topo-probability (Fig. 5) -----------------------------------------------------------------

def run_probability(out_dir: Path, quick: bool = False, seed: int = 0) -> Job[dict]:
    out_dir = Path(out_dir)
    ds, ls = list(range(1, 51)), list(range(1, 51))
    n_mc = 4000 if quick else 40000
    grids = {s: probability_grid(ds, ls, s) for s in CLOSED_FORM_SCHEMES}
    yield Progress(0.05, "closed forms done")
    checks_at = [(1, 1), (2, 5), (5, 3), (10, 10), (30, 1), (30, 10)]
    checks = []
    for i, (d, l) in enumerate(checks_at):
        for s in grids:
            est, se = yield from subjob(obstruction_probability_mc_job(d, l, s, n_mc, seed + i),
                                        0.05 + 0.45 * i / len(checks_at), 0.05 + 0.45 * (i + 1) / len(checks_at))
            exact = obstruction_probability(d, l, s)
            checks.append({"d": d, "l": l, "init": s, "closed_form": exact, "monte_carlo": est,
                           "std_error": se, "z": (est - exact) / se})
        yield Progress(0.05 + 0.45 * (i + 1) / len(checks_at), f"Monte Carlo check d={d}, l={l}")
    mc_ds, mc_ls = [1, 2, 3, 5, 10, 20, 30, 50], [1, 2, 3, 5, 10, 20, 50]
    torch_grid = np.zeros((len(mc_ds), len(mc_ls)))
    torch_se = np.zeros_like(torch_grid)
    for a, d in enumerate(mc_ds):
        for b, l in enumerate(mc_ls):
            torch_grid[a, b], torch_se[a, b] = yield from subjob(
                obstruction_probability_mc_job(d, l, "pytorch", n_mc, seed + 100 + a * 97 + b),
                0.5 + 0.45 * a / len(mc_ds), 0.5 + 0.45 * (a + 1) / len(mc_ds))
        yield Progress(0.5 + 0.45 * (a + 1) / len(mc_ds), f"PyTorch default init, d={d}")
    d1_exact = [1 - (1 - 1 / (2 * math.sqrt(l))) ** l for l in mc_ls]  # MATH A8, d = 1
    fig = Figure(figsize=(13, 4))
    axes = fig.subplots(1, 3)
    for ax, (s, g) in zip(axes, list(grids.items())):
        im = ax.imshow(g, origin="lower", aspect="auto", vmin=0, vmax=1, cmap="magma",
                       extent=(ls[0] - 0.5, ls[-1] + 0.5, ds[0] - 0.5, ds[-1] + 0.5))
        ax.set(xlabel="l (hidden neurons)", ylabel="d (inputs)", title=f"P[obstruction], {s}")
    fig.colorbar(im, ax=axes[1])
    for a, d in enumerate(mc_ds):
        axes[2].errorbar(mc_ls, torch_grid[a], yerr=2 * torch_se[a], fmt="o-", ms=3, label=f"d={d}")
    axes[2].plot(mc_ls, grids["kaiming_normal"][29, [l - 1 for l in mc_ls]], "k--", label="Kaiming, d=30")
    axes[2].set(xscale="log", xlabel="l", ylabel="P[obstruction]", title="PyTorch default init (MC)")
    axes[2].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out_dir / "probability.png", dpi=120)
    metrics = {"ds": ds, "ls": ls, "xavier_normal": _grid_to_json(grids["xavier_normal"]),
               "kaiming_normal": _grid_to_json(grids["kaiming_normal"]), "mc_checks": checks,
               "max_abs_z": float(max(abs(c["z"]) for c in checks)), "n_samples": n_mc,
               "pytorch_default": {"ds": mc_ds, "ls": mc_ls, "p": _grid_to_json(torch_grid), "std_error": _grid_to_json(torch_se),
                                   "d1_exact": d1_exact},
               "d30_l1": {"pytorch_default": float(torch_grid[mc_ds.index(30), 0]),
                          "kaiming_normal": obstruction_probability(30, 1, "kaiming_normal")}}
    yield Progress(1.0, "topo-probability done")
    return _write_json(out_dir, metrics)



