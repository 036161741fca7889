"""Bring your own network: a PyTorch MLP's state_dict plus its data, as a netio.NetFile.

The file is read with ``torch.load(weights_only=True)``: torch's restricted unpickler accepts
tensors and plain containers only, so a file carrying any other pickled object is refused before
that object is built.

An ``nn.Sequential`` saved by ``torch.export.save`` (.pt2) is read by ``engine.io.pt2``
WITHOUT ``torch.export.load``: torch 2.13 reads an archive's weights and constants with
``weights_only=False`` and ``pickle.loads``, which runs whatever they carry. Here only the JSON
graph and the raw weight bytes are read; an archive with pickled weights is refused.

Layers are the ``nn.Linear`` entries ``<name>.weight`` (out, in) and ``<name>.bias`` (out,); their
order is the dict's (a state_dict lists modules in definition order), or the number ending the
name when every name is ``<stem><number>`` with one stem ("0", "2", "4" or "fc1", "fc2", "fc10").
"""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.npz import read_xy
from engine.io.netfile import NetFile


def load_state_dict_network(path, activation: str, data_path) -> NetFile:
    """The MLP in the state_dict file ``path`` with ``activation`` between its layers and the
    data in ``data_path`` (see ``load_data``), in engine.core.mlp's flat layout."""
    path = Path(path)
    mlp.check_activation(activation)  # before the file: the cheapest mistake to report
    return network_from_layers(path, _linear_layers(path, _read_state_dict(path)), activation, data_path)


def network_from_layers(path, layers, activation: str, data_path) -> NetFile:
    """NetFile from [(name, W, b or None)] in order, once the layers chain and the data fits."""
    Ws, bs = [w for _, w, _ in layers], [b for _, _, b in layers]
    has_bias = [b is not None for b in bs]
    if any(has_bias) and not all(has_bias):
        without = ", ".join(name for (name, _, b) in layers if b is None)
        raise EngineInputError(
            f"{path}: layer(s) {without} have no bias but others do; this app needs a bias on every layer or on none"
        )
    for (prev, W_prev, _), (name, W, _) in zip(layers, layers[1:]):
        if W.shape[1] != W_prev.shape[0]:
            raise EngineInputError(
                f"{path}: layer {name!r} has weight shape {W.shape} (takes {W.shape[1]} "
                f"inputs) but layer {prev!r} before it has {W_prev.shape[0]} outputs"
            )
    if Ws[-1].shape[0] != 1:
        raise EngineInputError(
            f"{path}: the last layer {layers[-1][0]!r} has {Ws[-1].shape[0]} outputs; "
            "this app's networks have one output"
        )
    arch = mlp.arch_of(Ws, bs if all(has_bias) else None, activation)
    X, Y = load_data(data_path)
    if X.shape[1] != arch.widths[0]:
        raise EngineInputError(
            f"{data_path}: the data has {X.shape[1]} input columns but the first layer "
            f"{layers[0][0]!r} (weight shape {Ws[0].shape}) takes {arch.widths[0]}"
        )
    X, y = mlp.check_data(arch, X, Y)
    return NetFile(arch, mlp.pack(Ws, bs if arch.bias else None), X, y[:, None])


def load_data(path) -> tuple[np.ndarray, np.ndarray]:
    """(X (N, n0), Y (N,)) from a .npz holding X and Y, or a .csv whose last column is Y (one
    header line allowed)."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        X, Y = read_xy(path)
    elif not path.is_file():
        raise EngineInputError(f"{path}: no such data file")
    elif path.suffix.lower() == ".csv":
        table = _read_csv(path)
        if table.shape[1] < 2:
            raise EngineInputError(
                f"{path}: a data .csv needs input columns and a last column Y, found {table.shape[1]} column"
            )
        X, Y = table[:, :-1], table[:, -1]
    else:
        raise EngineInputError(f"{path}: data must be a .npz (X, Y) or a .csv (last column Y)")
    # real numbers only: complex is never silently cast, timedelta64 is not a number of the data
    if X.dtype.kind not in "biuf" or Y.dtype.kind not in "biuf" or X.ndim != 2:
        raise EngineInputError(
            f"{path}: X must be a 2-D array of real numbers and Y real numbers, "
            f"got {X.dtype} {X.shape} and {Y.dtype} {Y.shape}"
        )
    return X.astype(np.float64), mlp.as_targets(Y)


def _read_csv(path) -> np.ndarray:
    for skip in (0, 1):  # a header line is common in exported tables
        try:
            return np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2, dtype=np.float64)
        except ValueError as e:
            error = e
    raise EngineInputError(f"{path}: not a numeric comma-separated table: {error}")


def _read_state_dict(path) -> dict:
    if not path.is_file():
        raise EngineInputError(f"{path}: no such file")
    try:
        with warnings.catch_warnings():
            # On its way to refusing a TorchScript archive (below) torch warns in two lines that it
            # dispatches to torch.jit.load; the refusal is this function's to word, in one line.
            warnings.filterwarnings("ignore", message=".*looks like a TorchScript archive", category=UserWarning)
            # A pickle torch.save did not write (pickle.dump, protocol 4 or 5) makes the restricted
            # unpickler warn in two lines that it may not read that protocol; it is refused below.
            warnings.filterwarnings(
                "ignore",
                message="Detected pickle protocol",
                category=UserWarning,
                module=r"torch\.(_weights_only_unpickler|serialization)",  # a raw pickle, or torch.save's zip
            )
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "Weights only load failed" not in str(e) or "Unsupported operand" in str(e):
            # garbage bytes, or a pickle not written by torch.save: nothing was built from it
            raise EngineInputError(
                f"{path}: not a readable PyTorch state_dict file (write it with torch.save(model.state_dict(), path))"
            ) from None
        # torch's message spans many lines; the line worth showing names the refused global
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))
        what = f"it would build {found.group(1)}" if found else "it holds more than tensors and plain containers"
        raise EngineInputError(f"{path}: refused, not a plain state_dict of tensors: {what}") from None
    except RuntimeError as e:
        if "TorchScript" in str(e):
            raise EngineInputError(
                f"{path}: refused, a TorchScript archive (torch.jit.save), not a state_dict: "
                "save model.state_dict() with torch.save"
            ) from None
        raise EngineInputError(f"{path}: not a readable PyTorch state_dict file (RuntimeError)") from None
    except Exception as e:  # truncated or foreign files fail deep inside torch with any error type
        raise EngineInputError(f"{path}: not a readable PyTorch state_dict file ({type(e).__name__})") from None
    if not isinstance(obj, dict) or not obj:
        raise EngineInputError(f"{path}: expected a state_dict (a dict of tensors), got {type(obj).__name__}")
    return obj


def _linear_layers(path, state: dict) -> list[tuple[str, np.ndarray, np.ndarray | None]]:
    """[(name, W (out, in), b (out,) or None)] in layer order."""
    layers: dict[str, dict] = {}
    for key, value in state.items():
        name, dot, part = str(key).rpartition(".")
        if not dot or part not in ("weight", "bias"):
            raise EngineInputError(
                f"{path}: key {key!r} is not an nn.Linear weight or bias; only MLPs of nn.Linear layers are supported"
            )
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            raise EngineInputError(
                f"{path}: {key!r} is {type(value).__name__}"
                f"{' of ' + str(value.dtype) if isinstance(value, torch.Tensor) else ''}, "
                "not a floating-point tensor"
            )
        layers.setdefault(name, {})[part] = value.detach().to(torch.float64).numpy()
    numbered = [re.fullmatch(r"(.*?)(\d+)", name) for name in layers]
    names = list(layers)
    if all(numbered) and len({m.group(1) for m in numbered}) == 1:
        names.sort(key=lambda n: int(re.fullmatch(r".*?(\d+)", n).group(1)))
    out = []
    for name in names:
        parts = layers[name]
        if "weight" not in parts:
            raise EngineInputError(f"{path}: layer {name!r} has a bias but no weight")
        W, b = parts["weight"], parts.get("bias")
        if W.ndim != 2:
            raise EngineInputError(f"{path}: {name + '.weight'!r} has shape {W.shape}; an nn.Linear weight is 2-D")
        if b is not None and b.shape != (W.shape[0],):
            raise EngineInputError(
                f"{path}: {name + '.bias'!r} has shape {b.shape}; expected ({W.shape[0]},) "
                f"to match the weight {W.shape}"
            )
        if not (np.isfinite(W).all() and (b is None or np.isfinite(b).all())):
            raise EngineInputError(f"{path}: layer {name!r} contains NaN or inf")
        out.append((name, W, b))
    return out
