"""ModuleLoss and module_hessian on the architectures users bring (issue #55): a ViT, a transformer
on token ids, LSTM and GRU classifiers, an MLP with layer norm, GELU and dropout, and a
RegNet-shaped CNN with hyphenated names, each read from a .pt2 archive with a dynamic batch and
given as the nn.Module itself. Every value is compared with an independent computation on an
eager float64 copy of the model: the loss in plain torch with the state loaded by
load_state_dict, Hessian-vector products against central differences of plain autograd
gradients, the top eigenvalue against scipy's on the Hessian formed by torch.autograd."""

import copy

import numpy as np
import pytest
import scipy.sparse.linalg
import torch
from torch import nn

from engine.io.module_network import ModuleNetwork, read_module_network
from engine.landscape.evaluation import forward_failure, math_attention
from engine.landscape.module_hessian import module_hessian
from engine.landscape.module_loss import ModuleLoss
from tests.models import ARCHITECTURES

PATHS = ("pt2", "module")


def module_loss(case, path: str) -> ModuleLoss:
    model, X, Y, archive, data = case
    if path == "pt2":
        net = read_module_network(archive, data)
    else:
        net = ModuleNetwork(copy.deepcopy(model).eval(), X.numpy(), Y.numpy(), None, "module")
    # chunks of 4 samples: the sums over chunks are part of what is checked
    return ModuleLoss(net, "cross-entropy", batch_size=4)


class Eager:
    """The eager model in float64, evaluated in plain torch at any flat θ (in ``names`` order)."""

    def __init__(self, case, names):
        model, X, Y, _, _ = case
        self.model = copy.deepcopy(model).double().eval()
        assert tuple(n for n, _ in self.model.named_parameters()) == names
        self.X = X if not X.is_floating_point() else X.double()
        self.Y = Y
        self.state = self.model.state_dict()

    def load(self, flat: torch.Tensor) -> None:
        parts, at = {}, 0
        for name, p in self.model.named_parameters():
            parts[name] = flat[at : at + p.numel()].view(p.shape)
            at += p.numel()
        state = copy.copy(self.state)  # an OrderedDict with its _metadata (MNASNet reads its version there)
        state.update(parts)
        self.model.load_state_dict(state)

    def loss(self, flat) -> float:
        self.load(flat)
        with torch.no_grad():
            return float(nn.functional.cross_entropy(self.model(self.X), self.Y))

    def gradient(self, flat) -> torch.Tensor:
        self.load(flat)
        self.model.zero_grad()
        nn.functional.cross_entropy(self.model(self.X), self.Y).backward()
        return torch.cat([p.grad.reshape(-1) for p in self.model.parameters()])


def point_and_direction(loss: ModuleLoss, seed: int = 5):
    d = torch.randn(loss.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    return loss.theta + 0.05 * d, d / d.norm()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_loss_is_the_eager_models(exported_architectures, name, path):
    """L at θ and at θ plus a random direction, to rounding, in float64."""
    loss = module_loss(exported_architectures[name], path)
    eager = Eager(exported_architectures[name], loss.names)
    moved, _ = point_and_direction(loss)
    for flat in (loss.theta, moved):
        assert loss.loss(flat) == pytest.approx(eager.loss(flat), rel=1e-10)
    assert abs(loss.loss(moved) - loss.loss()) > 1e-4  # the direction moves the loss


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_hessian_vector_product(exported_architectures, name, path):
    """H v, forward over reverse through attention, recurrences and norms, against central
    differences of the eager model's autograd gradients: (g(θ + εv) − g(θ − εv)) / 2ε has error
    ε²/6 ‖∂³L‖ + rounding ε_mach ‖g‖ / ε, near 1e-10 relative here."""
    loss = module_loss(exported_architectures[name], path)
    eager = Eager(exported_architectures[name], loss.names)
    theta, v = point_and_direction(loss)
    eps = 1e-5
    want = (eager.gradient(theta + eps * v) - eager.gradient(theta - eps * v)) / (2 * eps)
    got = loss.hvp(theta, v)
    assert float((got - want).norm() / want.norm()) < 1e-6
    # the gradient too, against autograd's; torch's hardsigmoid_backward multiplies by 1/6 rounded to
    # float32 (3e-8 relative, in float64 too), the toolkit's math form by 1/6 (engine.landscape.hard_sigmoid)
    tol = 1e-7 if name == "gated_cnn" else 1e-10
    assert float((loss.gradient(theta) - eager.gradient(theta)).norm() / eager.gradient(theta).norm()) < tol


@pytest.fixture(scope="module")
def formed(exported_architectures):
    """{name: the Hessian at θ formed by torch.autograd (reverse over reverse, the attention in its
    math form) on the eager float64 model; for the gated CNN by central differences}."""
    out = {}
    for name in ARCHITECTURES:
        model, X, Y, _, _ = exported_architectures[name]
        eager = copy.deepcopy(model).double().eval()
        names = [n for n, _ in eager.named_parameters()]
        shapes = [p.shape for p in eager.parameters()]
        flat = torch.cat([p.detach().reshape(-1) for p in eager.parameters()])
        x = X if not X.is_floating_point() else X.double()

        def f(t):
            parts = dict(zip(names, (p.view(s) for p, s in zip(t.split([s.numel() for s in shapes]), shapes))))
            return nn.functional.cross_entropy(torch.func.functional_call(eager, parts, (x,)), Y)

        if name == "gated_cnn":  # torch has no second derivative of hardsigmoid: columns by central differences
            out[name] = central_difference_hessian(f, flat)
            continue
        with math_attention():
            out[name] = torch.autograd.functional.hessian(f, flat, vectorize=True).numpy()
    return out


def central_difference_hessian(f, flat: torch.Tensor, eps: float = 1e-5) -> np.ndarray:
    """H[:, i] = (∇f(θ + ε eᵢ) − ∇f(θ − ε eᵢ)) / 2ε, from autograd's first derivatives alone
    (error ε²/6 ‖∂³f‖ + rounding, near 1e-10 relative)."""
    grad = torch.func.grad(f)
    basis = torch.eye(len(flat), dtype=flat.dtype)
    columns = [(grad(flat + eps * e) - grad(flat - eps * e)) / (2 * eps) for e in basis]
    return torch.stack(columns, 1).numpy()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_top_eigenvalue(exported_architectures, formed, name, path):
    """module_hessian's top eigenvalue (Lanczos on the products) against scipy's eigsh of the
    formed Hessian."""
    H = formed[name]
    np.testing.assert_allclose(H, H.T, atol=1e-10 * np.abs(H).max())
    want = scipy.sparse.linalg.eigsh(0.5 * (H + H.T), k=1, which="LA", return_eigenvectors=False)[0]
    got = module_hessian(module_loss(exported_architectures[name], path), top_k=1, probes=2, max_full=0)
    assert got.eigenvalues[0] == pytest.approx(want, rel=1e-6)


def test_math_attention_nests_and_restores():
    """math_attention selects the math backend while any user is inside, and puts back the
    backends it found when the last leaves."""
    from torch.nn.attention import SDPBackend, _cur_sdpa_kernel_backends

    before = _cur_sdpa_kernel_backends()
    assert before != [SDPBackend.MATH]
    with math_attention():
        with math_attention():
            assert _cur_sdpa_kernel_backends() == [SDPBackend.MATH]
        assert _cur_sdpa_kernel_backends() == [SDPBackend.MATH]
    assert _cur_sdpa_kernel_backends() == before


def _raised(call) -> BaseException:
    try:
        call()
    except Exception as error:  # noqa: BLE001 -- torch's own errors, whatever their type
        return error
    raise AssertionError("no error")


D = torch.float64
DTYPE_ERRORS = {
    "matmul": lambda: torch.zeros(2, 3) @ torch.zeros(3, 2, dtype=D),
    "linear": lambda: nn.functional.linear(torch.zeros(2, 3), torch.zeros(4, 3, dtype=D)),
    "conv": lambda: nn.functional.conv2d(torch.zeros(1, 1, 3, 3, dtype=D), torch.zeros(1, 1, 2, 2)),
    "layer_norm": lambda: nn.functional.layer_norm(torch.zeros(2, 3, dtype=D), (3,), torch.ones(3), torch.zeros(3)),
    "lstm": lambda: nn.LSTM(3, 2).double()(torch.zeros(4, 1, 3, dtype=D), (torch.zeros(1, 1, 2),) * 2),
}


@pytest.mark.parametrize("op", DTYPE_ERRORS)
def test_forward_failure_names_a_dtype_mismatch(op):
    """torch's errors when two dtypes meet, as the first forward in float64 meets them, say so."""
    text = forward_failure(_raised(DTYPE_ERRORS[op]), (4, 3), torch.float64)
    assert text.startswith("the model fails with its parameters in float64: a tensor of another dtype meets them")


def test_forward_failure_names_shapes_and_indices():
    shape = forward_failure(_raised(lambda: nn.Linear(3, 2)(torch.zeros(4, 5))), (4, 5), torch.float64)
    assert shape.startswith("the model does not take inputs X of shape (4, 5) (batch first): mat1 and mat2 shapes")
    index = forward_failure(_raised(lambda: nn.Embedding(5, 2)(torch.tensor([[7]]))), (1, 1), torch.float64)
    assert index.startswith("inputs X of shape (1, 1) hold values the model cannot index")
