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
class Hypotheses:
    met: bool  # paper B's verdicts apply to this loss and network as stated
    note: str  # one sentence a report or a view shows next to a verdict


def paper_b_hypotheses(kind: str, arch: Arch | None = None) -> Hypotheses:
    """Whether paper B's theorems cover the loss ``kind`` (and the network ``arch``, when given)."""
    mlp.check_loss(kind)
    if arch is not None and (arch.n_outputs != 1 or arch.activation not in mlp.ACTIVATIONS):
        return Hypotheses(
            False,
            f"paper B's theorems are stated for one-output networks with a smooth activation; this one has "
            f"{arch.n_outputs} outputs and {arch.activation}, so no verdict is applied",
        )
    if kind == "sum":
        return Hypotheses(True, "the summed squared loss of paper B: its verdicts apply as stated")
    if kind == "mean":
        return Hypotheses(
            True,
            "the mean squared loss is the summed loss over N: same critical points and Hessian inertia, "
            "so paper B's verdicts apply unchanged (values scale by 1/N)",
        )
    return Hypotheses(
        False,
        "paper B's theorems assume the squared loss; with cross-entropy their hypotheses are unmet, "
        "so no verdict of theirs is applied",
    )
