"""An ordinary PyTorch training loop with ``ll.Recorder``: the run folder it writes is what
``landscape-lens --run RUN`` follows live and ``ll.open_run`` reads back.

    python3 examples/train_digits_cnn.py --run digits-run [--steps 300]
"""

import argparse

import torch
from sklearn.datasets import load_digits
from torch import nn

import landscape_lens as ll


def digits_cnn() -> nn.Module:
    """The CNN for 8×8 digits (benchmarks/bench_follow.py trains the same one)."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 10),
    )  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="digits-run", help="the run folder to write")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()

    digits = load_digits()
    X = torch.tensor(digits.images[:, None] / 16.0, dtype=torch.float32)
    Y = torch.tensor(digits.target)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64, shuffle=True)

    torch.manual_seed(0)
    model = digits_cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    # a checkpoint (and every hidden unit's invariant) every 20 steps, the sharpness on 256 images every 100
    with ll.Recorder(args.run, model, every=20, sharpness_every=100, sharpness_data=(X[:256], Y[:256])) as rec:
        step = 0
        while step < args.steps:
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                rec.step(step, loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
                step += 1
                if step == args.steps:
                    break

    run = ll.open_run(args.run)
    print(f"{len(run.steps)} steps, {len(run.checkpoint_steps)} checkpoints, sharpness {run.sharpness}")
