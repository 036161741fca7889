"""Networks for the landscape toolkit: the app's files, plus what paper B's loaders refuse.

Paper B's readers (engine.io.readers.read_network) take one-output sigmoid or tanh networks.
The toolkit also draws classifiers (e ≥ 2 outputs, integer labels for cross-entropy) and ReLU
networks, as ``mlp.LandscapeArch``. Files paper B can read go through its readers unchanged;
only the others are read here, with the same checks (finite numbers, chained shapes, data that
fit). ``write_network`` writes the network beside the toolkit's exports in the app's .npz keys
(W1, b1, …, X, Y, activation), so the flat order of plane.npz's vectors is documented and any
numpy script can rebuild θ: concatenate W1.ravel(), b1, W2.ravel(), b2, … (mlp.py's layout).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.npz import read_npz, read_xy
from engine.io import netfile


@dataclass(frozen=True, eq=False)
class Network:
    arch: Arch
    params: np.ndarray  # flat, mlp.py layout
    X: np.ndarray  # (N, n0)
    Y: np.ndarray  # (N,) or (N, 1) for e = 1 and for labels; (N, e) targets otherwise


def _check(path, name, a, ndim=None) -> np.ndarray:
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise EngineInputError(f"{path}: {name} has dtype {a.dtype}; expected real numbers")
    if ndim is not None and a.ndim != ndim:
        raise EngineInputError(f"{path}: {name} has shape {a.shape}; expected a {ndim}-D array")
    a = a.astype(np.float64)
    if not np.isfinite(a).all() or np.abs(a).max(initial=0.0) > netfile.MAX_ABS_VALUE:
        raise EngineInputError(f"{path}: {name} contains NaN, inf or entries beyond {netfile.MAX_ABS_VALUE:g}")
    return a


def from_layers(path, Ws, bs, activation, X, Y) -> Network:
    for l in range(1, len(Ws)):
        if Ws[l].shape[1] != Ws[l - 1].shape[0]:
            raise EngineInputError(
                f"{path}: W{l + 1} has shape {Ws[l].shape} but layer {l} has {Ws[l - 1].shape[0]} neurons"
            )
    bias = bs is not None
    if bias and any(b.shape != (W.shape[0],) for W, b in zip(Ws, bs)):
        raise EngineInputError(f"{path}: every bias must match its layer's width")
    arch = mlp.landscape_arch((Ws[0].shape[1],) + tuple(W.shape[0] for W in Ws), activation, bias)
    X = _check(path, "X", np.asarray(X), 2)
    Y = _check(path, "Y", np.asarray(Y))
    if X.shape[1] != arch.widths[0]:
        raise EngineInputError(f"{path}: X has shape {X.shape} but the first layer takes {arch.widths[0]} inputs")
    if len(Y) != len(X):
        raise EngineInputError(f"{path}: X has {len(X)} samples but Y has {len(Y)}")
    return Network(arch, mlp.pack(Ws, bs), X, Y)


def _read_npz(path) -> Network:
    try:
        arrays = read_npz(path)  # every header checked first; a damaged member is one line
    except FileNotFoundError:
        raise EngineInputError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, AttributeError) as e:
        raise EngineInputError(f"{path}: not a readable .npz archive of named arrays: {e}") from None
    for key in ("X", "Y", "activation", "W1"):
        if key not in arrays:
            raise EngineInputError(f"{path}: missing key {key!r} (found: {', '.join(sorted(arrays)) or 'none'})")
    activation = str(arrays["activation"])
    mlp.check_activation(activation, mlp.LANDSCAPE_ACTIVATIONS)
    n = max(int(m.group(1)) for k in arrays if (m := re.fullmatch(r"W(\d+)", k)))
    missing = [f"W{l}" for l in range(1, n + 1) if f"W{l}" not in arrays]
    bias = any(re.fullmatch(r"b\d+", k) for k in arrays)
    missing += [f"b{l}" for l in range(1, n + 1) if bias and f"b{l}" not in arrays]
    if missing:
        raise EngineInputError(f"{path}: missing {', '.join(missing)}")
    Ws = [_check(path, f"W{l}", arrays[f"W{l}"], 2) for l in range(1, n + 1)]
    bs = [_check(path, f"b{l}", arrays[f"b{l}"], 1) for l in range(1, n + 1)] if bias else None
    return from_layers(path, Ws, bs, activation, arrays["X"], arrays["Y"])


def _read_data(path) -> tuple[np.ndarray, np.ndarray]:
    """X, Y from a .npz (any Y shape) or a .csv (last column Y)."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        return read_xy(path)
    from engine.io.torch_state import load_data

    return load_data(path)


def read_network(path, activation: str | None = None, data=None) -> Network:
    """The network in ``path`` (.npz, state_dict .pt/.pth with ``activation`` and ``data``, .pt2
    with ``data``), through paper B's readers when they take it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        net = _read_npz(path)
        if type(net.arch) is Arch:  # paper B's reader: the same network, with all its checks
            loaded = netfile.load_network(path)
            return Network(loaded.arch, loaded.params, loaded.X, loaded.Y)
        return net
    if suffix in (".pt", ".pth") and activation is not None and data is not None:
        from engine.io import torch_state

        mlp.check_activation(activation, mlp.LANDSCAPE_ACTIVATIONS)
        layers = torch_state._linear_layers(path, torch_state._read_state_dict(path))
        if activation in mlp.ACTIVATIONS and layers[-1][1].shape[0] == 1:
            loaded = torch_state.load_state_dict_network(path, activation, data)
            return Network(loaded.arch, loaded.params, loaded.X, loaded.Y)
        has_bias = [b is not None for _, _, b in layers]
        if any(has_bias) and not all(has_bias):
            raise EngineInputError(f"{path}: a bias on every layer or on none")
        X, Y = _read_data(data)
        Ws = [W for _, W, _ in layers]
        return from_layers(path, Ws, [b for *_, b in layers] if all(has_bias) else None, activation, X, Y)
    from engine.io.readers import read_network as read_paper_b

    loaded = read_paper_b(path, activation, data)
    return Network(loaded.arch, loaded.params, loaded.X, loaded.Y)


def write_network(path, net: Network) -> Path:
    """The app's .npz keys; through netfile.save_network when paper B can read the network back."""
    if type(net.arch) is Arch:
        return netfile.save_network(path, net.arch, net.params, net.X, net.Y)
    Ws, bs = mlp.unpack(net.arch, np.asarray(net.params, float))
    arrays = {f"W{l + 1}": W for l, W in enumerate(Ws)}
    if net.arch.bias:
        arrays.update({f"b{l + 1}": b for l, b in enumerate(bs)})
    Y = np.asarray(net.Y, float)
    np.savez(path, X=net.X, Y=Y[:, None] if Y.ndim == 1 else Y, activation=np.array(net.arch.activation), **arrays)
    return Path(path)
