"""Any PyTorch model with its data: an ``nn.Module`` in eval mode, for the landscape toolkit.

STUB: the interface is final, the readers raise NotImplementedError until they are filled in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.lazy import torch


@dataclass(frozen=True, eq=False)
class ModuleNetwork:
    """A user's model and data. ``module`` is in eval mode with its running statistics, its
    parameters named as the user's module names them."""

    module: torch.nn.Module
    X: np.ndarray  # (N, ...) inputs, batch first, float64 or float32
    Y: np.ndarray  # (N,) integer labels, or (N,) / (N, e) float targets
    fixed_batch: int | None  # static batch of an exported graph: evaluate in chunks of exactly this size
    source: str  # "pt2", or "state_dict + package.module:factory"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.module.named_parameters())


def read_module_network(path, data_path, model_spec: str | None = None) -> ModuleNetwork:
    """The model in ``path`` (a .pt2, or a state_dict with ``model_spec`` = "package.module:factory")."""
    raise NotImplementedError("read_module_network: stub")


def read_checkpoint(path, net: ModuleNetwork) -> dict:
    """A state_dict read with weights_only=True, its keys and shapes checked against ``net.module``."""
    raise NotImplementedError("read_checkpoint: stub")


def read_model_data(path) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y) from a D.npz (X any shape, batch first) or a CSV (last column Y)."""
    raise NotImplementedError("read_model_data: stub")


def check_labels(Y: np.ndarray, n_classes: int) -> None:
    """EngineInputError unless Y holds integer labels in [0, n_classes)."""
    raise NotImplementedError("check_labels: stub")
