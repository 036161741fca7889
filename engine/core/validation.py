"""One place that checks numbers handed to the engine, so every front end gets the same message.

``integer`` and ``real`` return the value as a plain ``int`` / ``float`` or raise
``EngineInputError`` naming the value, what it must be, and the value it got.
"""

from __future__ import annotations

import math
import numbers

from engine.core.errors import EngineInputError

MAX_SEED = 2**32 - 1  # every seed: what numpy's and torch's generators take


def integer(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int in [minimum, maximum]; bools and non-integral floats are refused."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok and isinstance(value, numbers.Real) and not isinstance(value, bool):
        ok = math.isfinite(value) and float(value).is_integer()
    if not ok:
        raise EngineInputError(f"{name} = {value!r} must be an integer{_range_text(minimum, maximum)}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise EngineInputError(f"{name} = {value} must be an integer{_range_text(minimum, maximum)}")
    return value


def real(name: str, value, minimum: float | None = None, maximum: float | None = None, positive: bool = False) -> float:
    """``value`` as a finite float in [minimum, maximum] (> 0 with ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise EngineInputError(f"{name} = {value!r} must be a finite number{_range_text(minimum, maximum, positive)}")
    value = float(value)
    if (
        (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
        or (positive and value <= 0)
    ):
        raise EngineInputError(f"{name} = {value!r} must be a finite number{_range_text(minimum, maximum, positive)}")
    return value


def _range_text(minimum, maximum, positive: bool = False) -> str:
    if positive and maximum is None:
        return " > 0"
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""
