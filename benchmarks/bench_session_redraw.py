"""A session redrawn against the run it saved (issue #26): for each preset, ``main.py screenshot
--preset P --save-session S`` and then ``main.py screenshot --session S`` at the same size, each a
fresh process timed by the parent's wall clock; prints both times, their ratio and the share of
pixels the two PNGs have identical.

Run under Xvfb: ``xvfb-run -a -s "-screen 0 1920x1200x24" python3 benchmarks/bench_session_redraw.py``.
The ratio is of two processes run one after the other on the same machine, so a load that comes
and goes between them moves it: ``--repeats`` runs each pair again and prints every pair.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("fig3-free", "nonattr-fig3", "toolkit-plane")


def timed(*argv: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "screenshot", *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"screenshot {' '.join(argv)} failed: {done.stderr.strip()}")
    return seconds


def identical(a: Path, b: Path) -> float:
    x, y = (np.asarray(Image.open(p).convert("RGB")) for p in (a, b))
    return float((x == y).all(-1).mean()) if x.shape == y.shape else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{'preset':<16}{'run + save (s)':>16}{'redraw (s)':>12}{'ratio':>8}{'identical':>12}")
    with tempfile.TemporaryDirectory() as folder:
        for preset in args.presets:
            for _ in range(args.repeats):
                shot, again, saved = (Path(folder) / f"{preset}{suffix}" for suffix in ("-a.png", "-b.png", ".lens"))
                first = timed("--preset", preset, "--out", str(shot), "--save-session", str(saved))
                second = timed("--session", str(saved), "--out", str(again))
                same = identical(shot, again)
                print(f"{preset:<16}{first:>16.2f}{second:>12.2f}{second / first:>8.2f}{100 * same:>11.2f}%")


if __name__ == "__main__":
    main()
