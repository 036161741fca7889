"""Typed answers of the Theorem 9 analysis: what a critical point is, and where λ gives minima.

The GUI colours and labels by these enums and shades ``Interval`` by its numbers; JSON output
writes an enum as its value (engine.core.exports), so nothing downstream ever parses a sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


class Verdict(str, Enum):
    """What a point of the loss landscape is. Values are the JSON spelling."""

    NON_ATTRACTING = "non-attracting region of local minima"  # Theorem 9 holds at this λ
    SADDLE = "saddle"  # the Hessian has a negative eigenvalue
    CONDITIONS_NOT_MET = "conditions not met"  # no negative curvature, but Theorem 9 fails
    STRICT_MINIMUM = "strict minimum"
    DEGENERATE_MINIMUM = "degenerate minimum candidate"  # PSD Hessian with a kernel
    NOT_CRITICAL = "not a critical point"

    @property
    def is_minimum(self) -> bool:
        return self in (Verdict.NON_ATTRACTING, Verdict.STRICT_MINIMUM, Verdict.DEGENERATE_MINIMUM)

    def __str__(self) -> str:
        return self.value


class Definiteness(str, Enum):
    """The sign pattern of a symmetric matrix's eigenvalues (B of Theorem 9). Values are the JSON
    and table spelling."""

    POSITIVE_DEFINITE = "positive definite"
    NEGATIVE_DEFINITE = "negative definite"
    POSITIVE_SEMIDEFINITE = "positive semidefinite"
    NEGATIVE_SEMIDEFINITE = "negative semidefinite"
    INDEFINITE = "indefinite"
    ZERO = "zero"

    @property
    def sign(self) -> int:
        """+1 for (semi)definite ≥ 0, −1 for ≤ 0, 0 for indefinite or zero."""
        if self in (Definiteness.POSITIVE_DEFINITE, Definiteness.POSITIVE_SEMIDEFINITE):
            return 1
        if self in (Definiteness.NEGATIVE_DEFINITE, Definiteness.NEGATIVE_SEMIDEFINITE):
            return -1
        return 0

    @property
    def definite(self) -> bool:
        return self in (Definiteness.POSITIVE_DEFINITE, Definiteness.NEGATIVE_DEFINITE)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Interval:
    """Theorem 9's I: a union of open intervals (lo, hi), ±inf allowed; empty when B is not definite."""

    parts: tuple[tuple[float, float], ...] = ()

    def contains(self, lam: float) -> bool:
        return any(lo < lam < hi for lo, hi in self.parts)

    @property
    def empty(self) -> bool:
        return not self.parts

    def __str__(self) -> str:
        if not self.parts:
            return "∅"
        return " ∪ ".join(f"({lo:g}, {hi:g})" for lo, hi in self.parts)


INSIDE_0_1 = Interval(((0.0, 1.0),))  # B positive definite
OUTSIDE_0_1 = Interval(((-math.inf, 0.0), (1.0, math.inf)))  # B negative definite
