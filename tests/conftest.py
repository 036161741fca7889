"""For every test: torch runs one OpenMP thread in every thread, as the app does (landscape_lens.cli)."""

import landscape_lens.cli  # noqa: F401  (sets OMP_NUM_THREADS before anything imports torch)
