"""The landscape toolkit as one job for the window: a network (the minima tab's, or a file read
here, off the GUI thread) and one mode — a filter-normalised plane, the optimizers' paths on
their PCA plane, the interpolation between two networks, or the Hessian's spectral density.

Each mode is the engine job ``main.py landscape`` runs (plane, trajectory_pca, interpolation,
density); this module only chooses one and names its result, so the window and the command line
show the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.landscape import networks
from engine.landscape.density import Density, density_job
from engine.landscape.interpolation import Interpolation, interpolation_job
from engine.landscape.plane import PlaneResult, plane_job
from engine.landscape.trajectory_pca import PCAPlane, pca_plane_job

MODES = ("plane", "pca", "interpolation", "density")


@dataclass(frozen=True)
class ToolkitSettings:
    mode: str = "plane"
    kind: str = "sum"  # the loss
    # plane
    points: int = 41
    extent: float = 1.0
    normalization: str = "filter"
    ignore: str = "none"
    seed: int = 0
    # PCA plane of trajectories
    steps: int = 200
    optimizers: tuple[str, ...] = ("gd", "adam")
    lr: float | None = None  # None: each optimizer's default for this loss
    # interpolation
    interp_points: int = 201
    # density
    probes: int = 10
    lanczos_steps: int = 80

    def __post_init__(self):
        if self.mode not in MODES:
            raise EngineInputError(f"unknown landscape mode {self.mode!r}; choose one of: {', '.join(MODES)}")


@dataclass(frozen=True, eq=False)
class ToolkitResult:
    mode: str
    network: networks.Network
    plane: PlaneResult | None = None
    pca: PCAPlane | None = None
    interpolation: Interpolation | None = None
    density: Density | None = None
    message: str = ""


def read_network_job(path, activation: str | None = None, data=None) -> Job[networks.Network]:
    """A network file read and checked on the job's thread (a state_dict's unpickler, data files)."""
    return (yield from wait_for(lambda stop: networks.read_network(path, activation or None, data or None), "reading"))


def toolkit_job(s: ToolkitSettings, network, second=None) -> Job[ToolkitResult]:
    """``network``: a ``networks.Network`` or a job giving one; ``second``: the other end of an
    interpolation (a flat θ of the same architecture, or a job giving a Network)."""
    if not isinstance(network, networks.Network):
        network = yield from subjob(network, 0.0, 0.05, "network: ")
    net = network
    yield Progress(0.05, f"{'—'.join(map(str, net.arch.widths))}, {net.arch.n_params} parameters")
    arch, theta, X, Y = net.arch, net.params, net.X, net.Y
    rest = lambda job, text: subjob(job, 0.05, 1.0, text)
    if s.mode == "plane":
        plane = yield from rest(
            plane_job(arch, theta, X, Y, s.points, s.extent, s.normalization, s.ignore, s.seed, s.kind), "plane: "
        )
        return ToolkitResult(s.mode, net, plane=plane, message=f"{s.points}×{s.points} plane, {s.normalization}")
    if s.mode == "pca":
        pca = yield from rest(
            pca_plane_job(arch, theta, X, Y, s.steps, s.optimizers, s.lr, s.kind, s.points, seed=s.seed), ""
        )
        return ToolkitResult(s.mode, net, pca=pca, message=f"{', '.join(s.optimizers)} on their PCA plane")
    if s.mode == "interpolation":
        if second is None:
            raise EngineInputError("interpolation needs a second network of the same architecture")
        if not isinstance(second, np.ndarray):
            other = yield from subjob(second, 0.05, 0.1, "second network: ")
            if other.arch.widths != arch.widths:
                raise EngineInputError(f"the second network is {other.arch.widths}; the first is {arch.widths}")
            second = other.params
        curve = yield from rest(interpolation_job(arch, theta, second, X, Y, s.interp_points, kind=s.kind), "")
        return ToolkitResult(s.mode, net, interpolation=curve, message=f"barrier {curve.barrier:.3g}")
    density = yield from rest(density_job(arch, theta, X, Y, s.probes, s.lanczos_steps, s.seed, s.kind), "density: ")
    return ToolkitResult(s.mode, net, density=density, message=f"tr H ≈ {density.trace:.4g}")
