"""What a long-running window holds, sampled minute by minute (``soak_gui.py --profile-memory``).

Each sample separates the Python heap (tracemalloc's traced bytes) from native memory (RSS minus
that: glibc's arenas, Qt, Mesa, torch's allocator) and counts what could be growing: Qt widgets
and QObjects by type, pyqtgraph items by type (and the items in each scene), GL buffers and the
3D views' cached framebuffers, numpy arrays and torch tensors reachable from the collector's
objects (by total bytes), and Python objects by type. tracemalloc's growth since the first sample
after the warm-up is listed by traceback.

``malloc_trim=True`` returns glibc's free heap pages to the system before a sample and records RSS
before and after: what it gives back is fragmentation or free lists, not a leak (a diagnosis,
never a fix). Run the child with MALLOC_ARENA_MAX=2 for the same question about thread arenas.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import sys
import time
import tracemalloc

from engine.core.runtime import heap_bytes, release_free_heap

TOP = 25  # entries kept per counter and per tracemalloc comparison


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


_libc = ctypes.CDLL("libc.so.6")


def malloc_mb() -> dict:
    """glibc's heap: bytes in use, free inside the heap (fragmentation, free lists), mmapped."""
    heap = heap_bytes()
    mb = 2**-20
    return {
        "in_use_mb": round(heap["in_use"] * mb, 1),
        "free_in_heap_mb": round(heap["free"] * mb, 1),
        "mmapped_mb": round(heap["mmapped"] * mb, 1),
    }


_libc.open_memstream.restype = ctypes.c_void_p
_libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
_libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
_libc.fclose.argtypes = [ctypes.c_void_p]
_libc.free.argtypes = [ctypes.c_void_p]


def malloc_arenas() -> list[dict]:
    """glibc's arenas (malloc_info's XML), the most free first: each one's size, what is free
    inside it, and the upper end of its largest bin of free chunks. The main arena is nr 0;
    threads get the others."""
    import xml.etree.ElementTree as ET

    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = _libc.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    _libc.malloc_info(0, stream)
    _libc.fclose(stream)
    text = ctypes.string_at(buffer, size.value).decode()
    _libc.free(ctypes.cast(buffer, ctypes.c_void_p))
    arenas = []
    for heap in ET.fromstring(text).findall("heap"):
        free = sum(int(t.get("size")) for t in heap.findall("total"))
        system = next(int(t.get("size")) for t in heap.findall("system") if t.get("type") == "current")
        largest = max((int(t.get("to")) for t in heap.iter() if t.tag in ("size", "unsorted")), default=0)
        arenas.append(
            {
                "nr": int(heap.get("nr")),
                "mb": round(system / 2**20, 1),
                "free_mb": round(free / 2**20, 1),
                "largest_free_bin_kb": round(largest / 1024),
            }
        )
    return sorted(arenas, key=lambda a: -a["free_mb"])


def resident_mb() -> dict:
    """RSS by kind of mapping (/proc/self/smaps): glibc's main arena (``[heap]``), anonymous
    mappings (thread arenas, pymalloc's 1 MiB arenas, large mmapped blocks, Mesa's and BLAS's
    own buffers) and mapped files (libraries). mallinfo's free bytes include pages malloc_trim
    gave back, which are no longer resident: this is what RSS is made of."""
    kinds = collections.Counter()
    kind = None
    with open("/proc/self/smaps") as f:
        for line in f:
            if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                name = line.split(None, 5)[5].strip() if len(line.split(None, 5)) > 5 else ""
                kind = "heap" if name == "[heap]" else "anonymous" if not name or name.startswith("[anon") else "files"
            elif line.startswith("Rss:"):
                kinds[kind] += int(line.split()[1])
    return {k: round(v / 1024, 1) for k, v in kinds.items()}


def pymalloc_mb() -> float | None:
    """Bytes in pymalloc's blocks (Python's small objects): sys._debugmallocstats writes them to
    the C stderr, pointed at a file meanwhile. None where the line is missing."""
    import re
    import tempfile

    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = re.search(rb"# bytes in allocated blocks\s*=\s*([\d,]+)", out.read())
    return None if found is None else round(int(found.group(1).replace(b",", b"")) / 2**20, 1)


def _by_type(objects) -> collections.Counter:
    return collections.Counter(type(o).__name__ for o in objects)


def _top(counter: collections.Counter) -> dict:
    return dict(counter.most_common(TOP))


def qt_counts(window) -> dict:
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication

    widgets = QApplication.allWidgets()
    children = window.findChildren(QObject) if window is not None else []
    return {
        "widgets": len(widgets),
        "widgets_by_type": _top(_by_type(widgets)),
        "top_level_widgets": len(QApplication.topLevelWidgets()),
        "window_qobjects": len(children),
        "window_qobjects_by_type": _top(_by_type(children)),
    }


def collector_objects() -> tuple[collections.Counter, dict[str, list]]:
    """Python objects by type name, and the kinds the counts below read, from the collector.

    Call it only while no other thread runs Python: ``gc.get_objects`` also returns objects a
    thread is still building, and a worker inside ``tuple(generator)`` then resized a tuple whose
    refcount this list had raised and failed with "SystemError: tupleobject.c:927: bad argument
    to internal function" (CPython issue #39117; the 20-minute soak met it once, and a thread
    building tuples beside a loop of ``gc.get_objects`` meets it within seconds). Holding the GIL
    with a long ``sys.setswitchinterval`` did not prevent it there: a thread already waiting
    keeps the interval it started with. The soak samples between actions, once no job runs.
    The full list lives only inside; what leaves is arrays, tensors and Qt/pyqtgraph objects.
    """
    import numpy as np
    from pyqtgraph import GraphicsObject
    from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
    from PySide6.QtOpenGL import QOpenGLBuffer
    from PySide6.QtWidgets import QGraphicsScene

    from gui.rendering.gl_cells import GLCells

    torch = sys.modules.get("torch")  # imported by the app when it needs it, never by a profile
    wanted = {"items_2d": GraphicsObject, "items_gl": GLGraphicsItem, "scenes": QGraphicsScene}
    wanted |= {"buffers": QOpenGLBuffer, "cells": GLCells}
    objects = gc.get_objects()
    types = _by_type(objects)
    kinds = {type(o) for o in objects}
    # by type (isinstance would read __class__, which some lazy objects warn on)
    of = {name: {t for t in kinds if issubclass(t, cls)} for name, cls in wanted.items()}
    found = {name: [o for o in objects if type(o) in group] for name, group in of.items()}
    referents = [r for o in objects for r in gc.get_referents(o)]
    del objects
    kinds = {type(r) for r in referents}
    arrays = {t for t in kinds if issubclass(t, np.ndarray)}
    tensor_kinds = {t for t in kinds if torch is not None and issubclass(t, torch.Tensor)}
    owners: dict[int, np.ndarray] = {}
    tensors: dict[int, object] = {}
    for r in referents:
        kind = type(r)
        if kind in arrays:
            base = r
            while isinstance(base.base, np.ndarray):
                base = base.base
            owners[id(base)] = base
        elif kind in tensor_kinds:
            tensors[id(r)] = r
    del referents
    found["arrays"], found["tensors"] = list(owners.values()), list(tensors.values())
    return types, found


def _sizes_per_view(fbos: dict) -> collections.Counter:
    """A GLCells' framebuffers per view: the sizes it holds for each."""
    return collections.Counter(view for view, _w, _h in fbos)


def graphics_counts(found: dict[str, list]) -> dict:
    """pyqtgraph's 2D and GL items, the items each scene holds, GL buffers and framebuffers."""
    from shiboken6 import isValid

    items_2d, items_gl, buffers, cells = (found[k] for k in ("items_2d", "items_gl", "buffers", "cells"))
    scenes = [s for s in found["scenes"] if isValid(s)]  # a wrapper may outlive its deleted scene
    fbos = [key for c in cells for key in c._fbos]
    return {
        "pyqtgraph_items": len(items_2d),
        "pyqtgraph_items_by_type": _top(_by_type(items_2d)),
        "gl_items": len(items_gl),
        "gl_items_by_type": _top(_by_type(items_gl)),
        "scenes": len(scenes),
        "scene_items": sum(len(s.items()) for s in scenes),
        "gl_buffers": len(buffers),
        "gl_buffers_created": sum(1 for b in buffers if b.isCreated()),
        "gl_cells": len(cells),
        "framebuffers": len(fbos),
        # a clip's compositor renders several views through one GLCells: each at one size
        "framebuffer_sizes_per_view": max((n for c in cells for n in _sizes_per_view(c._fbos).values()), default=0),
        # colour + depth/stencil, 4 bytes each per pixel (a multisampled twin counts again)
        "framebuffer_mb": round(sum(8 * w * h for _view, w, h in fbos) / 2**20, 1),
    }


def array_counts(found: dict[str, list]) -> dict:
    """numpy arrays and torch tensors referred to by the collector's objects, by their memory's
    owner (a view counts its base once), and the largest groups by dtype and shape."""
    storages: dict[int, int] = {}
    for t in found["tensors"]:
        try:
            storage = t.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        except RuntimeError:  # a tensor without storage (meta, sparse)
            pass
    owners = found["arrays"]
    groups = collections.Counter()
    for a in owners:
        groups[f"{a.dtype}{list(a.shape)}"] += a.nbytes
    return {
        "ndarrays": len(owners),
        "ndarray_mb": round(sum(a.nbytes for a in owners) / 2**20, 1),
        "ndarray_largest_mb": {k: round(v / 2**20, 2) for k, v in groups.most_common(10)},
        "tensors": len(storages),
        "tensor_mb": round(sum(storages.values()) / 2**20, 1),
    }


def _by_traceback(snap, lines: set) -> collections.Counter:
    """Bytes by traceback of the traces allocated at one of ``lines`` ((file, line) pairs).
    Read from the snapshot's raw tuples (domain, size, frames, total): Snapshot.filter_traces and
    compare_to("traceback") take minutes over a million traces."""
    sizes = collections.Counter()
    for _domain, size, frames, *_ in snap.traces._traces:
        if frames[0] in lines:
            sizes[frames] += size
    return sizes


def _by_line(snap, before) -> list[dict]:
    stats = snap.compare_to(before, "lineno")[:TOP]
    where = [f"{s.traceback[0].filename.split('site-packages/')[-1]}:{s.traceback[0].lineno}" for s in stats]
    return [{"kb": round(s.size_diff / 1024, 1), "count": s.count_diff, "at": at} for s, at in zip(stats, where)]


def _growth(snap, before) -> list[dict]:
    """The tracebacks whose memory grew most since ``before``: the lines that grew most (by line,
    as compare_to groups them), then their traces by traceback."""
    grown = [s for s in snap.compare_to(before, "lineno")[:TOP] if s.size_diff > 0]
    lines = {(s.traceback[0].filename, s.traceback[0].lineno) for s in grown}
    diff = _by_traceback(snap, lines)
    diff.subtract(_by_traceback(before, lines))
    out = []
    for frames, size in diff.most_common(TOP):
        where = [f"{name.split('site-packages/')[-1]}:{line}" for name, line in frames]
        out.append({"kb": round(size / 1024, 1), "traceback": where[:6]})  # most recent first
    return out


class MemoryProfile:
    """Samples of one window's memory; ``sample`` takes one (seconds: the caller's clock)."""

    def __init__(self, frames: int = 10, malloc_trim: bool = False):
        self.frames, self.malloc_trim = frames, malloc_trim
        self.samples: list[dict] = []
        self._baseline = None  # tracemalloc snapshot at the first sample after the warm-up
        self._previous = None
        self._types0 = None
        if frames and not tracemalloc.is_tracing():
            tracemalloc.start(frames)

    def _snapshot(self):
        snap = tracemalloc.take_snapshot()
        ignore = [tracemalloc.__file__, "<frozen importlib._bootstrap*"]
        return snap.filter_traces([tracemalloc.Filter(False, pattern) for pattern in ignore])

    def sample(self, seconds: float, window, after_warmup: bool, by_traceback: bool = False) -> dict:
        """One sample; ``by_traceback``: tracemalloc's growth since the warm-up by traceback too
        (a minute's work over a million traces; by line otherwise)."""
        started = time.monotonic()
        gc.collect()
        out = {"t_s": round(seconds, 1), "rss_mb": round(rss_mb(), 1)}
        if self.malloc_trim:
            release_free_heap()
            out["rss_after_malloc_trim_mb"] = round(rss_mb(), 1)
        out["malloc"] = malloc_mb()
        out["malloc_arenas"] = malloc_arenas()[:8]
        out["resident"] = resident_mb()
        out["pymalloc_mb"] = pymalloc_mb()
        if tracemalloc.is_tracing():
            traced = tracemalloc.get_traced_memory()[0] / 2**20
            out["python_heap_mb"] = round(traced, 1)
            out["native_mb"] = round(out["rss_mb"] - traced, 1)
        types, found = collector_objects()
        out["python_objects"] = types.total()
        if self._types0 is None or (after_warmup and self._baseline is None and tracemalloc.is_tracing()):
            self._types0 = types
        grown = types - self._types0
        out["python_types_grown"] = _top(grown)
        out["qt"] = qt_counts(window)
        out["graphics"] = graphics_counts(found)
        out["arrays"] = array_counts(found)
        del found
        if tracemalloc.is_tracing():
            snap = self._snapshot()
            if self._previous is not None:
                out["tracemalloc_since_previous"] = _by_line(snap, self._previous)[:10]
            if self._baseline is not None:
                out["tracemalloc_since_warmup"] = _by_line(snap, self._baseline)
                if by_traceback:
                    out["tracemalloc_since_warmup_by_traceback"] = _growth(snap, self._baseline)
            elif after_warmup:
                self._baseline = snap
            self._previous = snap
        out["profile_s"] = round(time.monotonic() - started, 1)
        self.samples.append(out)
        return out


def table(samples: list[dict]) -> str:
    """One line a sample: RSS, its Python and native parts, and the main counts."""
    head = (
        f"{'min':>5} {'RSS':>7} {'trim':>7} {'py heap':>7} {'native':>7} {'malloc free':>11} {'widgets':>7} "
        f"{'pg items':>8} {'GL items':>8} {'FBOs':>5} {'FBO MB':>6} {'arrays MB':>9} {'tensors MB':>10} {'objects':>8}"
    )
    lines = [head]
    for s in samples:
        if "skipped" in s:
            lines.append(f"{s['t_s'] / 60:5.1f}  skipped: {s['skipped']}")
            continue
        g, a = s["graphics"], s["arrays"]
        lines.append(
            f"{s['t_s'] / 60:5.1f} {s['rss_mb']:7.0f} {s.get('rss_after_malloc_trim_mb', float('nan')):7.0f} "
            f"{s.get('python_heap_mb', float('nan')):7.0f} {s.get('native_mb', float('nan')):7.0f} "
            f"{s['malloc']['free_in_heap_mb']:11.0f} {s['qt']['widgets']:7d} {g['pyqtgraph_items']:8d} "
            f"{g['gl_items']:8d} {g['framebuffers']:5d} {g['framebuffer_mb']:6.0f} {a['ndarray_mb']:9.0f} "
            f"{a['tensor_mb']:10.0f} {s['python_objects']:8d}"
        )
    return "\n".join(lines)
