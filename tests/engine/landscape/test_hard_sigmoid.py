"""The hard sigmoid in ordinary ops (engine.landscape.hard_sigmoid) and the one-line message for
an operator without a second derivative (engine.landscape.evaluation)."""

import numpy as np
import pytest
import torch
from torch import nn

import landscape_lens as ll
from engine.io.pt2_program import read_exported_module
from engine.landscape.hard_sigmoid import MathHardsigmoid, has_hardsigmoid
from tests.models import GatedCNN, export_model, images

F = nn.functional


def inputs(dtype=torch.float64) -> torch.Tensor:
    """Points on both sides of both kinks (±3) and across the sloped part."""
    return torch.linspace(-5, 5, 401, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_values_are_the_kernels_in_every_form(dtype):
    x = inputs(dtype)
    want = F.hardsigmoid(x)
    with MathHardsigmoid():
        functional = F.hardsigmoid(x)
        aten = torch.ops.aten.hardsigmoid.default(x)
        module = nn.Hardsigmoid()(x)
        inplace, copied = x.clone(), None
        copied = F.hardsigmoid(inplace, inplace=True)
        aten_inplace = x.clone()
        torch.ops.aten.hardsigmoid_.default(aten_inplace)
    for got in (functional, aten, module, inplace, copied, aten_inplace):
        torch.testing.assert_close(got, want, rtol=0, atol=torch.finfo(dtype).eps)
    assert copied is inplace  # in place, as the kernel: the input is the output


def test_derivatives_exist_and_are_exact():
    """Inside (−3, 3) the slope is 1/6 exactly and the curvature 0, outside both are 0; the
    forward-over-reverse product that failed through torch's kernel now runs."""
    x = inputs()
    inside = x.abs() < 3
    f = lambda t: F.hardsigmoid(t).sum()
    with pytest.raises(RuntimeError, match="hardsigmoid_backward"):
        torch.func.jvp(torch.func.grad(f), (x,), (torch.ones_like(x),))
    with MathHardsigmoid():
        slope = torch.func.grad(f)(x)
        _, curvature = torch.func.jvp(torch.func.grad(f), (x,), (torch.ones_like(x),))
    np.testing.assert_array_equal(slope[inside].numpy(), 1 / 6)
    np.testing.assert_array_equal(slope[x.abs() > 3].numpy(), 0)
    np.testing.assert_array_equal(curvature.numpy(), 0)


def test_found_in_modules_and_exported_graphs(tmp_path):
    model = GatedCNN().eval()
    assert has_hardsigmoid(model)
    assert not has_hardsigmoid(nn.Sequential(nn.Linear(2, 2), nn.Hardswish()))
    exported = read_exported_module(export_model(model, images(4), tmp_path / "gated.pt2")).module
    assert not any(isinstance(m, nn.Hardsigmoid) for m in exported.modules())  # found in the graph itself
    assert has_hardsigmoid(exported)


class Distances(nn.Module):
    """Classifies by distances to learned prototypes: ``torch.cdist``, which torch cannot
    differentiate twice."""

    def __init__(self, features: int = 4, classes: int = 3):
        super().__init__()
        self.prototypes = nn.Parameter(torch.randn(classes, features))

    def forward(self, x):
        return -torch.cdist(x, self.prototypes)


def test_an_operator_without_a_second_derivative_is_named():
    torch.manual_seed(0)
    X, Y = torch.randn(12, 4), torch.randint(0, 3, (12,))
    model = Distances()
    ll.plane(model, (X, Y), loss="cross-entropy", points=3)  # a plane needs no second derivative
    with pytest.raises(ValueError, match=r"the model calls _cdist_\w+, for which PyTorch has no second derivative"):
        ll.hessian(model, (X, Y), loss="cross-entropy", top_k=1, probes=2)
