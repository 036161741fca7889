"""Where the toolkit's kernels compute: the dtypes and devices they accept, the worker threads a
kernel splits its chunks over, and the batched product they share (the slices', the MLP planes',
the module loss's and the density's).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch


class _Dtypes(Mapping):
    """ "float64" / "float32" -> the torch dtype, looked up when used (torch loads on first use)."""

    def __getitem__(self, name: str):
        if name not in ("float64", "float32"):
            raise KeyError(name)
        return getattr(torch, name)

    def __iter__(self):
        return iter(("float64", "float32"))

    def __len__(self) -> int:
        return 2


DTYPES = _Dtypes()

# Two Python threads with one torch thread each (torch releases the GIL inside its kernels): OpenMP
# threads inside each small product collapse whenever the machine is busy, and one thread on a
# busy machine does not pay either, since dynamic chunking lets a preempted thread's share go to
# the other (benchmarks/README.md, "Measurements moved out of the code").
WORKER_THREADS = min(2, os.cpu_count() or 1)


def check_device(device: str) -> torch.device:
    """ "cpu", or "cuda" when torch sees a GPU; anything else is a clear input error."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise EngineInputError(f"unknown device {device!r}; choose 'cpu' or 'cuda'") from None
    if dev.type not in ("cpu", "cuda"):
        raise EngineInputError(f"device {device!r} is not supported; choose 'cpu' or 'cuda'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EngineInputError(f"device {device!r}: this torch ({torch.__version__}) sees no CUDA GPU; use 'cpu'")
    return dev


def blas_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = a @ b``, batched and broadcast as ``torch.matmul``. On the CPU the product goes
    through numpy's OpenBLAS, which releases the GIL: torch's MKL takes its AVX2 paths on AMD
    CPUs, where its small batched products are several times slower
    (benchmarks/bench_landscape.py prints both BLAS's rates)."""
    if out.device.type == "cpu":
        np.matmul(a.numpy(), b.numpy(), out=out.numpy())
    else:
        torch.matmul(a, b, out=out)
    return out
