"""Eval-mode batch norm as its affine map (engine.landscape.eval_batch_norm), held to PyTorch's kernel.

The reference is the same module evaluated without the mode, by PyTorch's batch norm kernel and
its derivatives: outputs, gradients and Hessian-vector products (forward-over-reverse, and one
backward through a kept gradient graph) must agree to float64 rounding. A dispatch mode records
which ATen ops run, to show that the kernel no longer does under the mode, and still does with
batch statistics.
"""

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from engine.io.module_network import ModuleNetwork
from engine.io.pt2_program import read_exported_module
from engine.landscape.eval_batch_norm import EvalBatchNorm, has_batch_norm
from engine.landscape.module_hessian import module_hvp
from engine.landscape.module_loss import ModuleLoss
from tests.models import CLASSES, export_cnn, images, trained_cnn

KERNELS = ("native_batch_norm", "_native_batch_norm_legit", "batch_norm_backward", "cudnn_batch_norm")


class RecordedOps(TorchDispatchMode):
    """The ATen ops that reach the dispatcher, by name."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


def kernel_calls(names) -> list[str]:
    return [name for name in names if any(kernel in name for kernel in KERNELS)]


def close(a, b, scale=None) -> bool:
    # float64 rounding over a few hundred operations; the two evaluate one map in different orders
    a, b = torch.as_tensor(a).detach(), torch.as_tensor(b).detach()
    scale = float(b.abs().max()) if scale is None else scale
    return float((a - b).abs().max()) <= 1e-12 * max(scale, 1.0)


@pytest.fixture(scope="module")
def model():
    return trained_cnn().double().eval()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The module the app reads from an exported archive (its batch norm is an ATen op call)."""
    path = export_cnn(trained_cnn(), tmp_path_factory.mktemp("bn") / "cnn.pt2")
    return read_exported_module(path).module


def loss_of(module, X, Y):
    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())

    def loss(p):
        out = torch.func.functional_call(module, {**p, **buffers}, (X,))
        return torch.nn.functional.cross_entropy(out, Y)

    return loss, params


def test_outputs_gradients_and_products_equal_the_kernels(model):
    X, Y = images(6).double(), torch.tensor([0, 1, 2, 0, 1, 2])
    loss, params = loss_of(model, X, Y)
    v = {k: torch.randn(t.shape, dtype=t.dtype, generator=torch.Generator().manual_seed(7)) for k, t in params.items()}
    hvp = lambda: torch.func.jvp(torch.func.grad(loss), (params,), (v,))[1]  # noqa: E731
    reference = (model(X), torch.func.grad(loss)(params), hvp())
    with RecordedOps() as ops, EvalBatchNorm():
        affine = (model(X), torch.func.grad(loss)(params), hvp())
    assert kernel_calls(ops.names) == [], "the kernel still ran under the mode"
    assert "native_batch_norm" in " ".join(kernel_calls(_names_without_mode(model, X))), "the reference did not use it"
    assert close(affine[0], reference[0])
    for got, want in zip(affine[1:], reference[1:]):
        assert set(got) == set(want)
        for name in want:
            assert close(got[name], want[name]), name


def _names_without_mode(model, X):
    with RecordedOps() as ops:
        model(X)
    return ops.names


def test_an_exported_programs_batch_norm_is_replaced_too(exported):
    module = exported
    X = images(4)
    reference = module(X)
    with RecordedOps() as ops, EvalBatchNorm():
        out = module(X)
    assert kernel_calls(ops.names) == []
    assert has_batch_norm(module)
    # float32, as exported: one map in two orders, a few roundings of float32 apart
    assert float((out - reference).abs().max()) <= 1e-5 * float(reference.abs().max())


def test_batch_statistics_still_go_to_the_kernel():
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm1d(3).double()  # train mode: each batch's own statistics
    x = torch.randn(5, 3, dtype=torch.float64)
    reference = torch.nn.functional.batch_norm(x, None, None, norm.weight, norm.bias, True)
    with RecordedOps() as ops, EvalBatchNorm():
        out = norm(x)
    assert kernel_calls(ops.names), "train mode must use the batch's statistics, by the kernel"
    assert close(out, reference)


def test_module_loss_uses_it_only_where_there_is_batch_norm(model):
    labels = np.arange(6) % CLASSES
    net = ModuleNetwork(model, images(6).numpy().astype(np.float64), labels, None, "test")
    # fold=False: batch norm evaluated as such (not folded into its convolution), under the context
    loss = ModuleLoss(net, "cross-entropy", batch_size=4, fold=False)
    plain = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, CLASSES)).double()
    assert not has_batch_norm(plain)
    # one product on the kept graph under the mode, against the reference's Hessian-vector product
    X, Y = torch.as_tensor(net.X), torch.as_tensor(labels)
    ref_loss, params = loss_of(model, X, Y)
    v = torch.randn(loss.n_params, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    with RecordedOps() as ops:
        got = module_hvp(loss)(v)
    assert kernel_calls(ops.names) == []
    pieces = dict(zip(loss.names, (p.view(s) for p, s in zip(v.split(loss.sizes), loss.shapes))))
    want = torch.func.jvp(torch.func.grad(ref_loss), (params,), (pieces,))[1]
    assert close(got, torch.cat([want[name].reshape(-1) for name in loss.names]))
