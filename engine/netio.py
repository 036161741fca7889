"""A network with its data in one .npz: W1, W2, … (b1, b2, … with biases), X, Y, activation.

Extra arrays (e.g. ``descent_direction``) may ride along; loading returns them untouched.
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import deep
from .deep import Arch
from .errors import EngineInputError


@dataclass
class NetFile:
    arch: Arch
    params: np.ndarray  # flat, deep.py layout
    X: np.ndarray       # (N, n0)
    Y: np.ndarray       # (N, 1)
    extras: dict = field(default_factory=dict)


def save_network(path, arch: Arch, params, X, Y, **extras) -> Path:
    path = Path(path)
    X, y = deep.check_data(arch, X, Y)
    Ws, bs = deep.unpack(arch, np.asarray(params, float))
    arrays = {f"W{l + 1}": W for l, W in enumerate(Ws)}
    if arch.bias:
        arrays.update({f"b{l + 1}": b for l, b in enumerate(bs)})
    np.savez(path, X=X, Y=y[:, None], activation=np.array(arch.activation), **arrays,
             **{k: np.asarray(v) for k, v in extras.items()})
    return path


def load_network(path) -> NetFile:
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise EngineInputError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise EngineInputError(f"{path}: not a readable .npz archive (corrupt or truncated?): {e}") from None
    for key in ("X", "Y", "activation", "W1"):
        if key not in arrays:
            raise EngineInputError(f"{path}: missing key {key!r} (found: {', '.join(sorted(arrays)) or 'none'})")
    activation = str(arrays["activation"])
    if arrays["activation"].ndim != 0:
        raise EngineInputError(f"{path}: 'activation' must be a single string, got shape {arrays['activation'].shape}")
    deep.check_activation(activation)
    n_layers = max(int(m.group(1)) for k in arrays if (m := re.fullmatch(r"W(\d+)", k)))
    Ws, bs = [], []
    bias = any(re.fullmatch(r"b\d+", k) for k in arrays)  # any bias key means all layers need one
    for l in range(1, n_layers + 1):
        W = _numeric(path, arrays, f"W{l}", 2)
        prev = (Ws[-1].shape[0] if Ws else W.shape[1])
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
    known = {"X", "Y", "activation"} | {f"W{l}" for l in range(1, n_layers + 1)} | (
        {f"b{l}" for l in range(1, n_layers + 1)} if bias else set())
    extras = {k: v for k, v in arrays.items() if k not in known}
    return NetFile(arch, deep.pack(Ws, bs if bias else None), X, Y.reshape(-1, 1), extras)


def _numeric(path, arrays, key, ndim) -> np.ndarray:
    if key not in arrays:
        raise EngineInputError(f"{path}: missing key {key!r}")
    a = arrays[key]
    if not np.issubdtype(a.dtype, np.number):
        raise EngineInputError(f"{path}: {key} has dtype {a.dtype}; expected numbers")
    if ndim is not None and a.ndim != ndim:
        raise EngineInputError(f"{path}: {key} has shape {a.shape}; expected a {ndim}-D array")
    if not np.isfinite(a).all():
        raise EngineInputError(f"{path}: {key} contains NaN or inf")
    return a.astype(np.float64)
