"""What the API returns: the engine's results with the names of θ's pieces, a file and a figure.

Each type is the engine's own result (``engine.landscape``) with three things added:

- ``param_names``, ``param_shapes`` and ``batch_size``: which numbers of a flat vector (θ, d1,
  d2, an eigenvector) are which parameter, in the model's ``named_parameters()`` order;
- ``save(path)``: exactly the file the command line writes (plane.npz, interp.npz, hessian.npz;
  docs/EXPORTS.md), which ``landscape_lens.load`` reads back array for array;
- ``plot()``: a matplotlib ``Figure`` (made without pyplot, so a notebook shows it once and no
  window opens).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from engine.core.errors import EngineInputError
from engine.landscape import exports
from engine.landscape.density import Density
from engine.landscape.interpolation import Interpolation as InterpolationResult
from engine.landscape.module_hessian import ModuleHessian
from engine.landscape.plane import PlaneResult
from engine.landscape.trajectory_pca import PCAPlane, Trajectory


@dataclass(frozen=True, eq=False, kw_only=True)
class Layout:
    """Which numbers of a flat vector are which parameter."""

    param_names: tuple[str, ...] = ()
    param_shapes: tuple[tuple[int, ...], ...] = ()
    batch_size: int = 0

    def _layout(self) -> SimpleNamespace:
        return SimpleNamespace(names=self.param_names, shapes=self.param_shapes, batch_size=self.batch_size)

    def parameters(self, flat) -> dict[str, np.ndarray]:
        """A flat vector (θ, a direction, an eigenvector) split into {name: array of its shape}."""
        flat = np.asarray(flat)
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.param_shapes]
        if flat.shape != (sum(sizes),):
            raise EngineInputError(f"a flat vector has shape {flat.shape}; the model has {sum(sizes)} parameters")
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        return {n: p.reshape(s) for n, p, s in zip(self.param_names, parts, self.param_shapes)}


def layout_of(loss) -> dict:
    """The ``Layout`` fields of an engine loss (``ModuleLoss``)."""
    return dict(param_names=tuple(loss.names), param_shapes=tuple(loss.shapes), batch_size=int(loss.batch_size))


def _with_layout(cls, result, loss, **extra):
    """``cls`` (an engine result type with ``Layout``) built from ``result``'s fields."""
    values = {f.name: getattr(result, f.name) for f in fields(result)}
    return cls(**{**values, **layout_of(loss), **extra})


@dataclass(frozen=True, eq=False)
class Plane(PlaneResult, Layout):
    """``loss[i, j]`` = L(θ + α_i d1 + β_j d2) over an N × N grid (docs/MATH.md B12.2).

    Attributes: ``alpha``, ``beta`` (N,), ``loss`` (N, N), ``theta``, ``d1``, ``d2`` (P,), ``L_star``
    (L(θ)), ``kind`` (the loss), ``normalization`` (how d1 and d2 were made), ``ignore``, ``seed``,
    and the layout."""

    @property
    def directions(self) -> str:
        return self.normalization

    def save(self, path) -> Path:
        """plane.npz at ``path`` (docs/EXPORTS.md, "Any PyTorch model")."""
        return exports.save_plane(path, self, self._layout())

    def plot(self, levels: int = 30):
        """Contours over the heatmap, θ marked at the centre; a matplotlib Figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6, 5), layout="constrained")
        ax = fig.add_subplot()
        norm, contour_levels = _loss_scale(self.loss, levels)
        mesh = ax.pcolormesh(self.alpha, self.beta, self.loss.T, shading="gouraud", cmap="viridis", norm=norm)
        if contour_levels is not None:
            ax.contour(self.alpha, self.beta, self.loss.T, levels=contour_levels, colors="white", linewidths=0.6)
        ax.plot([0], [0], marker="*", color="red", markersize=12, linestyle="none", label=f"θ: L = {self.L_star:.4g}")
        fig.colorbar(mesh, ax=ax, label=f"loss ({self.kind})")
        ax.set(xlabel="α (d1)", ylabel="β (d2)", title=f"{self.normalization or 'given'} directions, seed {self.seed}")
        ax.legend(loc="upper right")
        return fig


@dataclass(frozen=True, eq=False)
class Interpolation(InterpolationResult, Layout):
    """L((1 − α) θ_a + α θ_b) along the line through two models, with the accuracy for a
    classifier (docs/MATH.md B12.4). ``barrier`` and ``accuracy_barrier`` as the engine's."""

    def save(self, path) -> Path:
        """interp.npz at ``path`` (docs/EXPORTS.md)."""
        return exports._save(path, **exports.interpolation_arrays(self), **exports.layout(self._layout()))

    def plot(self):
        """The loss along the line (and the accuracy on a second axis); a matplotlib Figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.add_subplot()
        ax.plot(self.alpha, self.loss, color="C0", label="loss")
        ax.plot([0, 1], [self.loss_a, self.loss_b], "o", color="C0")
        ax.set(xlabel="α  (0: model a, 1: model b)", ylabel=f"loss ({self.kind})", title=f"barrier {self.barrier:.4g}")
        if self.accuracy is not None:
            twin = ax.twinx()
            twin.plot(self.alpha, self.accuracy, color="C1", label="accuracy")
            twin.set_ylabel("accuracy", color="C1")
        return fig


@dataclass(frozen=True, eq=False)
class Hessian(ModuleHessian, Layout):
    """The Hessian's measures at θ (docs/MATH.md C2, C4): ``eigenvalues`` (top, descending) with
    ``eigenvectors`` and ``residuals``; ``bottom_eigenvalues`` (ascending) when asked; ``trace``
    and ``trace_se``; ``density`` (SLQ) when asked; ``hessian`` and ``spectrum`` when formed."""

    def save(self, path) -> Path:
        """hessian.npz at ``path`` (docs/EXPORTS.md), the density's arrays in it when there is one."""
        return exports.save_hessian(path, self, self._layout())

    def plot(self):
        """The extreme eigenvalues with their error estimates, and the density when there is one."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9 if self.density is not None else 5, 4), layout="constrained")
        axes = fig.subplots(1, 2 if self.density is not None else 1, squeeze=False)[0]
        ax = axes[0]
        k = len(self.eigenvalues)
        ax.errorbar(np.arange(1, k + 1), self.eigenvalues, yerr=self.residuals, fmt="o", color="C0", label="top")
        bottom = getattr(self, "bottom_eigenvalues", None)
        if bottom is not None:
            errors = getattr(self, "bottom_residuals", None)
            ax.errorbar(-np.arange(1, len(bottom) + 1), bottom, yerr=errors, fmt="o", color="C3", label="bottom")
        ax.axhline(0, color="grey", linewidth=0.6)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set(xlabel="rank: 1 the largest, −1 the smallest", ylabel="eigenvalue")
        ax.set_title(f"tr H ≈ {self.trace:.4g} ± {self.trace_se:.2g}")
        ax.legend()
        if self.density is not None:
            axes[1].semilogy(self.density.grid, np.maximum(self.density.density, 1e-12), color="C2")
            axes[1].set(xlabel="eigenvalue", ylabel="density (SLQ)")
        return fig


@dataclass(frozen=True, eq=False)
class TrajectoryPlane(PCAPlane, Layout):
    """Checkpoints on their PCA plane (docs/MATH.md B12.3): ``plane`` (a Plane of the loss around
    the last checkpoint), ``paths`` (1, T, 2) the checkpoints' coordinates, ``runs[0].loss`` each
    checkpoint's loss, ``explained`` the two components' explained variance."""

    @property
    def path(self) -> np.ndarray:
        """(T, 2): each checkpoint's coordinates on the plane, oldest first."""
        return self.paths[0]

    @property
    def path_loss(self) -> np.ndarray:
        return self.runs[0].loss

    def save(self, path) -> Path:
        """plane.npz at ``path`` as ``--trajectory`` writes it (docs/EXPORTS.md)."""
        return exports._save(path, **exports.pca_plane_arrays(self), **exports.layout(self._layout()))

    def plot(self, levels: int = 30):
        """Contours of the loss with the checkpoints' path; a matplotlib Figure."""
        from matplotlib.figure import Figure

        p = self.plane
        fig = Figure(figsize=(6, 5), layout="constrained")
        ax = fig.add_subplot()
        norm, contour_levels = _loss_scale(p.loss, levels)
        mesh = ax.contourf(p.alpha, p.beta, p.loss.T, levels=contour_levels or levels, cmap="viridis", norm=norm)
        ax.plot(self.path[:, 0], self.path[:, 1], "-o", color="white", markersize=3, label="checkpoints")
        ax.plot(*self.path[-1], marker="*", color="red", markersize=12, linestyle="none", label="last")
        fig.colorbar(mesh, ax=ax, label=f"loss ({p.kind})", format="%.3g")
        e = self.explained
        ax.set(xlabel=f"PC 1 ({e[0]:.1%})", ylabel=f"PC 2 ({e[1]:.1%})", title=f"{len(self.path)} checkpoints")
        ax.legend(loc="upper right")
        return fig


def _loss_scale(loss: np.ndarray, levels: int):
    """(colour norm, contour levels) for a loss grid: logarithmic when its finite values are
    positive and span more than a decade (a plane's far corners otherwise flatten its centre into
    one colour), linear otherwise; no levels for a constant grid."""
    from matplotlib.colors import LogNorm

    finite = loss[np.isfinite(loss)]
    if finite.size == 0 or np.ptp(finite) == 0:
        return None, None
    lo, hi = float(finite.min()), float(finite.max())
    if lo > 0 and hi / lo > 10:
        return LogNorm(lo, hi), list(np.geomspace(lo, hi, levels))
    return None, list(np.linspace(lo, hi, levels))


# ------------------------------------------------------------------ reading files back
def load(path):
    """The result a ``save`` (or the command line) wrote: a ``Plane``, ``TrajectoryPlane``,
    ``Interpolation`` or ``Hessian``, told apart by the arrays the file holds.

    Raises
    ------
    EngineInputError
        For a file that is none of these, or unreadable, in one line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise EngineInputError(f"path: a {type(path).__name__}; expected the path of a saved result")
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            a = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise EngineInputError(f"{path}: no such file") from None
    except Exception as error:  # not a zip, a truncated one, a corrupted member (zlib, CRC), a pickle
        raise EngineInputError(f"{path}: not a readable .npz of arrays ({type(error).__name__}: {error})") from None
    layout = _read_layout(a)
    if "eigenvalues" in a:
        return _hessian(a, layout)
    if "pca_components" in a:
        return _trajectory(a, layout)
    if {"alpha", "beta", "d1", "d2"} <= set(a):
        return Plane(**_plane_fields(a), **layout)
    if "theta_a" in a:
        return _interpolation(a, layout)
    raise EngineInputError(f"{path}: holds none of plane.npz, interp.npz, hessian.npz (found {', '.join(sorted(a))})")


def _read_layout(a: dict) -> dict:
    shapes = tuple(tuple(int(n) for n in str(s).split(",") if n) for s in a.get("param_shapes", ()))
    return dict(
        param_names=tuple(str(n) for n in a.get("param_names", ())),
        param_shapes=shapes,
        batch_size=int(a.get("batch_size", 0)),
    )


def _plane_fields(a: dict) -> dict:
    return dict(
        alpha=a["alpha"],
        beta=a["beta"],
        loss=a["loss"],
        theta=a["theta"],
        d1=a["d1"],
        d2=a["d2"],
        L_star=float(a["L_star"]),
        kind=str(a["loss_kind"]),
        normalization=str(a["normalization"]),
        ignore=str(a["ignore"]),
        seed=int(a["seed"]),
    )


def _trajectory(a: dict, layout: dict) -> TrajectoryPlane:
    plane = Plane(**_plane_fields(a), **layout)
    runs = tuple(
        Trajectory(str(name), float(lr), a["trajectories"][i] if "trajectories" in a else a["trajectory"], losses)
        for i, (name, lr, losses) in enumerate(zip(a["optimizers"], a["lrs"], a["trajectory_losses"]))
    )
    return TrajectoryPlane(plane, runs, a["center"], a["pca_components"], a["pca_explained"], a["paths_xy"], **layout)


def _interpolation(a: dict, layout: dict) -> Interpolation:
    accuracy = a.get("accuracy")
    return Interpolation(
        a["alpha"],
        a["loss"],
        a["theta_a"],
        a["theta_b"],
        float(a["loss_a"]),
        float(a["loss_b"]),
        str(a["loss_kind"]),
        accuracy,
        None if accuracy is None else float(a["accuracy_a"]),
        None if accuracy is None else float(a["accuracy_b"]),
        **layout,
    )


def _density(a: dict) -> Density | None:
    if "density_nodes" not in a:
        return None
    d = {k.removeprefix("density_"): v for k, v in a.items() if k.startswith("density_")}
    return Density(
        d["nodes"],
        d["weights"],
        d["grid"],
        d["density"],
        float(d["sigma"]),
        int(d["n_params"]),
        d["steps_done"],
        d["alphas"],
        d["betas"],
    )


def _hessian(a: dict, layout: dict) -> Hessian:
    values = {f.name: None for f in fields(ModuleHessian)}
    values.update(
        param_names=layout["param_names"],
        param_shapes=layout["param_shapes"],
        theta=a["theta"],
        loss=float(a["loss"]),
        eigenvalues=a["eigenvalues"],
        eigenvectors=a["eigenvectors"],
        residuals=a["residuals"],
        trace=float(a["trace"]),
        trace_se=float(a["trace_se"]),
        trace_samples=a["trace_samples"],
        hessian=a.get("hessian"),
        spectrum=a.get("spectrum"),
        density=_density(a),
        kind=str(a["loss_kind"]),
        n_samples=int(a["n_samples"]),
        batch_size=layout["batch_size"],
        seed=int(a["seed"]),
        tol=float(a["tol"]),
        n_hvp=int(a["n_hvp"]),
        seconds=float("nan"),
    )
    for name in ("bottom_eigenvalues", "bottom_eigenvectors", "bottom_residuals"):
        if name in values:
            values[name] = a.get(name)
    return Hessian(**values)
