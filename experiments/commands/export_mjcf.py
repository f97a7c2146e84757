"""``frictionsim export-mjcf``: an M1 parameter file as MuJoCo joint and actuator attributes."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import (
    TEXT,
    add_actuator_arguments,
    add_output_argument,
)

DESCRIPTION = (
    "Print the MuJoCo attributes (joint armature, damping, frictionloss with a friction row "
    "that stops the joint within one step; a position actuator's kp and forcerange; the Euler "
    "integrator without eulerdamp) of an M1 parameter file: exact for the voltage law with "
    "MuJoCo's Euler step (frictionsim's semi_implicit scheme). M2-M6 friction has no MuJoCo "
    "attribute: the command says so and points at the adapter."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path, help="an M1 parameter file (docs/model.md §7)")
    p.add_argument("--joint", default="servo", help="the joint's name in your model (default servo)")
    p.add_argument("--kp", type=float, default=None,
                   help="firmware gain (default: the actuator's declared default)")
    p.add_argument("--vin", type=float, default=None,
                   help="supply voltage, V (default: the actuator's)")
    p.add_argument("--timestep", type=float, default=0.001,
                   help="your model's timestep, s: the friction row's stiffness depends on it "
                        "(default 0.001)")
    add_output_argument(p, "--out", TEXT, "write the snippet to this file")
    add_actuator_arguments(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim import atomic
    from frictionsim.params import load_params
    from frictionsim.solvers.mjcf_export import export_m1

    snippet = export_m1(load_params(args.params), args.joint, args.kp, args.vin, args.timestep)
    if args.out is not None:
        atomic.write_text(args.out, snippet)
        print(f"wrote {args.out}")
    else:
        print(snippet, end="")
    return 0
