"""Eval-mode batch norm folded into the convolution before it, from the original parameters at each call.

A loss landscape evaluates one network at thousands of parameter vectors, and in eval mode a
convolution followed by batch norm is one convolution: with s = γ / √(σ² + ε) per output channel,

    bn(conv(x; W, b)) = conv(x; W · s, (b − μ) · s + β).

``folded(module)`` rewrites a module's graph (``torch.fx``) so that every such pair is that one
convolution. Unlike ``torch.fx.experimental.optimization.fuse``, which bakes W · s into a new weight
once, the folded weight and bias are formed *inside* the forward from the original tensors
(the convolution's W and b, batch norm's γ, β and running statistics): a channel-sized product
and a weight-sized one per layer per call. So the rewritten module

- has exactly the original's ``named_parameters()`` and ``named_buffers()`` (names, order, the very
  tensors), so ``torch.func.functional_call(rewritten, state, x)`` takes the state ``ModuleLoss``
  builds for the original, and a landscape's directions stay in the original parameter space;
- is differentiable in all of them: gradients and Hessian-vector products (``torch.func.jvp`` of
  ``torch.func.grad``) reach W, γ and β through W · s and (b − μ) · s + β;
- computes the same function, only rounded in another order.

Then the residual addition and the ReLU that follow a convolution (folded or not) become the
convolution's post-ops, oneDNN's fused kernel (``torch.ops.mkldnn._convolution_pointwise``, the
one ``torch.compile`` calls on the CPU): the output is written once instead of once per
elementwise op. That kernel has no derivative, so it runs only where nothing is differentiated
(a loss under ``torch.no_grad``, in float32, on the CPU); under autograd or a ``torch.func``
transform, and in float64, the same node computes the convolution, the sum and the ReLU apart.
``compiled(module)`` is the folded module under ``torch.compile``, for planes long enough to repay
the compile (benchmarks/README.md, issue #55, measures where the time goes and the break-even).

What is folded: a convolution (``nn.Conv1d/2d/3d`` with zero padding, ``F.conv1d/2d/3d``, or an
exported program's ``aten.conv1d/2d/3d``) whose only user is an eval-mode batch norm with
running statistics (``nn.BatchNorm1d/2d/3d`` not training, ``F.batch_norm`` with
``training=False``, ``aten.batch_norm`` or ``aten._native_batch_norm_legit_no_training``). An
``nn.BatchNorm`` module's mode is read when folding: the rewritten module is for evaluation, as
``ModuleLoss`` uses it. A module that ``torch.fx.symbolic_trace`` cannot trace (a forward that
branches on its input's values), or that has no such pair, is returned unchanged, as is one whose
outputs on an ``example`` batch differ from the rewritten module's beyond rounding.
"""

from __future__ import annotations

import copy
import operator
import warnings
from collections import OrderedDict

from engine.core.lazy import torch


def conv_bn(
    x, weight, bias, gamma, beta, mean, var, eps: float, stride, padding, dilation, groups, residual=None, relu=False
):
    """``relu(batch_norm(conv(x; weight, bias)) + residual)`` in eval mode, the batch norm (when
    ``mean`` is given), the residual and the ReLU each optional, as one convolution whose weight
    and bias are formed here from the given tensors, so that derivatives reach every one of them.
    Where nothing is differentiated (``_fusable``) the addition and the ReLU are oneDNN's post-ops
    of the convolution, which writes its output once instead of three times; the values are the
    same, the order of the operations being the same."""
    w, shift = weight, bias
    if mean is not None:
        scale = torch.rsqrt(var + eps)
        if gamma is not None:
            scale = scale * gamma
        w = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        shift = (-mean if bias is None else bias - mean) * scale
        if beta is not None:
            shift = shift + beta
    if (relu or residual is not None) and _fusable(x, w, shift, residual, stride, padding, dilation):
        stride, padding, dilation = (_pair(v) for v in (stride, padding, dilation))
        if residual is None:
            fused = torch.ops.mkldnn._convolution_pointwise
            return fused(x, w, shift, padding, stride, dilation, groups, "relu", [], "")
        unary = "relu" if relu else None
        return torch.ops.mkldnn._convolution_pointwise.binary(
            x, residual, w, shift, padding, stride, dilation, groups, "add", 1.0, unary, [], ""
        )
    conv = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[weight.ndim - 3]
    y = conv(x, w, shift, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return torch.relu(y) if relu else y


def _pair(value) -> list[int]:
    return [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]


def _fusable(x, w, shift, residual, stride, padding, dilation) -> bool:
    """Whether oneDNN's fused convolution may compute this: a float32 2-D convolution on the CPU
    with numeric padding, and nothing differentiated (no autograd, no torch.func transform, no
    forward-mode dual level): the fused kernel has no derivative."""
    if not (x.dtype == w.dtype == torch.float32 and x.ndim == 4 and x.device.type == "cpu"):
        return False
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, w, shift, residual)):
        return False
    if torch._C._functorch.peek_interpreter_stack() is not None or torch.autograd.forward_ad._current_level >= 0:
        return False
    if isinstance(padding, str) or not torch.backends.mkldnn.is_available():
        return False
    if residual is not None:
        (p0, p1), (s0, s1), (d0, d1) = (_pair(v) for v in (padding, stride, dilation))
        kh, kw = w.shape[2:]
        out = (len(x), len(w), (x.shape[2] + 2 * p0 - d0 * (kh - 1) - 1) // s0 + 1)
        out = (*out, (x.shape[3] + 2 * p1 - d1 * (kw - 1) - 1) // s1 + 1)
        if tuple(residual.shape) != out or residual.dtype != torch.float32 or residual.device.type != "cpu":
            return False
    return True


def folded(module, example=None, state=None, activations: bool = True):
    """``module`` with every eval-mode Conv → BatchNorm pair folded into one convolution and, with
    ``activations``, the residual additions and ReLUs that follow a convolution made its post-ops
    (module docstring); or ``module`` itself when it cannot be traced, has nothing to rewrite, or
    (given an ``example`` input batch) the rewrite's outputs differ from the module's beyond
    rounding. ``state``: {name: tensor} to evaluate the example with (``functional_call``), e.g.
    ``ModuleLoss``'s parameters and buffers in its dtype; else the module's own."""
    try:
        if isinstance(module, torch.fx.GraphModule):
            with warnings.catch_warnings():  # an exported module's pytree specs warn as they are copied
                warnings.simplefilter("ignore", FutureWarning)
                graph = copy.deepcopy(module.graph)
        else:
            graph = torch.fx.symbolic_trace(module).graph
    except Exception:  # the user's forward: any failure to trace means "evaluate it as it is"
        return module
    if not _fold_pairs(module, graph) + (_fuse_activations(module, graph) if activations else 0):
        return module
    graph.lint()
    rewritten = _with_state_of(module, graph)
    if example is not None and not _same_outputs(module, rewritten, example, state):
        return module
    return rewritten


def compiled(module):
    """``(state, x) ↦ functional_call(folded module, state, (x,))``, compiled by ``torch.compile``
    (inductor, static shapes: one compile per input shape) for evaluations without gradients, the
    ones a plane makes. Compiling costs far more than a forward, so it is for grids long enough to
    repay it (benchmarks/README.md gives the break-even). The graph compiled is the fold without
    the oneDNN post-ops: inductor fuses the elementwise ops itself. Under autograd or a
    ``torch.func`` transform, and for good once compiling has failed (no C++ compiler), the call
    is the eager folded module's."""
    plain, eager = folded(module, activations=False), folded(module)
    fast = torch.compile(lambda state, x: torch.func.functional_call(plain, state, (x,)), dynamic=False)
    failed = []

    def call(state, x):
        differentiated = torch.is_grad_enabled() or torch._C._functorch.peek_interpreter_stack() is not None
        if not failed and not differentiated:
            try:
                return fast(state, x)
            except Exception:  # the compiler's failure: the eager module gives the same values
                failed.append(True)
        return torch.func.functional_call(eager, state, (x,))

    call.failed = failed
    return call


def batch_norm_left(module) -> bool:
    """Whether ``module`` still evaluates a batch norm: for a ``folded`` module, one left unfolded
    in its graph (so eval-mode batch norm still needs ``engine.landscape.eval_batch_norm``); for
    any other module, whether it has one (``eval_batch_norm.has_batch_norm``)."""
    from engine.landscape.eval_batch_norm import _batch_norm_calls, has_batch_norm

    if not getattr(module, "_folded_batch_norm", False):
        return has_batch_norm(module)
    modules = dict(module.named_modules())
    bn = torch.nn.modules.batchnorm._BatchNorm
    calls = set(_batch_norm_calls())
    for node in module.graph.nodes:
        if node.op == "call_module" and isinstance(modules.get(node.target), bn):
            return True
        if node.op == "call_function" and node.target in calls:
            return True
    return False


# ── the rewrite ────────────────────────────────────────────────────────────────────────────────


def _fold_pairs(module, graph) -> int:
    """Replaces each foldable (convolution, batch norm) pair of ``graph`` by one ``conv_bn`` node;
    returns how many it replaced."""
    modules = dict(module.named_modules())
    count = 0
    for node in list(graph.nodes):
        bn = _batch_norm_of(node, modules)
        if bn is None:
            continue
        conv = _conv_of(bn["input"], modules)
        if conv is None or len(bn["input"].users) != 1:
            continue
        with graph.inserting_before(node):
            tensors = {key: _tensor(graph, value) for key, value in {**conv, **bn}.items() if key in _TENSORS}
            fused = graph.call_function(
                conv_bn,
                (
                    conv["x"],
                    tensors["weight"],
                    tensors["bias"],
                    tensors["gamma"],
                    tensors["beta"],
                    tensors["mean"],
                    tensors["var"],
                    float(bn["eps"]),
                    conv["stride"],
                    conv["padding"],
                    conv["dilation"],
                    conv["groups"],
                ),
            )
        for user in list(node.users) if bn["tuple"] else ():
            user.replace_all_uses_with(fused)
            graph.erase_node(user)
        node.replace_all_uses_with(fused)
        graph.erase_node(node)
        graph.erase_node(bn["input"])
        count += 1
    return count


_TENSORS = ("weight", "bias", "gamma", "beta", "mean", "var")
_CONV_BN_ARGS = ("x", *_TENSORS, "eps", "stride", "padding", "dilation", "groups")


def _fuse_activations(module, graph) -> int:
    """Makes ``c + r`` and ``relu(c)`` one ``conv_bn`` node with ``residual`` r or ``relu``, where
    c is a ``conv_bn`` node or a plain convolution used only there (in graph order, so that
    ``relu(c + r)`` becomes one node); returns how many it fused."""
    modules = dict(module.named_modules())
    count = 0
    for node in list(graph.nodes):
        relu = _relu_input(node, modules)
        pair = (relu, None) if relu is not None else _addition(node)
        if pair is None or len(pair[0].users) != 1:
            continue
        conv, residual = pair
        args = _conv_bn_args(conv, modules)
        if args is None or args.get("relu") or (residual is not None and args.get("residual") is not None):
            continue
        with graph.inserting_before(node):
            args = {k: _tensor(graph, v) if k in _TENSORS else v for k, v in args.items()}
            kwargs = {"residual": args.get("residual") if residual is None else residual, "relu": relu is not None}
            fused = graph.call_function(conv_bn, tuple(args[k] for k in _CONV_BN_ARGS), kwargs)
        node.replace_all_uses_with(fused)
        graph.erase_node(node)
        graph.erase_node(conv)
        count += 1
    return count


def _relu_input(node, modules):
    """The input of ``node`` when it is a ReLU (function, method, module or ATen op), else None."""
    functions = (torch.relu, torch.nn.functional.relu, torch.ops.aten.relu.default)
    if node.op == "call_function" and node.target in functions:
        arg = node.args[0] if node.args else node.kwargs.get("input")
    elif node.op == "call_method" and node.target in ("relu", "relu_") and len(node.args) == 1:
        arg = node.args[0]
    elif node.op == "call_module" and type(modules.get(node.target)) is torch.nn.ReLU and len(node.args) == 1:
        arg = node.args[0]
    else:
        return None
    return arg if isinstance(arg, torch.fx.Node) else None


def _addition(node):
    """(the convolution, the other term) when ``node`` adds two tensors the first or second of
    which is a convolution or a ``conv_bn`` node, else None."""
    adds = (operator.add, torch.add, torch.ops.aten.add.Tensor)
    if node.kwargs or len(node.args) != 2:
        return None
    function = node.op == "call_function" and node.target in adds
    if not (function or (node.op == "call_method" and node.target == "add")):
        return None
    a, b = node.args
    if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)) or a is b:
        return None
    return (a, b) if _is_conv(a) else (b, a) if _is_conv(b) else None


def _is_conv(node) -> bool:
    """Whether ``node`` may be a ``conv_bn`` node or a convolution (``_conv_bn_args`` decides)."""
    return node.op == "call_module" or (node.op == "call_function" and node.target in (conv_bn, *_conv_functions()))


def _conv_bn_args(node, modules) -> dict | None:
    """``conv_bn``'s arguments for a ``conv_bn`` node or a plain convolution (no batch norm);
    a module's tensors as ("attr", path), for ``_tensor``."""
    if node.op == "call_function" and node.target is conv_bn:
        return {**dict(zip(_CONV_BN_ARGS, node.args)), **node.kwargs}
    conv = _conv_of(node, modules)
    if conv is None:
        return None
    return {**conv, "gamma": None, "beta": None, "mean": None, "var": None, "eps": 0.0}


def _tensor(graph, value):
    """A tensor argument as a graph value: a node as it is, a module attribute's path as a get_attr."""
    return graph.get_attr(value[1]) if isinstance(value, tuple) else value


def _conv_of(node, modules) -> dict | None:
    """{x, weight, bias, stride, padding, dilation, groups} when ``node`` is a plain convolution."""
    if not isinstance(node, torch.fx.Node):
        return None
    if node.op == "call_module":
        m = modules.get(node.target)
        kinds = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
        if type(m) not in kinds or m.padding_mode != "zeros" or len(node.args) != 1 or node.kwargs:
            return None
        geometry = {key: getattr(m, key) for key in ("stride", "padding", "dilation", "groups")}
        return {"x": node.args[0], **_attributes(node, m, weight="weight", bias="bias"), **geometry}
    if node.op != "call_function" or node.target not in _conv_functions():
        return None
    names = ("x", "weight", "bias", "stride", "padding", "dilation", "groups")
    if len(node.args) > len(names) or set(node.kwargs) - {"input", *names}:
        return None
    defaults = dict(bias=None, stride=1, padding=0, dilation=1, groups=1)
    a = {**defaults, **dict(zip(names, node.args)), **node.kwargs}
    if "input" in a:
        a["x"] = a.pop("input")
    if not isinstance(a.get("weight"), torch.fx.Node) or any(
        isinstance(a[k], torch.fx.Node) for k in ("stride", "padding", "dilation", "groups")
    ):
        return None
    return a


def _batch_norm_of(node, modules) -> dict | None:
    """{input, gamma, beta, mean, var, eps, tuple} when ``node`` is an eval-mode batch norm with
    running statistics; ``tuple``: it returns (output, saved statistics), read by getitem 0."""
    if node.op == "call_module":
        m = modules.get(node.target)
        kinds = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
        if type(m) not in kinds or m.training or m.running_mean is None or len(node.args) != 1 or node.kwargs:
            return None
        return {"input": node.args[0], **_attributes(node, m, **_BN_TENSORS), "eps": m.eps, "tuple": False}
    if node.op != "call_function" or node.target not in _bn_functions():
        return None
    names, returns_tuple = _bn_functions()[node.target]
    a = {"weight": None, "bias": None, "training": False, "eps": 1e-5, **dict(zip(names, node.args)), **node.kwargs}
    if a["training"] is not False or not isinstance(a.get("running_mean"), torch.fx.Node):
        return None
    if not isinstance(a.get("running_var"), torch.fx.Node) or isinstance(a["eps"], torch.fx.Node):
        return None
    if returns_tuple and not all(
        u.op == "call_function" and u.target is operator.getitem and u.args[1] == 0 for u in node.users
    ):
        return None
    tensors = {key: a[name] for key, name in _BN_TENSORS.items()}
    return {"input": a["input"], **tensors, "eps": a["eps"], "tuple": returns_tuple}


# batch norm's tensors as conv_bn names them: {conv_bn's name: batch norm's}
_BN_TENSORS = {"gamma": "weight", "beta": "bias", "mean": "running_mean", "var": "running_var"}


def _attributes(node, module, **names) -> dict:
    """{key: ("attr", "<module path>.<name>")} for each key=name of ``module``'s tensors, the
    call_module ``node``'s, read by ``_tensor`` as a get_attr; None for a tensor the module lacks."""
    path = lambda name: None if getattr(module, name) is None else ("attr", f"{node.target}.{name}")
    return {key: path(name) for key, name in names.items()}


def _conv_functions() -> tuple:
    F, aten = torch.nn.functional, torch.ops.aten
    return (F.conv1d, F.conv2d, F.conv3d, aten.conv1d.default, aten.conv2d.default, aten.conv3d.default)


def _bn_functions() -> dict:
    """{batch norm function: (its arguments' names in order, whether it returns a tuple)}."""
    from engine.landscape import eval_batch_norm as E

    aten = torch.ops.aten
    return {
        torch.nn.functional.batch_norm: (E._FUNCTIONAL_ARGS, False),
        aten.batch_norm.default: (E._ATEN_ARGS, False),
        aten._native_batch_norm_legit_no_training.default: (E._NO_TRAINING_ARGS, True),
    }


def _with_state_of(module, graph):
    """A GraphModule running ``graph`` whose parameters, buffers and submodules are ``module``'s
    own, registered in the same order: the same ``named_parameters()`` and ``named_buffers()``,
    so the same ``functional_call`` state."""
    rewritten = torch.fx.GraphModule(module, graph, class_name=f"Folded{type(module).__name__}")
    rewritten._modules = OrderedDict(module._modules)
    rewritten._parameters = OrderedDict(module._parameters)
    rewritten._buffers = OrderedDict(module._buffers)
    rewritten._non_persistent_buffers_set = set(module._non_persistent_buffers_set)
    rewritten.training = module.training
    rewritten._folded_batch_norm = True
    return rewritten


def _same_outputs(module, rewritten, example, state) -> bool:
    """Whether both give the same outputs on ``example`` to well within the rewrite's rounding."""
    from engine.landscape.eval_batch_norm import EvalBatchNorm

    call = (lambda m: m(example)) if state is None else (lambda m: torch.func.functional_call(m, state, (example,)))
    try:
        with torch.no_grad(), EvalBatchNorm():
            a, b = call(module), call(rewritten)
    except Exception:
        return False
    leaves_a, leaves_b = torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b)
    if len(leaves_a) != len(leaves_b):
        return False
    for u, v in zip(leaves_a, leaves_b):
        if not isinstance(u, torch.Tensor):
            if u != v:
                return False
            continue
        if not isinstance(v, torch.Tensor) or u.shape != v.shape or u.dtype != v.dtype:
            return False
        if u.is_floating_point():
            # far above either dtype's rounding of the reordered products, far below a real difference
            rtol = 1e-9 if u.dtype == torch.float64 else 1e-3
            scale = float(u.abs().max()) if u.numel() else 0.0
            if not float((u - v).abs().max() if u.numel() else 0.0) <= rtol * max(scale, 1.0):
                return False
        elif not torch.equal(u, v):
            return False
    return True
