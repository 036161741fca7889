"""A two-layer positively homogeneous network from a file, for paper A (MATH A1): weights as loaded.

Three formats, none of which runs a pickle:

- the app's ``.npz``: ``W1`` (l, d), ``W2`` (e, l), optional ``b1`` (l,), ``b2`` (e,), a string
  ``activation`` (``relu`` or ``leaky_relu``), optional ``leaky_slope``, and optional data ``X``,
  ``Y`` (read with ``allow_pickle=False``; see ``save_two_layer``);
- a PyTorch state_dict (``.pt``/``.pth``) of ``nn.Sequential(nn.Linear(d, l), nn.ReLU() |
  nn.LeakyReLU(γ), nn.Linear(l, e))`` or any module with two ``nn.Linear`` children, read by
  ``engine.io.torch_state`` with ``torch.load(weights_only=True)``. A state_dict does not name
  its activation: the caller says it (ReLU when not said);
- a ``torch.export`` archive (``.pt2``) of such a module: only its JSON graph and raw weight
  bytes are read (``engine.io.pt2``'s helpers); the activation and γ come from the graph.

Every Linear layer may have a bias or not, independently. Paper A needs σ(αz) = ασ(z) for
α > 0, so a sigmoid, tanh or any other activation is refused, as is a second hidden layer.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.datasets import load_xy_file
from engine.core.errors import EngineInputError
from engine.io import pt2, torch_state

ACTIVATIONS = ("relu", "leaky_relu")
DEFAULT_SLOPE = 0.01  # nn.LeakyReLU's default negative_slope
MAX_PARAMETERS = 10_000_000  # a two-layer net past this is not what this view is for
NETWORK_SUFFIXES = (".npz", ".pt", ".pth", ".pt2")
# torch.export op names of the activations this reader recognizes (anything else: unsupported)
_OPS = {
    "torch.ops.aten.relu.default": "relu",
    "torch.ops.aten.relu_.default": "relu",
    "torch.ops.aten.leaky_relu.default": "leaky_relu",
    "torch.ops.aten.leaky_relu_.default": "leaky_relu",
    "torch.ops.aten.sigmoid.default": "sigmoid",
    "torch.ops.aten.sigmoid_.default": "sigmoid",
    "torch.ops.aten.tanh.default": "tanh",
    "torch.ops.aten.tanh_.default": "tanh",
    "torch.ops.aten.gelu.default": "gelu",
    "torch.ops.aten.elu.default": "elu",
    "torch.ops.aten.silu.default": "silu",
    "torch.ops.aten.softplus.default": "softplus",
}


@dataclass(frozen=True, eq=False)
class TwoLayer:
    """f(x) = W2 σ(W1 x + b1) + b2, float64, as loaded; b1 and b2 are independently optional."""

    W1: np.ndarray  # (l, d)
    W2: np.ndarray  # (e, l)
    b1: np.ndarray | None
    b2: np.ndarray | None
    activation: str  # "relu" or "leaky_relu"
    slope: float  # γ of leaky_relu (0 for relu)
    X: np.ndarray | None = None  # data carried by the file (the app's .npz), else None
    Y: np.ndarray | None = None
    path: str = ""
    kind: str = ""  # "npz", "state_dict" or "pt2"

    @property
    def d(self) -> int:
        return self.W1.shape[1]

    @property
    def l(self) -> int:  # noqa: E743 -- the paper's name for the width
        return self.W1.shape[0]

    @property
    def e(self) -> int:
        return self.W2.shape[0]

    @property
    def gamma(self) -> float:
        return self.slope if self.activation == "leaky_relu" else 0.0

    def forward(self, X) -> np.ndarray:
        """f(X) as (N, e), with the subgradient convention of engine.topology.two_layer."""
        Z = np.asarray(X, dtype=np.float64) @ self.W1.T + (0.0 if self.b1 is None else self.b1)
        A = np.where(Z > 0, Z, self.gamma * Z)
        return A @ self.W2.T + (0.0 if self.b2 is None else self.b2)


def homogeneity_error(path, activation: str) -> EngineInputError:
    return EngineInputError(
        f"{path}: activation {activation!r} is not positively homogeneous; paper A's conservation law "
        "and invariant sets need σ(αz) = ασ(z) for α > 0, i.e. ReLU or leaky ReLU"
    )


def check_activation(path, activation: str | None, slope: float | None) -> tuple[str, float]:
    """(activation, γ) once both are acceptable; γ is 0 for ReLU."""
    if activation not in ACTIVATIONS:
        raise homogeneity_error(path, str(activation))
    if activation == "relu":
        if slope not in (None, 0.0):
            raise EngineInputError(f"{path}: a slope γ = {slope!r} was given but the activation is ReLU")
        return "relu", 0.0
    slope = DEFAULT_SLOPE if slope is None else slope
    if not (isinstance(slope, (int, float)) and math.isfinite(slope) and 0.0 <= slope <= 1.0):
        raise EngineInputError(f"{path}: leaky ReLU slope γ = {slope!r} must lie in [0, 1] (MATH A1)")
    return "leaky_relu", float(slope)


def load_two_layer(path, activation: str | None = None, slope: float | None = None, data=None) -> TwoLayer:
    """The network in ``path`` (format by suffix) and, if ``data`` names a file (.npz with X, Y or
    .csv whose last column is Y), that data instead of any the file carries.

    ``activation``/``slope``: a state_dict's activation (ReLU when None). For an .npz or .pt2,
    which record their own, a different value is an error rather than silently ignored.
    """
    path = Path(path)
    if not path.is_file():
        raise EngineInputError(f"{path}: no such network file")
    suffix = path.suffix.lower()
    if suffix not in NETWORK_SUFFIXES:
        raise EngineInputError(f"{path}: a network file is .npz (this app's), .pt/.pth (a state_dict) or .pt2")
    if activation is not None and activation not in ACTIVATIONS:
        raise homogeneity_error(path, activation)
    if suffix == ".npz":
        layers, own, X, Y = _read_npz(path)
        kind = "npz"
    elif suffix == ".pt2":
        layers, own = _read_pt2(path)
        X = Y = None
        kind = "pt2"
    else:
        layers = torch_state._linear_layers(path, torch_state._read_state_dict(path))
        own, X, Y, kind = None, None, None, "state_dict"
    if own is not None:
        file_act, file_slope = own
        if activation is not None and activation != file_act:
            raise EngineInputError(f"{path}: the file's activation is {file_act}, not the {activation} asked for")
        if file_act in ACTIVATIONS and slope is not None and file_act == "leaky_relu" and slope != file_slope:
            raise EngineInputError(f"{path}: the file's leaky ReLU slope is γ = {file_slope:g}, not {slope:g}")
        activation, slope = file_act, (file_slope if file_act == "leaky_relu" else None)
    act, gamma = check_activation(path, activation or "relu", slope)
    W1, b1, W2, b2 = _two_layers(path, layers)
    if data is not None:
        X, Y = load_xy_file(data)
    if X is not None:
        X, Y = check_data_width(data or path, W1.shape[1], W2.shape[0], X, Y)
    return TwoLayer(W1, W2, b1, b2, act, gamma, X, Y, str(path), kind)


def check_data_width(where, d: int, e: int, X, Y) -> tuple[np.ndarray, np.ndarray]:
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    Y = Y[:, None] if Y.ndim == 1 else Y
    if X.ndim != 2 or X.shape[1] != d:
        raise EngineInputError(
            f"{where}: the data has {X.shape[1] if X.ndim == 2 else X.shape} input column(s) "
            f"but the network takes d = {d} inputs"
        )
    if Y.ndim != 2 or Y.shape != (X.shape[0], e):
        raise EngineInputError(f"{where}: the targets Y have shape {Y.shape}; the network has e = {e} output(s)")
    if X.shape[0] < 1 or not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise EngineInputError(f"{where}: the data must hold at least one sample and no NaN/inf")
    return X, Y


def _two_layers(path, layers) -> tuple:
    """(W1, b1, W2, b2) from [(name, W, b)], once there are exactly two that chain."""
    if len(layers) != 2:
        hidden = len(layers) - 1
        raise EngineInputError(
            f"{path}: {len(layers)} Linear layer(s), i.e. {max(hidden, 0)} hidden layer(s); paper A's "
            "networks have exactly one hidden layer (two Linear layers)"
        )
    (n1, W1, b1), (n2, W2, b2) = layers
    if W2.shape[1] != W1.shape[0]:
        raise EngineInputError(
            f"{path}: layer {n2!r} has weight shape {W2.shape} (takes {W2.shape[1]} inputs) "
            f"but layer {n1!r} has {W1.shape[0]} outputs: the shapes do not chain"
        )
    if W1.size + W2.size > MAX_PARAMETERS:
        raise EngineInputError(f"{path}: {W1.size + W2.size} weights; the limit is {MAX_PARAMETERS}")
    for name, a in (("W1", W1), ("b1", b1), ("W2", W2), ("b2", b2)):
        if a is not None and not np.isfinite(a).all():
            raise EngineInputError(f"{path}: {name} contains NaN or inf")
    f64 = lambda a: None if a is None else np.array(a, dtype=np.float64)
    return f64(W1), f64(b1), f64(W2), f64(b2)


def _read_npz(path) -> tuple[list, tuple, np.ndarray | None, np.ndarray | None]:
    try:
        with np.load(path, allow_pickle=False) as z:
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise EngineInputError(f"{path}: a single .npy array, not an .npz archive of named arrays")
            arrays = {k: z[k] for k in z.files}
    except EngineInputError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        # ValueError includes "Object arrays cannot be loaded when allow_pickle=False": refused, never run
        raise EngineInputError(f"{path}: not a readable .npz of plain arrays ({e})") from None
    for key in ("W1", "W2", "activation"):
        if key not in arrays:
            raise EngineInputError(f"{path}: missing array {key!r} (found: {', '.join(sorted(arrays)) or 'none'})")
    act = arrays["activation"]
    if act.ndim != 0 or act.dtype.kind not in "US":
        raise EngineInputError(f"{path}: 'activation' must be a single string")
    activation = str(act)
    slope = None
    for key in ("leaky_slope", "slope"):
        if key in arrays:
            slope = _number(path, arrays[key], key)
    if activation == "leaky_relu" and slope is None:
        slope = DEFAULT_SLOPE
    if activation not in ACTIVATIONS:
        raise homogeneity_error(path, activation)
    extra = sorted(k for k in arrays if k[:1] in "Wb" and k not in ("W1", "W2", "b1", "b2") and k[1:].isdigit())
    if extra:
        raise EngineInputError(
            f"{path}: has {', '.join(extra)}: more than one hidden layer; paper A's networks have exactly one"
        )
    layers = []
    for i in (1, 2):
        W = _plain(path, arrays[f"W{i}"], f"W{i}", 2)
        b = _plain(path, arrays[f"b{i}"], f"b{i}", 1) if f"b{i}" in arrays else None
        if b is not None and b.shape != (W.shape[0],):
            raise EngineInputError(f"{path}: b{i} has shape {b.shape}; expected ({W.shape[0]},) to match W{i}")
        layers.append((f"W{i}", W, b))
    X = Y = None
    if ("X" in arrays) != ("Y" in arrays):
        raise EngineInputError(f"{path}: data needs both X and Y, found only {'X' if 'X' in arrays else 'Y'}")
    if "X" in arrays:
        X, Y = _plain(path, arrays["X"], "X", 2), _plain(path, arrays["Y"], "Y", None)
    return layers, (activation, 0.0 if activation == "relu" else slope), X, Y


def _plain(path, a: np.ndarray, key: str, ndim: int | None) -> np.ndarray:
    if a.dtype.kind not in "fiu":
        raise EngineInputError(f"{path}: {key} has dtype {a.dtype}; expected real numbers")
    if ndim is not None and a.ndim != ndim:
        raise EngineInputError(f"{path}: {key} has shape {a.shape}; expected a {ndim}-D array")
    return a.astype(np.float64)


def _number(path, a: np.ndarray, key: str) -> float:
    if a.ndim != 0 or a.dtype.kind not in "fiu":
        raise EngineInputError(f"{path}: {key} must be a single number")
    return float(a)


def _read_pt2(path) -> tuple[list, tuple]:
    """[(name, W, b)] and (activation, γ) from an exported chain Linear → activation → Linear."""
    try:
        with zipfile.ZipFile(path) as z:
            graph, weights = pt2._read_archive(path, z)
            parameters = {name: pt2._weight(path, z, name, meta) for name, meta in weights.items()}
        return _chain(path, graph, parameters)
    except EngineInputError:
        raise
    except (zipfile.BadZipFile, OSError, KeyError, IndexError, TypeError, ValueError) as e:
        raise EngineInputError(f"{path}: not a readable torch.export archive ({type(e).__name__}: {e})") from None


def _chain(path, graph: dict, parameters: dict) -> tuple[list, tuple]:
    layers, acts = [], []
    for target, item in pt2.chain(path, graph, parameters)[0]:
        if target == "linear":
            layers.append(item)
        elif target in _OPS:
            slope = DEFAULT_SLOPE
            for a in item["inputs"][1:]:
                if a["name"] == "negative_slope":
                    slope = float(a["arg"].get("as_float", a["arg"].get("as_int")))
            acts.append((_OPS[target], slope))
        else:
            raise EngineInputError(
                f"{path}: unsupported layer {pt2.unsupported_op(target)!r}; "
                "paper A reads Linear → ReLU or LeakyReLU → Linear"
            )
    for name, _ in acts:
        if name not in ACTIVATIONS:
            raise homogeneity_error(path, name)
    if len(layers) != 2:
        _two_layers(path, layers)  # says how many hidden layers there are
    if len(acts) != 1:
        raise EngineInputError(f"{path}: expected one activation between the two Linear layers, found {len(acts)}")
    return layers, acts[0]


def save_two_layer(path, net: TwoLayer, X=None, Y=None) -> Path:
    """Write ``net`` (and data) as the app's .npz that ``load_two_layer`` reads back."""
    arrays = {"W1": net.W1, "W2": net.W2, "activation": np.array(net.activation)}
    if net.activation == "leaky_relu":
        arrays["leaky_slope"] = np.array(net.slope)
    for key, a in (("b1", net.b1), ("b2", net.b2), ("X", X), ("Y", Y)):
        if a is not None:
            arrays[key] = np.asarray(a, dtype=np.float64)
    np.savez(path, **arrays)
    return Path(path)


# ------------------------------------------------------------------ by structure: two layers or more
# the activations a two-layer graph may have between its Linear layers (the reader above refuses
# the non-homogeneous ones, saying why)
TWO_LAYER_ACTIVATIONS = frozenset({"relu", "leaky_relu", "sigmoid", "tanh", "gelu", "elu", "silu", "softplus"})


def is_two_layer_graph(graph) -> bool:
    """Whether an exported torch.fx graph is exactly linear → one activation → linear, each reading
    the last: what the two-layer reader takes; any other graph is a network of any depth."""
    import operator

    ops = [
        n
        for n in graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem and not str(n.target).startswith("aten.sym_")
    ]
    names = [str(n.target).split(".")[1] if str(n.target).startswith("aten.") else "" for n in ops]
    if len(ops) != 3 or names[0] != "linear" or names[2] != "linear":
        return False
    return names[1].rstrip("_") in TWO_LAYER_ACTIVATIONS and ops[1].args[0] is ops[0] and ops[2].args[0] is ops[1]


def holds_deeper_mlp(path) -> bool:
    """Whether the app's .npz at ``path`` holds a third weight matrix (W3, …); False when it cannot
    be read (the two-layer reader then says why)."""
    import re

    try:
        with np.load(path, allow_pickle=False) as z:
            names = list(getattr(z, "files", []))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    return any((m := re.fullmatch(r"W(\d+)", name)) and int(m.group(1)) >= 3 for name in names)
