"""Write the `your-network` example: a 2—4—1 ReLU state_dict with one locked neuron, and its data.

    python3 tools/make_your_network.py    # rewrites the three files below, byte for byte the same

- resources/networks/your-network.pt: ``nn.Sequential(nn.Linear(2, 4, bias=False), nn.ReLU(),
  nn.Linear(4, 1, bias=False)).state_dict()`` (float32), as a user's own torch.save would write;
- resources/data/your-network.csv: 400 points of the toy target y = −(x₁ + x₂) on [0, 1]²
  (MATH A8), columns x₁, x₂, y;
- resources/presets/your-network.json: the topology tab loading both and training on with GD.

Every input weight is positive, so no neuron is dead on [0, 1]², and every output weight starts
positive. Neurons 1, 3 and 4 are rescaled (MATH A6) onto c = +0.3, one-sheet hyperboloids whose
output weight may pass through 0; neuron 2 onto c = −0.3, a two-sheet hyperboloid: v₂² ≥ 0.3, so
v₂ > 0 for ever under gradient flow (MATH A5). The target is negative, so the free neurons flip
and fit it, while neuron 2 stays on its upper sheet.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.topology.invariants import rescale_to  # noqa: E402
from engine.topology.two_layer import TwoLayerParams  # noqa: E402

NETWORK = ROOT / "resources" / "networks" / "your-network.pt"
DATA = ROOT / "resources" / "data" / "your-network.csv"
PRESET = ROOT / "resources" / "presets" / "your-network.json"
C = (0.3, -0.3, 0.3, 0.3)
SEED, POINTS = 20, 400

PRESET_VALUES = {
    "title": "Your network: a 2—4—1 ReLU state_dict with one locked neuron",
    "description": "Neuron 2 has c < 0: its output weight can never change sign, so it stays on its v > 0 "
    "sheet while the three free neurons flip and fit y = −(x₁ + x₂).",
    "workspace": "topology",
    "parameters": {
        "mode": "training",
        "network": {"source": "file", "file": "networks/your-network.pt", "activation": "relu"},
        "data": {"source": "file", "file": "data/your-network.csv"},
        "optimizer": {"name": "gd", "lr": 0.02, "steps": 1000, "stride": 1, "weight_decay": 0.0},
        "display": {"layout": "side by side", "log_drift": False},
    },
}


def example() -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(SEED)
    W1 = rng.uniform(0.3, 1.2, (4, 2))
    W2 = rng.uniform(0.4, 1.0, (1, 4))
    p = rescale_to(TwoLayerParams(W1, W2), C)
    X = rng.uniform(0.0, 1.0, (POINTS, 2))
    table = np.column_stack([X, -X.sum(axis=1)])
    model = torch.nn.Sequential(torch.nn.Linear(2, 4, bias=False), torch.nn.ReLU(), torch.nn.Linear(4, 1, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(p.W1))
        model[2].weight.copy_(torch.from_numpy(p.W2))
    return model.state_dict(), table


def main() -> None:
    state, table = example()
    buffer = io.BytesIO()
    torch.save(state, buffer)
    NETWORK.parent.mkdir(parents=True, exist_ok=True)
    NETWORK.write_bytes(buffer.getvalue())
    lines = ["# x1,x2,y  (y = -(x1 + x2)); written by tools/make_your_network.py"]
    lines += [",".join(f"{v:.17g}" for v in row) for row in table]
    DATA.write_text("\n".join(lines) + "\n")
    PRESET.write_text(json.dumps(PRESET_VALUES, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {NETWORK.relative_to(ROOT)}, {DATA.relative_to(ROOT)}, {PRESET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
