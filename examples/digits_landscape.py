"""Train a small CNN on scikit-learn's 8×8 digits, then look at its landscape through the API.

    python3 examples/digits_landscape.py --out digits-landscape [--quick]

Writes plane.npz, hessian.npz, trajectory.npz (the files ``main.py landscape`` writes; read
them back with ``ll.load``) and a PNG of each result's ``.plot()``.
"""

import argparse
from pathlib import Path

import torch
from sklearn.datasets import load_digits
from torch import nn

import landscape_lens as ll


def digits_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 10),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("digits-landscape"))
    parser.add_argument("--quick", action="store_true", help="fewer steps and points (the tests' setting)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    steps, points = (40, 5) if args.quick else (600, 31)

    digits = load_digits()
    X = torch.tensor(digits.images[:, None] / 16.0, dtype=torch.float32)
    Y = torch.tensor(digits.target)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64, shuffle=True)

    torch.manual_seed(0)
    model = digits_cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    checkpoints, step = [], 0
    while step < steps:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % (steps // 10) == 0:
                checkpoints.append({k: v.clone() for k, v in model.state_dict().items()})
            step += 1
            if step == steps:
                break
    checkpoints.append({k: v.clone() for k, v in model.state_dict().items()})
    print(f"trained {steps} steps: last batch loss {loss.item():.4f}")

    # the evaluation set: the whole data in order, as a DataLoader (a pair (X, Y) works the same)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=256)
    plane = ll.plane(model, data, points=points, extent=1.0, directions="filter")
    hessian = ll.hessian(model, data, top_k=3, bottom_k=1, probes=20 if args.quick else 100)
    path = ll.trajectory_plane(checkpoints, model, data, points=points)
    for name, result in (("plane", plane), ("hessian", hessian), ("trajectory", path)):
        result.save(args.out / f"{name}.npz")
        result.plot().savefig(args.out / f"{name}.png", dpi=120)
    print(f"loss at the trained weights {plane.L_star:.4f}; on the plane {plane.loss.min():.4f}–{plane.loss.max():.4f}")
    print(f"top eigenvalues {hessian.eigenvalues.round(4)}, bottom {hessian.bottom_eigenvalues.round(4)}")
    print(f"trace {hessian.trace:.4g} ± {hessian.trace_se:.2g}; path's variance explained {path.explained.round(3)}")


if __name__ == "__main__":
    main()
