"""Conserved quantities c_k, the topology of H(c), component labels and rescaling (MATH A2–A6)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.validation import integer
from engine.topology.two_layer import TwoLayerParams


def balances(W1, W2, b1=None) -> np.ndarray:
    """c_k = ‖W1[k]‖² (+ b1[k]²) − ‖W2[:, k]‖²; arrays may carry leading (e.g. time) axes."""
    W1, W2 = np.asarray(W1, dtype=np.float64), np.asarray(W2, dtype=np.float64)
    c = np.sum(W1**2, axis=-1) - np.sum(W2**2, axis=-2)
    return c if b1 is None else c + np.asarray(b1, dtype=np.float64) ** 2


def c_of(p: TwoLayerParams) -> np.ndarray:
    return balances(p.W1, p.W2, p.b1)


def _check_c(c, l: int | None = None) -> np.ndarray:
    arr = np.asarray(c, dtype=np.float64).reshape(-1) if np.ndim(c) <= 1 else None
    if arr is None or not np.all(np.isfinite(arr)):
        raise EngineInputError(f"c = {c!r} must be a list of finite numbers")
    if l is not None and arr.shape != (l,):
        raise EngineInputError(f"c has {arr.size} value(s); the network has l = {l} neurons")
    if arr.size < 1:
        raise EngineInputError("c is empty; need one value per hidden neuron (l >= 1)")
    return arr


def _check_de(d, e) -> None:
    integer("d", d, 1), integer("e", e, 1)


def counts(c) -> tuple[int, int, int]:
    """(l+, l−, l0): how many c_k are positive, negative, exactly zero."""
    c = _check_c(c)
    return int(np.sum(c > 0)), int(np.sum(c < 0)), int(np.sum(c == 0))


def poincare(d: int, e: int, c, bias: bool = False) -> list[int]:
    """Coefficients [β0, β1, ...] of P(x) = (1 + x^a)^{l+} (1 + x^b)^{l−} (MATH A4),
    a = d − 1 (d with biases), b = e − 1. Expanded with binomials; exact Python ints."""
    _check_de(d, e)
    lp, lm, _ = counts(c)
    a, b = (d if bias else d - 1), e - 1
    coef = [0] * (a * lp + b * lm + 1)
    for i in range(lp + 1):
        for j in range(lm + 1):
            coef[a * i + b * j] += comb(lp, i) * comb(lm, j)
    return coef


def beta0(d: int, e: int, c, bias: bool = False) -> int:
    """Number of connected components of H(c)."""
    _check_de(d, e)
    lp, lm, _ = counts(c)
    return 2 ** (lp * (d == 1 and not bias)) * 2 ** (lm * (e == 1))


def effective_components(d: int, e: int, c) -> int | None:
    """1 + l− for e = 1, d > 1 (Theorem 2); None where the paper defines no such count."""
    _check_de(d, e)
    return 1 + counts(c)[1] if (e == 1 and d > 1) else None


def component_label(W1, W2, b1=None) -> np.ndarray:
    """s(θ) (MATH A5): for each neuron whose sphere factor is S⁰, the sign of the scalar side it
    can never flip inside H(c) — the output weight if c < 0 and e = 1, the input weight if
    c > 0, d = 1 and no biases. Other neurons get 0. Leading (time) axes are kept.
    """
    W1, W2 = np.asarray(W1, dtype=np.float64), np.asarray(W2, dtype=np.float64)
    c = balances(W1, W2, b1)
    s = np.zeros(c.shape, dtype=np.int64)
    if W2.shape[-2] == 1:
        s = np.where(c < 0, np.sign(W2[..., 0, :]).astype(np.int64), s)
    if W1.shape[-1] == 1 and b1 is None:
        s = np.where(c > 0, np.sign(W1[..., 0]).astype(np.int64), s)
    return s


def effective_component_index(label) -> int:
    """Which of the 1 + l− effective components (e = 1, d > 1; MATH A5) a label s(θ) lies in.

    Components are effectively equal iff their labels have equal sums; the sum runs over
    −l−, −l− + 2, ..., l−, so (sum + l−) / 2 — the number of +1 entries — numbers the classes
    0..l− in order of the sum. Free neurons carry 0 and do not count.
    """
    s = np.asarray(label)
    if s.ndim != 1 or not np.all(np.isin(s, (-1, 0, 1))):
        raise EngineInputError(f"label {label!r} must be a list of -1, 0, +1 (one per neuron)")
    return (int(s.sum()) + int(np.count_nonzero(s))) // 2


@dataclass(frozen=True)
class SignFlip:
    """An output weight's change of sign in a trajectory (e = 1): at recorded ``step``, row ``row``
    the first row that shows it, of neuron ``neuron`` (from 0). ``jumped``: the neuron was
    pathological, c_k < 0, at the last recorded row before, so the flip was a finite step over the
    barrier v = 0, which gradient flow cannot cross (MATH A5); else a free flip, the ordinary way the
    dynamics change sign."""

    step: int
    neuron: int
    row: int
    jumped: bool


def sign_flip_events(step, c, flips) -> list[SignFlip]:
    """The typed events of a trajectory's recorded flips (s, k): step (T,), c (T, l) as recorded.
    The one place every front end (reports, views, clips) gets them from."""
    step, c = np.asarray(step), np.asarray(c, dtype=np.float64)
    events = []
    for s, k in flips:
        at = int(np.searchsorted(step, s))
        events.append(SignFlip(int(s), int(k), min(at, len(step) - 1), bool(c[max(at - 1, 0), k] < 0)))
    return events


def _same_set(a: TwoLayerParams, b: TwoLayerParams, rtol: float) -> bool:
    ca, cb = c_of(a), c_of(b)
    return ca.shape == cb.shape and np.allclose(ca, cb, rtol=rtol, atol=rtol * max(1.0, np.abs(ca).max()))


def same_component(a: TwoLayerParams, b: TwoLayerParams, rtol: float = 1e-6) -> bool:
    """Whether a and b lie in one connected component of the same H(c) (Prop. 3).
    False when they are not on the same invariant set (within rtol)."""
    return _same_set(a, b, rtol) and bool(
        np.array_equal(component_label(a.W1, a.W2, a.b1), component_label(b.W1, b.W2, b.b1))
    )


def same_effective_component(a: TwoLayerParams, b: TwoLayerParams) -> bool | None:
    """e = 1, d > 1: components related by permutations and rescalings are those with the same
    (l+, l−) and the same label sum (Theorem 2). None where the notion is undefined."""
    d, e = a.W1.shape[1], a.W2.shape[0]
    if not (e == 1 and d > 1) or b.W1.shape != a.W1.shape:
        return None
    if counts(c_of(a)) != counts(c_of(b)):
        return False
    return effective_component_index(component_label(a.W1, a.W2, a.b1)) == effective_component_index(
        component_label(b.W1, b.W2, b.b1)
    )


def rescale_to(p: TwoLayerParams, c: Sequence[float]) -> TwoLayerParams:
    """Move every neuron onto Q(c_k) by W1_k, b1_k ← α W1_k, α b1_k and W2_k ← W2_k / α (Prop. 4).

    The function f is unchanged. Infeasible targets (a neuron with zero input side can only
    reach c < 0, zero output side only c > 0, both zero only c = 0) raise EngineInputError.
    """
    out = p.copy()
    l = out.W1.shape[0]
    target = _check_c(c, l)
    A = np.sum(out.W1**2, axis=1) + (0.0 if out.b1 is None else out.b1**2)
    C = np.sum(out.W2**2, axis=0)
    for k in range(l):
        ck, Ak, Ck = target[k], A[k], C[k]
        if Ak == 0 and Ck == 0:
            if ck != 0:
                raise EngineInputError(
                    f"neuron {k}: all its weights are zero, so only c = 0 is reachable, not c = {ck:g}"
                )
            continue
        if Ak == 0:
            if ck >= 0:
                raise EngineInputError(
                    f"neuron {k}: its input weights are zero, so only c < 0 is reachable, not c = {ck:g}"
                )
            alpha2 = Ck / -ck
        elif Ck == 0:
            if ck <= 0:
                raise EngineInputError(
                    f"neuron {k}: its output weights are zero, so only c > 0 is reachable, not c = {ck:g}"
                )
            alpha2 = ck / Ak
        else:
            # Root of A α⁴ − c α² − C = 0, written for each sign of c so nothing cancels.
            s = math.sqrt(ck * ck + 4 * Ak * Ck)
            alpha2 = (ck + s) / (2 * Ak) if ck >= 0 else 2 * Ck / (s - ck)
        alpha = math.sqrt(alpha2)
        out.W1[k] *= alpha
        if out.b1 is not None:
            out.b1[k] *= alpha
        out.W2[:, k] /= alpha
    return out


def invariant_set_summary(d: int, e: int, c: Sequence[float], bias: bool) -> dict:
    """What `main.py invariant-set` prints: counts, Betti numbers, β0, effective components."""
    _check_de(d, e)
    lp, lm, l0 = counts(c)
    return {
        "l_plus": lp,
        "l_minus": lm,
        "l_zero": l0,
        "poincare": poincare(d, e, c, bias),
        "beta0": beta0(d, e, c, bias),
        "effective_components": effective_components(d, e, c),
    }
