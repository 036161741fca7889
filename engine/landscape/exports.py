"""The toolkit's files: plane.npz, plane.vts, interp.npz, density.npz (docs/EXPORTS.md, "Landscape
toolkit"). Plain arrays only, so a numpy script recomputes every loss, norm and projection.

The command line (``main.py landscape``) and a GUI view write through these functions; each
returns the path it wrote.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.core.exports import fields
from engine.core.mlp import Arch
from engine.landscape import directions as D
from engine.landscape.density import Density
from engine.landscape.interpolation import Interpolation
from engine.landscape.plane import PlaneResult
from engine.landscape.trajectory_pca import PCAPlane
from engine.landscape.vtk import write_vts


def _save(path, **arrays) -> Path:
    path = Path(path)
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    return path


def _plane_arrays(p: PlaneResult) -> dict:
    return dict(
        **fields(p, "alpha", "beta", "loss", "theta", "d1", "d2", "L_star"),
        loss_kind=np.array(p.kind),
        normalization=np.array(p.normalization),
        ignore=np.array(p.ignore),
        seed=np.int64(p.seed),
        **persistence_arrays(p.loss),
    )


def persistence_arrays(loss: np.ndarray) -> dict:
    """The grid's 0-dimensional sublevel-set persistence (MATH.md C5) as ``persistence_*`` arrays:
    birth, death (+inf for the global minimum), birth_index and death_index (flat, row-major; −1
    for the global's death). None for a grid with NaN or inf points, whose sublevel sets are
    undefined there."""
    from engine.landscape.persistence import persistence

    if not np.isfinite(loss).all():
        return {}
    pairs = persistence(loss)
    names = ("birth", "death", "birth_index", "death_index")
    return {f"persistence_{name}": getattr(pairs, name) for name in names}


def write_plane(out_dir, p: PlaneResult, arch: Arch, vts: bool = True) -> list[Path]:
    """plane.npz (and plane.vts). Filter norms ride along: ``theta_filter_norms``, ``d1_filter_norms``,
    ``d2_filter_norms``, every layer's row norms concatenated (layer 1's rows first)."""
    norms = {
        f"{k}_filter_norms": np.concatenate(D.filter_norms(arch, v))
        for k, v in (("theta", p.theta), ("d1", p.d1), ("d2", p.d2))
    }
    out = [_save(Path(out_dir) / "plane.npz", **_plane_arrays(p), **norms)]
    if vts:
        out.append(write_vts(Path(out_dir) / "plane.vts", p.alpha, p.beta, p.loss))
    return out


def pca_plane_arrays(r: PCAPlane) -> dict:
    """What plane.npz holds in --train mode: the plane's arrays plus the first run's trajectory and
    every run's."""
    first = r.runs[0]
    arrays = dict(
        _plane_arrays(r.plane),
        trajectory=first.params,
        trajectory_loss=first.loss,
        center=r.center,
        pca_components=r.components,
        pca_explained=r.explained,
        path_xy=r.paths[0],
        optimizers=np.array([run.optimizer for run in r.runs]),
        lrs=np.array([run.lr for run in r.runs]),
        paths_xy=r.paths,
        trajectory_losses=np.stack([run.loss for run in r.runs]),
    )
    if len(r.runs) > 1:
        arrays["trajectories"] = np.stack([run.params for run in r.runs])
    return arrays


def write_pca_plane(out_dir, r: PCAPlane, vts: bool = True, **extra) -> list[Path]:
    """plane.npz in --train mode (``pca_plane_arrays`` and ``extra`` arrays), and plane.vts."""
    out = [_save(Path(out_dir) / "plane.npz", **pca_plane_arrays(r), **extra)]
    if vts:
        out.append(write_vts(Path(out_dir) / "plane.vts", r.plane.alpha, r.plane.beta, r.plane.loss))
    return out


def interpolation_arrays(r: Interpolation) -> dict:
    """What interp.npz holds (with the accuracy along the line for a classifier)."""
    extra = {}
    if r.accuracy is not None:
        extra = dict(accuracy=r.accuracy, accuracy_a=r.accuracy_a, accuracy_b=r.accuracy_b)
    return dict(
        **fields(r, "alpha", "loss", "theta_a", "theta_b", "loss_a", "loss_b"), loss_kind=np.array(r.kind), **extra
    )


def write_interpolation(out_dir, r: Interpolation, **extra) -> Path:
    """interp.npz (``interpolation_arrays`` and ``extra`` arrays)."""
    return _save(Path(out_dir) / "interp.npz", **interpolation_arrays(r), **extra)


def density_arrays(r: Density) -> dict:
    """What density.npz holds."""
    return dict(
        **fields(r, "nodes", "weights", "grid", "density", "sigma", "steps_done", "alphas", "betas"),
        n_params=np.int64(r.n_params),
    )


def write_density(out_dir, r: Density) -> Path:
    return _save(Path(out_dir) / "density.npz", **density_arrays(r))
