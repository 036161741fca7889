"""Any PyTorch model with its data: an ``nn.Module`` in eval mode, for the landscape toolkit.

Two ways in, neither running anything from the user's files:

- a ``torch.export`` archive (.pt2) of any network (convolutions, batch norm, residual adds,
  pooling, ...), read by ``engine.io.pt2_program`` without unpickling anything;
- a state_dict with ``model_spec = "package.module:factory"``: the user's own code, imported
  only because they named it, builds the module; the file is read with
  ``torch.load(weights_only=True)`` and must match the module's keys and shapes exactly.

Data (``read_model_data``): a ``D.npz`` with ``X`` (any shape, batch first) and ``Y`` (integer
labels, or float targets (N,) / (N, e)), read with every header checked and no pickle; a CSV
(last column Y) as engine.io.torch_state reads it. Every model is tried once on the data's first
samples, so a shape mismatch is one line here, not a traceback later.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.npz import read_xy
from engine.io import torch_state
from engine.io.pt2_program import read_exported_module


@dataclass(frozen=True, eq=False)
class ModuleNetwork:
    """A user's model and data. ``module`` is in eval mode with its running statistics, its
    parameters named as the user's module names them."""

    module: torch.nn.Module
    X: np.ndarray  # (N, ...) inputs, batch first: float64 or float32 (integers where the model takes them)
    Y: np.ndarray  # (N,) integer labels (int64), or (N,) / (N, e) float64 targets
    fixed_batch: int | None  # static batch of an exported graph: evaluate in chunks of exactly this size
    source: str  # "pt2", or "state_dict + package.module:factory"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.module.named_parameters())


def read_module_network(path, data_path, model_spec: str | None = None) -> ModuleNetwork:
    """The model in ``path`` with the data in ``data_path``: a .pt2 archive, or a state_dict
    whose module ``model_spec`` ("package.module:factory") builds. Everything is checked, the
    model run once on the first samples, before the network is returned."""
    path = Path(path)
    exported = path.suffix.lower() == ".pt2"
    if exported and model_spec is not None:
        raise EngineInputError(f"{path}: a .pt2 archive holds its own graph; --model is for a state_dict")
    if not exported and model_spec is None:
        raise EngineInputError(
            f"{path}: a state_dict holds weights only; name the code that builds the model "
            "with --model package.module:factory, or export it with torch.export (.pt2)"
        )
    X, Y = read_model_data(data_path)
    if exported:
        graph = read_exported_module(path)
        X = _inputs_for(data_path, X, graph.input_dtype)
        sample = X.shape[1:]
        if len(sample) != len(graph.input_shape) or any(n not in (None, m) for n, m in zip(graph.input_shape, sample)):
            raise EngineInputError(
                f"{data_path}: X has samples of shape {X.shape[1:]}; the exported model takes {graph.input_shape}"
            )
        net, dtype = ModuleNetwork(graph.module, X, Y, graph.fixed_batch, "pt2"), graph.input_dtype
    else:
        module = build_module(model_spec)
        module.load_state_dict(check_state_dict(path, torch_state._read_state_dict(path), module))
        dtype = _float_dtype(module)
        net = ModuleNetwork(module.eval(), _inputs_for(data_path, X, dtype), Y, None, f"state_dict + {model_spec}")
    _try_forward(path, net, dtype)
    return net


def read_checkpoint(path, net: ModuleNetwork) -> dict:
    """The state_dict in ``path`` (``torch.load(weights_only=True)``), its keys and shapes those
    of ``net.module``: a training checkpoint to project or evaluate."""
    path = Path(path)
    return check_state_dict(path, torch_state._read_state_dict(path), net.module)


def read_model_data(path) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y) from a ``D.npz`` holding X (N, ...) and Y (N,) or (N, e), or a CSV (last column Y).
    X keeps a float dtype (float16 becomes float32) and integers; Y integers become int64 labels,
    floats float64 targets. Both real, finite, with N ≥ 1 samples each."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        return torch_state.load_data(path)  # a CSV, or the line that says what data files are read
    X, Y = read_xy(path)
    for name, a, ndims in (("X", X, "at least 1"), ("Y", Y, "1 or 2")):
        if a.dtype.kind not in "biuf" or a.ndim < 1 or (name == "Y" and a.ndim > 2) or len(a) == 0:
            raise EngineInputError(
                f"{path}: {name} must be real numbers with {ndims} dimensions and at least one sample, "
                f"got {a.dtype} {a.shape}"
            )
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise EngineInputError(f"{path}: {name} contains NaN or inf")
    if len(X) != len(Y):
        raise EngineInputError(f"{path}: X has {len(X)} samples but Y has {len(Y)}")
    X = X.astype(np.float32) if X.dtype == np.float16 else X
    return X, (Y.astype(np.int64) if Y.dtype.kind in "biu" else Y.astype(np.float64))


def check_labels(Y: np.ndarray, n_classes: int) -> np.ndarray:
    """Y as int64 class labels 0 … n_classes − 1, shape (N,) (or (N, 1)); EngineInputError naming
    the first label out of range (or not a whole number) otherwise."""
    Y = np.asarray(Y)
    Y = Y[:, 0] if Y.ndim == 2 and Y.shape[1] == 1 else Y
    if Y.ndim != 1 or Y.dtype.kind not in "biuf":
        raise EngineInputError(f"cross-entropy needs class labels Y of shape (N,), got {Y.dtype} {Y.shape}")
    bad = np.flatnonzero(~np.isfinite(Y) | (Y != np.round(Y)) | (Y < 0) | (Y >= n_classes)) if Y.size else []
    if len(bad):
        raise EngineInputError(
            f"label Y[{bad[0]}] = {Y[bad[0]]} is not a class of this {n_classes}-output classifier "
            f"(labels are 0..{n_classes - 1}); {len(bad)} of {len(Y)} labels are out of range"
        )
    return Y.astype(np.int64)


# ------------------------------------------------------------------ the user's own code
def build_module(model_spec: str):
    """``factory()`` from ``package.module``, imported because the user named it (the current
    folder is searched first, as ``python -m`` would), and checked to be an nn.Module on the CPU."""
    where = f"--model {model_spec!r}"
    module_name, _, factory_name = str(model_spec).partition(":")
    if not module_name or not factory_name:
        raise EngineInputError(f"{where}: expected package.module:factory (a function that returns the nn.Module)")
    added = os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        code = importlib.import_module(module_name)
    except (Exception, SystemExit) as e:  # the user's code may fail in any way while importing
        raise EngineInputError(f"{where}: {module_name} does not import ({_first_line(e)})") from None
    finally:
        if added:
            sys.path.remove(os.getcwd())
    factory = getattr(code, factory_name, None)
    if not callable(factory):
        what = "is not defined" if factory is None else f"is not callable (type {type(factory).__name__})"
        raise EngineInputError(f"{where}: {factory_name} in {module_name} {what}")
    try:
        module = factory()
    except (Exception, SystemExit) as e:
        raise EngineInputError(f"{where}: {factory_name}() failed ({_first_line(e)})") from None
    if not isinstance(module, torch.nn.Module):
        raise EngineInputError(f"{where}: {factory_name}() returned a {type(module).__name__}, not a torch.nn.Module")
    devices = {t.device.type for t in [*module.parameters(), *module.buffers()]} - {"cpu"}
    if devices:
        raise EngineInputError(f"{where}: the model has tensors on {sorted(devices)}; build it on the CPU")
    return module


def check_state_dict(path, state: dict, module) -> dict:
    """``state`` once its keys are exactly ``module.state_dict()``'s, each a finite tensor of the
    same shape; EngineInputError naming the first mismatch otherwise."""
    expected = module.state_dict()
    for key in expected:
        if key not in state:
            raise EngineInputError(f"{path}: the model's {key!r} is not in the file ({len(state)} keys)")
    for key, value in state.items():
        if key not in expected:
            raise EngineInputError(f"{path}: the file has {key!r}, which the model does not have")
        if not isinstance(value, torch.Tensor):
            raise EngineInputError(f"{path}: {key!r} is a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != tuple(expected[key].shape):
            raise EngineInputError(
                f"{path}: {key!r} has shape {tuple(value.shape)} in the file, {tuple(expected[key].shape)} in the model"
            )
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise EngineInputError(f"{path}: {key!r} contains NaN or inf")
    return state


# ------------------------------------------------------------------ data meets model
def _float_dtype(module):
    floats = [p.dtype for p in module.parameters() if p.is_floating_point()]
    return floats[0] if floats else torch.float32


def _inputs_for(data_path, X: np.ndarray, dtype) -> np.ndarray:
    """X as the model takes it: floats stay float32 or float64 for a float input, integers for an
    integer one."""
    if dtype.is_floating_point:
        return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
    if X.dtype.kind not in "biu":
        raise EngineInputError(f"{data_path}: the model takes {dtype} inputs, but X is {X.dtype}")
    return X.astype(np.int64)


def _try_forward(path, net: ModuleNetwork, dtype) -> None:
    """One forward pass on the first samples (a fixed batch padded with copies) in the model's
    input ``dtype``, so that a model and data that do not fit are one line now. The output must
    be a tensor, one row a sample."""
    n = net.fixed_batch or min(len(net.X), 2)
    x = torch.from_numpy(net.X[np.arange(n) % len(net.X)]).to(dtype)
    try:
        with torch.no_grad():
            out = net.module(x)
    except Exception as e:  # noqa: BLE001 -- a user's model fails with any error type
        raise EngineInputError(f"{path}: the model fails on the data's first {n} samples ({_first_line(e)})") from None
    if not isinstance(out, torch.Tensor) or out.ndim not in (1, 2) or len(out) != n:
        what = f"shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
        raise EngineInputError(
            f"{path}: the model returns {what} for {n} samples; the toolkit needs one row of outputs a sample"
        )


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
