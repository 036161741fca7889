"""Paper A on any network: the rescaling invariant of every hidden unit of a PyTorch model (MATH A9).

A hidden unit is an output unit of a ``Linear`` (one row of its weight) or an output channel of a
``Conv{1,2,3}d`` (one filter), whose output reaches the next ``Linear``/``Conv`` only through
operations that commute with multiplying that unit's output by a > 0: ReLU, LeakyReLU, PReLU, max
and average pooling (a mean over the spatial axes too), dropout, identity, flatten/view/reshape.
Then ``(w, b, v) → (a w, a b, v / a)`` leaves the function unchanged, with ``v`` every weight of the
next layers that reads the unit, and gradient flow conserves

    c = ‖w‖² + b² − ‖v‖²

(law ``rescaling``). A BatchNorm on the way makes the unit scale-invariant in (w, b) instead: ``c`` is
not conserved, ``‖w‖² + b²`` is (law ``scale``). A non-homogeneous activation (GELU, sigmoid, ...), a
normalization across units, a residual sum, a model output or an operation the analysis does not
follow breaks the rescaling symmetry (law ``none``). ``c`` is computed for every unit whatever the law.

The structure is found once by ``torch.fx.symbolic_trace`` (an ``nn.Sequential`` that cannot be traced
is read child by child); the weights come from a state_dict, so one structure serves many checkpoints.

An exported graph is read too: a ``torch.fx.GraphModule`` (``engine.io.pt2_program.read_exported_module``
gives one for a ``torch.export`` archive) is read as its graph stands, without tracing it again. There
a layer is a call of ``aten.linear``, ``aten.conv1d/2d/3d`` or ``aten.convolution`` (not transposed)
whose weight and bias are ``get_attr`` reads of parameters, and the layer's name is the weight's
parameter name, the name the exported module had (``0.weight``), so a state_dict of the original
module is a checkpoint of the graph. The operations on the way are the ATen ops the modules become:
``relu``, ``leaky_relu``, ``prelu``, ``dropout`` and ``feature_dropout`` (identities in an eval
graph), ``clone``, zero ``pad``; ``max_pool``, ``avg_pool`` and ``adaptive_*_pool`` (the ``*_with_indices``
and adaptive max forms return (values, indices): the values, item 0, are followed and the indices,
which a > 0 leaves unchanged, are not the unit's output); ``mean.dim``, ``sum.dim_IntList`` and
``amax`` over spatial axes; ``flatten``, ``view``, ``reshape``. The exported graph records every
node's shape (``meta["val"]``), so its flattens and reductions are checked against the shapes as
with an ``example_input``. ``hardtanh`` (ReLU6), ``gelu``, ``sigmoid``, ``tanh``, ... are not
positively homogeneous (law ``none``), ``layer_norm``/``group_norm``/``softmax`` mix units (``none``)
and ``add``/``sub`` are a residual sum (``none``).

Batch norm in an exported graph. ``torch.export`` of ``model.eval()`` writes ``aten.batch_norm``
with training off (or ``_native_batch_norm_legit_no_training``): the running statistics, a fixed
per-channel affine map ``z ↦ α z + β'`` with ``α = γ/√(σ²_run + ε)``, ``β' = β − α μ_run``. Under that
map neither law holds for the graph as it is evaluated: rescaling ``(w, b)`` by a gives
``α a z + β' ≠ a (α z + β')`` unless β' = 0, and no v undoes it. But the graph is a snapshot of a
model trained in training mode, where the batch norm divides by the batch's own statistics and the
training loss is unchanged by ``(w, b) → (a w, a b)``; that training-time law is the one a researcher
checks against checkpoints, and the one the module form reports (an ``nn.BatchNorm`` reads as
``scale`` whether the module is in train or eval mode). So an eval-mode batch norm in an exported
graph gives the law ``scale`` too, its reason saying that the law is training's and that the
running-statistics map the graph applies keeps neither.
"""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.validation import integer

RESCALING, SCALE, NONE = "rescaling", "scale", "none"


@dataclass(frozen=True)
class LayerInvariants:
    """The invariants of one layer's hidden units (MATH A9).

    ``name``: the incoming weight's parameter name; ``c`` (units,): ‖w‖² + b² − ‖v‖² per unit, in
    float64, whatever the law; ``law``: "rescaling" (c conserved by gradient flow), "scale" (‖w‖² + b²
    conserved instead) or "none"; ``reason``: one line saying why; ``locked``: 0-based units with c < 0
    whose v is a single number (its sign can never change under gradient flow; empty unless the law is
    "rescaling"); ``negative_share``: the share of units with c < 0; ``outgoing``: the parameter names
    holding v.
    """

    name: str
    c: np.ndarray
    law: str
    reason: str
    locked: np.ndarray
    negative_share: float
    outgoing: tuple[str, ...]


# --- the structure -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Read:
    """How one consumer's weight reads the producer's C units: ``linear`` columns k·S:(k+1)·S, or
    ``conv`` input channel k (with ``groups``)."""

    param: str
    kind: str
    spatial: int = 1
    groups: int = 1


@dataclass
class _Layer:
    """One producer: its parameters, its unit count, the consumers' reads and the law's evidence."""

    weight: str
    bias: str | None
    units: int
    reads: list[_Read] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # reasons for "none"
    scaled: list[str] = field(default_factory=list)  # reasons for "scale"
    path: list[str] = field(default_factory=list)  # homogeneous operations passed
    unmapped: bool = False  # a Linear/Conv lies downstream past an operation the analysis does not follow
    plain_reads: bool = False  # some consumer reads the units with no BatchNorm on the way


@cache
def _kinds():
    nn, F = torch.nn, torch.nn.functional
    return {
        "producer_conv": (nn.Conv1d, nn.Conv2d, nn.Conv3d),
        "homogeneous": (
            nn.ReLU,
            nn.LeakyReLU,
            nn.PReLU,
            nn.Dropout,
            nn.Dropout1d,
            nn.Dropout2d,
            nn.Dropout3d,
            nn.Identity,
        ),
        "pool": (
            nn.MaxPool1d,
            nn.MaxPool2d,
            nn.MaxPool3d,
            nn.AvgPool1d,
            nn.AvgPool2d,
            nn.AvgPool3d,
            nn.AdaptiveAvgPool1d,
            nn.AdaptiveAvgPool2d,
            nn.AdaptiveAvgPool3d,
            nn.AdaptiveMaxPool1d,
            nn.AdaptiveMaxPool2d,
            nn.AdaptiveMaxPool3d,
            nn.ZeroPad1d,
            nn.ZeroPad2d,
            nn.ZeroPad3d,
        ),
        "batch_norm": (
            nn.BatchNorm1d,
            nn.BatchNorm2d,
            nn.BatchNorm3d,
            nn.InstanceNorm1d,
            nn.InstanceNorm2d,
            nn.InstanceNorm3d,
        ),
        "mixing_norm": (nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm, nn.RMSNorm),
        "smooth": (
            nn.GELU,
            nn.Sigmoid,
            nn.Tanh,
            nn.SiLU,
            nn.ELU,
            nn.SELU,
            nn.CELU,
            nn.Softplus,
            nn.Mish,
            nn.Hardswish,
            nn.Hardsigmoid,
            nn.Hardtanh,
            nn.ReLU6,
            nn.LogSigmoid,
            nn.Softsign,
            nn.Tanhshrink,
            nn.Threshold,
            nn.Hardshrink,
            nn.Softshrink,
        ),
        "f_homogeneous": {
            F.relu,
            F.relu_,
            torch.relu,
            torch.relu_,
            F.leaky_relu,
            F.leaky_relu_,
            F.prelu,
            F.dropout,
            F.dropout1d,
            F.dropout2d,
            F.dropout3d,
            torch.dropout,
        },
        "f_pool": {
            F.max_pool1d,
            F.max_pool2d,
            F.max_pool3d,
            F.avg_pool1d,
            F.avg_pool2d,
            F.avg_pool3d,
            F.adaptive_avg_pool1d,
            F.adaptive_avg_pool2d,
            F.adaptive_avg_pool3d,
            F.adaptive_max_pool1d,
            F.adaptive_max_pool2d,
            F.adaptive_max_pool3d,
            torch.max_pool1d,
            torch.max_pool2d,
            torch.max_pool3d,
            torch.avg_pool1d,
        },
        "f_smooth": {
            F.gelu,
            F.silu,
            F.elu,
            F.selu,
            F.celu,
            F.softplus,
            F.mish,
            F.hardswish,
            F.hardsigmoid,
            F.hardtanh,
            F.relu6,
            F.logsigmoid,
            F.softsign,
            F.tanhshrink,
            F.sigmoid,
            F.tanh,
            torch.sigmoid,
            torch.tanh,
            torch.exp,
        },
        "f_batch_norm": {F.batch_norm, F.instance_norm},
        "f_sum": {operator.add, operator.iadd, operator.sub, operator.isub, torch.add, torch.sub},
        "m_homogeneous": {"relu", "relu_", "contiguous", "clone"},
        "m_smooth": {"sigmoid", "tanh", "exp", "sigmoid_", "tanh_"},
        "m_sum": {"add", "add_", "sub", "sub_"},
        "m_shape": {"view", "reshape", "flatten"},
        "ignored_methods": {"size", "dim", "numel"},
    }


# ATen ops of an exported graph (by overload packet name, an in-place form's trailing "_" dropped), by
# what they do to one unit's output: as the module kinds above.
_ATEN = {
    "homogeneous": frozenset(
        {"relu", "leaky_relu", "prelu", "_prelu_kernel", "dropout", "feature_dropout", "clone", "contiguous", "alias"}
    ),
    "pool": frozenset(
        {
            *(f"{kind}_pool{n}d" for kind in ("max", "avg", "adaptive_avg", "adaptive_max") for n in (1, 2, 3)),
            *(f"max_pool{n}d_with_indices" for n in (1, 2, 3)),
            "_adaptive_avg_pool2d",
            "_adaptive_avg_pool3d",
        }
    ),
    "pad": frozenset({"pad", "constant_pad_nd"}),
    "reduce": frozenset({"mean", "sum", "amax"}),
    "shape": frozenset({"flatten", "view", "reshape", "_unsafe_view"}),
    "batch_norm": frozenset(
        {"batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"}
    ),
    "instance_norm": frozenset({"instance_norm"}),
    "mixing_norm": frozenset(
        {"layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "rms_norm", "_fused_rms_norm"}
        | {"softmax", "_softmax", "log_softmax", "_log_softmax"}
    ),
    "smooth": frozenset(
        {"gelu", "sigmoid", "tanh", "silu", "elu", "selu", "celu", "softplus", "mish", "hardswish", "hardsigmoid"}
        | {"hardtanh", "relu6", "log_sigmoid", "log_sigmoid_forward", "softsign", "exp", "threshold"}
        | {"hardshrink", "softshrink", "tanhshrink"}
    ),
    "sum": frozenset({"add", "sub", "rsub"}),
    "ignored": frozenset({"sym_size", "sym_numel", "sym_stride", "sym_storage_offset", "size", "dim", "numel"}),
    # ops returning a tuple whose item 0 is the followed output
    "tuple": frozenset(
        {*(f"max_pool{n}d_with_indices" for n in (1, 2, 3)), *(f"adaptive_max_pool{n}d" for n in (1, 2, 3))}
        | {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"}
    ),
}


def _aten(node) -> str | None:
    """The ATen op a node calls (``relu`` for ``aten.relu_.default``), or None for anything else."""
    target = getattr(node, "target", None)
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    name = target.overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _arg(node, index: int, name: str, default=None):
    """Argument ``index`` (or keyword ``name``) of a call node."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


@dataclass(frozen=True)
class _Call:
    """One call of a Linear/Conv layer: an ``nn.Linear``/``nn.Conv`` module or an ATen linear/conv op.

    ``key`` names the layer (the module's path, or the weight's name without ``.weight``); ``nd``: its
    spatial axes (0 for a linear layer); ``fan_in``: in_features or in_channels; ``input``: the node read."""

    key: str
    weight: str
    bias: str | None
    units: int
    nd: int
    fan_in: int
    groups: int
    input: object


@dataclass
class _Graph:
    """What the walk needs to know about the model: its submodules, its state's shapes and whether
    the nodes carry tensor shapes to check layouts against."""

    modules: dict
    params: dict[str, tuple]
    shapes: bool
    calls: dict[str, int] = field(default_factory=dict)

    def layer(self, n) -> _Call | None:
        """The layer ``n`` calls, or None when it calls none."""
        if n.op == "call_module":
            m = self.modules.get(n.target)
            arg = n.args[0] if n.args else None
            bias = None if getattr(m, "bias", None) is None else f"{n.target}.bias"
            if isinstance(m, torch.nn.Linear):
                return _Call(n.target, f"{n.target}.weight", bias, m.out_features, 0, m.in_features, 1, arg)
            if isinstance(m, _kinds()["producer_conv"]):
                nd = len(m.kernel_size)
                return _Call(n.target, f"{n.target}.weight", bias, m.out_channels, nd, m.in_channels, m.groups, arg)
            return None
        op = _aten(n)
        if op == "linear":
            groups = 1
        elif op in ("conv1d", "conv2d", "conv3d"):
            groups = _arg(n, 6, "groups", 1)
        elif op == "convolution" and not _arg(n, 6, "transposed", False):
            groups = _arg(n, 8, "groups", 1)
        else:
            return None
        weight, bias = _arg(n, 1, "weight"), _arg(n, 2, "bias")
        held = lambda a: isinstance(a, torch.fx.Node) and a.op == "get_attr" and a.target in self.params  # noqa: E731
        if not held(weight) or not (bias is None or held(bias)) or not isinstance(groups, int) or groups < 1:
            return None
        shape = self.params[weight.target]
        nd = len(shape) - 2
        if (op == "linear") != (nd == 0) or nd < 0 or shape[0] % groups:
            return None
        key = weight.target.removesuffix(".weight")
        fan_in = shape[1] * groups
        return _Call(key, weight.target, None if bias is None else bias.target, shape[0], nd, fan_in, groups, n.args[0])


def _trace(model):
    """The fx graph of ``model``: a GraphModule's own (a copy), else traced; an untraceable Sequential
    is read child by child."""
    fx = torch.fx
    if isinstance(model, fx.GraphModule):
        # a copy, so that shapes are annotated on it and never on the caller's graph; with plain
        # positional inputs (an exported graph's pytree input handling is not needed to read it)
        graph = fx.Graph()
        graph.output(graph.graph_copy(model.graph, {}))
        return graph
    try:
        return fx.symbolic_trace(model).graph
    except Exception as err:  # fx raises many kinds: TraceError, TypeError, RuntimeError ...
        if not isinstance(model, torch.nn.Sequential):
            cause = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise EngineInputError(
                f"model {type(model).__name__} cannot be traced by torch.fx ({cause}); "
                "data-dependent control flow in forward() hides its structure"
            ) from None
    graph = fx.Graph()
    node = graph.placeholder("x")

    def add(module, prefix):
        nonlocal node
        for name, child in module.named_children():
            qual = f"{prefix}{name}"
            if isinstance(child, torch.nn.Sequential):
                add(child, qual + ".")
            else:
                node = graph.call_module(qual, (node,))

    add(model, "")
    graph.output(node)
    return graph


def _shape(node):
    """A node's tensor shape: from ``ShapeProp``'s ``tensor_meta``, else an exported graph's ``val``
    (None for a symbolic size such as a dynamic batch); None when unknown or not a tensor."""
    meta = getattr(node, "meta", {})
    tm = meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return tuple(tm.shape)
    val = meta.get("val")
    if isinstance(val, torch.Tensor):
        return tuple(s if isinstance(s, int) else None for s in val.shape)
    return None


def _has_shapes(graph) -> bool:
    """Whether an exported graph's nodes carry their tensors' shapes (``meta["val"]``)."""
    return any(n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor) for n in graph.nodes)


def _flatten_start(node) -> int | None:
    """start_dim of a flatten call (module, function, method or ATen op); None for view/reshape."""
    if node.op == "call_module":
        return None
    if node.target in ("view", "reshape") or _aten(node) in ("view", "reshape", "_unsafe_view"):
        return None
    return _arg(node, 1, "start_dim", 0)


def _flatten_end(node) -> int:
    """end_dim of a flatten call (function, method or ATen op); -1 for anything else."""
    if node.target is torch.flatten or _aten(node) == "flatten" or (node.op, node.target) == ("call_method", "flatten"):
        return _arg(node, 2, "end_dim", -1)
    return -1


def _structure(model, example_input=None) -> list[_Layer]:
    """Every Linear/Conv producer whose units reach a Linear/Conv consumer, with how it reads them."""
    if not isinstance(model, torch.nn.Module):
        raise EngineInputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    graph = _trace(model)
    if example_input is not None:
        _propagate_shapes(model, graph, example_input)
    g = _Graph(dict(model.named_modules()), _shapes(model), example_input is not None or _has_shapes(graph))
    layer_calls = [(n, call) for n in graph.nodes if (call := g.layer(n)) is not None]
    for _, call in layer_calls:
        g.calls[call.key] = g.calls.get(call.key, 0) + 1
    found: dict[str, _Layer] = {}  # a layer called twice is one layer, walked from both calls
    for n, call in layer_calls:
        if call.key not in found:
            found[call.key] = _Layer(call.weight, call.bias, call.units)
            if g.calls[call.key] > 1:
                found[call.key].broken.append(
                    f"{call.key} is called {g.calls[call.key]} times, so its weights are shared"
                )
        _walk(n, found[call.key], call.nd, g)
    layers = [layer for layer in found.values() if layer.reads or layer.unmapped]
    if not layers:
        raise EngineInputError(
            f"the model has no hidden units: no Linear or Conv layer of {type(model).__name__} feeds another one"
        )
    return layers


def _propagate_shapes(model, graph, example_input) -> None:
    """Annotate ``graph`` with tensor shapes from one run on ``example_input`` (eval mode, no grad)."""
    from torch.fx.passes.shape_prop import ShapeProp

    args = example_input if isinstance(example_input, tuple) else (example_input,)
    modes = {m: m.training for m in model.modules()}
    try:
        model.eval()
        with torch.no_grad():
            ShapeProp(torch.fx.GraphModule(model, graph)).propagate(*args)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise EngineInputError(f"example_input does not fit the model: {first}") from None
    finally:
        for m, mode in modes.items():
            m.train(mode)


def _batch_norm_reason(u, desc: str) -> str:
    """Why a batch norm gives the law ``scale``; an eval-mode ATen batch norm says whose law it is."""
    op = _aten(u)
    running = op == "_native_batch_norm_legit_no_training" or (
        op in ("batch_norm", "native_batch_norm") and not _arg(u, 5, "training", False)
    )
    if running:
        return (
            f"{desc} is a batch norm: in training it normalizes each unit with batch statistics, so the "
            "training loss is unchanged by (w, b) → (a w, a b) and ‖w‖² + b² is conserved, not c (this "
            "graph applies the running statistics, a fixed affine map under which neither law holds)"
        )
    return (
        f"{desc} normalizes each unit with batch statistics (training mode), so the loss is "
        "unchanged by (w, b) → (a w, a b): ‖w‖² + b² is conserved, not c"
    )


def _zero_pad(u, nd: int) -> bool:
    """Whether ATen ``pad``/``constant_pad_nd`` ``u`` pads only a conv output's spatial axes with zeros."""
    pad = _arg(u, 1, "pad")
    if _aten(u) == "pad":
        zero = _arg(u, 2, "mode", "constant") == "constant" and _arg(u, 3, "value") in (None, 0, 0.0)
    else:
        zero = _arg(u, 2, "value", 0) in (0, 0.0)
    return nd > 0 and zero and isinstance(pad, (list, tuple)) and len(pad) % 2 == 0 and len(pad) // 2 <= nd


def _walk(start, layer: _Layer, nd: int, g: _Graph) -> None:
    """Follow the producer's output forward to its consumers, collecting reads and the law's evidence.
    ``nd``: the producer's number of spatial axes (0 for a Linear)."""
    is_conv = nd > 0
    K, modules = _kinds(), g.modules
    stack, seen = [(start, False, False)], set()
    while stack:
        node, flat, normed = stack.pop()
        if (node, flat, normed) in seen:
            continue
        seen.add((node, flat, normed))
        # Past a BatchNorm the scaling is absorbed: what follows cannot break the scale law.
        broken = [] if normed else layer.broken
        for u in node.users:
            desc = _describe(u, modules)
            op = _aten(u)
            if u.op == "output":
                broken.append("its output is also a model output, which no next-layer weight can rescale")
                continue
            if (u.op == "call_method" and u.target in K["ignored_methods"]) or op in _ATEN["ignored"]:
                continue
            if u.op == "call_function" and u.target is getattr and u.args[1] in ("shape", "dtype", "device"):
                continue
            if u.op == "call_function" and u.target is operator.getitem and _aten(node) in _ATEN["tuple"]:
                if u.args[1] == 0:  # the values (or the normalized output): the same layout, no operation
                    stack.append((u, flat, normed))
                elif u.users and "pool" not in _aten(node):  # a pool's indices: unchanged by a > 0
                    broken.append(f"its output passes through {desc}, which the analysis does not follow")
                    layer.unmapped |= _feeds_layer(u, g)
                continue
            call = g.layer(u)
            if call is not None and call.input is node:
                before = len(layer.reads)
                _consume(u, call, layer, is_conv, flat, g, node, broken)
                layer.plain_reads |= not normed and len(layer.reads) > before
                continue
            mod = modules.get(u.target) if u.op == "call_module" else None
            if (
                isinstance(mod, K["homogeneous"])
                or (u.op == "call_function" and u.target in K["f_homogeneous"])
                or (u.op == "call_method" and u.target in K["m_homogeneous"])
                or op in _ATEN["homogeneous"]
            ):
                layer.path.append(desc)
                stack.append((u, flat, normed))
            elif (
                isinstance(mod, K["pool"])
                or (u.op == "call_function" and u.target in K["f_pool"])
                or op in _ATEN["pool"]
                or (op in _ATEN["pad"] and _zero_pad(u, nd))
            ):
                if not is_conv:
                    broken.append(f"{desc} pools along the units' axis, mixing units")
                    layer.unmapped |= _feeds_layer(u, g)
                    continue
                layer.path.append(desc)
                stack.append((u, flat, normed))
            elif _spatial_reduction(u, nd, flat, node, g.shapes):
                layer.path.append(desc)
                stack.append((u, flat, normed))
            elif (
                isinstance(mod, torch.nn.Flatten)
                or (u.op in ("call_function", "call_method") and u.target in K["m_shape"])
                or u.target is torch.flatten
                or op in _ATEN["shape"]
            ):
                nxt = _reshaped(node, u, mod, is_conv, flat, g.shapes)
                if nxt is None:
                    broken.append(f"{desc} reshapes the units' output in a way the analysis does not follow")
                    layer.unmapped |= _feeds_layer(u, g)
                    continue
                layer.path.append(desc)
                stack.append((u, nxt, normed))
            elif (
                isinstance(mod, K["batch_norm"])
                or (u.op == "call_function" and u.target in K["f_batch_norm"])
                or op in _ATEN["batch_norm"] | _ATEN["instance_norm"]
            ):
                layer.scaled.append(_batch_norm_reason(u, desc))
                stack.append((u, flat, True))
            elif (
                isinstance(mod, K["smooth"])
                or (u.op == "call_function" and u.target in K["f_smooth"])
                or (u.op == "call_method" and u.target in K["m_smooth"])
                or op in _ATEN["smooth"]
            ):
                broken.append(f"{desc} is not positively homogeneous (σ(a z) ≠ a σ(z))")
                stack.append((u, flat, normed))
            elif isinstance(mod, K["mixing_norm"]) or op in _ATEN["mixing_norm"]:
                broken.append(f"{desc} normalizes across units, so rescaling one unit changes the others")
                stack.append((u, flat, normed))
            elif (
                (u.op == "call_function" and u.target in K["f_sum"])
                or (u.op == "call_method" and u.target in K["m_sum"])
                or op in _ATEN["sum"]
            ):
                broken.append(
                    f"its output feeds the residual sum {u.name} alongside another path; rescaling it "
                    "changes the sum, which no next-layer weight can undo for this branch alone"
                )
                stack.append((u, flat, normed))
            else:
                broken.append(f"its output passes through {desc}, which the analysis does not follow")
                layer.unmapped |= _feeds_layer(u, g)


def _spatial_reduction(u, nd: int, flat: bool, node, shapes: bool) -> bool:
    """Whether ``u`` is a mean, sum or amax of a conv's output over spatial axes only (a global pooling
    written as ``x.mean((2, 3))``, or ATen's ``mean.dim``): linear or positively homogeneous, and per
    channel."""
    methods, functions = {"mean", "sum", "amax"}, {torch.mean, torch.sum, torch.amax}
    if (
        nd == 0
        or flat
        or not (
            (u.op == "call_method" and u.target in methods)
            or (u.op == "call_function" and u.target in functions)
            or _aten(u) in _ATEN["reduce"]
        )
    ):
        return False
    dims = u.args[1] if len(u.args) > 1 else u.kwargs.get("dim")
    dims = (dims,) if isinstance(dims, int) else dims
    if not isinstance(dims, (tuple, list)) or not dims or not all(isinstance(d, int) for d in dims):
        return False
    if not all(2 <= d < 2 + nd or -nd <= d <= -1 for d in dims):
        return False
    if shapes:
        before, after = _shape(node), _shape(u)
        return before is not None and after is not None and len(after) >= 2 and after[:2] == before[:2]
    return True


def _feeds_layer(node, g: _Graph) -> bool:
    """Whether a Linear or Conv layer is downstream of ``node``: then the producer is hidden, only unmapped."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if g.layer(n) is not None:
            return True
        stack.extend(n.users)
    return False


def _describe(u, modules) -> str:
    if u.op == "call_module":
        return f"{u.target} ({type(modules[u.target]).__name__})"
    if _aten(u) is not None:
        return f"{u.name} ({u.target})"
    if u.op == "call_function":
        return f"{getattr(u.target, '__name__', str(u.target))}()"
    return f".{u.target}()" if u.op == "call_method" else u.op


def _reshaped(node, u, mod, is_conv: bool, flat: bool, shapes: bool) -> bool | None:
    """The layout after a flatten/view/reshape: True once (C, spatial) is flattened row-major from dim 1;
    None for a reshape the analysis does not follow."""
    start = 1 if mod is not None else _flatten_start(u)
    if mod is not None and (mod.start_dim != 1 or mod.end_dim != -1):
        return None
    if start is not None and start != 1:
        return None
    if not shapes and mod is None and _flatten_end(u) != -1:
        return None
    if shapes:
        before, after = _shape(node), _shape(u)
        if before is None or after is None or None in before[1:]:
            return None
        if after == before:
            return flat
        if len(before) < 2 or after != (before[0], math.prod(before[1:])):
            return None
    if not is_conv:
        if shapes and len(_shape(node)) != 2:
            return None
        return flat
    return True


def _consume(u, call: _Call, layer: _Layer, is_conv: bool, flat: bool, g: _Graph, node, broken: list) -> None:
    """Record how consumer ``u`` (a call of layer ``call``) reads the producer's units (its v), or why it
    cannot be mapped."""
    C, param, shapes = layer.units, call.weight, g.shapes
    if g.calls[call.key] > 1:
        broken.append(f"{call.key} is called {g.calls[call.key]} times, so its weights are shared")
    if call.nd == 0:
        F_in = call.fan_in
        if F_in % C:
            if not shapes:
                raise EngineInputError(
                    f"{call.key} reads {F_in} features from the {C} units of {layer.weight}, which does not "
                    "divide; pass example_input so the layout can be traced"
                )
            broken.append(f"{call.key} reads {F_in} features, not a multiple of the {C} units")
            layer.unmapped = True
            return
        S = F_in // C
        if S != 1 and not (is_conv and flat):
            broken.append(f"{call.key} reads an axis other than the units ({F_in} features for {C} units)")
            layer.unmapped = True
            return
        if shapes and is_conv and flat:
            got = _shape(node)
            if got is None or got[-1] != F_in:
                broken.append(f"{call.key} reads a layout the analysis does not follow")
                layer.unmapped = True
                return
        layer.reads.append(_Read(param, "linear", S))
        return
    if not is_conv or flat or call.fan_in != C:
        broken.append(f"{call.key} reads the units' output along another axis than its channels")
        layer.unmapped = True
        return
    layer.reads.append(_Read(param, "conv", 1, call.groups))


# --- the numbers ---------------------------------------------------------------------------------


def _array(state, name: str, shape) -> np.ndarray:
    if name not in state:
        raise EngineInputError(f"state lacks parameter {name!r}, which the model has")
    t = state[name]
    arr = t.detach().to(torch.float64).cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float64)
    if tuple(arr.shape) != tuple(shape):
        raise EngineInputError(f"state's {name!r} has shape {tuple(arr.shape)}; the model's has {tuple(shape)}")
    return arr


def _squares(layer: _Layer, state, shapes) -> tuple[np.ndarray, np.ndarray, int]:
    """(‖w‖² + b², ‖v‖², number of v entries per unit) for each unit of ``layer``."""
    C = layer.units
    w = _array(state, layer.weight, shapes[layer.weight])
    incoming = np.sum(w.reshape(C, -1) ** 2, axis=1)
    if layer.bias is not None:
        incoming = incoming + _array(state, layer.bias, shapes[layer.bias]) ** 2
    outgoing, count = np.zeros(C), 0
    for r in layer.reads:
        V = _array(state, r.param, shapes[r.param])
        if r.kind == "linear":
            outgoing = outgoing + np.sum(V.reshape(V.shape[0], C, r.spatial) ** 2, axis=(0, 2))
            count += V.shape[0] * r.spatial
        else:
            g = r.groups
            blocks = V.reshape(g, V.shape[0] // g, C // g, -1)
            outgoing = outgoing + np.sum(blocks**2, axis=(1, 3)).reshape(C)
            count += (V.shape[0] // g) * blocks.shape[3]
    return incoming, outgoing, count


def _law(layer: _Layer) -> tuple[str, str]:
    consumers = ", ".join(dict.fromkeys(r.param.rsplit(".", 1)[0] for r in layer.reads))
    if layer.broken:
        missing = "; c counts only the outgoing weights it could map" if layer.unmapped else ""
        return NONE, layer.broken[0] + missing
    if layer.scaled and layer.plain_reads:
        return NONE, (
            f"it reaches {consumers} both through a BatchNorm and around it, so neither rescaling nor "
            "scaling w alone keeps the function"
        )
    if layer.scaled:
        return SCALE, layer.scaled[0]
    via = ", ".join(dict.fromkeys(layer.path)) or "nothing"
    return RESCALING, (
        f"positively homogeneous path (via {via}) to {consumers}: (w, b, v) → (a w, a b, v / a) keeps the function"
    )


def _invariants(layers: list[_Layer], state, shapes) -> list[LayerInvariants]:
    out = []
    for layer in layers:
        incoming, outgoing, count = _squares(layer, state, shapes)
        c = incoming - outgoing
        law, reason = _law(layer)
        single = count == 1 and law == RESCALING
        locked = np.nonzero(c < 0)[0].astype(np.int64) if single else np.zeros(0, dtype=np.int64)
        outgoing_names = tuple(dict.fromkeys(r.param for r in layer.reads))
        out.append(LayerInvariants(layer.weight, c, law, reason, locked, float(np.mean(c < 0)), outgoing_names))
    return out


def _shapes(model) -> dict[str, tuple]:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def layer_invariants(model, state: Mapping | None = None, example_input=None) -> list[LayerInvariants]:
    """The invariants of every hidden unit of ``model``, layer by layer in graph order (MATH A9).

    Parameters
    ----------
    model : torch.nn.Module
        The network; its structure is traced once with ``torch.fx``.
    state : Mapping[str, Tensor], optional
        A state_dict holding the weights to evaluate (default: the model's own).
    example_input : Tensor or tuple of Tensors, optional
        One input; when given, the tensor shapes along each path are checked, so a reshape other
        than a flatten from dim 1 is caught rather than assumed.

    Returns
    -------
    list[LayerInvariants]
        One per layer whose units reach a next Linear/Conv layer.

    Raises
    ------
    EngineInputError
        The model cannot be traced, has no hidden units, ``state`` lacks a parameter or has another
        shape, or a flatten's layout needs ``example_input``.
    """
    layers = _structure(model, example_input)
    return _invariants(layers, model.state_dict() if state is None else state, _shapes(model))


def invariant_drift(model, states: Sequence[Mapping], example_input=None) -> list[tuple[str, np.ndarray]]:
    """c(t) − c(0) per layer over the checkpoints ``states`` (MATH A9).

    Parameters
    ----------
    model : torch.nn.Module
        Gives the structure (found once) and the parameter shapes every checkpoint must have.
    states : Sequence[Mapping[str, Tensor]]
        The checkpoints, in time order; at least one.
    example_input : Tensor or tuple of Tensors, optional
        As in ``layer_invariants``.

    Returns
    -------
    list[tuple[str, numpy.ndarray]]
        Per layer, its weight's name and the (T, units) array c(t) − c(0).

    Raises
    ------
    EngineInputError
        No checkpoints, or a checkpoint of another architecture (a key missing or a shape differing).
    """
    if len(states) == 0:
        raise EngineInputError("states is empty; need at least one checkpoint")
    layers, shapes = _structure(model, example_input), _shapes(model)
    rows = []
    for t, state in enumerate(states):
        try:
            rows.append(_invariants(layers, state, shapes))
        except EngineInputError as err:
            raise EngineInputError(f"checkpoint {t} is of another architecture: {err}") from None
    return [(layer.weight, np.stack([r[i].c for r in rows]) - rows[0][i].c) for i, layer in enumerate(layers)]


def initial_negative_share(model_factory_or_model, draws: int = 20, seed: int = 0) -> dict[str, float]:
    """Per layer, the mean share of units with c < 0 at the model's own initialization (MATH A9).

    Parameters
    ----------
    model_factory_or_model : torch.nn.Module or callable returning one
        A model: each draw is a deep copy with every submodule's ``reset_parameters()`` called. A
        factory: each draw is a fresh ``factory()``, so custom initializations in it count.
    draws : int
        Number of initializations averaged.
    seed : int
        Seeds torch's generator for the draws; the caller's generator state is left as it was.

    Returns
    -------
    dict[str, float]
        Layer weight name → mean over the draws of the share of its units with c < 0.

    Raises
    ------
    EngineInputError
        ``draws`` or ``seed`` is not a valid integer, the factory does not return a module, the
        model has no hidden units, or a model (not a factory) has a layer whose module has no
        ``reset_parameters()`` (an exported graph's), so its draws could not differ.
    """
    draws = integer("draws", draws, 1)
    seed = integer("seed", seed, 0, 2**63 - 1)
    is_factory = not isinstance(model_factory_or_model, torch.nn.Module)
    if is_factory and not callable(model_factory_or_model):
        raise EngineInputError(
            f"model_factory_or_model must be a torch.nn.Module or a callable returning one, "
            f"got {type(model_factory_or_model).__name__}"
        )
    factory: Callable = model_factory_or_model if is_factory else None
    totals: dict[str, float] = {}
    layers = shapes = None
    if not is_factory:
        _check_resettable(model_factory_or_model, _structure(model_factory_or_model))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for _ in range(draws):
            if is_factory:
                model = factory()
                if not isinstance(model, torch.nn.Module):
                    raise EngineInputError(f"the model factory returned {type(model).__name__}, not a torch.nn.Module")
            else:
                model = copy.deepcopy(model_factory_or_model)
                for m in model.modules():
                    if callable(getattr(m, "reset_parameters", None)):
                        m.reset_parameters()
            if layers is None:
                layers, shapes = _structure(model), _shapes(model)
            for inv in _invariants(layers, model.state_dict(), shapes):
                totals[inv.name] = totals.get(inv.name, 0.0) + inv.negative_share
    return {name: total / draws for name, total in totals.items()}


def _check_resettable(model, layers: list[_Layer]) -> None:
    """EngineInputError unless every parameter the invariants read belongs to a module with
    ``reset_parameters()``: otherwise each draw would repeat the weights the model holds."""
    modules = dict(model.named_modules())
    for layer in layers:
        for param in (layer.weight, layer.bias, *(r.param for r in layer.reads)):
            owner = "" if param is None else param.rpartition(".")[0]
            if param is not None and not callable(getattr(modules.get(owner), "reset_parameters", None)):
                raise EngineInputError(
                    f"{param} belongs to no module with reset_parameters() (an exported graph has none), so every "
                    "draw would repeat the weights the model holds; pass a factory that builds the model"
                )


def invariants_report(layers: Sequence[LayerInvariants]) -> dict:
    """What a command prints for ``layer_invariants``: JSON-ready plain types.

    Parameters
    ----------
    layers : Sequence[LayerInvariants]
        The result of ``layer_invariants``.

    Returns
    -------
    dict
        ``layers``: one dict per layer, in order, with ``name``, ``law``, ``reason``, ``units``,
        ``negative_share``, ``locked`` (1-based units, as the two-layer report numbers neurons),
        ``c`` and ``outgoing``; ``units`` and ``locked_units``: totals over the layers; ``laws``: the
        number of layers under each law.
    """
    rows = [
        {
            "name": inv.name,
            "law": inv.law,
            "reason": inv.reason,
            "units": int(inv.c.size),
            "negative_share": float(inv.negative_share),
            "locked": [int(k) + 1 for k in inv.locked],
            "c": [float(x) for x in inv.c],
            "outgoing": list(inv.outgoing),
        }
        for inv in layers
    ]
    laws = {law: sum(r["law"] == law for r in rows) for law in (RESCALING, SCALE, NONE)}
    return {
        "layers": rows,
        "units": sum(r["units"] for r in rows),
        "locked_units": sum(len(r["locked"]) for r in rows),
        "laws": laws,
    }
