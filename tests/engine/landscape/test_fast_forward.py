"""engine.landscape.fast_forward: eval-mode batch norm folded into its convolution.

The folded module must be the same function of the same parameters: its loss, gradient and
Hessian-vector products through ``torch.func.functional_call`` equal the original's to float64
rounding, at θ and away from it (γ and β moved too), under the original's parameter names."""

import pytest
import torch
from torch import nn

from engine.landscape.fast_forward import batch_norm_left, compiled, conv_bn, folded
from tests.models import CLASSES, IMAGE, images, trained_cnn


def conv_bn_relu() -> nn.Sequential:
    """Two conv-bn-relu stages (one conv with a bias, one without) and a linear head, in eval
    mode with running statistics away from 0 and 1."""
    torch.manual_seed(3)
    model = nn.Sequential(
        nn.Conv2d(IMAGE[0], 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Conv2d(4, 5, 3, stride=2, bias=False),
        nn.BatchNorm2d(5),
        nn.ReLU(),
        nn.Flatten(),
        nn.LazyLinear(CLASSES),
    )
    with torch.no_grad():
        for _ in range(3):
            model(2.0 * torch.randn(16, *IMAGE) + 0.5)
    return model.eval()


MODELS = {"residual cnn": trained_cnn, "conv-bn-relu": conv_bn_relu}


class Objective:
    """θ ↦ the mean cross-entropy of ``module`` on fixed data, θ flat in named_parameters order."""

    def __init__(self, module, x, y):
        self.module, self.x, self.y = module, x, y
        named = list(module.named_parameters())
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.buffers = {n: b for n, b in module.named_buffers()}

    def __call__(self, flat):
        parts = flat.split([s.numel() for s in self.shapes])
        state = {n: p.view(s) for n, p, s in zip(self.names, parts, self.shapes)}
        out = torch.func.functional_call(self.module, {**state, **self.buffers}, (self.x,))
        return nn.functional.cross_entropy(out, self.y)


def measures(objective, theta, v):
    """(L(θ), ∇L(θ), H(θ)v), the product forward-over-reverse as ModuleLoss forms it."""
    grad = torch.func.grad(objective)
    return objective(theta), grad(theta), torch.func.jvp(grad, (theta,), (v,))[1]


def relative(a, b) -> float:
    return float((a - b).norm() / b.norm())


@pytest.fixture(params=list(MODELS))
def pair(request):
    """(original, folded, inputs, labels), float64."""
    model = MODELS[request.param]().double()
    x = images(12, seed=4).double()
    y = torch.randint(0, CLASSES, (12,), generator=torch.Generator().manual_seed(5))
    return model, folded(model, x[:3]), x, y


def test_every_pair_is_folded_and_the_state_is_the_same(pair):
    model, fast, _, _ = pair
    assert fast is not model and not batch_norm_left(fast) and batch_norm_left(model)
    assert [n for n, _ in fast.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert [n for n, _ in fast.named_buffers()] == [n for n, _ in model.named_buffers()]
    for (_, a), (_, b) in zip(fast.named_parameters(), model.named_parameters()):
        assert a is b  # the very tensors: the state is the original's
    assert fast.state_dict().keys() == model.state_dict().keys()


@pytest.mark.parametrize("where", ["theta", "perturbed"])
def test_loss_gradient_and_hvp_equal_the_originals(pair, where):
    model, fast, x, y = pair
    original, rewritten = Objective(model, x, y), Objective(fast, x, y)
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    g = torch.Generator().manual_seed(6)
    if where == "perturbed":  # every parameter moves, batch norm's γ and β included
        theta = theta + 0.3 * theta.abs().mean() * torch.randn(len(theta), generator=g, dtype=theta.dtype)
    v = torch.randn(len(theta), generator=g, dtype=theta.dtype)
    L0, g0, h0 = measures(original, theta, v)
    L1, g1, h1 = measures(rewritten, theta, v)
    assert abs(float(L1 - L0)) <= 1e-12 * abs(float(L0))
    assert relative(g1, g0) <= 1e-10
    assert relative(h1, h0) <= 1e-10
    # γ and β (batch norm's weight and bias) have gradient there, through the folded convolution
    offsets = torch.tensor([0] + [s.numel() for s in original.shapes]).cumsum(0)
    for i, name in enumerate(original.names):
        if isinstance(model.get_submodule(name.rsplit(".", 1)[0]), nn.BatchNorm2d):
            assert g1[offsets[i] : offsets[i + 1]].abs().max() > 0


def test_an_exported_programs_graph_is_folded():
    model = trained_cnn()
    batch = {"x": {0: torch.export.Dim("batch")}}
    exported = torch.export.export(model, (images(4),), dynamic_shapes=batch).module()
    fast = folded(exported, images(3))
    assert fast is not exported and not batch_norm_left(fast)
    assert [n for n, _ in fast.named_parameters()] == [n for n, _ in exported.named_parameters()]
    x = images(6, seed=7)
    with torch.no_grad():
        assert torch.allclose(fast(x), model(x), rtol=1e-5, atol=1e-6)


def test_a_model_that_cannot_be_traced_is_returned_unchanged():
    class Branching(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(IMAGE[0], 2, 3), nn.BatchNorm2d(2)

        def forward(self, x):
            y = self.bn(self.conv(x))
            return y if x.sum() > 0 else -y

    model = Branching().eval()
    assert folded(model) is model
    assert folded(model, images(2)) is model


def test_nothing_to_fold_returns_the_module():
    model = conv_bn_relu().train()  # batch statistics: not an affine map of the convolution
    assert folded(model) is model
    linear = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert folded(linear) is linear


def test_conv_bn_is_batch_norm_of_the_convolution():
    conv, bn = nn.Conv1d(2, 3, 3, bias=True).double(), nn.BatchNorm1d(3).double().eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    x = torch.randn(4, 2, 9, dtype=torch.float64)
    args = (bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.eps, conv.stride, conv.padding, 1, 1)
    with torch.no_grad():
        assert torch.allclose(conv_bn(x, conv.weight, conv.bias, *args), bn(conv(x)), rtol=1e-13, atol=1e-14)


def test_fused_activations_give_the_unfused_values_and_leave_derivatives_alone():
    """In float32 without autograd the ReLUs and the residual sum are the convolution's post-ops;
    with a gradient asked for they are computed apart, and both agree with the plain fold."""
    model = trained_cnn()
    fused, plain = folded(model), folded(model, activations=False)
    ops = {node.kwargs.get("relu") for node in fused.graph.nodes if node.target is conv_bn}
    assert ops == {True} and any(node.kwargs.get("residual") is not None for node in fused.graph.nodes)
    x = images(9, seed=8).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        assert torch.allclose(fused(x), plain(x), rtol=1e-6, atol=1e-6)
    y = torch.randint(0, CLASSES, (9,), generator=torch.Generator().manual_seed(9))
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    g_fused = torch.func.grad(Objective(fused, x, y))(theta)
    g_plain = torch.func.grad(Objective(plain, x, y))(theta)
    assert relative(g_fused, g_plain) <= 1e-6


def test_the_example_is_evaluated_with_the_given_state():
    model = trained_cnn()  # float32, evaluated with a float64 state as ModuleLoss does
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    state = {k: v.double() if v.is_floating_point() else v for k, v in tensors.items()}
    fast = folded(model, images(3).double(), state)
    assert fast is not model and not batch_norm_left(fast)


def test_compiled_falls_back_to_the_eager_fold_when_compiling_fails(monkeypatch):
    """No compile here (it takes minutes): a compiler that fails leaves the eager folded module."""

    def failing(function, **_):
        def call(*args):
            raise RuntimeError("no C++ compiler")

        return call

    from engine.landscape import fast_forward

    assert fast_forward.torch.compile is torch.compile  # the lazy stand-in loaded: patch what it reads
    monkeypatch.setattr(fast_forward.torch, "compile", failing)
    model = trained_cnn()
    call = compiled(model)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    x = images(5)
    with torch.no_grad():
        assert torch.allclose(call(state, x), model(x), rtol=1e-5, atol=1e-6)
    assert call.failed
