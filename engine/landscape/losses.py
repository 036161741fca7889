"""Which loss a landscape is drawn for, and what that means for paper B's verdicts (docs/MATH.md B12.6).

The kinds themselves are evaluated in engine.core.mlp (``LOSSES``, ``loss_of_outputs``):
"sum" Σ_α ‖f(x_α) − y_α‖², the papers' loss and every preset's; "mean", the sum over N; and
"cross-entropy", (1/N) Σ_α [log Σ_c e^{f_c(x_α)} − f_{y_α}(x_α)] for a classifier with e ≥ 2
outputs and integer labels.

Paper B's theorems (the split minimum of Theorem 9, the saddle test of B6, the path of Theorem 5)
are stated for the summed squared loss of a one-output network. The mean is a positive multiple of
it, so its critical points and its Hessian's inertia are the same: every verdict carries over
unchanged. Cross-entropy is a different function with different critical points, and no theorem of
the paper covers it; a verdict there would be the squared loss's conclusion applied where its
hypotheses are unmet, so ``paper_b_hypotheses`` says so instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core import mlp
from engine.core.mlp import Arch


@dataclass(frozen=True)
class Check:
    """One hypothesis of paper B's theorems and whether it holds here."""

    name: str
    holds: bool
    note: str


@dataclass(frozen=True)
class Hypotheses:
    met: bool  # paper B's verdicts apply to this loss and network as stated
    note: str  # one sentence a report or a view shows next to a verdict
    checks: tuple[Check, ...] = ()  # the hypotheses one by one ("squared loss", "one output", …)


SQUARED = {
    "sum": "Σ_α (f(x_α) − y_α)², paper B's loss",
    "mean": "the summed squared loss over N, a positive multiple of it: same critical points and Hessian inertia",
    "cross-entropy": "not the squared loss nor a multiple of it: other critical points, other Hessians",
}


def paper_b_hypotheses(kind: str, arch: Arch | None = None) -> Hypotheses:
    """Whether paper B's theorems cover the loss ``kind`` (and the network ``arch``, when given):
    the loss hypothesis always, the network's (one output, a smooth activation) when ``arch`` is given.
    The point's own hypotheses (critical, B definite, D = 0, λ ∈ I) are the verdict's, not the loss's."""
    mlp.check_loss(kind)
    checks = [Check("squared loss", kind != "cross-entropy", SQUARED[kind])]
    if arch is not None:
        checks.append(Check("one output", arch.n_outputs == 1, f"the network has {arch.n_outputs} output(s)"))
        smooth = arch.activation in mlp.ACTIVATIONS
        checks.append(
            Check("smooth activation", smooth, f"{arch.activation} is {'' if smooth else 'not '}twice differentiable")
        )
    checks = tuple(checks)
    if arch is not None and not all(c.holds for c in checks[1:]):
        return Hypotheses(
            False,
            f"paper B's theorems are stated for one-output networks with a smooth activation; this one has "
            f"{arch.n_outputs} outputs and {arch.activation}, so no verdict is applied",
            checks,
        )
    if kind == "sum":
        return Hypotheses(True, "the summed squared loss of paper B: its verdicts apply as stated", checks)
    if kind == "mean":
        return Hypotheses(
            True,
            "the mean squared loss is the summed loss over N: same critical points and Hessian inertia, "
            "so paper B's verdicts apply unchanged (values scale by 1/N)",
            checks,
        )
    return Hypotheses(
        False,
        "paper B's theorems assume the squared loss; with cross-entropy their hypotheses are unmet, "
        "so no verdict of theirs is applied",
        checks,
    )
