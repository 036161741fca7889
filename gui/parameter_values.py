"""Check values against a pyqtgraph parameter tree before any of them is applied.

Presets and sessions set many parameters at once. Each value is checked against its
parameter's type and limits first; only when every one passes are they applied, so a bad
file never leaves the panel half-changed.
"""

from __future__ import annotations

import math
import numbers

from pyqtgraph.parametertree import Parameter

from engine.core.errors import EngineInputError
from engine.core.validation import MAX_SEED

MAX_TEXT = 10_000  # characters in a text field: far above any real widths list or c_k list
SEED_RANGE = (0, MAX_SEED)  # every seed field


def plane_grid_fields() -> list[dict]:
    """A 2-D plane's grid, as the toolkit tab and paper B's 2-D slice both declare it (fresh dicts:
    a parameter tree keeps what it is given)."""
    return [
        {"name": "points", "title": "grid points", "type": "int", "value": 41, "limits": (5, 401)},
        {"name": "extent", "title": "extent ±", "type": "float", "value": 1.0, "step": 0.1, "limits": (1e-6, 1e3)},
    ]


def _allowed(param: Parameter) -> list:
    limits = param.opts.get("limits")
    return list(limits.values()) if isinstance(limits, dict) else list(limits or [])


def _check_range(where: str, value, param: Parameter):
    limits = param.opts.get("limits")
    if isinstance(limits, (tuple, list)) and len(limits) == 2 and all(isinstance(v, numbers.Real) for v in limits):
        low, high = limits
        if not low <= value <= high:
            raise EngineInputError(f"{where} = {value!r} is outside its range [{low}, {high}]")


def checked_value(where: str, param: Parameter, value):
    """``value`` converted to what ``param`` holds, or EngineInputError naming the field."""
    kind = param.type()
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise EngineInputError(f"{where} must be a whole number, not {value!r}")
        _check_range(where, value, param)
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise EngineInputError(f"{where} must be a finite number, not {value!r}")
        _check_range(where, value, param)
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise EngineInputError(f"{where} must be true or false, not {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise EngineInputError(f"{where} must be text of at most {MAX_TEXT} characters")
        return value
    if kind == "list":
        allowed = _allowed(param)
        if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
            shown = ", ".join(repr(a) for a in allowed[:12])
            raise EngineInputError(f"{where} = {value!r} is not one of: {shown}")
        return value
    raise EngineInputError(f"{where} cannot be set from a file (a {kind} field)")


def collect(group: Parameter, values, path: str = "") -> list[tuple[Parameter, object]]:
    """Every (parameter, checked value) that ``values`` sets, checking all before returning."""
    if not isinstance(values, dict):
        raise EngineInputError(f"{path or 'parameters'} must be a JSON object of fields, not {type(values).__name__}")
    out = []
    for key, value in values.items():
        here = f"{path}/{key}" if path else str(key)
        try:
            child = group.child(key)
        except (KeyError, TypeError):
            raise EngineInputError(f"unknown parameter {here!r}") from None
        if child.type() == "group":
            out += collect(child, value, here)
        else:
            out.append((child, checked_value(here, child, value)))
    return out


def apply_all(group: Parameter, values: dict) -> None:
    """Set every value, or (on any bad one) none of them."""
    checked = collect(group, values)
    before = group.saveState(filter="user")
    try:
        for param, value in checked:
            param.setValue(value)
    except Exception:
        group.restoreState(before, addChildren=False, removeChildren=False)
        raise


def values_of_state(state, path: str = "parameters") -> dict:
    """The nested {name: value} of a ``saveState(filter="user")`` dict, so a session's panel
    goes through the same checks as a preset's."""
    if not isinstance(state, dict) or not isinstance(state.get("children", {}), dict):
        raise EngineInputError(f"{path} is not a saved parameter panel")
    out = {}
    for name, child in state.get("children", {}).items():
        if not isinstance(child, dict):
            raise EngineInputError(f"{path}/{name} is not a saved parameter")
        out[name] = values_of_state(child, f"{path}/{name}") if "children" in child else child.get("value")
    return out


def leaves(group: Parameter) -> dict[str, Parameter]:
    """Every field under ``group`` by its path ("slices/normalize"), groups left out."""
    out = {}
    for child in group.children():
        if child.type() == "group":
            out.update({f"{child.name()}/{k}": v for k, v in leaves(child).items()})
        elif child.type() != "action":
            out[child.name()] = child
    return out


def field_values(group: Parameter) -> dict:
    """Every field's value by its path: what ``changed_fields`` compares with."""
    return {path: param.value() for path, param in leaves(group).items()}


def shown_value(param: Parameter) -> str:
    """A field's value as the panel shows it: a list's label, not its key."""
    value, limits = param.value(), param.opts.get("limits")
    if isinstance(limits, dict):
        value = next((label for label, v in limits.items() if v == value), value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def changed_fields(group: Parameter, before: dict, most: int = 3) -> str:
    """What differs in ``group`` from ``before`` (its ``field_values`` then), in the panel's
    words: "directions → filter-normalised (Li et al.), K directions → 500 (+2 more)"; "" if
    nothing does."""
    changed = [p for path, p in leaves(group).items() if path in before and p.value() != before[path]]
    words = ", ".join(f"{p.title()} → {shown_value(p)}" for p in changed[:most])
    return words + (f" (+{len(changed) - most} more)" if len(changed) > most else "")
