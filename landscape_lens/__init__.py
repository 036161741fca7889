"""Landscape Lens: the command line and the window's launcher (``landscape-lens``, ``main.py``)."""

import os

# Before torch loads: OpenMP keeps its thread count per thread, so every fresh Python thread (a job
# worker, a wait_for helper) otherwise ran torch on every core, 30–50× slower on these tiny
# networks on a busy machine (engine.core.runtime.configure_torch_threads explains the choice).
os.environ.setdefault("OMP_NUM_THREADS", "1")
