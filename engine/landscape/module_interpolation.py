"""The straight line between two trained copies of one module, L((1 − α) θ_a + α θ_b), with the
accuracy along it for classifiers: linear mode connectivity (docs/MATH.md B12.4; Frankle et al.
2020). engine.landscape.interpolation does the same for paper B's MLPs and holds the result type.

Batch norm's running statistics belong to each end: when the second model brings its own
(``buffers_b``), every floating-point buffer is interpolated with the parameters, so α = 0 and
α = 1 are exactly the two models. Past the segment the statistics are extrapolated too, and a
running variance that turns negative there gives a NaN loss: the line has left both models.
Integer buffers (``num_batches_tracked``) stay model A's.
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.landscape.interpolation import Interpolation
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.module_plane import points_job

# Points of a module's line: each is a pass over all the data.
MAX_MODULE_POINTS = 10_001


def module_interpolation_job(
    loss: ModuleLoss, theta_b, buffers_b=None, points: int = 201, lo: float = -0.5, hi: float = 1.5
) -> Job[Interpolation]:
    """Job: ``points`` values of α evenly over [lo, hi] on the line from ``loss.theta`` (model A,
    its buffers) to ``theta_b`` (with ``buffers_b``: {name: tensor} of model B, or None to keep A's)."""
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
