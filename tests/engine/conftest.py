"""Fixtures shared by the engine's tests: the architectures of issue #55, exported once."""

from typing import NamedTuple

import numpy as np
import pytest
import torch
from torch import nn

from tests.models import ARCHITECTURES, architecture, export_model


class ExportedCase(NamedTuple):
    """One architecture of ``tests.models.ARCHITECTURES``: the eager model, its data, and the
    model saved by ``torch.export.save`` (exported on four samples with a dynamic batch) with its
    data as a ``D.npz``."""

    model: nn.Module
    X: torch.Tensor
    Y: torch.Tensor
    archive: object  # pathlib.Path of the .pt2
    data: object  # pathlib.Path of the .npz


@pytest.fixture(scope="session")
def exported_architectures(tmp_path_factory) -> dict[str, ExportedCase]:
    """{name: ExportedCase} for every architecture, exported once for every test that reads them
    (the reader's tests in tests/engine/io and the toolkit's in tests/engine/landscape)."""
    folder = tmp_path_factory.mktemp("architectures")
    out = {}
    for name in ARCHITECTURES:
        model, X, Y = architecture(name)
        data = folder / f"{name}.npz"
        np.savez(data, X=X.numpy(), Y=Y.numpy())
        out[name] = ExportedCase(model, X, Y, export_model(model, X[:4], folder / f"{name}.pt2"), data)
    return out
