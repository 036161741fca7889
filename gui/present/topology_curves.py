"""The training view's plots as plain data, made on the worker thread with its state
(gui/present/topology.py): the loss curve and the invariants' drift, each with its axis range,
and which neurons' curves copy an earlier one's (dashed); the heatmaps' data and the learned
function on their grid. No Qt.
"""

from __future__ import annotations

import numpy as np

from engine.topology.two_layer import TwoLayerNet, TwoLayerParams, forward

HEATMAP_CELLS = 28  # ~10 toy points per cell, so the binned target has no holes
LINE_POINTS = 241  # d = 1: where the learned function is drawn


def twin(c: np.ndarray, k: int) -> bool:
    """Neuron k lies on the same curve as an earlier neuron (equal c): dash it."""
    return any(abs(float(c[k]) - float(c[j])) <= 1e-6 * max(1.0, abs(float(c[j]))) for j in range(k))


def loss_state(step: np.ndarray, loss: np.ndarray, events: list[tuple[int, int, bool]]) -> dict:
    """The loss plot: the curve, whether its axis is logarithmic, its range, the (step, neuron,
    jumped) sign changes."""
    positive = loss[loss > 0]
    # Log scale only once the loss spans a decade: below that its axis would show no ticks.
    log = bool(positive.size and positive.max() > 10 * positive.min())
    return {"step": step, "loss": loss, "log": log, "range": value_range(positive if log else loss, log),
            "events": events}  # fmt: skip


def drift_state(step: np.ndarray, c: np.ndarray) -> dict:
    """The drift plot, linear (``drift``) and logarithmic (``magnitude``, exact conservation as NaN),
    with which curves copy an earlier one (dashed) and each scale's range."""
    drift = c - c[:1]  # a difference to the first recorded row; display only
    magnitude = np.abs(drift)
    magnitude[magnitude == 0] = np.nan  # log scale: exact conservation has no point to draw
    return {
        "step": step,
        "drift": drift,
        "magnitude": magnitude,
        "twins": _twins(drift),
        "log_twins": _twins(magnitude),
        "range": value_range(drift.ravel(), False),
        "log_range": value_range(magnitude[magnitude > 0], True),
    }


def _twins(curves: np.ndarray) -> list[bool]:
    """Equal curves (two neurons with the same c) would hide each other: every later copy is dashed."""
    same = lambda k, j: np.allclose(curves[:, k], curves[:, j], equal_nan=True, atol=1e-12)  # noqa: E731
    return [k > 0 and any(same(k, j) for j in range(k)) for k in range(curves.shape[1])]


def value_range(values: np.ndarray, log: bool) -> tuple[float, float] | None:
    """(lo, hi) of the finite values, in decades when ``log``; None when there are none."""
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    if log:
        return float(np.log10(values.min())), float(np.log10(values.max()))
    return float(values.min()), float(values.max())


def data_state(X: np.ndarray, Y: np.ndarray, d: int) -> dict:
    """The data the heatmaps show: d = 1 the points, d = 2 the mean label per cell (the target)."""
    if d == 1:
        order = np.argsort(X[:, 0])
        line_x = np.linspace(X[:, 0].min(), X[:, 0].max(), LINE_POINTS)
        return {"d": 1, "x": X[order, 0], "y": Y[order, 0], "line_x": line_x, "grid": line_x[:, None]}
    lo, hi = X.min(axis=0), X.max(axis=0)
    xs, ys = np.linspace(lo[0], hi[0], HEATMAP_CELLS), np.linspace(lo[1], hi[1], HEATMAP_CELLS)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    edges = [np.linspace(lo[i], hi[i], HEATMAP_CELLS + 1) for i in range(2)]
    total, *_ = np.histogram2d(X[:, 0], X[:, 1], bins=edges, weights=Y[:, 0])
    count, *_ = np.histogram2d(X[:, 0], X[:, 1], bins=edges)
    with np.errstate(invalid="ignore", divide="ignore"):
        target = total / count
    span = float(np.nanmax(np.abs(target))) if np.isfinite(target).any() else 1.0
    return {
        "d": 2,
        "target": target,
        "box": (lo.astype(float), hi.astype(float)),
        "span": span,
        "grid": np.column_stack([gx.ravel(), gy.ravel()]),
    }


def function_state(net: TwoLayerNet, params: TwoLayerParams, data: dict) -> dict:
    """The learned function on the data's grid, and what to say when it is flat at the colour scale."""
    values = forward(net, params, data["grid"])[:, 0]
    if data["d"] == 1:
        return {"x": data["line_x"], "y": values}
    values = values.reshape(HEATMAP_CELLS, HEATMAP_CELLS)
    largest = float(np.abs(values).max())
    span = max(abs(data["span"]), 1e-12)
    note = ""
    if largest < 1e-3 * span:  # flat at this colour scale: say what it is, not a blank square
        note = "f ≡ 0: every neuron\nis dead on the data" if largest == 0 else f"f ≈ 0\nmax |f| = {largest:.0e}"
    elif float(values.max() - values.min()) < 1e-3 * span:  # flat, but not zero
        note = f"f is constant\n≈ {float(values.mean()):+.2g}"
    return {"values": values, "note": note}
