"""The hard sigmoid in ordinary ops, so that a Hessian-vector product can pass through it.

``torch.nn.functional.hardsigmoid`` (MobileNetV3's squeeze-and-excitation gate) differentiates
through ``hardsigmoid_backward``, which has no derivative of its own, reverse or forward mode.
``MathHardsigmoid``, a ``TorchFunctionMode`` like ``engine.landscape.eval_batch_norm``'s, evaluates
the functional form and the ATen ops an exported program calls as ``clamp(x + 3, 0, 6) / 6``
(``engine.landscape.evaluation`` enters it where a module has a hard sigmoid). The values are
the kernel's; the derivative inside (−3, 3) is 1/6, where torch's ``hardsigmoid_backward``
multiplies by 1/6 rounded to float32 (0.16666667163…, 3e-8 relative, in float64 too). Imported
when a module is first evaluated: torch is needed at import.
"""

from __future__ import annotations

import functools

from engine.core.lazy import torch


def hardsigmoid(x, inplace: bool = False):
    """``clamp(x + 3, 0, 6) / 6``: the hard sigmoid in ops that are differentiable to any order
    (the same value as ``torch.nn.functional.hardsigmoid``'s kernel, to rounding); in place, it is
    written back into ``x`` as the kernel would."""
    y = (x + 3).clamp(0, 6) / 6
    return x.copy_(y) if inplace else y


@functools.cache
def _hardsigmoid_calls() -> dict:
    """{function: whether it works in place, or None where its ``inplace`` argument says}: the
    functional form and the ATen ops an exported program calls."""
    aten = torch.ops.aten
    return {torch.nn.functional.hardsigmoid: None, aten.hardsigmoid.default: False, aten.hardsigmoid_.default: True}


def has_hardsigmoid(module) -> bool:
    """Whether ``module`` has an ``nn.Hardsigmoid`` layer, or (an exported program's module) calls one."""
    if any(isinstance(m, torch.nn.Hardsigmoid) for m in module.modules()):
        return True
    graph = getattr(module, "graph", None)
    return graph is not None and any(node.target in _hardsigmoid_calls() for node in graph.nodes)


class MathHardsigmoid(torch.overrides.TorchFunctionMode):
    """While active, the hard sigmoid is evaluated as ``hardsigmoid``, whose second derivatives exist."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        calls = _hardsigmoid_calls()
        if func not in calls:
            return func(*args, **kwargs)
        a = {**dict(zip(("input", "inplace"), args)), **kwargs}
        inplace = calls[func] if calls[func] is not None else bool(a.get("inplace", False))
        return hardsigmoid(a["input"], inplace)
