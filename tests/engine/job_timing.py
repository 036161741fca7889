"""How much work a job does between two yields, for the "yield every ~50 ms" promise.

Measured in CPU seconds of the whole process (every thread, so a job's helper threads count),
not wall time: on a shared machine wall time stretches with the load, while the work a job
does before handing back control -- what decides how soon pause and cancel can act -- does not.
"""

import time


def largest_work_between_yields(job) -> float:
    """CPU seconds of the longest single ``next(job)``, the first (start-up) one included."""
    worst = 0.0
    while True:
        began = time.process_time()
        try:
            next(job)
        except StopIteration:
            return max(worst, time.process_time() - began)
        worst = max(worst, time.process_time() - began)
