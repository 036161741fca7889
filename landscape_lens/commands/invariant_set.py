"""``invariant-set --d D --e E --c C,...``: the topology of H(c) as JSON (docs/MATH.md A4–A6)."""

from __future__ import annotations

import json

from ..arguments import MAX_DIMENSION, floats, int_in

NAME = "invariant-set"
HELP = "topology of the invariant set H(c), as JSON"


def add_arguments(parser) -> None:
    parser.add_argument("--d", type=int_in(1, MAX_DIMENSION), required=True, help="input dimension")
    parser.add_argument("--e", type=int_in(1, MAX_DIMENSION), required=True, help="output dimension")
    parser.add_argument("--c", type=floats, required=True, help="c_1,...,c_l")
    parser.add_argument("--bias", action="store_true", help="first layer has biases")


def run(args) -> int:
    from engine.topology.invariants import invariant_set_summary

    print(json.dumps(invariant_set_summary(args.d, args.e, args.c, args.bias)))
    return 0
