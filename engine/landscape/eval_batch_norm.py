"""Batch norm in eval mode evaluated as the affine map it is, so that its derivatives are elementwise.

With running statistics, ``batch_norm(x) = (x − μ) · γ / √(σ² + ε) + β`` per channel: affine in x,
and in γ and β. PyTorch differentiates it through its general kernel, written for batch
statistics as well: ``native_batch_norm_backward``, and, for a second derivative,
``batchnorm_double_backward``, whose products over whole activations took most of the
elementwise share of a Hessian-vector product on the ResNet-20 of benchmarks/bench_any_model.py.
Written out as the map, each derivative is a product or a sum of the same size as the
activations, and a product on the kept graph (module_hessian.module_hvp) costs less.

Only the rounding differs: the same map, evaluated in a different order. In float64 a product
agreed with the kernel's to 5e-16 relative on that ResNet. In float32 a few ReLUs whose input
lies within rounding of 0 switch, and the Hessian of a ReLU network changes there; with a smooth
activation instead, both float32 products were within 1.1e-6 of float64.

``EvalBatchNorm`` is a ``TorchFunctionMode``: while it is active, eval-mode calls of
``torch.nn.functional.batch_norm`` (an ``nn.BatchNorm*d`` module's), ``torch.batch_norm``, and the
ATen ops an exported program calls (``aten.batch_norm``,
``aten._native_batch_norm_legit_no_training``) are evaluated as the affine map. Calls with batch
statistics, and every other function, run unchanged. It composes with ``torch.func``'s grad,
jvp and vmap.
"""

from __future__ import annotations

import functools

from engine.core.lazy import torch

_FUNCTIONAL_ARGS = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
_ATEN_ARGS = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps")
_NO_TRAINING_ARGS = ("input", "weight", "bias", "running_mean", "running_var", "momentum", "eps")


def affine_batch_norm(x, weight, bias, mean, var, eps: float):
    """(x − μ) · γ / √(σ² + ε) + β, the statistics and affine parameters per channel (dim 1)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    # formed at every call, channel-sized: γ is a parameter that derivatives flow through
    scale = torch.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    y = (x - mean.view(shape)) * scale.view(shape)
    return y if bias is None else y + bias.view(shape)


def has_batch_norm(module) -> bool:
    """Whether ``module`` has a batch norm layer, or (an exported program's module) calls one."""
    if any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in module.modules()):
        return True
    graph = getattr(module, "graph", None)
    calls = _batch_norm_calls()
    return graph is not None and any(node.target in calls for node in graph.nodes)


@functools.cache  # once: ModuleLoss enters a new mode at every forward, per chunk and grid point
def _batch_norm_calls() -> dict:
    """{function: (its arguments' names in order, whether it also returns the saved statistics)}."""
    aten = torch.ops.aten
    return {
        torch.nn.functional.batch_norm: (_FUNCTIONAL_ARGS, False),
        torch.batch_norm: (_ATEN_ARGS, False),
        aten.batch_norm.default: (_ATEN_ARGS, False),
        aten._native_batch_norm_legit_no_training.default: (_NO_TRAINING_ARGS, True),
    }


class EvalBatchNorm(torch.overrides.TorchFunctionMode):
    """While active, eval-mode batch norm is evaluated as ``affine_batch_norm``."""

    def __init__(self):
        super().__init__()
        self._calls = _batch_norm_calls()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        call = self._calls.get(func)
        if call is not None:
            names, returns_statistics = call
            a = {"weight": None, "bias": None, "training": False, "eps": 1e-5, **dict(zip(names, args)), **kwargs}
            if not a["training"] and a["running_mean"] is not None:  # else batch statistics: the kernel's
                y = affine_batch_norm(a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"])
                # an exported program's op also returns the saved mean and rstd, empty in eval mode
                return (y, y.new_empty(0), y.new_empty(0)) if returns_statistics else y
        return func(*args, **kwargs)
