"""``obstruction NET``: paper A on your own two-layer network, as one JSON object.

NET is the app's .npz, a PyTorch state_dict (.pt/.pth, read with weights_only=True) of
Linear → ReLU | LeakyReLU → Linear, or a torch.export archive (.pt2) of one (read without
running its pickles). Prints c_k per neuron, l₊/l₋/l₀, the Poincaré polynomial, β₀, effective
components, the component label and the locked neurons (docs/MATH.md A2–A5); with --data the
loss and whether a better fit needs a locked neuron to flip; with --train the run on from the
loaded weights and how far c moved.
"""

from __future__ import annotations

import json

from ..arguments import float_in, int_in

NAME = "obstruction"
HELP = "paper A's invariants, locked neurons and obstruction of your own two-layer network, as JSON"
OPTIMIZERS = ("gd", "flow", "adam")
MAX_STEPS = 10**6
MAX_RECORDED_ROWS = 2000  # --train records at most about this many rows of the trajectory


def add_arguments(parser) -> None:
    parser.add_argument("network", help="NET: .npz (this app's), .pt/.pth state_dict, or .pt2 archive")
    parser.add_argument("--data", help="data: .npz with X, Y or .csv whose last column is y")
    parser.add_argument(
        "--activation", help="a state_dict's activation: relu (default) or leaky_relu; .npz and .pt2 name their own"
    )
    parser.add_argument("--slope", type=float_in(0.0, 1.0), help="leaky ReLU slope γ (default 0.01)")
    parser.add_argument("--train", type=int_in(1, MAX_STEPS), metavar="STEPS", help="train on for STEPS steps")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="gd", help="gd (default), flow or adam")
    parser.add_argument("--lr", type=float_in(1e-12, 1e3), default=0.01, help="step size h (flow: horizon STEPS·h)")


def run(args) -> int:
    from engine.core.exports import json_default
    from engine.core.progress import run_to_completion
    from engine.topology.obstruction import obstruction_job
    from engine.topology.training import TrainConfig

    config = None
    if args.train:
        stride = max(1, args.train // MAX_RECORDED_ROWS)
        config = TrainConfig(optimizer=args.optimizer, lr=args.lr, steps=args.train, stride=stride)
    job = obstruction_job(args.network, args.activation, args.slope, args.data, config)
    print(json.dumps(run_to_completion(job), indent=2, default=json_default))
    return 0
