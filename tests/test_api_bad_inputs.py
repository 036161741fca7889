"""Every bad argument to ``landscape_lens``'s API is one ``APIInputError`` (a ``ValueError``) whose
single line names the argument and why, raised before any long work starts."""

import numpy as np
import pytest
import torch

import landscape_lens as ll
from tests.models import CLASSES, images, trained_cnn

N = 12


@pytest.fixture(scope="module")
def setup():
    X = images(N)
    Y = torch.as_tensor(np.random.default_rng(0).integers(0, CLASSES, N))
    return trained_cnn(0), X, Y


def refused(call, *words):
    with pytest.raises(ll.APIInputError) as caught:
        call()
    text = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "\n" not in text and text, text
    for word in words:
        assert word in text, text
    return text


class TupleOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x), x.sum()


def test_a_model_whose_output_does_not_fit_the_loss(setup):
    refused(lambda: ll.plane(TupleOut(), (torch.randn(6, 4), torch.zeros(6, dtype=torch.long))), "output")
    one_output = torch.nn.Sequential(torch.nn.Linear(4, 1))
    refused(lambda: ll.plane(one_output, (torch.randn(6, 4), torch.zeros(6, dtype=torch.long))), "cross-entropy")


def test_labels_out_of_range(setup):
    model, X, _ = setup
    refused(lambda: ll.plane(model, (X, torch.full((N,), CLASSES))), "labels")


def test_data_of_the_wrong_shape_or_dtype(setup):
    model, X, Y = setup
    refused(lambda: ll.plane(model, (X[:, :2], Y)), "inputs X")
    refused(lambda: ll.plane(model, (X, Y[:5])), "samples")
    refused(lambda: ll.plane(model, (np.array([["a"]] * N), Y)), "dtype")
    refused(lambda: ll.plane(model, (X.to(torch.complex64), Y)), "X")
    refused(lambda: ll.plane(model, 42), "data")


def test_an_empty_data_loader(setup):
    model, X, Y = setup
    empty = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X[:0], Y[:0]), batch_size=4)
    refused(lambda: ll.plane(model, empty), "no batches")
    refused(lambda: ll.plane(model, torch.utils.data.TensorDataset(X[:0], Y[:0])), "empty")


def test_a_loss_callable_that_returns_no_scalar(setup):
    model, X, Y = setup
    refused(lambda: ll.plane(model, (X, Y), loss=lambda m, b: m(b[0])), "scalar")
    refused(lambda: ll.plane(model, (X, Y), loss=lambda m, b: 1 / 0), "ZeroDivisionError")
    refused(lambda: ll.plane(model, (X, Y), loss="l2"), "loss=")


def test_a_checkpoint_that_does_not_match_the_model(setup, tmp_path):
    model, X, Y = setup
    other = torch.nn.Sequential(torch.nn.Linear(4, 3))
    refused(lambda: ll.interpolation(model, other, (X, Y), points=3), "parameter")
    wrong = {k: v[..., :1] if v.ndim else v for k, v in model.state_dict().items()}
    refused(lambda: ll.interpolation(model, wrong, (X, Y), points=3), "shape")
    states = [model.state_dict(), model.state_dict(), other.state_dict()]
    refused(lambda: ll.trajectory_plane(states, model, (X, Y)), "checkpoints[2]")
    refused(lambda: ll.interpolation(model, tmp_path / "missing.pt", (X, Y)), "no such file")


def test_a_plane_over_the_size_limit(setup):
    model, X, Y = setup
    refused(lambda: ll.plane(model, (X, Y), points=5000), "5000")
    refused(lambda: ll.plane(model, (X, Y), points=3, extent=-1.0), "extent")
    refused(lambda: ll.plane(model, (X, Y), directions="sideways"), "directions")
    refused(lambda: ll.plane(model, (X, Y), directions=(np.zeros(3), np.zeros(3))), "d1")


def test_other_arguments(setup, tmp_path):
    model, X, Y = setup
    refused(lambda: ll.plane("nothing.pt2", (X, Y)), "no such file")
    refused(lambda: ll.plane({"a": 1}, (X, Y)), "model")
    refused(lambda: ll.hessian(model, (X, Y), top_k=0), "top")
    refused(lambda: ll.hessian(model, (X, Y), bottom_k=10**6), "bottom")
    refused(lambda: ll.plane(model, (X, Y), dtype="float16"), "dtype")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError) as caught:
        ll.load(bad)
    assert "\n" not in str(caught.value) and "bad.npz" in str(caught.value)
