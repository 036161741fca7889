"""Process-wide numeric settings chosen deliberately for tiny networks on small machines."""

import functools

from engine.core.lazy import torch

_configured = False


def configure_torch_threads(threads: int = 1) -> None:
    """One intra-op thread per worker, for torch and for the BLAS under numpy/scipy.

    On networks this small a thread hand-off costs more than the arithmetic: with torch's default
    thread count a step on a busy machine was many times slower than on one thread, and so was
    each L-BFGS run under scipy's multi-threaded OpenBLAS (benchmarks/README.md). Work that is big
    enough to share is split across Python threads instead (see engine.landscape.slices).
    """
    global _configured
    if not _configured:
        import threadpoolctl

        torch.set_num_threads(threads)
        threadpoolctl.threadpool_limits(threads)
        _configured = True


def import_lazy_torch_modules() -> None:
    """Import what torch loads lazily on the first optimizer step or torch.func call.

    Both import torch._dynamo, which takes seconds on a small machine with the GIL mostly
    held: run inside a job, it froze the window at the start of the first run of every session.
    The app pays it once at start-up instead, before the window is shown. The first
    forward-mode product (torch.func.hessian's jvp, in paper B's first Hessian) TorchScript-compiles
    torch's jvp decompositions, with the GIL held in the compiler: the window's timers stalled
    there for dozens of ticks during nonattr-fig3's first run.
    """
    import torch._decomp.decompositions_for_jvp  # noqa: F401
    import torch._dynamo  # noqa: F401


def release_free_heap() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim(0)``); False where
    there is no glibc. Why a long-running window needs it (measured by the soak, issue #27):
    glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB), so a
    job's temporaries (arrays, images) come from the heap afterwards, and a heap gives back
    only what lies above its last live block. Over the soak the window's heap in use stayed flat
    while its free pages grew several-fold, and RSS with them. A fixed threshold kept them small,
    but made numpy's megabyte temporaries several times slower (each a fresh mmap); returning
    free pages once work has stopped costs the jobs nothing."""
    trim = _malloc_trim()
    if trim is None:  # not glibc (macOS, Windows, musl): nothing to do
        return False
    trim(0)
    return True


def heap_bytes() -> dict | None:
    """glibc's heap (``mallinfo2``), or None where there is no glibc: ``in_use``, the bytes in live
    blocks (what a leak of C++ objects grows, whatever RSS does), ``free`` inside the heap
    (fragmentation, free lists) and ``mmapped``."""
    mallinfo2 = _mallinfo2()
    if mallinfo2 is None:
        return None
    info = mallinfo2()
    return {"in_use": info.uordblks, "free": info.fordblks, "mmapped": info.hblkhd}


M_ARENA_MAX = -8  # glibc's mallopt parameter number


def use_one_malloc_arena() -> bool:
    """Make every thread allocate from glibc's main arena; False where there is no glibc.

    A new thread gets an arena of its own (up to 8 a core), and ``malloc_trim`` gives back only the
    main arena's free top: what a finished job's threads freed stays resident in theirs. A window
    that ran four presets, then three of them again, held 155 MB more than a fresh one (683 → 838
    MB, still growing at nonattr-fig3's second run), and 66 MB with one arena (683 → 749 MB, flat
    after nonattr-fig3's first run), the heap in use the same. Call it before threads start:
    arenas made before it stay in use."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, 1))


@functools.cache
def _libc():
    """glibc, looked up once (find_library runs ldconfig in a subprocess), or None."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.malloc_trim, libc.mallinfo2  # noqa: B018  (both glibc's, or no glibc)
    except (OSError, AttributeError, TypeError):
        return None
    return libc


@functools.cache
def _malloc_trim():
    import ctypes

    libc = _libc()
    if libc is None:
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc.malloc_trim


@functools.cache
def _mallinfo2():
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")
            + ("fordblks", "keepcost")
        ]

    libc = _libc()
    if libc is None:
        return None
    libc.mallinfo2.restype = Mallinfo2
    return libc.mallinfo2
