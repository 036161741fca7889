"""The toolkit's files: plane.npz, plane.vts, interp.npz, density.npz, hessian.npz (docs/EXPORTS.md,
"Landscape toolkit" and "Any PyTorch model"). Plain arrays only, so a numpy script recomputes
every loss, norm and projection.

The command line (``main.py landscape``), the API's ``save`` and a GUI view write through these
functions; each returns the path it wrote. A network's layout is an ``Arch`` (paper B's MLPs) or a
module's loss (``ModuleLoss``, or anything with ``names``, ``shapes`` and ``batch_size``); for a
module the files also say which number of a flat vector is which parameter: ``param_names`` (the
module's ``named_parameters()`` order) and ``param_shapes`` (each as comma-separated sizes, "" for
a scalar) rebuild every tensor of ``theta``, ``d1``, ``d2``: split the flat vector at the
cumulative products of the shapes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.core.exports import fields
from engine.core.mlp import Arch
from engine.landscape import directions as D
from engine.landscape.density import Density
from engine.landscape.interpolation import Interpolation
from engine.landscape.module_hessian import ModuleHessian
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


def layout(loss) -> dict:
    """The arrays that name θ's pieces (``loss``: anything with ``names``, ``shapes``, ``batch_size``)."""
    return dict(
        param_names=np.array(loss.names),
        param_shapes=np.array([",".join(map(str, s)) for s in loss.shapes]),
        batch_size=np.int64(loss.batch_size),
    )


def _layout_arrays(network) -> dict:
    return {} if isinstance(network, Arch) else layout(network)


def save_plane(path, p: PlaneResult, network) -> Path:
    """The plane.npz file at ``path``: the plane's arrays, the filter norms of θ, d1 and d2
    (``*_filter_norms``: every filter of every tensor of ≥ 2 dimensions, in parameter order; a
    row of each W_l for an MLP, layer 1's rows first) and a module's layout arrays. ``network``:
    an ``Arch`` or a module's loss."""
    shapes = network if isinstance(network, Arch) else network.shapes
    vectors = (("theta", p.theta), ("d1", p.d1), ("d2", p.d2))
    norms = {f"{k}_filter_norms": D.filter_norms(shapes, v) for k, v in vectors}
    return _save(path, **_plane_arrays(p), **norms, **_layout_arrays(network))


def write_plane(out_dir, p: PlaneResult, network, vts: bool = True) -> list[Path]:
    """plane.npz (``save_plane``) and plane.vts in ``out_dir``."""
    out = [save_plane(Path(out_dir) / "plane.npz", p, network)]
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


def write_checkpoint_plane(out_dir, r: PCAPlane, loss, checkpoints, vts: bool = True) -> list[Path]:
    """plane.npz of ``--trajectory``: the PCA plane's arrays, the layout and the checkpoint files."""
    names = np.array([str(c) for c in checkpoints])
    return write_pca_plane(out_dir, r, vts, checkpoints=names, **layout(loss))


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


def write_hessian(out_dir, r: ModuleHessian, loss) -> Path:
    """hessian.npz (``save_hessian``) in ``out_dir``."""
    return save_hessian(Path(out_dir) / "hessian.npz", r, loss)


def save_hessian(path, r: ModuleHessian, loss) -> Path:
    """The hessian.npz file at ``path``: the top eigenpairs (and the bottom ones when asked for), the
    trace and its probes, the layout, the formed Hessian with its spectrum when it was formed, and
    the SLQ density's arrays (``density_*``, as density.npz names them) when it was asked for."""
    formed = {} if r.hessian is None else dict(hessian=r.hessian, spectrum=r.spectrum)
    if r.bottom_eigenvalues is not None:
        formed.update(
            bottom_eigenvalues=r.bottom_eigenvalues,
            bottom_eigenvectors=r.bottom_eigenvectors,
            bottom_residuals=r.bottom_residuals,
        )
    if r.density is not None:
        formed.update({f"density_{k}": v for k, v in density_arrays(r.density).items()})
    return _save(
        path,
        eigenvalues=r.eigenvalues,
        eigenvectors=r.eigenvectors,
        residuals=r.residuals,
        trace=r.trace,
        trace_se=r.trace_se,
        trace_samples=r.trace_samples,
        theta=r.theta,
        loss=r.loss,
        loss_kind=np.array(r.kind),
        n_samples=np.int64(r.n_samples),
        seed=np.int64(r.seed),
        tol=r.tol,
        n_hvp=np.int64(r.n_hvp),
        **formed,
        **layout(loss),
    )
