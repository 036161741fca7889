"""The module toolkit's files: plane.npz, interp.npz as engine.landscape.exports writes them, hessian.npz, plus
what says which number of a flat vector is which parameter (docs/EXPORTS.md, "Any PyTorch model").

``param_names`` (the module's ``named_parameters()`` order) and ``param_shapes`` (each as
comma-separated sizes, "" for a scalar) rebuild every tensor of ``theta``, ``d1``, ``d2``:
split the flat vector at the cumulative products of the shapes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.landscape import exports
from engine.landscape import module_directions as MD
from engine.landscape.interpolation import Interpolation
from engine.landscape.module_hessian import ModuleHessian
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import PlaneResult
from engine.landscape.trajectory_pca import PCAPlane
from engine.landscape.vtk import write_vts


def layout(loss: ModuleLoss) -> dict:
    """The arrays that name θ's pieces (``loss``: anything with ``names``, ``shapes``, ``batch_size``)."""
    return dict(
        param_names=np.array(loss.names),
        param_shapes=np.array([",".join(map(str, s)) for s in loss.shapes]),
        batch_size=np.int64(loss.batch_size),
    )


def save_plane(path, p: PlaneResult, loss: ModuleLoss) -> Path:
    """The plane.npz file at ``path``: the plane's arrays, the layout, and the filter norms of θ, d1
    and d2 (``*_filter_norms``: every filter of every tensor of ≥ 2 dimensions, in parameter order)."""
    norms = {
        f"{k}_filter_norms": MD.filter_norms(loss.shapes, v)
        for k, v in (("theta", p.theta), ("d1", p.d1), ("d2", p.d2))
    }
    return exports._save(path, **exports._plane_arrays(p), **norms, **layout(loss))


def write_plane(out_dir, p: PlaneResult, loss: ModuleLoss, vts: bool = True) -> list[Path]:
    """plane.npz (``save_plane``) and plane.vts in ``out_dir``."""
    out = [save_plane(Path(out_dir) / "plane.npz", p, loss)]
    if vts:
        out.append(write_vts(Path(out_dir) / "plane.vts", p.alpha, p.beta, p.loss))
    return out


def write_checkpoint_plane(out_dir, r: PCAPlane, loss: ModuleLoss, checkpoints, vts: bool = True) -> list[Path]:
    """plane.npz of ``--trajectory``: the PCA plane's arrays, the layout and the checkpoint files."""
    names = np.array([str(c) for c in checkpoints])
    return exports.write_pca_plane(out_dir, r, vts, checkpoints=names, **layout(loss))


def write_interpolation(out_dir, r: Interpolation, loss: ModuleLoss) -> Path:
    return exports.write_interpolation(out_dir, r, **layout(loss))


def write_hessian(out_dir, r: ModuleHessian, loss: ModuleLoss) -> Path:
    """hessian.npz (``save_hessian``) in ``out_dir``."""
    return save_hessian(Path(out_dir) / "hessian.npz", r, loss)


def save_hessian(path, r: ModuleHessian, loss: ModuleLoss) -> Path:
    """The hessian.npz file at ``path``: the top eigenpairs (and the bottom ones when asked for), the
    trace and its probes, the layout, the formed Hessian with its spectrum when it was formed, and
    the SLQ density's arrays
    (``density_*``, as density.npz names them) when it was asked for."""
    formed = {} if r.hessian is None else dict(hessian=r.hessian, spectrum=r.spectrum)
    if r.bottom_eigenvalues is not None:
        formed.update(
            bottom_eigenvalues=r.bottom_eigenvalues,
            bottom_eigenvectors=r.bottom_eigenvectors,
            bottom_residuals=r.bottom_residuals,
        )
    if r.density is not None:
        formed.update({f"density_{k}": v for k, v in exports.density_arrays(r.density).items()})
    return exports._save(
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
