"""A module's loss plane as a sweep: each row of the grid is a cell (``main.py landscape --executor``).

A row is ``engine.landscape.plane.plane_row`` of (θ, d1, d2, α_i, β): the very function and
order of operations of the local plane, so every executor gives the same bits. A worker builds its
own ``ModuleLoss`` from the files, once per thread (a module is not shared between threads: its
forward swaps the module's tensors), so on a cluster the model and data must be readable at the
same paths on every node. The settings record the files' SHA-256 and the directions' digest, so
``--resume`` refuses to mix rows of another model, data or plane.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.progress import Job, subjob
from engine.sweeps.runner import SweepPlan, sweep_job

_losses: dict = {}  # (source, thread) -> ModuleLoss, in each worker process
_losses_lock = threading.Lock()


@dataclass(frozen=True, eq=False)
class PlaneSource:
    """Everything a worker needs to compute rows: how to read the loss, and the plane itself."""

    network: str
    data: str
    model: str | None  # package.module:factory for a state_dict
    kind: str
    batch_size: int | None
    dtype: str
    theta: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    @property
    def key(self) -> tuple:
        return (self.network, self.data, self.model, self.kind, self.batch_size, self.dtype)


def _loss(source: PlaneSource):
    from engine.io.module_network import read_module_network
    from engine.landscape.module_loss import ModuleLoss

    key = (source.key, threading.get_ident())
    with _losses_lock:
        loss = _losses.get(key)
    if loss is None:
        net = read_module_network(source.network, source.data, source.model)
        loss = ModuleLoss(net, source.kind, source.batch_size, source.dtype)
        with _losses_lock:
            _losses[key] = loss
    return loss


def compute_row(source: PlaneSource, cell) -> dict:
    from engine.landscape.plane import plane_row

    (i,) = cell
    row = plane_row(_loss(source), source.theta, source.d1, source.d2, source.alpha[i], source.beta)
    return {"loss": row}


def _sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def plan(source: PlaneSource) -> SweepPlan:
    arrays = hashlib.sha256()
    for a in (source.theta, source.d1, source.d2, source.alpha, source.beta):
        arrays.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    settings = {
        "network": str(source.network),
        "network_sha256": _sha256(source.network),
        "data": str(source.data),
        "data_sha256": _sha256(source.data),
        "model": source.model,
        "loss": source.kind,
        "batch_size": source.batch_size,
        "dtype": source.dtype,
        "rows": len(source.alpha),
        "columns": len(source.beta),
        "plane_sha256": arrays.hexdigest(),  # θ, d1, d2, α and β
    }
    cells = tuple((i,) for i in range(len(source.alpha)))
    return SweepPlan("module-plane", settings, ("row",), cells, compute_row, source)


def grid_job(source: PlaneSource, out_dir, executor: str = "local", address=None, workers=None, mode="new") -> Job:
    """Job: the (len(alpha), len(beta)) grid, its rows computed on ``executor`` and stored under
    ``out_dir/cells`` (``mode="resume"`` computes only the missing rows)."""
    inner = sweep_job(plan(source), Path(out_dir), executor, address, workers, mode)
    try:
        run = yield from subjob(inner, 0.0, 1.0, "rows: ")
    finally:
        inner.close()
    return np.stack([np.asarray(run.cells[(i,)]["loss"], float) for i in range(len(source.alpha))])
