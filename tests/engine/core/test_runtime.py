"""release_free_heap gives back what glibc's heap keeps after a job: the soak's growth (issue #27)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# The soak's pattern, made deterministic: once a large block is freed, glibc serves blocks up to
# its size from the heap, and a small live block above each freed one pins the heap's pages.
FRAGMENTED = """
import ctypes, json
import numpy as np
from engine.core.runtime import release_free_heap

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

big = np.ones(4_000_000)
del big  # 32 MB, mmapped and freed: glibc's mmap threshold rises to it
blocks, pins = [], []
for _ in range(200):
    blocks.append(np.ones(125_000))  # 1 MB, from the heap now
    pins.append(libc.malloc(1024))  # a small live block above it
del blocks
before = rss_mb()
released = release_free_heap()
print(json.dumps({"before": before, "after": rss_mb(), "released": released}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")
def test_free_heap_pages_go_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", FRAGMENTED], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rss = json.loads(out.stdout)
    assert rss["released"]
    # 200 MB freed inside the heap stay resident until released (this is what RSS gained)
    assert rss["before"] - rss["after"] > 150, rss
