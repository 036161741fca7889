"""Modules imported on first use, so the window can open before torch and scipy have loaded.

``from engine.core.lazy import torch`` binds a stand-in that imports torch the first time one of
its attributes is read (``torch.zeros``, ``torch.float64``), then is torch for every later read.
torch and scipy.optimize each take a noticeable while to import; the engine's modules use them
only inside functions, so the window (which imports those modules for their types and jobs) no longer
waits for either: the application imports them on a background thread once it is shown
(gui.app.preload_numerics).
"""

from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """A module object that becomes ``name`` at first attribute access."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_name"] = name

    def _load(self) -> types.ModuleType:
        module = importlib.import_module(self.__dict__["_lazy_name"])
        self.__dict__.update(module.__dict__)  # later reads find the attributes here directly
        return module

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)

    def __dir__(self):
        return dir(self._load())


torch = LazyModule("torch")
scipy_integrate = LazyModule("scipy.integrate")
scipy_optimize = LazyModule("scipy.optimize")
scipy_sparse_linalg = LazyModule("scipy.sparse.linalg")
scipy_special = LazyModule("scipy.special")
scipy_stats = LazyModule("scipy.stats")
