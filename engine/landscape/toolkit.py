"""The landscape toolkit as one job for the window: a network (the minima tab's, or a file read
here, off the GUI thread) and one mode — a filter-normalised plane, the optimizers' paths on
their PCA plane, the interpolation between two networks, or the Hessian's spectral density.

Each mode is the engine job ``main.py landscape`` runs (plane, trajectory_pca, interpolation,
density); this module only chooses one and names its result, so the window and the command line
show the same numbers. A file that is not one of paper B's MLPs (a .pt2 of any network, a
state_dict with its ``package.module:factory``) goes to ``module_mode_job``: the same four modes
on any module, the operations the command line and the API run (engine.landscape.operations):

- plane: ``operations.plane_job`` (``--plane N --directions filter|layer|random|hessian|
  hessian-extremes [--ignore biasbn]``); "hessian-extremes" also computes a random filter plane
  of the same extent beside it, the share of random directions that dip below L(θ)
  (``engine.landscape.dips``) and the point's verdict (``extremes_job``, an MLP's too);
- pca: the user's training checkpoints on their PCA plane, ``operations.trajectory_job``
  (``--trajectory CKPT …``); a module is not trained here;
- interpolation: ``operations.interpolation_job`` to a second model, with the accuracy along the
  line for a classifier (``--interpolate MODEL2``);
- density: ``operations.hessian_job`` with its SLQ density (``--hessian --density``), the top
  eigenvalues and the Hutchinson trace (``TRACE_PROBES`` probes) beside it; the Hessian is not
  formed for the window.

Every file is read and checked, and the loss built (one forward pass), before the mode's work
starts; the reading runs on a helper thread so the job keeps yielding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.io.module_network import ModuleNetwork, check_state_dict, read_checkpoint, read_module_network
from engine.io.pt2_program import read_exported_module
from engine.landscape import dips as DIPS
from engine.landscape import networks, operations
from engine.landscape.density import Density, density_job
from engine.landscape.interpolation import Interpolation, interpolation_job
from engine.landscape.module_hessian import (
    ExtremeDirections,
    ModuleHessian,
    check_options,
    hessian_extreme_directions_job,
)
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import MAX_MODULE_GRID, MLPLoss, PlaneResult, check_grid
from engine.landscape.trajectory_pca import PCAPlane, pca_plane_job

MODES = ("plane", "pca", "interpolation", "density")


TOP_K = 3  # eigenvalues shown beside the density
# Hutchinson probes for the trace beside it (the command line's --hessian default): one product
# each, where the density's probes cost a Lanczos run each; a few probes' standard error is itself
# too noisy to say how far the trace may be off.
TRACE_PROBES = 100


def read_any_network(path, activation=None, data=None, model_spec=None):
    """Paper B's flat MLP when its readers take the file (an app .npz, a state_dict of Linear
    layers, a .pt2 chain of them) and no ``model_spec`` is given; otherwise the file as any
    nn.Module with its data (``engine.io.module_network``)."""
    exported = Path(path).suffix.lower() == ".pt2"
    if not (model_spec or exported):
        return networks.read_network(path, activation or None, data or None)
    if not data:
        raise EngineInputError(f"{path}: a PyTorch model needs data: D.npz (X batch first, Y) or a .csv")
    if exported and not model_spec:
        try:
            return networks.read_network(path, activation or None, data)
        except EngineInputError:
            pass  # not a chain of Linear layers: the module reader says why, if it cannot read it either
    return read_module_network(path, data, model_spec or None)


def read_end_state(path, net: ModuleNetwork) -> dict:
    """The state of a second copy of ``net.module``: an exported graph's parameters and buffers
    (no data needed, nothing run), or a state_dict read with ``weights_only=True``; its keys and
    shapes checked against the module's."""
    if Path(path).suffix.lower() == ".pt2":
        return check_state_dict(path, read_exported_module(path).module.state_dict(), net.module)
    return read_checkpoint(path, net)


def loss_kind(kind: str, net) -> str:
    """``kind``, or for "auto" the command line's default: cross-entropy for a module whose Y
    holds integer labels, the summed squared error otherwise (and always for paper B's MLPs)."""
    if kind != "auto":
        return kind
    return "cross-entropy" if isinstance(net, ModuleNetwork) and net.Y.dtype.kind in "iu" else "sum"


def module_mode_job(s, net: ModuleNetwork, second: str | None = None, checkpoints: Sequence[str] = ()) -> Job[dict]:
    """Job: ``s.mode`` (an engine.landscape.toolkit.ToolkitSettings) on ``net``; returns the
    ToolkitResult fields it fills (plane, pca, interpolation, density, hessian, message).
    ``second``: the interpolation's other model (.pt2 or state_dict); ``checkpoints``: the PCA
    mode's state_dicts, oldest first."""

    def prepare(stop):
        loss = ModuleLoss(net, loss_kind(s.kind, net))
        if s.mode in ("plane", "pca"):
            check_grid(s.points, s.extent, MAX_MODULE_GRID)
        if s.mode == "pca":
            if len(checkpoints) < 3:
                raise EngineInputError(
                    f"a module's PCA plane is that of its training checkpoints: give at least 3, got {len(checkpoints)}"
                )
            return loss, [read_checkpoint(path, net) for path in checkpoints]
        if s.mode == "interpolation":
            if not second:
                raise EngineInputError("interpolation needs a second model: a .pt2 or state_dict of the same module")
            return loss, read_end_state(second, net)
        if s.mode == "density":
            check_options(loss, TOP_K, TRACE_PROBES, s.probes, s.lanczos_steps)
        return loss, None

    loss, read = yield from subjob(wait_for(prepare, "reading"), 0.05, 0.1, "")
    yield Progress(0.1, f"{loss.n_params} parameters in {len(loss.names)} tensors, {loss.n_samples} samples")
    rest = lambda job, text: subjob(job, 0.1, 1.0, text)
    if s.mode == "plane" and s.normalization == EXTREMES:
        return (yield from rest(extremes_job(s, loss), ""))
    if s.mode == "plane":
        ignore = "biasbn" if s.ignore == "biases" else s.ignore
        plane = yield from rest(operations.plane_job(loss, s.points, s.extent, s.normalization, ignore, s.seed), "")
        message = f"{s.points}×{s.points} plane of {loss.n_params} parameters, {s.normalization}"
        return dict(plane=plane, message=message)
    if s.mode == "pca":
        pca = yield from rest(operations.trajectory_job(loss, read, s.points), "")
        return dict(pca=pca, message=f"{len(read)} checkpoints on their PCA plane")
    if s.mode == "interpolation":
        curve = yield from rest(operations.interpolation_job(loss, read, s.interp_points), "")
        accuracy = "" if curve.accuracy is None else f", accuracy barrier {curve.accuracy_barrier:.3g}"
        return dict(interpolation=curve, message=f"barrier {curve.barrier:.3g}{accuracy}")
    options = dict(top_k=TOP_K, probes=TRACE_PROBES, seed=s.seed, full=False)
    h = yield from rest(operations.hessian_job(loss, **options, density_probes=s.probes, steps=s.lanczos_steps), "")
    return dict(density=h.density, hessian=h, message=f"λ_max ≈ {h.eigenvalues[0]:.4g}, tr H ≈ {h.trace:.4g}")


EXTREMES = "hessian-extremes"  # the plane of the Hessian's extreme curvatures, beside a random one


def extremes_job(s, net) -> Job[dict]:
    """Job: the extreme-curvature plane (d1 the Hessian's bottom eigenvector, d2 its top), a random
    filter plane of the same extent and seed, and the share of ``s.dip_directions`` random filter
    directions that dip below L(θ); returns the ToolkitResult fields (plane, random_plane, dips,
    extremes, message). ``net``: a ``ModuleLoss`` (Lanczos on Hessian-vector products) or
    paper B's ``networks.Network`` (its Hessian formed whole, ``dips.mlp_extreme_directions``)."""
    if isinstance(net, networks.Network):
        arch, theta, X, Y = net.arch, net.params, net.X, net.Y
        found = yield from subjob(
            wait_for(lambda stop: DIPS.mlp_extreme_directions(arch, theta, X, Y, s.kind), "Hessian"), 0.0, 0.3, ""
        )
        plane_of = lambda normalization, d1=None, d2=None: operations.plane_job(  # noqa: E731
            MLPLoss(arch, theta, X, Y, s.kind), s.points, s.extent, normalization, s.ignore, s.seed, d1, d2
        )
        layout, ignore, evaluate = arch, s.ignore, DIPS.mlp_evaluator(arch, X, Y, s.kind)
    else:
        found = yield from subjob(hessian_extreme_directions_job(net, seed=s.seed), 0.0, 0.3, "extreme curvature: ")
        ignore = "biasbn" if s.ignore == "biases" else s.ignore
        plane_of = lambda normalization, d1=None, d2=None: operations.plane_job(  # noqa: E731
            net, s.points, s.extent, normalization, ignore, s.seed, d1, d2
        )
        layout, evaluate = net.shapes, DIPS.module_evaluator(net)
    plane = yield from subjob(plane_of(EXTREMES, found.d1, found.d2), 0.3, 0.55, "extreme plane: ")
    plane = replace(plane, normalization=EXTREMES)
    random = yield from subjob(plane_of("filter"), 0.55, 0.8, "random plane: ")
    dips = yield from subjob(
        DIPS.dips_job(
            evaluate, layout, plane.theta, plane.L_star, s.extent, s.dip_directions, "filter", ignore, s.seed
        ),
        0.8,
        1.0,
        "dips: ",
    )
    message = f"{found.verdict()}; {dips.text()}"
    return dict(plane=plane, random_plane=random, dips=dips, extremes=found, message=message)


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
    dip_directions: int = DIPS.DIP_DIRECTIONS  # the extreme plane's random directions counted for dips
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
    network: networks.Network | ModuleNetwork | None = None  # None: a result read from a file (``show``)
    plane: PlaneResult | None = None
    pca: PCAPlane | None = None
    interpolation: Interpolation | None = None
    density: Density | None = None
    hessian: ModuleHessian | None = None  # a module's density comes with its top eigenvalues and trace
    message: str = ""
    # the extreme-curvature plane's companions (normalization "hessian-extremes"): the random filter
    # plane of the same extent, the random directions' dips and the eigenpairs with the verdict
    random_plane: PlaneResult | None = None
    dips: DIPS.Dips | None = None
    extremes: ExtremeDirections | None = None


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
    paper B's MLP, or any module (``read_any_network``)."""
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
    if s.mode == "plane" and s.normalization == EXTREMES:
        check_grid(s.points, s.extent)
        return ToolkitResult(s.mode, net, **(yield from rest(extremes_job(s, net), "")))
    if s.mode == "plane":
        plane = yield from rest(
            operations.plane_job(
                MLPLoss(arch, theta, X, Y, s.kind), s.points, s.extent, s.normalization, s.ignore, s.seed
            ),
            "",
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
