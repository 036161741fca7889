"""Models, data and losses as researchers hold them, made into the engine's loss over a flat θ.

Every public function of ``landscape_lens`` takes the same three arguments and passes them
through ``objective``:

- **model**: an ``nn.Module`` (used through a copy in eval mode, so the caller's module, its
  training flag and its tensors are never touched), or a path: a ``torch.export`` archive
  (``.pt2``, read without running its pickles), a state_dict (``.pt``/``.pth``, read with
  ``weights_only=True``) with ``factory`` (a function that builds the module), or the app's
  ``.npz`` (an MLP with its own data).
- **data**: a pair ``(X, Y)`` of tensors or arrays (batch first), a ``torch.utils.data.Dataset``,
  a ``DataLoader`` or any iterable of batches (read once, kept in memory; batches of different
  sizes are fine), or a path (``.npz`` with X and Y, or a ``.csv`` whose last column is Y).
- **loss**: "sum", "mean", "cross-entropy", "auto" (cross-entropy for integer labels, else the
  summed squared error) or a callable ``loss_fn(model, batch) -> scalar tensor`` giving the
  batch's mean loss (engine.landscape.module_loss says how batches combine).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.progress import run_to_completion
from engine.landscape.module_loss import ModuleLoss

LOSSES = ("auto", "sum", "mean", "cross-entropy")


class APIInputError(EngineInputError):
    """A bad argument to ``landscape_lens``'s API: one line naming the argument and why (a ValueError)."""


@dataclass(frozen=True, eq=False)
class Network:
    """What ``ModuleLoss`` reads: the module (eval mode), its data, an archive's fixed batch."""

    module: object
    X: object = None
    Y: object = None
    batches: list | None = None
    fixed_batch: int | None = None
    source: str = "module"


def objective(model, data, loss="auto", *, factory=None, batch_size=None, dtype="float64", device="cpu") -> ModuleLoss:
    """The engine's loss L(θ) of ``model`` on ``data`` under ``loss``, checked whole (one forward).

    Parameters
    ----------
    model, data, loss
        As the module docstring says.
    factory : callable, optional
        Builds the module a state_dict file holds (``model`` a ``.pt``/``.pth`` path).
    batch_size : int, optional
        Samples per chunk for tensors and files (a data loader keeps its own batches).
    dtype : {"float64", "float32"}
        The precision of every evaluation.
    device : str
        "cpu" or "cuda".

    Returns
    -------
    engine.landscape.module_loss.ModuleLoss

    Raises
    ------
    APIInputError
        For any argument the engine cannot use, in one line.
    """
    try:
        net = network(model, data, factory=factory)
        kind = loss if callable(loss) else loss_kind(loss, net)
        return ModuleLoss(net, kind, batch_size, dtype, device)
    except APIInputError:
        raise
    except EngineInputError as error:
        raise APIInputError(str(error)) from None


# The API's numeric options: (kind, minimum). Only the kind and the sign are checked here; the
# engine's jobs check their own upper limits (a plane's points, Lanczos's eigenvalues).
OPTIONS = {
    "points": ("integer", 2),
    "seed": ("integer", 0),
    "top_k": ("integer", 1),
    "bottom_k": ("integer", 0),
    "probes": ("integer", 1),
    "steps": ("integer", 1),
    "density_probes": ("integer", 0),
    "draws": ("integer", 1),
    "extent": ("positive", None),
    "lo": ("real", None),
    "hi": ("real", None),
    "tol": ("real", 0.0),
}


def check_options(**options) -> None:
    """Each of the API's numeric ``options`` (by its name in ``OPTIONS``; None where None means a
    default) checked for its kind and sign: APIInputError, one line, naming the first that is not
    (a string, a bool, a float for a count, NaN or ±inf), before any work starts."""
    from engine.core.validation import MAX_SEED, integer, real

    for name, value in options.items():
        if value is None and name == "seed":  # a fresh random seed
            continue
        kind, minimum = OPTIONS[name]
        try:
            if kind == "integer":
                maximum = MAX_SEED if name == "seed" else None
                if isinstance(value, float):  # a count given as 2.0 is a slip; 2.5 is not a count
                    raise EngineInputError(f"{name} = {value!r} must be an integer")
                integer(name, value, minimum, maximum)
            else:
                real(name, value, minimum, positive=kind == "positive")
        except EngineInputError as error:
            raise APIInputError(str(error)) from None


def loss_kind(loss: str, net: Network) -> str:
    """A named loss; "auto" is cross-entropy for integer labels and the summed squared error otherwise."""
    if not isinstance(loss, str) or loss not in LOSSES:
        raise APIInputError(f"loss={loss!r}: choose one of {', '.join(LOSSES)}, or pass a callable(model, batch)")
    if loss != "auto":
        return loss
    if net.batches is not None:
        first = net.batches[0]
        labels = first[1] if isinstance(first, (tuple, list)) and len(first) == 2 else None
    else:
        labels = net.Y
    kind = getattr(labels, "dtype", None)
    integer = kind is not None and (
        not kind.is_floating_point if hasattr(kind, "is_floating_point") else kind.kind in "biu"
    )
    return "cross-entropy" if integer else "sum"


def network(model, data, *, factory=None) -> Network:
    """``model`` and ``data`` as one ``Network``; files read with every check, nothing unpickled."""
    if isinstance(model, (str, Path)):
        return _network_from_file(Path(model), data, factory)
    if factory is not None:
        raise APIInputError("factory= builds the module of a state_dict file; model is already a module")
    if not isinstance(model, torch.nn.Module):
        raise APIInputError(
            f"model: a {type(model).__name__}; expected an nn.Module or a path (.pt2, .pt/.pth with factory=, .npz)"
        )
    if data is None:
        raise APIInputError("data: a module needs data: (X, Y), a Dataset, a DataLoader or a path")
    return _with_data(copy.deepcopy(model).eval(), data, "module")


def _with_data(module, data, source: str, fixed_batch=None) -> Network:
    if isinstance(data, (str, Path)):
        from engine.io.module_network import read_model_data

        X, Y = read_model_data(data)
        return Network(module, X, Y, None, fixed_batch, source)
    if isinstance(data, (tuple, list)) and len(data) == 2 and not _is_batch_list(data):
        return Network(module, data[0], data[1], None, fixed_batch, source)
    return Network(module, None, None, _batches(data), fixed_batch, source)


def _is_batch_list(data) -> bool:
    """A list of two batches, not an (X, Y) pair: both items are themselves pairs, tuples or dicts."""
    return isinstance(data, list) and all(isinstance(item, (tuple, list, dict)) for item in data)


def _batches(data) -> list:
    """Every batch of a Dataset (through a DataLoader of 64, in order), a DataLoader or an iterable."""
    from torch.utils.data import DataLoader, Dataset

    if isinstance(data, Dataset) and not isinstance(data, torch.utils.data.IterableDataset):
        if len(data) == 0:
            raise APIInputError("data: the dataset is empty")
        data = DataLoader(data, batch_size=64, shuffle=False)
    if not isinstance(data, Iterable):
        raise APIInputError(
            f"data: a {type(data).__name__}; expected (X, Y), a Dataset, a DataLoader, an iterable of batches or a path"
        )
    batches = list(data)
    if not batches:
        raise APIInputError("data: the data loader yielded no batches")
    return batches


def _network_from_file(path: Path, data, factory) -> Network:
    """A model file as a module: .pt2 (its graph), .pt/.pth with ``factory``, or the app's .npz."""
    from engine.io import module_network as MN

    suffix = path.suffix.lower()
    if not path.is_file():
        raise APIInputError(f"model: {path}: no such file")
    if suffix == ".pt2":
        from engine.io.pt2_program import read_exported_module

        if data is None:
            raise APIInputError(f"data: {path} holds a model only; give its data")
        if isinstance(data, (str, Path)):  # the command line's reader, every check included
            read = MN.read_module_network(path, data)
            return Network(read.module, read.X, read.Y, None, read.fixed_batch, "pt2")
        graph = read_exported_module(path)
        return _with_data(graph.module, data, "pt2", graph.fixed_batch)
    if suffix in (".pt", ".pth"):
        if factory is None:
            raise APIInputError(f"model: {path} is a state_dict, weights only; pass factory= (a function building it)")
        module = factory()
        if not isinstance(module, torch.nn.Module):
            raise APIInputError(f"factory: returned a {type(module).__name__}, not a torch.nn.Module")
        from engine.io.torch_state import _read_state_dict

        module.load_state_dict(MN.check_state_dict(path, _read_state_dict(path), module))
        return _with_data(module.eval(), data, f"state_dict + {getattr(factory, '__name__', 'factory')}")
    if suffix == ".npz":
        from engine.landscape.networks import read_network
        from engine.landscape.operations import sequential_of

        mlp_net = read_network(path)
        module = sequential_of(mlp_net.arch, mlp_net.params)
        if data is None:
            return Network(module, mlp_net.X, mlp_net.Y, None, None, "npz")
        return _with_data(module, data, "npz")
    raise APIInputError(f"model: {path}: expected .pt2, .pt/.pth (with factory=) or the app's .npz")


def state_of(model, factory=None) -> dict:
    """A second model's state (a module's state_dict, or a checkpoint file's) for interpolation and
    trajectories: a ``.pt``/``.pth`` state_dict read with ``weights_only=True``, a ``.pt2`` graph's
    tensors, or a mapping of tensors."""
    if isinstance(model, torch.nn.Module):
        return {k: v.detach() for k, v in model.state_dict().items()}
    if isinstance(model, dict):
        for name, value in model.items():
            kind = getattr(value, "dtype", None)
            real = isinstance(value, torch.Tensor) and not value.is_complex()
            if not (real or isinstance(value, np.ndarray) and value.dtype.kind in "biuf"):
                what = f"{type(value).__name__} of {kind}" if kind is not None else type(value).__name__
                raise APIInputError(f"checkpoint: {name!r} is a {what}; expected a tensor of real numbers")
        return model
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise APIInputError(f"checkpoint: {path}: no such file")
        if path.suffix.lower() == ".pt2":
            from engine.io.pt2_program import read_exported_module

            return read_exported_module(path).module.state_dict()
        from engine.io.torch_state import _read_state_dict

        return _read_state_dict(path)
    raise APIInputError(f"checkpoint: a {type(model).__name__}; expected a module, a state_dict or a file")


def real_array(name: str, value) -> np.ndarray:
    """``value`` (a tensor, an array or nested lists of numbers) as a float64 array; APIInputError,
    one line, for text, ragged lists, objects or complex numbers."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"dtype {array.dtype}")
        return array.astype(np.float64)
    except (TypeError, ValueError) as error:
        kind = type(error).__name__ if isinstance(error, ValueError) else str(error)
        raise APIInputError(f"{name}: a {type(value).__name__} that is not an array of real numbers ({kind})") from None


def pair(name: str, data) -> tuple:
    """``data`` as (X, Y); APIInputError, one line, for anything but a pair."""
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise APIInputError(f"{name}: a {type(data).__name__}; expected a pair (X, Y) of tensors or arrays")
    return tuple(data)


# ------------------------------------------------------------------ shared by the API's modules
def run_job(job, what: str, progress: bool):
    """``job`` to completion, with a bar on stderr when ``progress`` and stderr is a terminal."""
    if not progress:
        return run_to_completion(job)
    from landscape_lens.progress_bar import progress_bar

    with progress_bar(what) as on_progress:
        return run_to_completion(job, on_progress)


def api_errors(function):
    """Engine input errors raised inside ``function`` leave it as ``APIInputError``: the decorator
    of every public function of ``landscape_lens.api`` and ``landscape_lens.lenses``."""
    import functools

    @functools.wraps(function)
    def checked(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except APIInputError:
            raise
        except EngineInputError as error:
            raise APIInputError(str(error)) from None

    return checked


def checkpoint_states(checkpoints) -> list[dict]:
    """Checkpoints as the researcher holds them (state_dicts, modules or files, a run folder or an
    open run) as state_dicts, oldest first."""
    if isinstance(checkpoints, (str, Path)) and Path(checkpoints).is_dir():
        from engine.runs import open_run

        run = open_run(checkpoints)
        return [run.checkpoint(step) for step in run.checkpoint_steps]
    if hasattr(checkpoints, "checkpoint_steps") and hasattr(checkpoints, "checkpoint"):  # an open run
        return [checkpoints.checkpoint(step) for step in checkpoints.checkpoint_steps]
    if isinstance(checkpoints, (str, Path)) or not isinstance(checkpoints, Sequence):
        raise APIInputError("checkpoints: expected a sequence of state_dicts, modules or files, or a run folder")
    return [state_of(c) for c in checkpoints]
