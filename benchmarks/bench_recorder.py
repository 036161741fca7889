"""What ``engine.runs.Recorder`` adds to a training step, in one run.

Workload: a small CNN (conv 1→8 3×3, ReLU, 2×2 max-pool, conv 8→16 3×3, ReLU, flatten, linear
→10, padding 1: 3,818 parameters) trained by SGD (lr 0.05) with cross-entropy on scikit-learn's 8×8 digits
(1,797 images scaled to [0, 1]), batches of 64 drawn with a fixed seed.

Rows: for each setting, the seconds per step with the recorder and without it, measured in
pairs of blocks (plain then recorded, recorded then plain, ...), each block a fresh model and a
fresh run folder, and the median and quartiles of the pairs' ratios, on three clocks: the wall
(what the researcher waits), the loop thread's CPU time (with one torch thread, the step's own
work: the figure least moved by other processes on a shared machine) and the process's CPU time
(the background thread's work included). Settings: the default (a checkpoint every
``DEFAULT_EVERY`` steps, no sharpness), checkpoints every 10 and every step, and the default with
the sharpness every 100 steps on 256 fixed samples. Then ``Recorder.step`` called alone, with no
training between calls: its cost on the loop's thread per call, and per checkpoint the background
thread's CPU time and the wall time (when checkpoints come faster than that, the loop waits for
the queue). Then one checkpoint's parts, each timed alone on the loop's thread: the state_dict
copy, the .npz written and fsync'd, the invariants' trace (once a run) and arithmetic, the
manifest replaced, the sharpness.

Run: python benchmarks/bench_recorder.py [--steps 300] [--blocks 8] [--threads N] [--dir DIR]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.runs import format as fmt  # noqa: E402
from engine.runs import measures  # noqa: E402
from engine.runs.recorder import DEFAULT_EVERY, Recorder  # noqa: E402


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    return X, torch.tensor(d.target, dtype=torch.int64)


def train(steps: int, X, Y, folder: Path | None, options: dict, seed: int) -> tuple[float, float, float]:
    """(wall seconds, the loop thread's CPU seconds, the process's CPU seconds) of ``steps`` SGD
    steps; the recorder's construction excluded, its ``close`` included (it waits for the last
    queued checkpoint)."""
    torch.manual_seed(seed)
    model = cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batches = np.random.default_rng(seed).integers(0, len(X), (steps, 64))
    rec = Recorder(folder, model, **options) if folder is not None else None
    wall, thread, cpu = time.perf_counter(), time.thread_time(), time.process_time()
    for i in range(steps):
        x, y = X[batches[i]], Y[batches[i]]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        value = loss.item()  # a loop logs its loss, recorded or not
        if rec is not None:
            rec.step(loss=value, lr=0.05)
    if rec is not None:
        rec.close()
    return time.perf_counter() - wall, time.thread_time() - thread, time.process_time() - cpu


def compare(name: str, steps: int, blocks: int, X, Y, root: Path, options: dict) -> None:
    """Blocks of plain and recorded training, alternating which goes first; each block's ratio is
    recorded / plain of the pair, so a change in the machine's load between pairs cancels."""
    train(20, X, Y, None, {}, 0)  # warm-up
    per_step, ratios = {"plain": [], "recorded": []}, []
    for b in range(blocks):
        order = ("plain", "recorded") if b % 2 == 0 else ("recorded", "plain")
        got = {}
        for which in order:
            folder = root / f"{name}-{b}" if which == "recorded" else None
            got[which] = np.array(train(steps, X, Y, folder, options, b)) / steps
        per_step["plain"].append(got["plain"])
        per_step["recorded"].append(got["recorded"])
        ratios.append(got["recorded"] / got["plain"])
    p, r = np.median(per_step["plain"], axis=0), np.median(per_step["recorded"], axis=0)
    q1, med, q3 = np.percentile(ratios, [25, 50, 75], axis=0)
    print(f"{name}")
    for i, clock in enumerate(("wall", "loop thread CPU", "process CPU")):
        print(
            f"  {clock:<16} plain {p[i] * 1e3:8.3f} ms/step  recorded {r[i] * 1e3:8.3f} ms/step  "
            f"ratio {med[i]:6.3f} (quartiles {q1[i]:.3f}-{q3[i]:.3f})"
        )


def calls_alone(X, root: Path) -> None:
    """``Recorder.step`` without training (the costs are the same whatever the weights): per call,
    the wall clock and the loop thread's CPU time, and per checkpoint the process's CPU time
    (the background thread's work), for checkpoints every 1, 10 and 100 calls."""
    for every in (DEFAULT_EVERY, 10, 1):
        model = cnn()
        model(X[:64])
        n = 30 * every if every > 1 else 200
        rec = Recorder(root / f"alone-{every}", model, every=every)
        wall, thread, cpu = time.perf_counter(), time.thread_time(), time.process_time()
        for _ in range(n):
            rec.step(loss=0.5, lr=0.05)
        rec.flush()
        wall, thread, cpu = time.perf_counter() - wall, time.thread_time() - thread, time.process_time() - cpu
        rec.close()
        print(
            f"  every={every:<4} wall {wall / n * 1e6:9.1f} us/call   loop thread CPU {thread / n * 1e6:7.1f} us/call"
            f"   background CPU {(cpu - thread) / (n / every) * 1e3:6.2f} ms/checkpoint"
            f"   wall {wall / (n / every) * 1e3:6.2f} ms/checkpoint"
        )


def parts(X, Y, root: Path) -> None:
    """One checkpoint's pieces, each timed alone (median of 20)."""
    torch.manual_seed(0)
    model = cnn()
    model(X[:64])
    state = model.state_dict()

    def timed(call, n=20):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1e3

    arrays = {k: np.array(fmt.as_array(k, v), copy=True) for k, v in state.items()}
    folder = root / "parts"
    folder.mkdir()
    tensors = {k: torch.from_numpy(a) for k, a in arrays.items()}
    units = measures.UnitInvariants(model, X[:1])
    records = units(tensors)
    rows = {
        "state_dict copy": lambda: {k: np.array(fmt.as_array(k, v), copy=True) for k, v in state.items()},
        "checkpoint .npz + fsync": lambda: fmt.write_state(folder / "c.npz", arrays),
        "invariants' trace, once a run": lambda: measures.UnitInvariants(model, X[:1]),
        "invariants of one state": lambda: units(tensors),
        "invariants .npz + fsync": lambda: fmt.write_state(folder / "i.npz", measures.invariant_arrays(records)),
        "manifest (200 entries)": lambda: fmt.write_json(
            folder / "m.json", {"checkpoints": [{"step": i, "state": "x", "invariants": "y"} for i in range(200)]}
        ),
    }
    for name, call in rows.items():
        print(f"  {name:<30} {timed(call):8.3f} ms")
    loss = measures.sharpness_loss(model, X[:256].numpy(), Y[:256].numpy(), "cross-entropy")
    t = time.perf_counter()
    value, error, n_hvp = measures.sharpness_of(loss, seed=0)
    print(f"  {'sharpness (256 samples)':<30} {(time.perf_counter() - t) * 1e3:8.3f} ms  ({n_hvp} products)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the loop thread's CPU is the step's)")
    parser.add_argument("--dir", default=None, help="where the run folders go (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    X, Y = digits()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.steps} steps × {args.blocks} blocks")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        settings = {
            f"default (every={DEFAULT_EVERY})": {},
            "every=10": {"every": 10},
            "every=1": {"every": 1},
            "default + sharpness/100": {"sharpness_every": 100, "sharpness_data": (X[:256], Y[:256])},
        }
        for name, options in settings.items():
            compare(name.replace(" ", "_"), args.steps, args.blocks, X, Y, root, options)
        print("Recorder.step alone, no training:")
        calls_alone(X, root)
        print("one checkpoint's parts, alone on the loop's thread:")
        parts(X, Y, root)


if __name__ == "__main__":
    main()
