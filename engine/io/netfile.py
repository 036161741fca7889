"""A network with its data in one .npz: W1, W2, … (b1, b2, … with biases), X, Y, activation.

Extra arrays (e.g. ``descent_direction``) may ride along; loading returns them untouched.
A construction history (base network and every split) travels as plain ``history_*`` arrays.
PyTorch MLPs load into the same NetFile: state_dicts (engine.io.torch_state), torch.export archives (engine.io.pt2).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.npz import read_npz

# Largest |entry| of a loaded weight or data array: sigmoid nets saturate long before this, and
# squares of anything much larger overflow float64 in the loss and the Hessian.
MAX_ABS_VALUE = 1e100


HISTORY_KEYS = ("history_base_widths", "history_base_params", "history_splits", "history_lambdas")


@dataclass(frozen=True, eq=False)
class History:
    """How a network was built: a base network (same activation and bias flag) and the neuron
    splits applied to it in order, each ``(layer, neuron, lam, copy)``: neuron ``neuron`` of
    hidden layer ``layer`` was split with λ = ``lam`` and its copy got index ``copy`` in the
    grown layer. Plain numbers only, so any front end can replay it with its own classes."""

    base_widths: tuple
    base_params: np.ndarray
    splits: tuple = ()

    def widths_after(self, n_splits: int | None = None) -> tuple:
        widths = list(self.base_widths)
        for layer, *_ in self.splits[:n_splits]:
            widths[layer] += 1
        return tuple(widths)


@dataclass
class NetFile:
    arch: Arch
    params: np.ndarray  # flat, mlp.py layout
    X: np.ndarray  # (N, n0)
    Y: np.ndarray  # (N, 1)
    extras: dict = field(default_factory=dict)
    history: History | None = None


def save_network(path, arch: Arch, params, X, Y, history: History | None = None, **extras) -> Path:
    path = Path(path)
    X, y = mlp.check_data(arch, X, Y)
    Ws, bs = mlp.unpack(arch, np.asarray(params, float))
    arrays = {f"W{l + 1}": W for l, W in enumerate(Ws)}
    if arch.bias:
        arrays.update({f"b{l + 1}": b for l, b in enumerate(bs)})
    if history is not None:
        _check_history("history", arch, history)
        arrays.update(_history_arrays(history))
    np.savez(
        path,
        X=X,
        Y=y[:, None],
        activation=np.array(arch.activation),
        **arrays,
        **{k: np.asarray(v) for k, v in extras.items()},
    )
    return path


def _history_arrays(h: History) -> dict:
    splits = np.array([(l, r, c) for l, r, _, c in h.splits], dtype=np.int64).reshape(-1, 3)
    return {
        "history_base_widths": np.array(h.base_widths, dtype=np.int64),
        "history_base_params": np.asarray(h.base_params, dtype=np.float64),
        "history_splits": splits,  # columns: layer, neuron, copy
        "history_lambdas": np.array([lam for _, _, lam, _ in h.splits], dtype=np.float64),
    }


def _history_from_arrays(path, arch: Arch, arrays: dict) -> History | None:
    present = [k for k in HISTORY_KEYS if k in arrays]
    if not present:
        return None
    if len(present) < len(HISTORY_KEYS):
        missing = sorted(set(HISTORY_KEYS) - set(present))
        raise EngineInputError(f"{path}: construction history is incomplete, missing {', '.join(missing)}")
    widths = _integers(path, arrays, "history_base_widths", 1)
    splits = _integers(path, arrays, "history_splits", 2)
    lams = _numeric(path, arrays, "history_lambdas", 1)
    if splits.shape[1:] != (3,) or len(lams) != len(splits):
        raise EngineInputError(
            f"{path}: history_splits has shape {splits.shape} and history_lambdas "
            f"{lams.shape}; expected (n, 3) and (n,)"
        )
    h = History(
        tuple(int(w) for w in widths),
        _numeric(path, arrays, "history_base_params", 1),
        tuple((int(l), int(r), float(lam), int(c)) for (l, r, c), lam in zip(splits, lams)),
    )
    _check_history(path, arch, h)
    return h


def _check_history(where, arch: Arch, h: History) -> None:
    """The base network is a valid Arch, each split names an existing neuron of a hidden layer,
    and replaying the splits' widths gives the saved network's widths."""
    base = Arch(h.base_widths, arch.activation, arch.bias)
    if len(h.base_params) != base.n_params:
        raise EngineInputError(
            f"{where}: the history's base network {base.widths} needs {base.n_params} "
            f"parameters, got {len(h.base_params)}"
        )
    widths = list(h.base_widths)
    for i, (layer, neuron, lam, copy) in enumerate(h.splits):
        if not 1 <= layer < len(widths) - 1:
            raise EngineInputError(f"{where}: split {i + 1} is in layer {layer}, not a hidden layer of {tuple(widths)}")
        if not 0 <= neuron < widths[layer] or not 0 <= copy <= widths[layer]:
            raise EngineInputError(
                f"{where}: split {i + 1} (neuron {neuron}, copy {copy}) does not fit "
                f"layer {layer} of width {widths[layer]}"
            )
        if not np.isfinite(lam):
            raise EngineInputError(f"{where}: split {i + 1} has λ = {lam}")
        widths[layer] += 1
    if tuple(widths) != arch.widths:
        raise EngineInputError(
            f"{where}: the history's splits lead to widths {tuple(widths)}, but the network has {arch.widths}"
        )


def load_network(path) -> NetFile:
    path = Path(path)
    try:  # every .npy header is checked (dtype, declared size) before its data is read
        arrays = read_npz(path)
    except FileNotFoundError:
        raise EngineInputError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        if isinstance(e, EngineInputError):
            raise
        raise EngineInputError(f"{path}: not a readable .npz archive (corrupt or truncated?): {e}") from None
    for key in ("X", "Y", "activation", "W1"):
        if key not in arrays:
            raise EngineInputError(f"{path}: missing key {key!r} (found: {', '.join(sorted(arrays)) or 'none'})")
    activation = str(arrays["activation"])
    if arrays["activation"].ndim != 0:
        raise EngineInputError(f"{path}: 'activation' must be a single string, got shape {arrays['activation'].shape}")
    mlp.check_activation(activation)
    n_layers = max(int(m.group(1)) for k in arrays if (m := re.fullmatch(r"W(\d+)", k)))
    Ws, bs = [], []
    bias = any(re.fullmatch(r"b\d+", k) for k in arrays)  # any bias key means all layers need one
    for l in range(1, n_layers + 1):
        W = _numeric(path, arrays, f"W{l}", 2)
        prev = Ws[-1].shape[0] if Ws else W.shape[1]
        if W.shape[1] != prev:
            raise EngineInputError(f"{path}: W{l} has shape {W.shape} but layer {l - 1} has {prev} neurons")
        Ws.append(W)
        if bias:
            b = _numeric(path, arrays, f"b{l}", 1)
            if b.shape != (W.shape[0],):
                raise EngineInputError(f"{path}: b{l} has shape {b.shape}; expected ({W.shape[0]},) to match W{l}")
            bs.append(b)
    if Ws[-1].shape[0] != 1:
        raise EngineInputError(f"{path}: W{n_layers} has shape {Ws[-1].shape}; the output layer must have one neuron")
    X = _numeric(path, arrays, "X", 2)
    Y = _numeric(path, arrays, "Y", None)
    if X.shape[1] != Ws[0].shape[1]:
        raise EngineInputError(f"{path}: X has shape {X.shape} but W1 expects {Ws[0].shape[1]} inputs")
    if Y.shape not in ((len(X),), (len(X), 1)):
        raise EngineInputError(f"{path}: Y has shape {Y.shape}; expected ({len(X)}, 1) to match X")
    arch = Arch((Ws[0].shape[1],) + tuple(W.shape[0] for W in Ws), activation, bias)
    known = (
        {"X", "Y", "activation", *HISTORY_KEYS}
        | {f"W{l}" for l in range(1, n_layers + 1)}
        | ({f"b{l}" for l in range(1, n_layers + 1)} if bias else set())
    )
    extras = {k: v for k, v in arrays.items() if k not in known}
    return NetFile(
        arch, mlp.pack(Ws, bs if bias else None), X, Y.reshape(-1, 1), extras, _history_from_arrays(path, arch, arrays)
    )


def _integers(path, arrays, key, ndim) -> np.ndarray:
    a = arrays[key]
    if a.dtype.kind not in "iu" or a.ndim != ndim:  # np.integer would let timedelta64 through
        raise EngineInputError(
            f"{path}: {key} has dtype {a.dtype} and shape {a.shape}; expected a {ndim}-D integer array"
        )
    return a.astype(np.int64)


def _numeric(path, arrays, key, ndim) -> np.ndarray:
    if key not in arrays:
        raise EngineInputError(f"{path}: missing key {key!r}")
    a = arrays[key]
    if a.dtype.kind not in "iuf":  # not complex (never silently cast), bool, timedelta, datetime or text
        raise EngineInputError(f"{path}: {key} has dtype {a.dtype}; expected real numbers")
    if ndim is not None and a.ndim != ndim:
        raise EngineInputError(f"{path}: {key} has shape {a.shape}; expected a {ndim}-D array")
    if not np.isfinite(a).all():
        raise EngineInputError(f"{path}: {key} contains NaN or inf")
    if np.abs(a).max(initial=0.0) > MAX_ABS_VALUE:
        raise EngineInputError(
            f"{path}: {key} has entries of size {np.abs(a).max():.3g}; the limit is "
            f"{MAX_ABS_VALUE:g} (beyond it the loss and its Hessian overflow)"
        )
    return a.astype(np.float64)
