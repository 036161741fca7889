"""Probability of a topological obstruction at initialization, e = 1 (MATH A7).

An obstruction is some neuron starting pathological, c_k < 0. For Kaiming and Xavier normal
inits the probability has a closed form; for every init of engine.topology.two_layer.INITS it is estimated
by Monte Carlo. ``probability_maps_job`` is the Fig. 5 pipeline the GUI and ``reproduce`` share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_stats
from engine.core.progress import Job, Progress, subjob
from engine.core.validation import integer
from engine.topology.invariants import balances
from engine.topology.two_layer import INITS, TwoLayerNet, sample_init

Seed = int | Sequence[int]  # anything np.random.default_rng takes; a tuple gives independent streams
CLOSED_FORM_SCHEMES = ("xavier_normal", "kaiming_normal")
# Work between two yields of the jobs below: small batches, so pause and cancel act quickly.
MC_NUMBERS_PER_BATCH = 50_000  # normal draws of one Monte Carlo batch
CLOSED_FORM_CELLS_PER_BLOCK = 5_000  # F-distribution CDFs of one block of closed-form rows


def _ratio(d, l, scheme):
    """d σ1²/σ2² of the closed-form schemes (MATH A7); P = 1 − F_{1,d}(ratio)^l."""
    if scheme == "kaiming_normal":
        return l * np.ones_like(d, dtype=np.float64)
    if scheme == "xavier_normal":
        return d * (l + 1) / (d + l)
    raise EngineInputError(f"no closed form for init {scheme!r}; use Monte Carlo")


def obstruction_probability(d: int, l: int, scheme: str) -> float:
    """Closed form P[some c_k < 0] for "kaiming_normal" or "xavier_normal" (MATH A7)."""
    d, l = integer("d", d, 1), integer("l", l, 1)
    return float(probability_grid([d], [l], scheme)[0, 0])


def probability_grid(ds: Sequence[int], ls: Sequence[int], scheme: str) -> np.ndarray:
    """Closed-form P[obstruction] on the grid, shape (len(ds), len(ls)), in one vectorized call."""
    d, l = np.meshgrid(np.asarray(ds, dtype=np.float64), np.asarray(ls, dtype=np.float64), indexing="ij")
    return -np.expm1(l * scipy_stats.f.logcdf(_ratio(d, l, scheme), 1, d))  # 1 − F^l without cancellation


def obstruction_probability_mc(
    d: int, l: int, scheme: str, n_samples: int = 20000, seed: Seed = 0, bias: bool = False, a: float | None = None
) -> tuple[float, float]:
    """Monte Carlo P[some c_k < 0] for any init of INITS; returns (estimate, standard error)."""
    job = obstruction_probability_mc_job(d, l, scheme, n_samples, seed, bias, a)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def obstruction_probability_mc_job(
    d: int, l: int, scheme: str, n_samples: int = 20000, seed: Seed = 0, bias: bool = False, a: float | None = None
) -> Job[tuple[float, float]]:
    """Job form of obstruction_probability_mc: draws in batches, yielding after each."""
    d, l = integer("d", d, 1), integer("l", l, 1)
    if scheme not in INITS:
        raise EngineInputError(f"initialization {scheme!r} unknown; choose one of {INITS}")
    n_samples = integer("Monte Carlo draws", n_samples, 2)
    net, rng = TwoLayerNet(d, l, 1, bias=bias), np.random.default_rng(seed)
    batch = max(1, MC_NUMBERS_PER_BATCH // (l * (d + 2)))
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


# --- Fig. 5: the maps over (d, l) ------------------------------------------------------------


@dataclass(frozen=True)
class MapSettings:
    """Fig. 5 maps for d = 1..d_max, l = 1..l_max; Monte Carlo at every mc_stride-th d and l
    with mc_samples draws each (0: none). Checked on construction."""

    d_max: int = 30
    l_max: int = 30
    mc_samples: int = 2000
    mc_stride: int = 5
    seed: int = 0

    def __post_init__(self):
        for name, what, low in (
            ("d_max", "largest d", 1),
            ("l_max", "largest l", 1),
            ("mc_stride", "Monte Carlo stride", 1),
            ("seed", "seed", 0),
        ):
            object.__setattr__(self, name, integer(what, getattr(self, name), low))
        mc = integer("Monte Carlo draws", self.mc_samples, 0)
        if mc == 1:  # one draw has no standard error
            raise EngineInputError("Monte Carlo draws = 1 must be 0 (none) or an integer >= 2")
        object.__setattr__(self, "mc_samples", mc)


@dataclass(frozen=True)
class ProbabilityMaps:
    """Closed forms on the whole grid and the Monte Carlo estimates done so far, per scheme."""

    settings: MapSettings
    d: np.ndarray  # (nd,) = 1..d_max
    l: np.ndarray  # (nl,) = 1..l_max
    closed: Mapping[str, np.ndarray]  # scheme -> (nd, nl) P[obstruction]
    mc: Mapping[str, np.ndarray]  # scheme -> (n, 4) rows (d, l, estimate, standard error)


def probability_maps_job(settings: MapSettings) -> Job[ProbabilityMaps]:
    """Job: both closed-form maps (a block of rows at a time), then Monte Carlo one (d, l, scheme) at a time.

    Yields a ProbabilityMaps once the closed forms are complete and after every Monte Carlo point; each is
    a fresh object whose arrays are never edited later, and the last is the result.
    """
    s = settings
    ds, ls = np.arange(1, s.d_max + 1), np.arange(1, s.l_max + 1)
    tasks = (
        [
            (int(d), int(l), i, scheme)
            for d in ds[:: s.mc_stride]
            for l in ls[:: s.mc_stride]
            for i, scheme in enumerate(CLOSED_FORM_SCHEMES)
        ]
        if s.mc_samples
        else []
    )
    start = 0.05 if tasks else 1.0
    closed = {}
    rows = max(1, CLOSED_FORM_CELLS_PER_BLOCK // len(ls))
    for n, scheme in enumerate(CLOSED_FORM_SCHEMES):
        blocks = []
        for i in range(0, len(ds), rows):
            blocks.append(probability_grid(ds[i : i + rows], ls, scheme))
            done = (n + (i + len(blocks[-1])) / len(ds)) / len(CLOSED_FORM_SCHEMES)
            yield Progress(start * done, f"closed form {scheme}")
        closed[scheme] = np.vstack(blocks)
    mc = {scheme: np.zeros((0, 4)) for scheme in CLOSED_FORM_SCHEMES}
    snapshot = lambda: ProbabilityMaps(s, ds, ls, closed, dict(mc))  # mc rows are replaced, never edited
    yield Progress(start, "closed forms done", snapshot())
    for n, (d, l, i, scheme) in enumerate(tasks):
        lo, hi = start + (1 - start) * n / len(tasks), start + (1 - start) * (n + 1) / len(tasks)
        # Its own stream per point, so neighbouring estimates' errors are independent.
        est, se = yield from subjob(
            obstruction_probability_mc_job(d, l, scheme, s.mc_samples, (s.seed, d, l, i)),
            lo,
            hi,
            f"Monte Carlo {scheme}: ",
        )
        mc[scheme] = np.vstack([mc[scheme], [[d, l, est, se]]])
        yield Progress(hi, f"Monte Carlo {scheme}: d = {d}, l = {l} done", snapshot())
    return snapshot()
