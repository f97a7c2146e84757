"""``frictionsim run mjlab-actuators``: a robot's own position actuators, frictionsim's servos
and the reference project's actuator, timed alternately in mjlab."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import JSON, add_output_argument, add_progress_argument

DESCRIPTION = (
    "Time one batched mjlab physics step of a robot three ways: with its MJCF's position "
    "actuators, with frictionsim's FrictionsimActuatorCfg and with the reference project's "
    "mjlab actuator (BAM's bam/mjlab.py, from the checkout --bam names), both servo models "
    "with BAM's published 7.4 V STS3215 M1 on every hinge (kp 32, 6 ms control period). The "
    "three step in turn, 10 physics steps a chunk, for --rounds rounds; each reports its "
    "median chunk. Built in: a 20-dof biped; --mjcf times your own robot (--height puts it "
    "above a floor). Needs the extra mjlab."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bam", type=Path, required=True, metavar="PATH",
                   help="a checkout of github.com/Rhoban/bam")
    p.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                   help="a robot's MJCF (default: the built-in 20-dof biped)")
    p.add_argument("--height", type=float, default=None, metavar="M",
                   help="a floor, and the robot's free base this high above it (m); default "
                        "no floor")
    p.add_argument("--worlds", type=int, default=64, help="worlds (default 64)")
    p.add_argument("--rounds", type=int, default=20, help="timing rounds (default 20)")
    p.add_argument("--threads", default="1", metavar="N|default",
                   help="torch's threads (default 1; 'default' leaves torch's own)")
    p.add_argument("--device", default="cpu", help="mjlab's device (default cpu)")
    add_output_argument(p, "--json", JSON, 'write {"robot", "hinges", "worlds", "threads", '
                        '"median_us": {"mjcf", "frictionsim", "bam"}} here')
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from frictionsim.errors import ConfigurationError
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.robots.mjlab_actuators import KINDS, bam_checkout, time_actuators
    from frictionsim.limits import check_count

    check_count("--worlds", args.worlds, 1, 1 << 16)
    check_count("--rounds", args.rounds, 1, 1000)
    if args.mjcf is not None and not args.mjcf.is_file():
        raise ConfigurationError(f"--mjcf {args.mjcf}: no such file")
    if args.height is not None and not 0 < args.height <= 10:
        raise ConfigurationError(f"--height must be in (0, 10] m, got {args.height:g}")
    if args.threads != "default":
        if not args.threads.isdigit() or int(args.threads) < 1:
            raise ConfigurationError(f"--threads: a whole number ≥ 1 or 'default', got "
                                     f"{args.threads!r}")
    bam = bam_checkout(args.bam)
    if args.threads != "default":
        import torch

        torch.set_num_threads(int(args.threads))
    show = (lambda m: print(m, flush=True)) if not args.no_progress else (lambda m: None)
    times = time_actuators(bam, args.mjcf, args.height, args.worlds, args.rounds, args.device,
                           show)
    print(f"{times.robot}: {times.hinges} hinges, {times.worlds} worlds, torch threads "
          f"{times.threads}; µs per batched physics step (median of {args.rounds} chunks):")
    names = {"mjcf": "the MJCF's position actuators", "frictionsim": "frictionsim's servos",
             "bam": "the reference project's actuator"}
    print(table(["actuators", "µs per step", "× the MJCF's"],
                [[names[k], f"{times.median_us[k]:.0f}", f"{times.ratio(k):.2f}"]
                 for k in KINDS], "<>>"))
    if args.json:
        write_json(args.json, dataclasses.asdict(times))
    return 0
