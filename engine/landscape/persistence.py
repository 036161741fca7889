"""The topology of a sampled landscape: 0-dimensional sublevel-set persistence of a 2-D loss grid.

A plane of losses L[i, j] is read as a graph: each grid point a vertex, joined to its 8
neighbours (the 4 along the axes and the 4 diagonal). The sublevel sets {L ≤ t} grow as t rises;
a component is born at a local minimum and dies when it merges into an older one at a saddle
(the elder rule: of two merging components the younger, the one whose minimum is higher, dies at
the merge height). Each component is a pair (birth, death); the global minimum's never dies
(death +inf). Its persistence, death − birth, is the barrier a descent from that minimum must
climb to reach a lower basin: a small one is a dent in the surface, a large one a separate basin.

**Ties.** The vertices enter in the order of (value, flat index), a total order, so equal values
are resolved the same way every time: of two equal minima the one with the lower flat index
(row-major) is the elder. Components born and killed at the same value (plateaus) are pairs of
persistence 0; every threshold ≥ 0 leaves them out.

**The algorithm.** Every vertex points to its lowest earlier neighbour in that order (steepest
descent; none: a minimum), and pointer jumping in numpy labels each vertex by the minimum its
descent reaches. The vertices of one descent basin that have entered by any time are connected
through their descent paths, so the sublevel components are unions of basins, and they merge
along the edges between basins in the order of each edge's later endpoint. Only the lowest such
edge between each pair of basins can be a first merge; Kruskal's union-find (path halving, the
elder root kept) runs over those alone, in Python, one step per pair of touching basins.

**Why not gudhi.** ``gudhi.CubicalComplex(top_dimensional_cells=L)`` gives the same pairs: it puts
each value on a pixel (a square), and a vertex or edge of the cubical complex enters with the
lowest pixel around it, so two diagonal pixels are joined through their shared corner as soon as
both are in: pixel adjacency by corners is this 8-connectivity. (Its ``vertices=`` mode puts the
values on the corners and joins only axis neighbours, 4-connectivity.) It is a compiled
dependency for a loop that needs a few numpy passes here, it reports pairs without the
merge tree (who absorbed whom), which ``basin_map`` needs, and it drops pairs of persistence 0
by default. benchmarks/bench_persistence.py compares the two, pairs and time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError

CONNECTIVITY = 8
# Edges are sorted by one packed int64 key (pair of basins, then time) while (basins² × vertices)
# stays below this, by a lexsort of three keys beyond.
PACKED_KEY_LIMIT = 2**62
# The four neighbours after a vertex in row-major order; with their opposites, all eight.
_FORWARD = ((0, 1), (1, -1), (1, 0), (1, 1))


@dataclass(frozen=True, eq=False)
class Persistence:
    """The 0-dimensional sublevel-set persistence pairs of a grid, one per component (local
    minimum), sorted by birth (ties by the minimum's flat index)."""

    birth: np.ndarray  # (k,): each component's minimum value
    death: np.ndarray  # (k,): the value at which it merges into an older one; +inf for the global
    birth_index: np.ndarray  # (k,) int64: flat (row-major) index of each minimum
    death_index: np.ndarray  # (k,) int64: flat index of the merge saddle; -1 for the global
    absorbed_by: np.ndarray  # (k,) int64: position here of the eldest component it merged into; -1 for the global
    shape: tuple[int, int]  # the grid's
    connectivity: int = CONNECTIVITY

    @property
    def persistence(self) -> np.ndarray:
        """death − birth of each pair; +inf for the global minimum's."""
        return self.death - self.birth

    def __len__(self) -> int:
        return len(self.birth)


def persistence(loss_grid: np.ndarray) -> Persistence:
    """0-dimensional sublevel-set persistence of ``loss_grid`` with 8-neighbour connectivity.

    Parameters
    ----------
    loss_grid : np.ndarray
        (rows, cols) real values, rows and cols ≥ 1; ±inf allowed (an overflowed loss enters
        last, or first), NaN not.

    Returns
    -------
    Persistence
        One pair per component, sorted by birth; the elder rule and the tie order of the module
        docstring.

    Raises
    ------
    EngineInputError
        ``loss_grid`` not a non-empty 2-D array of real numbers, or holding NaN.
    """
    L = _check_grid(loss_grid)
    rows, cols = L.shape
    n = L.size
    flat = L.ravel()
    order = np.argsort(flat, kind="stable")  # (value, flat index): stable keeps equal values by index
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    basin = _descent_basins(rank.reshape(rows, cols)).ravel()
    minima = np.flatnonzero(basin == np.arange(n))
    minima = minima[np.argsort(rank[minima])]  # by birth: the elder first
    m = len(minima)
    which = np.full(n, -1, dtype=np.int64)
    which[minima] = np.arange(m)  # component number of each minimum, by age
    death_rank = np.full(m, -1, dtype=np.int64)
    absorbed = np.full(m, -1, dtype=np.int64)
    if m > 1:
        a, b, when = _basin_edges(which[basin].reshape(rows, cols), rank.reshape(rows, cols))
        parent = list(range(m))
        alive = m
        for x, y, w in zip(a.tolist(), b.tolist(), when.tolist()):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            while parent[y] != y:
                parent[y] = parent[parent[y]]
                y = parent[y]
            if x == y:
                continue
            elder, younger = (x, y) if x < y else (y, x)  # numbered by age: the lower is the elder
            parent[younger] = elder
            death_rank[younger] = w
            absorbed[younger] = elder
            alive -= 1
            if alive == 1:
                break
    died = death_rank >= 0
    # at a vertex joining three or more components every younger one dies into the eldest, also
    # one that a sibling dying at the same vertex absorbed first: follow those links to it
    while True:
        via = np.flatnonzero(died & (absorbed >= 0))
        via = via[death_rank[absorbed[via]] == death_rank[via]]
        if not len(via):
            break
        absorbed[via] = absorbed[absorbed[via]]
    death = np.full(m, np.inf)
    death[died] = flat[order[death_rank[died]]]
    death_index = np.full(m, -1, dtype=np.int64)
    death_index[died] = order[death_rank[died]]
    return Persistence(flat[minima].copy(), death, minima.astype(np.int64), death_index, absorbed, (rows, cols))


def basins(p: Persistence, threshold: float) -> int:
    """The number of components whose persistence exceeds ``threshold``, the global minimum's
    (infinite) always included, also for ``threshold`` = +inf: the basins that barriers of more
    than ``threshold`` separate.

    Raises
    ------
    EngineInputError
        ``threshold`` NaN or negative.
    """
    return int(np.count_nonzero(_survives(p, _check_threshold(threshold))))


def barriers(p: Persistence, threshold: float) -> np.ndarray:
    """The merge heights (death values) of the components other than the global minimum's whose
    persistence exceeds ``threshold``, in birth order: the saddle level at which each such basin
    joins an older, lower one.

    Raises
    ------
    EngineInputError
        ``threshold`` NaN or negative.
    """
    keep = (p.persistence > _check_threshold(threshold)) & np.isfinite(p.death)
    return p.death[keep].copy()


def basin_map(loss_grid: np.ndarray, threshold: float, p: Persistence | None = None) -> np.ndarray:
    """An int grid labelling each point by the basin it belongs to at its own level.

    A point x of value L(x) lies, within the sublevel set {L ≤ L(x)} (vertices entered up to x in
    the (value, flat index) order), in one component; that component's oldest minimum is the
    component alive there, the one the elder rule kept through every merge below x's level. Its
    label is that component's, except that a component of persistence ≤ ``threshold`` takes the
    label of the component that absorbed it (repeatedly, until one of persistence >
    ``threshold``). So the labels are 0 … ``basins(p, threshold)`` − 1, numbered by birth, 0 the
    global minimum's; a basin's region is its part below the pass where it merges (its "lake"),
    and everything above that pass takes the label of the basin it merged into. A label's region
    need not be connected when a component it absorbed below the threshold touched it only
    through another surviving one.

    Parameters
    ----------
    loss_grid : np.ndarray
        The grid, as ``persistence``'s.
    threshold : float
        Components of persistence at most this are merged away; ≥ 0, +inf allowed (one label).
    p : Persistence, optional
        ``persistence(loss_grid)``, if already computed.

    Returns
    -------
    np.ndarray
        (rows, cols) int64 labels.

    Raises
    ------
    EngineInputError
        A bad grid (as ``persistence``), ``threshold`` NaN or negative, or ``p`` of another shape.
    """
    threshold = _check_threshold(threshold)
    L = _check_grid(loss_grid)
    if p is None:
        p = persistence(L)
    elif p.shape != L.shape:
        raise EngineInputError(f"persistence p is of a {p.shape} grid, loss_grid is {L.shape}")
    rows, cols = L.shape
    n = L.size
    flat = L.ravel()
    order = np.argsort(flat, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    which = np.full(n, -1, dtype=np.int64)
    which[p.birth_index] = np.arange(len(p))
    current = which[_descent_basins(rank.reshape(rows, cols)).ravel()]
    # the component alive at each point's own level: follow "absorbed by" while the merge is at
    # or below the point (a merge at the point's own rank has happened when it has entered)
    death_rank = np.full(len(p), n, dtype=np.int64)
    died = p.death_index >= 0
    death_rank[died] = rank[p.death_index[died]]
    active = np.flatnonzero(death_rank[current] <= rank)
    while len(active):
        current[active] = p.absorbed_by[current[active]]
        active = active[death_rank[current[active]] <= rank[active]]
    # components at or below the threshold take their absorber's label; absorbers die later, so
    # in order of decreasing death each absorber is resolved before the ones it absorbed
    survives = _survives(p, threshold)
    resolved = np.arange(len(p))
    for c in np.argsort(-death_rank, kind="stable").tolist():
        if not survives[c]:
            resolved[c] = resolved[p.absorbed_by[c]]
    labels = np.full(len(p), -1, dtype=np.int64)
    labels[survives] = np.arange(np.count_nonzero(survives))
    return labels[resolved[current]].reshape(rows, cols)


def _survives(p: Persistence, threshold: float) -> np.ndarray:
    """Which components count at ``threshold``: persistence above it, and the global minimum's."""
    return (p.persistence > threshold) | np.isinf(p.death)


def _descent_basins(rank: np.ndarray) -> np.ndarray:
    """For each vertex, the flat index of the minimum that its steepest descent reaches: each
    vertex steps to the earliest (lowest rank) of itself and its 8 neighbours, repeated to a fixed
    point by pointer jumping (log₂ of the longest descent path in numpy passes)."""
    rows, cols = rank.shape
    n = rank.size
    big = np.iinfo(np.int64).max
    padded = np.full((rows + 2, cols + 2), big, dtype=np.int64)
    padded[1:-1, 1:-1] = rank
    index = np.full((rows + 2, cols + 2), -1, dtype=np.int64)
    index[1:-1, 1:-1] = np.arange(n).reshape(rows, cols)
    best_rank, step = rank.copy(), np.arange(n).reshape(rows, cols)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di == dj == 0:
                continue
            r = padded[1 + di : 1 + di + rows, 1 + dj : 1 + dj + cols]
            lower = r < best_rank
            best_rank = np.where(lower, r, best_rank)
            step = np.where(lower, index[1 + di : 1 + di + rows, 1 + dj : 1 + dj + cols], step)
    ptr = step.ravel()
    while True:
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            return ptr
        ptr = nxt


def _basin_edges(component: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, when): for each pair of basins (numbered by age in ``component``) that touch, the
    earliest edge between them, as the rank of its later endpoint (when both ends have entered),
    sorted by it: the only edges at which two basins can first merge."""
    rows, cols = component.shape
    a, b, when = [], [], []
    for di, dj in _FORWARD:
        i0, i1 = 0, rows - di
        j0, j1 = max(0, -dj), cols - max(0, dj)
        ca, cb = component[i0:i1, j0:j1], component[i0 + di : i1 + di, j0 + dj : j1 + dj]
        differ = ca != cb
        a.append(ca[differ])
        b.append(cb[differ])
        when.append(np.maximum(rank[i0:i1, j0:j1][differ], rank[i0 + di : i1 + di, j0 + dj : j1 + dj][differ]))
    a, b, when = np.concatenate(a), np.concatenate(b), np.concatenate(when)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    m, n = int(component.max()) + 1, component.size
    if m * m * n < PACKED_KEY_LIMIT:  # one int64 key (pair, then time), sorted in place
        key = (lo * m + hi) * n + when
        key.sort()
        pair, when = np.divmod(key, n)
        lo, hi = np.divmod(pair, m)
    else:
        first = np.lexsort((when, hi, lo))  # by pair, earliest edge first
        lo, hi, when = lo[first], hi[first], when[first]
    new_pair = np.ones(len(lo), dtype=bool)
    new_pair[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    lo, hi, when = lo[new_pair], hi[new_pair], when[new_pair]
    by_time = np.argsort(when, kind="stable")
    return lo[by_time], hi[by_time], when[by_time]


def _check_grid(loss_grid) -> np.ndarray:
    L = np.asarray(loss_grid)
    if L.ndim != 2 or L.size == 0:
        raise EngineInputError(f"loss_grid has shape {L.shape}; expected a non-empty 2-D grid")
    if L.dtype.kind not in "biuf":
        raise EngineInputError(f"loss_grid has dtype {L.dtype}; expected real numbers")
    L = L.astype(np.float64, copy=False)
    if np.isnan(L).any():
        i, j = np.argwhere(np.isnan(L))[0]
        raise EngineInputError(f"loss_grid holds NaN (first at row {i}, column {j}); persistence needs every value")
    return L


def _check_threshold(threshold) -> float:
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise EngineInputError(f"threshold = {threshold!r} must be a number ≥ 0") from None
    if math.isnan(t) or t < 0:
        raise EngineInputError(f"threshold = {threshold!r} must be a number ≥ 0 (a persistence, death − birth)")
    return t
