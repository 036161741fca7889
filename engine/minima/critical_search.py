"""The inspector's "Find critical point": Levenberg–Marquardt on the residuals, then Newton
steps on the gradient, until ‖∇L‖ < construction.GRAD_TOL, or an account of where and why it
stopped (docs/MATH.md B7).

The summed squared loss is ‖r(θ)‖² with residuals r = f(x_α) − y_α, so a damped Gauss–Newton
(Levenberg–Marquardt) step uses the residuals' Jacobian J: near a zero-residual minimum it
converges quadratically, where L-BFGS crawled (a 2—6—6—1 net on 20 samples: ‖∇L‖ 5e-4 after 3000
iterations). Where the residual stays large, Newton's step −H⁺∇L finishes: it solves the
linearised gradient equation, so it heads for the nearest critical point of any kind. Each Newton
step is halved until ‖∇L‖ falls; when no halving helps, the search reports a stall instead of
pretending to have arrived. The restart search of the Fig. 3 construction keeps its own polish
(construction.train_to_critical), so the presets' draws stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.runtime import configure_torch_threads
from engine.minima.construction import GRAD_TOL

LM_ITERATIONS = 300
NEWTON_STEPS = 50  # per click; the message offers to go on from where it stopped
HALVINGS = 12  # a step damped 4096-fold that still does not lower ‖∇L‖ is a stall
MAX_DAMPING = 1e12  # μ past this: no damped Gauss–Newton step lowers the loss any more


@dataclass(frozen=True)
class CriticalSearch:
    theta: np.ndarray
    loss: float
    grad_norm: float
    distance: float  # ‖θ − θ₀‖: how far the search moved the network
    lm_iterations: int  # accepted Levenberg–Marquardt steps
    newton_steps: int  # accepted Newton steps
    last_step: float  # ‖Δθ‖ of the last accepted step (0 when none was)
    stopped: str  # why it stopped, one phrase: "reached the tolerance", "Newton stalled …", …

    @property
    def reached(self) -> bool:
        return self.grad_norm < GRAD_TOL

    def summary(self) -> str:
        """One line for the message bar: where it stopped, why, and what the user can do."""
        where = (
            f"{self.lm_iterations} Levenberg–Marquardt and {self.newton_steps} Newton steps: "
            f"‖∇L‖ = {self.grad_norm:.2e}, last step ‖Δθ‖ = {self.last_step:.2e}, moved {self.distance:.3g} in all"
        )
        if self.reached:
            return f"Critical point found ({where}; tolerance {GRAD_TOL:g})"
        return (
            f"Find critical point stopped short of ‖∇L‖ < {GRAD_TOL:g} ({where}): {self.stopped}. "
            "Press “Go on searching” to continue from here"
        )


def _residuals(arch, X, Y):
    """θ ↦ (r, J): the residuals f(x_α) − y_α and their Jacobian (N, P), one reverse pass per sample."""
    import torch

    Xt, yt = mlp.tensors(X)[0], mlp.target_tensor(arch, Y)
    out = lambda q: mlp.forward_batch(arch, q.unsqueeze(0), Xt)[0]

    def rj(theta):
        t = torch.as_tensor(np.asarray(theta, float))
        return (out(t) - yt).numpy(), torch.func.jacrev(out)(t).numpy()

    return rj


def _levenberg_marquardt(arch, X, Y, theta, cancelled):
    """Damped Gauss–Newton on ‖r‖²: (θ, accepted steps, last ‖Δθ‖)."""
    rj = _residuals(arch, X, Y)
    r, J = rj(theta)
    loss, mu, steps, last = float(r @ r), 1e-3, 0, 0.0
    while steps < LM_ITERATIONS and not cancelled():
        if np.linalg.norm(2 * J.T @ r) < GRAD_TOL or mu > MAX_DAMPING:
            break
        A, b = J.T @ J, -J.T @ r
        d = np.linalg.solve(A + mu * np.eye(len(A)), b)
        r_new, J_new = rj(theta + d)
        if np.isfinite(r_new).all() and r_new @ r_new < loss:
            theta, r, J, loss = theta + d, r_new, J_new, float(r_new @ r_new)
            mu, steps, last = max(mu / 3, 1e-15), steps + 1, float(np.linalg.norm(d))
        else:
            mu *= 4
    return theta, steps, last


def find_critical_point(arch, X, Y, theta0, stop=None, newton_steps: int = NEWTON_STEPS) -> CriticalSearch:
    """``stop``: a threading.Event set when the job is cancelled (engine.core.progress.wait_for)."""
    configure_torch_threads()  # one BLAS thread: a multi-threaded one made each Jacobian many times slower
    fun = lambda p: mlp.loss_and_grad(arch, p, X, Y)
    theta0 = np.asarray(theta0, float)
    cancelled = lambda: stop is not None and stop.is_set()
    theta, lm_steps, last = _levenberg_marquardt(arch, X, Y, theta0, cancelled)
    value, g = fun(theta)
    gnorm, steps, stopped = float(np.linalg.norm(g)), 0, f"{newton_steps} Newton steps taken"
    while steps < newton_steps:
        if gnorm < 1e-3 * GRAD_TOL:  # far below the tolerance: a further step is rounding noise
            break
        if cancelled():
            stopped = "cancelled"
            break
        step = np.linalg.lstsq(mlp.hessian(arch, theta, X, Y), g, rcond=None)[0]
        for _ in range(HALVINGS):
            cand_value, cand_g = fun(theta - step)
            if np.isfinite(cand_value) and np.linalg.norm(cand_g) < gnorm:
                break
            step = step / 2
        else:
            stopped = f"Newton stalled: no step along −H⁺∇L, halved {HALVINGS} times, lowers ‖∇L‖"
            break
        theta, value, g = theta - step, cand_value, cand_g
        gnorm, steps, last = float(np.linalg.norm(g)), steps + 1, float(np.linalg.norm(step))
    if gnorm < GRAD_TOL:
        stopped = "reached the tolerance"
    return CriticalSearch(
        theta, float(value), gnorm, float(np.linalg.norm(theta - theta0)), lm_steps, steps, last, stopped
    )
