"""The loss on the straight line between two networks, L((1 − α) θ_a + α θ_b) (docs/MATH.md B12.4).

Goodfellow et al.'s linear interpolation: past the segment too (α over at least [−0.5, 1.5]) so
each end shows whether it sits in a basin. Paper B's use: the constructed minimum against the
global minimum that ``nonattr-path`` reaches, whose straight segment rises where the path does
not. Both networks must have the same architecture; the data are network A's.

Two kernels: paper B's MLPs through the batched affine kernel (``interpolation_job``), and any
module point by point (``module_interpolation_job``), with the accuracy along the line for
classifiers (linear mode connectivity, Frankle et al. 2020). For a module, batch norm's running
statistics belong to each end: when the second model brings its own (``buffers_b``), every
floating-point buffer is interpolated with the parameters, so α = 0 and α = 1 are exactly the two
models. Past the segment the statistics are extrapolated too, and a running variance that turns
negative there gives a NaN loss: the line has left both models. Integer buffers
(``num_batches_tracked``) stay model A's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.progress import Job
from engine.landscape.plane import MAX_POINTS, affine_losses_job, points_job


@dataclass(frozen=True, eq=False)
class Interpolation:
    alpha: np.ndarray  # (M,)
    loss: np.ndarray  # (M,): L(θ_a + α (θ_b − θ_a))
    theta_a: np.ndarray  # (P,)
    theta_b: np.ndarray  # (P,)
    loss_a: float  # L(θ_a), float64
    loss_b: float
    kind: str = "sum"
    # classifiers (module_interpolation_job): the share of correct labels along the line
    accuracy: np.ndarray | None = None  # (M,)
    accuracy_a: float | None = None
    accuracy_b: float | None = None

    def _above_chord(self, values, a: float, b: float) -> float:
        """max over α ∈ [0, 1] of ``values`` − the chord from a to b."""
        inside = (self.alpha >= 0) & (self.alpha <= 1)
        line = (1 - self.alpha) * a + self.alpha * b
        return float((values - line)[inside].max()) if inside.any() else float("nan")

    @property
    def barrier(self) -> float:
        """max over α ∈ [0, 1] of L − the chord between the ends' losses: 0 when the curve stays below it."""
        return self._above_chord(self.loss, self.loss_a, self.loss_b)

    @property
    def accuracy_barrier(self) -> float | None:
        """The most accuracy lost below the chord between the ends' accuracies, over α ∈ [0, 1]
        (linear mode connectivity's error barrier); None unless a classifier."""
        if self.accuracy is None:
            return None
        return self._above_chord(-self.accuracy, -self.accuracy_a, -self.accuracy_b)


def interpolation_job(
    arch: Arch,
    theta_a,
    theta_b,
    X,
    Y,
    points: int = 201,
    lo: float = -0.5,
    hi: float = 1.5,
    kind: str = "sum",
    dtype: str = "float64",
    device: str = "cpu",
    threads: int = 1,
) -> Job[Interpolation]:
    """Job: ``points`` values of α evenly over [lo, hi] (lo ≤ −0.5 and hi ≥ 1.5 by default)."""
    theta_a, theta_b = np.asarray(theta_a, float), np.asarray(theta_b, float)
    if theta_a.shape != (arch.n_params,) or theta_b.shape != theta_a.shape:
        raise EngineInputError(
            f"the two networks have {theta_a.size} and {theta_b.size} parameters; both need {arch.n_params}"
        )
    if not 2 <= points <= MAX_POINTS:
        raise EngineInputError(f"interpolation points {points} must be within 2 .. {MAX_POINTS}")
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise EngineInputError(f"interpolation range [{lo}, {hi}] must be finite with lo < hi")
    alpha = np.linspace(lo, hi, points)
    loss = yield from affine_losses_job(
        arch, theta_a, (theta_b - theta_a)[None], alpha[:, None], X, Y, kind, dtype, device, threads
    )
    return Interpolation(
        alpha, loss, theta_a, theta_b, mlp.loss(arch, theta_a, X, Y, kind), mlp.loss(arch, theta_b, X, Y, kind), kind
    )


# Points of a module's line: each is a pass over all the data.
MAX_MODULE_POINTS = 10_001


def module_interpolation_job(
    loss, theta_b, buffers_b=None, points: int = 201, lo: float = -0.5, hi: float = 1.5
) -> Job[Interpolation]:
    """Job: ``points`` values of α evenly over [lo, hi] on the line from ``loss.theta`` (model A,
    its buffers) to ``theta_b`` (with ``buffers_b``: {name: tensor} of model B, or None to keep A's).
    ``loss``: a ``ModuleLoss``."""
    if not 2 <= points <= MAX_MODULE_POINTS:
        raise EngineInputError(f"interpolation points {points} must be within 2 .. {MAX_MODULE_POINTS}")
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise EngineInputError(f"interpolation range [{lo}, {hi}] must be finite with lo < hi")
    theta_a, theta_b = loss.theta, loss.flat(theta_b)
    step = theta_b - theta_a
    a_buf = loss.buffers
    b_buf = loss.merged_buffers(buffers_b) or a_buf
    mixed = [k for k, v in a_buf.items() if v.is_floating_point() and b_buf[k] is not v]

    def buffers_at(t: float):
        return {k: (1 - t) * a_buf[k] + t * b_buf[k] for k in mixed} or None

    alpha = np.linspace(lo, hi, points)
    evaluate = lambda i: loss.loss_and_accuracy(theta_a + float(alpha[i]) * step, buffers_at(float(alpha[i])))
    values, accuracy = yield from points_job(points, evaluate, "line point")
    loss_a, acc_a = loss.loss_and_accuracy(theta_a)
    loss_b, acc_b = loss.loss_and_accuracy(theta_b, {k: b_buf[k] for k in mixed} or None)
    return Interpolation(
        alpha,
        values,
        theta_a.double().cpu().numpy(),
        theta_b.double().cpu().numpy(),
        loss_a,
        loss_b,
        loss.kind,
        accuracy if loss.classifier else None,
        acc_a,
        acc_b,
    )
