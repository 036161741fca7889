"""Landscape Lens: loss landscapes of your own models, from Python, the command line and the window.

``import landscape_lens as ll`` gives the API (docs/API.md), whose names are a stable contract:

- ``ll.plane``, ``ll.hessian``, ``ll.interpolation``, ``ll.trajectory_plane``: the toolkit's
  operations on an ``nn.Module`` (or a model file), data as tensors, a Dataset, a DataLoader or a
  file, and a named loss or a callable ``loss_fn(model, batch)``;
- ``ll.load``: any result a ``.save(path)`` or the command line wrote; ``ll.show``: the window on one;
- the papers' lenses: ``ll.invariants``, ``ll.invariant_drift``, ``ll.initial_negative_share``
  (paper A on any network), ``ll.inspect`` (paper B's report of an MLP), ``ll.persistence`` (the
  basins of a plane);
- ``ll.Recorder`` in a training loop, and ``ll.open_run`` to read what it wrote;
- ``ll.APIInputError``: what every bad argument raises (a ``ValueError``), in one line.

The names load on first use, so the command line starts without torch. Importing the package
changes nothing in the process (its threads, its torch settings); the command line and the window
set their own thread counts (``landscape_lens.cli``).
"""

_EXPORTS = {
    "plane": "landscape_lens.api",
    "hessian": "landscape_lens.api",
    "interpolation": "landscape_lens.api",
    "trajectory_plane": "landscape_lens.api",
    "load": "landscape_lens.results",
    "Plane": "landscape_lens.results",
    "Hessian": "landscape_lens.results",
    "Interpolation": "landscape_lens.results",
    "TrajectoryPlane": "landscape_lens.results",
    "APIInputError": "landscape_lens.inputs",
    "invariants": "landscape_lens.lenses",
    "invariant_drift": "landscape_lens.lenses",
    "initial_negative_share": "landscape_lens.lenses",
    "inspect": "landscape_lens.lenses",
    "persistence": "landscape_lens.lenses",
    "show": "landscape_lens.show",
    "Recorder": "engine.runs",
    "open_run": "engine.runs",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'landscape_lens' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
