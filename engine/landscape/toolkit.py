"""The landscape toolkit as one job for the window: a network (the minima tab's, or a file read
here, off the GUI thread) and one mode — a filter-normalised plane, the optimizers' paths on
their PCA plane, the interpolation between two networks, or the Hessian's spectral density.

Each mode is the engine job ``main.py landscape`` runs (plane, trajectory_pca, interpolation,
density); this module only chooses one and names its result, so the window and the command line
show the same numbers. A file that is not one of paper B's MLPs (a .pt2 of any network, a
state_dict with its ``package.module:factory``) goes to engine.landscape.module_toolkit, the
module toolkit's jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.io.module_network import ModuleNetwork
from engine.landscape import networks
from engine.landscape.density import Density, density_job
from engine.landscape.interpolation import Interpolation, interpolation_job
from engine.landscape.module_hessian import ModuleHessian
from engine.landscape.module_toolkit import loss_kind, module_mode_job, read_any_network
from engine.landscape.plane import PlaneResult, plane_job
from engine.landscape.trajectory_pca import PCAPlane, pca_plane_job

MODES = ("plane", "pca", "interpolation", "density")


@dataclass(frozen=True)
class ToolkitSettings:
    mode: str = "plane"
    kind: str = "sum"  # the loss; "auto": cross-entropy for a module with integer labels, else "sum"
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
    network: networks.Network | ModuleNetwork
    plane: PlaneResult | None = None
    pca: PCAPlane | None = None
    interpolation: Interpolation | None = None
    density: Density | None = None
    hessian: ModuleHessian | None = None  # a module's density comes with its top eigenvalues and trace
    message: str = ""


@dataclass(frozen=True)
class NetworkFile:
    """A network file as the window names it: ``path`` with the ``data`` it is evaluated on, a
    state_dict's ``activation`` (paper B's MLPs) or ``model`` factory (any module)."""

    path: str
    activation: str = ""
    data: str = ""
    model: str = ""

    def read(self):
        return read_any_network(self.path, self.activation, self.data, self.model)


def read_network_job(path, activation: str | None = None, data=None, model_spec=None) -> Job:
    """A network file read and checked on the job's thread (a state_dict's unpickler, data files):
    paper B's MLP, or any module (module_toolkit.read_any_network)."""
    file = NetworkFile(str(path), activation or "", data or "", model_spec or "")
    return (yield from wait_for(lambda stop: file.read(), "reading"))


def toolkit_job(s: ToolkitSettings, network, second=None, checkpoints=()) -> Job[ToolkitResult]:
    """``network``: a ``networks.Network`` or ``ModuleNetwork``, a ``NetworkFile`` or a job giving
    one; ``second``: the other end of an interpolation (a ``NetworkFile`` of the same network, or
    for an MLP a flat θ of its architecture); ``checkpoints``: a module's training state_dicts
    (paths, oldest first) for the PCA mode (an MLP's optimizers are trained instead)."""
    if isinstance(network, NetworkFile):
        network = read_network_job(network.path, network.activation, network.data, network.model)
    if not isinstance(network, (networks.Network, ModuleNetwork)):
        network = yield from subjob(network, 0.0, 0.05, "network: ")
    net = network
    if isinstance(net, ModuleNetwork):
        if second is not None and not isinstance(second, NetworkFile):
            raise EngineInputError("a module is interpolated to a second file (.pt2 or state_dict) of the same model")
        fields = yield from module_mode_job(s, net, second and second.path, checkpoints)
        return ToolkitResult(s.mode, net, **fields)
    if checkpoints:
        raise EngineInputError("checkpoints are projected for a PyTorch module (.pt2); an MLP's optimizers are trained")
    if s.mode == "plane" and s.normalization == "hessian":
        raise EngineInputError("Hessian directions are drawn for a PyTorch module (.pt2); an MLP's plane is random")
    s = replace(s, kind=loss_kind(s.kind, net))
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
        if isinstance(second, NetworkFile):
            other = yield from subjob(wait_for(lambda stop: second.read(), "reading"), 0.05, 0.1, "second network: ")
            if not isinstance(other, networks.Network) or other.arch.widths != arch.widths:
                widths = getattr(getattr(other, "arch", None), "widths", "not an MLP")
                raise EngineInputError(f"the second network is {widths}; the first is {arch.widths}")
            second = other.params
        curve = yield from rest(interpolation_job(arch, theta, second, X, Y, s.interp_points, kind=s.kind), "")
        return ToolkitResult(s.mode, net, interpolation=curve, message=f"barrier {curve.barrier:.3g}")
    density = yield from rest(density_job(arch, theta, X, Y, s.probes, s.lanczos_steps, s.seed, s.kind), "density: ")
    return ToolkitResult(s.mode, net, density=density, message=f"tr H ≈ {density.trace:.4g}")
