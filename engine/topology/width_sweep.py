"""Paper Fig. 4: test BCE on breast cancer over (l, l₊), trained as one batched program (MATH A8).

``breast_cancer_sweep`` is the pipeline the GUI and ``reproduce topo-breast-cancer`` share. Every
run is reproducible on its own from (seed, l, l₊, run): ``sweep_init`` draws it, and
``train_run_bce`` / ``held_out_bce`` are the unbatched per-run path the tests and the benchmark
compare against.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from engine.core import datasets
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import Job, Progress, wait_for
from engine.core.runtime import configure_torch_threads
from engine.core.validation import integer, real
from engine.topology.initialization import initial_params
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams, loss_and_grads

SIGN_POLICIES = ("positive", "negative", "random_common", "independent")
SPLIT_SEED = 0  # the train/test split is fixed; the sweep's seed draws only the inits


@dataclass(frozen=True)
class SweepSettings:
    """What determines a sweep's numbers; checked on construction."""

    ls: Sequence[int] = tuple(range(2, 10))  # hidden sizes l; l₊ runs over 0..l for each
    n_inits: int = 100
    steps: int = 1000
    lr: float = 0.1
    c0: float = 1.0  # free neurons start at c = +c0, pathological ones at −c0
    sign_policy: str = "positive"  # output signs of the pathological neurons (MATH A8)
    seed: int = 0

    def __post_init__(self):
        ls = tuple(integer("hidden size l", v, 1) for v in self.ls)
        if not ls or list(ls) != sorted(set(ls)):
            raise EngineInputError(f"hidden sizes {list(self.ls)!r} must be increasing integers >= 1")
        object.__setattr__(self, "ls", ls)
        object.__setattr__(self, "n_inits", integer("inits per (l, l₊)", self.n_inits, 1))
        object.__setattr__(self, "steps", integer("steps", self.steps, 1))
        object.__setattr__(self, "lr", real("step size lr", self.lr, positive=True))
        object.__setattr__(self, "c0", real("c0", self.c0, positive=True))
        object.__setattr__(self, "seed", integer("seed", self.seed, 0))
        if self.sign_policy not in SIGN_POLICIES:
            raise EngineInputError(f"sign policy {self.sign_policy!r} unknown; choose one of {SIGN_POLICIES}")

    def runs(self) -> list[tuple[int, int, int]]:
        """Every run as (l, l₊, init index), ordered by l (the batching pads each chunk to its widest)."""
        return [(l, lp, i) for l in self.ls for lp in range(l + 1) for i in range(self.n_inits)]


@dataclass(frozen=True)
class SweepProgress:
    """A partial sweep: cell statistics over the runs finished so far (NaN where none yet)."""

    ls: np.ndarray  # (nL,)
    l_plus: np.ndarray  # (max l + 1,) = 0..max l
    mean: np.ndarray  # (nL, max l + 1) mean test BCE
    std: np.ndarray  # (nL, max l + 1)
    done: int
    total: int


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep. Row r of runs / test_bce / W1 / W2 is one run; the model of run r is
    f(x) = Σ_k W2[r, k] relu(W1[r, k] · x) with its l = runs[r, 0] neurons, W1 and W2 padded
    with zeros to max l (zero neurons add nothing)."""

    settings: SweepSettings
    ls: np.ndarray  # (nL,)
    l_plus: np.ndarray  # (max l + 1,)
    mean: np.ndarray  # (nL, max l + 1) mean test BCE per (l, l₊); NaN where l₊ > l
    std: np.ndarray  # (nL, max l + 1)
    runs: np.ndarray  # (R, 3) int: l, l₊, init index
    test_bce: np.ndarray  # (R,) held-out BCE of each run
    W1: np.ndarray  # (R, max l, d) final input weights
    W2: np.ndarray  # (R, max l) final output weights
    n_diverged: int  # runs whose test BCE is NaN/inf

    @property
    def done(self) -> int:
        return len(self.runs)

    @property
    def total(self) -> int:
        return len(self.runs)


def sweep_init(
    d: int, l: int, l_plus: int, run: int, seed: int, c0: float = 1.0, sign_policy: str = "positive"
) -> TwoLayerParams:
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
    # Every option is drawn whatever the policy, so all policies share the same weights.
    n_path = l - l_plus
    free_signs = rng.choice([-1.0, 1.0], size=l_plus)
    path_signs = {
        "positive": np.ones(n_path),
        "negative": -np.ones(n_path),
        "random_common": np.full(n_path, rng.choice([-1.0, 1.0])),
        "independent": rng.choice([-1.0, 1.0], size=n_path),
    }[sign_policy]
    return initial_params(
        TwoLayerNet(d, l, 1),
        "kaiming_normal",
        rng,
        signs=np.concatenate([free_signs, path_signs]),
        c=[c0] * l_plus + [-c0] * (l - l_plus),
    )


def train_run_bce(X: np.ndarray, Y: np.ndarray, p: TwoLayerParams, lr: float, steps: int) -> TwoLayerParams:
    """Plain per-run full-batch GD on BCE (the unbatched baseline the benchmark loops over)."""
    configure_torch_threads()
    net = TwoLayerNet(X.shape[1], p.W1.shape[0], 1, loss="bce")
    Xt, Yt = torch.from_numpy(X), torch.from_numpy(Y)
    W1, W2 = torch.tensor(p.W1), torch.tensor(p.W2)
    for _ in range(steps):
        _, g1, g2, _, _ = loss_and_grads(net, Xt, Yt, W1, W2)
        W1.sub_(lr * g1)
        W2.sub_(lr * g2)
    return TwoLayerParams(W1.numpy(), W2.numpy())


def _bce(F: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # log(1 + e^F) − yF; logaddexp rather than softplus, whose linear cut-off at F > 20 is off
    # by up to 2e-9 and would keep an outside numpy recomputation from agreeing to 1e-10.
    return (torch.logaddexp(F, torch.zeros_like(F)) - y * F).mean(-1)


def held_out_bce(p: TwoLayerParams) -> float:
    """Test BCE of one trained run on the sweep's split (for the per-run path)."""
    split = datasets.breast_cancer(seed=SPLIT_SEED)
    F = np.maximum(split.X_test @ p.W1.T, 0.0) @ p.W2.T
    return float(_bce(torch.from_numpy(F[:, 0]), torch.from_numpy(split.Y_test[:, 0])))


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
        # ReLU'(Z) as sign(A) (1 where Z > 0, else 0): a float multiply, cheaper than a bool mask.
        dZ = (G.unsqueeze(2) * W2).view(n, R * L) * torch.sign(A.view(n, R * L))
        W1f.sub_(lr * (dZ.T @ X))
        W2.sub_(lr * g2)
        yield t


# Runs of one (l, l₊) cell trained together: about 64 runs of l = 9 (MATH A8's cache-sized chunk).
CELL_CHUNK_NEURONS = 576


def train_cell(
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    s: SweepSettings,
    l: int,
    l_plus: int,
    stop: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One (l, l₊) cell of a sweep on its own: its ``s.n_inits`` runs, batched in chunks whose size
    depends only on l, so the numbers are a function of (data, settings, l, l₊) alone, bit for bit,
    whichever process, task or order computes them (engine.sweeps). y, y_test: (N,) labels.

    Returns (test BCE (n_inits,), final W1 (n_inits, l, d), final W2 (n_inits, l)), or None as soon
    as ``stop()`` is true (checked every step: a cancelled sweep does not wait for its cells).
    """
    configure_torch_threads()
    Xt, yt, Xe, ye = (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)) for a in (X, y, X_test, y_test))
    d, n = X.shape[1], s.n_inits
    W1 = torch.zeros(n, l, d, dtype=torch.float64)
    W2 = torch.zeros(n, l, dtype=torch.float64)
    for i in range(n):
        p = sweep_init(d, l, l_plus, i, s.seed, s.c0, s.sign_policy)
        W1[i], W2[i] = torch.from_numpy(p.W1), torch.from_numpy(p.W2[0])
    per_chunk = max(1, CELL_CHUNK_NEURONS // l)
    bce = np.empty(n)
    for a in range(0, n, per_chunk):
        w1, w2 = W1[a : a + per_chunk], W2[a : a + per_chunk]  # views: trained in place
        for _ in _gd_batched(Xt, yt, w1, w2, s.lr, s.steps):
            if stop is not None and stop():
                return None
        F = torch.matmul(Xe, w1.transpose(1, 2)).clamp_min(0.0) @ w2.unsqueeze(2)
        bce[a : a + len(w1)] = _bce(F.squeeze(2), ye).numpy()
    return bce, W1.numpy(), W2.numpy()


# Two chunks at once on two cores. Each trains for SLICE_S between the job's yields (a step of a
# full chunk is much shorter), so pause and cancel act quickly even on a loaded machine, where a
# slice of CPU work can take several times as long in wall time; the numbers do not depend on the
# slicing.
WORKER_THREADS = min(2, os.cpu_count() or 1)
SLICE_S = 0.01
INITS_PER_YIELD = 16  # runs' inits drawn between yields: each draw is quick


@dataclass
class _Chunk:
    """One chunk of sweep runs being trained: its weights and the generator that steps them."""

    begin: int
    W1: torch.Tensor
    W2: torch.Tensor
    stepper: Iterator[int]
    steps_done: int = 0
    done: bool = False

    def advance_until(self, deadline: float) -> None:
        while time.perf_counter() < deadline:
            if next(self.stepper, None) is None:
                self.done = True
                return
            self.steps_done += 1


class _Tally:
    """Per-run test BCE as chunks finish, and the (l, l₊) cell statistics over the finished runs."""

    def __init__(self, ls: list, runs: list):
        self.ls, L = ls, max(ls)
        self.cell = np.array([ls.index(l) * (L + 1) + lp for l, lp, _ in runs])  # flat (l, l₊) cell
        self.test_bce = np.full(len(runs), np.nan)
        self.finished = np.zeros(len(runs), dtype=bool)

    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        shape = (len(self.ls), max(self.ls) + 1)
        mean, std = np.full(shape, np.nan), np.full(shape, np.nan)
        for c in np.unique(self.cell[self.finished]):
            values = self.test_bce[self.finished & (self.cell == c)]
            mean.flat[c], std.flat[c] = values.mean(), values.std()
        return mean, std


def breast_cancer_sweep(settings: SweepSettings, chunk: int = 64, threads: int = WORKER_THREADS) -> Job[SweepResult]:
    """Job: the (l, l₊) sweep as one batched program over inits, in chunks of ``chunk`` runs
    (temporaries small enough to stay in cache: MATH A8), each padded with zero neurons to
    the widest l in the chunk; ``threads`` chunks train at once on Python threads with one
    torch thread each. ``chunk`` and ``threads`` change the speed, and the numbers only by rounding.

    Yields a SweepProgress after each finished chunk and returns the SweepResult.
    """
    configure_torch_threads()
    s = settings
    chunk, threads = integer("chunk", chunk, 1), integer("threads", threads, 1)
    # The first load imports scikit-learn, which is slow: on a helper thread, so the job still yields.
    split = yield from wait_for(lambda stop: datasets.breast_cancer(seed=SPLIT_SEED), "loading breast cancer")
    yield Progress(0.0, "sweep: breast cancer loaded")
    X, y = torch.from_numpy(split.X_train), torch.from_numpy(split.Y_train[:, 0])
    Xte, yte = torch.from_numpy(split.X_test), torch.from_numpy(split.Y_test[:, 0])
    d, L, ls = X.shape[1], max(s.ls), list(s.ls)
    runs = s.runs()
    tally = _Tally(ls, runs)
    W1_final, W2_final = np.zeros((len(runs), L, d)), np.zeros((len(runs), L))

    pending, active = list(range(0, len(runs), chunk)), []

    def progress(message: str) -> Progress:
        done = int(tally.finished.sum())
        in_flight = sum(c.steps_done / s.steps * len(c.W1) for c in active)
        return Progress((done + in_flight) / len(runs), f"sweep: {done}/{len(runs)} runs {message}")

    def start_chunk(begin: int) -> Job[_Chunk]:
        part = runs[begin : begin + chunk]
        width = max(l for l, _, _ in part)  # runs are ordered by l: pad to this chunk's widest
        W1 = torch.zeros(len(part), width, d, dtype=torch.float64)
        W2 = torch.zeros(len(part), width, dtype=torch.float64)
        for j, (l, lp, i) in enumerate(part):
            p = sweep_init(d, l, lp, i, s.seed, s.c0, s.sign_policy)
            W1[j, :l], W2[j, :l] = torch.from_numpy(p.W1), torch.from_numpy(p.W2[0])
            if j % INITS_PER_YIELD == INITS_PER_YIELD - 1:
                yield progress("done, drawing the next chunk")
        return _Chunk(begin, W1, W2, _gd_batched(X, y, W1, W2, s.lr, s.steps))

    def finish(c: _Chunk) -> None:
        rows = slice(c.begin, c.begin + len(c.W1))
        F = torch.matmul(Xte, c.W1.transpose(1, 2)).clamp_min(0.0) @ c.W2.unsqueeze(2)
        tally.test_bce[rows] = _bce(F.squeeze(2), yte).numpy()
        tally.finished[rows] = True
        width = c.W1.shape[1]
        W1_final[rows, :width], W2_final[rows, :width] = c.W1.numpy(), c.W2.numpy()

    # OpenMP keeps its thread count per thread: without the initializer each pool thread would run
    # torch on every core (many times slower on a busy machine; engine.sweeps.executors).
    with ThreadPoolExecutor(threads, initializer=torch.set_num_threads, initargs=(1,)) as pool:
        while pending or active:
            if len(active) < threads and pending:
                active.append((yield from start_chunk(pending.pop(0))))
                continue
            deadline = time.perf_counter() + SLICE_S
            list(pool.map(lambda c: c.advance_until(deadline), active))
            for c in [c for c in active if c.done]:
                finish(c)
                active.remove(c)
                done = int(tally.finished.sum())
                yield Progress(
                    done / len(runs),
                    f"sweep: {done}/{len(runs)} runs",
                    SweepProgress(np.array(ls), np.arange(L + 1), *tally.cells(), done, len(runs)),
                )
            yield progress(f"done, {len(active)} chunk(s) training")
    mean, std = tally.cells()
    return SweepResult(
        s,
        np.array(ls),
        np.arange(L + 1),
        mean,
        std,
        np.array(runs, dtype=np.int64).reshape(-1, 3),
        tally.test_bce,
        W1_final,
        W2_final,
        int(np.sum(~np.isfinite(tally.test_bce))),
    )
