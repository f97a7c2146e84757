"""``frictionsim run adapter-cost``: the MuJoCo servo adapter's cost on a robot with contacts,
against the same model with its own actuators."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import JSON, add_output_argument, add_progress_argument

DESCRIPTION = (
    "Time one MuJoCo step of a robot with contacts three ways: as it ships (its position "
    "actuators, its joints' armature, damping and frictionloss), without its joints' damping "
    "and frictionloss, and with frictionsim's servos on its joints (ServoModel.from_robot: "
    "the servos replace the joints' own dynamics). Built in: a 20-dof biped (a floating "
    "torso, 14 hinges, feet on a floor); --mjcf and --joints time your own robot. The "
    "models step in turn for --rounds rounds; each keeps its fastest."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                   help="a robot's MJCF (default: the built-in 20-dof biped)")
    p.add_argument("--joints", nargs="+", default=None, metavar="PATTERN",
                   help="the servo joints, fnmatch patterns (default: every named hinge an "
                        "actuator drives, or every named hinge)")
    p.add_argument("--params", type=Path, default=None, metavar="FILE",
                   help="the servos: a parameter file or robot fit (default: the 7.4 V "
                        "STS3215's default M6)")
    p.add_argument("--seconds", type=float, default=2.0,
                   help="simulated seconds per round (default 2)")
    p.add_argument("--rounds", type=int, default=7, help="timing rounds (default 7)")
    add_output_argument(p, "--json", JSON, 'write {"dofs", "servos", "contacts", "shipped_us", '
                        '"bare_us", "adapter_us", "ratio_shipped", "ratio_bare"} here')
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from frictionsim.errors import ConfigurationError
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.robots.adapter_cost import adapter_cost
    from frictionsim.limits import check_count

    check_count("--rounds", args.rounds, 1, 1000)
    if not 0.01 <= args.seconds <= 600:
        raise ConfigurationError(f"--seconds must be in [0.01, 600], got {args.seconds:g}")
    if args.joints and args.mjcf is None:
        raise ConfigurationError("--joints names joints of --mjcf; the built-in biped has its own")
    show = (lambda m: print(m, flush=True)) if not args.no_progress else (lambda m: None)
    cost = adapter_cost(str(args.mjcf) if args.mjcf else None, args.joints,
                        str(args.params) if args.params else None, args.seconds, args.rounds,
                        show)
    print(f"{cost.dofs} dofs, {cost.servos} servos, {cost.contacts} contacts at the end; "
          "µs per physics step (fastest of each):")
    print(table(["model", "µs per step", "adapter ÷ it"], [
        ["as shipped (own actuators, damping, frictionloss)", f"{cost.shipped_us:.2f}",
         f"{cost.ratio_shipped:.3f}"],
        ["own actuators, no joint damping or frictionloss", f"{cost.bare_us:.2f}",
         f"{cost.ratio_bare:.3f}"],
        ["frictionsim's servos (ServoModel)", f"{cost.adapter_us:.2f}", "1"]], "<>>"))
    if args.json:
        write_json(args.json, {**dataclasses.asdict(cost), "ratio_shipped": cost.ratio_shipped,
                               "ratio_bare": cost.ratio_bare})
    return 0
