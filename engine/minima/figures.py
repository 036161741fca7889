"""PNG figures of the non-attracting-region experiments, drawn from the engine's result dataclasses."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from engine.landscape.slices import Slices
from engine.minima.descending_path import NonincreasingPath
from engine.minima.infinity import InfinityResult
from engine.minima.pipeline import Figure3


def _slices(path, s: Slices, title: str, n_curves: int = 500):
    fig = Figure(figsize=(5, 6))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(s.t, s.curves[:n_curves].T - s.L_star, lw=0.3, alpha=0.4)
    top.set_ylabel("L − L*")
    top.set_title(f"{title}: {len(s.curves)} random directions")
    bottom.plot(s.t, s.envelope - s.L_star, "k")
    bottom.axhline(0, color="r", lw=0.6)
    bottom.set_ylabel("min over directions − L*")
    bottom.set_xlabel("t")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _xy(path, xs, ys, xlabel, ylabel, title, labels=None, logy=False):
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    for i, (x, y) in enumerate(zip(xs, ys)):
        ax.plot(x, y, label=None if labels is None else labels[i])
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if labels:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def figure3(out_dir, fig3: Figure3):
    """(a) slices at the minimum, (b) degenerate path, (c) slices at the saddle, (d) B6 descent."""
    saddle, path = fig3.saddle, fig3.path
    if fig3.slices_min is not None:
        _slices(out_dir / "fig3a_minimum.png", fig3.slices_min, "(a) local minimum")
    if path is not None:
        fig = Figure(figsize=(5, 5))
        ax1, ax2 = fig.subplots(2, 1, sharex=True)
        ax1.plot(path.lam, path.loss - fig3.construction.steps[-1].loss)
        ax1.set(ylabel="L − L*", title="(b) degenerate path: last split's λ")
        ax2.plot(path.lam, path.hessian_min)
        ax2.axhline(0, color="r", lw=0.6)
        ax2.set(xlabel="λ", ylabel="min Hessian eigenvalue")
        fig.tight_layout()
        fig.savefig(out_dir / "fig3b_degenerate_path.png", dpi=110)
    if saddle.slices is not None:
        _slices(out_dir / "fig3c_saddle.png", saddle.slices, f"(c) saddle, λ = {saddle.probe.lam:g}")
    _xy(
        out_dir / "fig3d_descent.png",
        [saddle.descent.t],
        [saddle.descent.loss],
        "t",
        "loss",
        "(d) loss along the B6 descent direction",
    )


def shallow_descent(out_dir, fig3: Figure3):
    d = fig3.saddle.descent
    _xy(
        out_dir / "descent.png",
        [d.t],
        [d.loss],
        "t",
        "loss",
        f"{'—'.join(map(str, fig3.construction.arch.widths))}, λ = {fig3.saddle.probe.lam:g}: B6 descent",
    )


def infinity(out_dir, r: InfinityResult):
    _xy(
        out_dir / "loss_vs_bias.png",
        [r.curve.b],
        [np.maximum(r.curve.loss_minus_Linf, 1e-300)],
        "shared bias b",
        "L − L∞",
        "loss approaches L∞ from above",
        logy=True,
    )
    gd = r.gd
    fig = Figure(figsize=(5, 5))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(gd.step, gd.loss_minus_Linf)
    ax1.set(
        ylabel="L − L∞",
        title=f"GD from b0 = {r.b0:g}" + ("" if gd.escape_step is None else f", escape at step {gd.escape_step}"),
    )
    ax2.plot(gd.step, gd.mean_bias)
    ax2.set(xlabel="step", ylabel="mean bias")
    fig.tight_layout()
    fig.savefig(out_dir / "gd_from_infinity.png", dpi=110)


def descending_path(out_dir, p: NonincreasingPath):
    _xy(
        out_dir / "path.png",
        [p.s, p.s],
        [p.loss_path, p.loss_straight],
        "path parameter (A gather | B re-point | C descend)",
        "loss",
        "non-increasing path vs straight segment",
        labels=["B11 path", "straight segment"],
    )
