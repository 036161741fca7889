"""The topological-obstruction figures ``reproduce`` writes: toy.png, breast_cancer.png, probability.png."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from engine.topology.quadrics import hyperbola, reduced_coordinates
from engine.topology.training import Trajectory
from engine.topology.width_sweep import SweepResult


def toy_figure(path: Path, trajectories: dict[str, Trajectory], mean_y2: float) -> None:
    """Loss and drift of c_k against time for every run; the GD runs in reduced coordinates."""
    fig = Figure(figsize=(11, 3.6))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    for key, tr in trajectories.items():
        ls = "-" if key.endswith("gd") else "--"
        ax1.semilogy(tr.time, tr.loss, label=key, ls=ls)
        ax2.plot(tr.time, (tr.c - tr.c[0]) / np.abs(tr.c[0]), ls=ls)
    ax1.axhline(mean_y2, color="gray", lw=0.8)
    ax1.set(xlabel="time t = step·h", ylabel="MSE", title="loss")
    ax1.legend(fontsize=7)
    ax2.set(xlabel="time t = step·h", ylabel="(c_k(t) − c_k(0)) / |c_k(0)|", title="drift of c_k")
    for c in (-0.1, 0.1):
        for r, v in hyperbola(c, 1.5, 200):
            ax3.plot(r, v, color="lightgray", lw=0.8)
    for key in ("obstructed_gd", "free_gd"):
        r, v = reduced_coordinates(trajectories[key].W1, trajectories[key].W2)
        for k in range(r.shape[1]):
            ax3.plot(r[:, k], v[:, k], label=f"{key} neuron {k}")
            ax3.plot(r[0, k], v[0, k], "k.")
    ax3.set(xlabel="‖w_k‖", ylabel="v_k", title="reduced coordinates (GD)")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def breast_cancer_figure(path: Path, result: SweepResult) -> None:
    """Mean test BCE as an (l, l₊) heatmap, and against the fraction l₊ / l."""
    ls, mean = result.ls, result.mean
    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    im = ax1.imshow(
        np.ma.masked_invalid(mean),
        origin="lower",
        aspect="auto",
        cmap="viridis",
        extent=(-0.5, mean.shape[1] - 0.5, ls[0] - 0.5, ls[-1] + 0.5),
    )
    fig.colorbar(im, ax=ax1, label="mean test BCE")
    ax1.set(
        xlabel="l+ (non-pathological neurons)",
        ylabel="l (hidden neurons)",
        title=f"signs: {result.settings.sign_policy}",
    )
    for a, l in enumerate(ls):
        lp = np.arange(l + 1)
        ax2.plot(lp / l, mean[a, : l + 1], "o-", ms=3, label=f"l={l}")
    ax2.set(xlabel="l+ / l", ylabel="mean test BCE", title="vs fraction of free neurons")
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def probability_figure(
    path: Path, ds, ls, closed: dict[str, np.ndarray], torch_ds, torch_ls, torch_p: np.ndarray, torch_se: np.ndarray
) -> None:
    """Closed-form maps per scheme, and the PyTorch default init's Monte Carlo against l."""
    fig = Figure(figsize=(13, 4))
    axes = fig.subplots(1, 3)
    for ax, (scheme, grid) in zip(axes, closed.items()):
        im = ax.imshow(
            grid,
            origin="lower",
            aspect="auto",
            vmin=0,
            vmax=1,
            cmap="magma",
            extent=(ls[0] - 0.5, ls[-1] + 0.5, ds[0] - 0.5, ds[-1] + 0.5),
        )
        ax.set(xlabel="l (hidden neurons)", ylabel="d (inputs)", title=f"P[obstruction], {scheme}")
    fig.colorbar(im, ax=axes[1])
    for a, d in enumerate(torch_ds):
        axes[2].errorbar(torch_ls, torch_p[a], yerr=2 * torch_se[a], fmt="o-", ms=3, label=f"d={d}")
    axes[2].plot(
        torch_ls,
        closed["kaiming_normal"][list(ds).index(30), [list(ls).index(l) for l in torch_ls]],
        "k--",
        label="Kaiming, d=30",
    )
    axes[2].set(xscale="log", xlabel="l", ylabel="P[obstruction]", title="PyTorch default init (MC)")
    axes[2].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
