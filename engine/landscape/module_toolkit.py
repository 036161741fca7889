"""The toolkit tab's four modes on any PyTorch model, chosen by the window's settings: the
operations the command line and the API run (engine.landscape.operations).

- plane: ``operations.plane_job`` (``--plane N --directions filter|layer|random|hessian|
  hessian-extremes [--ignore biasbn]``);
- pca: the user's training checkpoints on their PCA plane, ``operations.trajectory_job``
  (``--trajectory CKPT …``); a module is not trained here;
- interpolation: ``operations.interpolation_job`` to a second model, with the accuracy along the
  line for a classifier (``--interpolate MODEL2``);
- density: ``operations.hessian_job`` with its SLQ density (``--hessian --density``), the top
  eigenvalues and the Hutchinson trace (100 probes) beside it; the Hessian is not formed for
  the window.

Every file is read and checked, and the loss built (one forward pass), before the mode's work
starts; the reading runs on a helper thread so the job keeps yielding.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.io.module_network import ModuleNetwork, check_state_dict, read_checkpoint, read_module_network
from engine.io.pt2_program import read_exported_module
from engine.landscape import networks, operations
from engine.landscape.module_hessian import check_options
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.module_plane import check_grid

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
            check_grid(s.points, s.extent)
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
