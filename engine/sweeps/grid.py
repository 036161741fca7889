"""Grids of cells: integer coordinates, their file names, ranges as typed, and the size limit.

A cell is a tuple of non-negative ints (hidden size l and l₊; d and l and a scheme's index; a
data seed and a split count). Its file name spells the coordinates with their axis names, so a
cell's file is found again by a resumed sweep whatever order the cells finish in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.core.errors import EngineInputError

Cell = tuple[int, ...]

# A typo must not ask for a year of work or a million files: grids past this are refused.
MAX_CELLS = 100_000


def cell_name(axes: Sequence[str], cell: Cell) -> str:
    """``l9-lp3`` for axes (l, lp) and cell (9, 3): the cell's file stem."""
    return "-".join(f"{a}{int(v)}" for a, v in zip(axes, cell, strict=True))


def int_range(text: str, what: str, low: int, high: int) -> tuple[int, ...]:
    """``"2..30"``, ``"2..30:4"`` (a step), ``"5"`` or ``"1,2,5"`` as increasing ints in [low, high]."""
    values: list[int] = []
    for part in str(text).replace(" ", "").split(","):
        m = re.fullmatch(r"(-?\d+)(?:\.\.(-?\d+)(?::(\d+))?)?", part)
        if not m:
            raise EngineInputError(f"{what} {text!r} must look like 2..30, 2..30:2, 5 or 1,2,5")
        a = int(m[1])
        b = int(m[2]) if m[2] is not None else a
        step = int(m[3]) if m[3] is not None else 1
        if step < 1 or b < a:
            raise EngineInputError(f"{what} {text!r} is an empty range")
        values.extend(range(a, b + 1, step))
    if not values:
        raise EngineInputError(f"{what} {text!r} is empty")
    for v in values:
        if not low <= v <= high:
            raise EngineInputError(f"{what} {text!r}: {v} is outside {low} .. {high}")
    if values != sorted(set(values)):
        raise EngineInputError(f"{what} {text!r} must be increasing, without repeats")
    return tuple(values)


def check_grid(cells: Sequence[Cell], what: str) -> tuple[Cell, ...]:
    """The grid as a tuple; an empty grid or one past MAX_CELLS is refused."""
    cells = tuple(tuple(int(v) for v in c) for c in cells)
    if not cells:
        raise EngineInputError(f"the {what} grid is empty: no cell to compute")
    if len(cells) > MAX_CELLS:
        raise EngineInputError(f"the {what} grid has {len(cells)} cells; the limit is {MAX_CELLS}")
    if len(set(cells)) != len(cells):
        raise EngineInputError(f"the {what} grid repeats a cell")
    return cells
