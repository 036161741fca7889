"""Process-wide numeric settings chosen deliberately for tiny networks on small machines."""
import threadpoolctl
import torch

_configured = False


def configure_torch_threads(threads: int = 1) -> None:
    """One intra-op thread per worker, for torch and for the BLAS under numpy/scipy.

    On networks this small a thread hand-off costs more than the arithmetic: measured 0.6 ms
    against 56 ms a step with torch's default thread count on a busy 2-core machine, and
    scipy's multi-threaded OpenBLAS made each L-BFGS run 14x slower. Work that is big enough
    to share is split across Python threads instead (see engine.landscape).
    """
    global _configured
    if not _configured:
        torch.set_num_threads(threads)
        threadpoolctl.threadpool_limits(threads)
        _configured = True
