"""``frictionsim record-campaign``: every trajectory × gain for one or more bench set-ups."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from frictionsim import trajectories
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.commands.record import (
    add_servo_arguments,
    check_timing,
    make_log_folder,
    open_servo,
    plot_recordings,
)
from frictionsim.experiments.common.output import counted

DESCRIPTION = (
    "Record each trajectory at each P gain for each MASS:LENGTH set-up (the identification "
    "campaign), prompting between set-ups to change the mass. Ctrl-C stops after saving the "
    "current log as incomplete."
)


def _setup(text: str) -> tuple[float, float]:
    try:
        mass, length = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"set-up {text!r} must be MASS:LENGTH, e.g. 0.5:0.1") from None
    return mass, length


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setup", type=_setup, action="append", required=True, metavar="MASS:LENGTH",
                   help="a bench set-up, mass in kg at length in m (repeat for several; the "
                        "command waits for Enter before each set-up after the first)")
    p.add_argument("--kp", type=float, nargs="+", required=True,
                   help="firmware P gains (a gain named twice is recorded twice: a repetition)")
    # action="store": a trajectory named twice is a repetition, not a slip to refuse.
    p.add_argument("--trajectories", nargs="+", default=list(trajectories.IDENTIFICATION),
                   choices=list(trajectories.TRAJECTORIES), metavar="TRAJECTORY", action="store",
                   help="trajectories to record (default: the identification set "
                        f"{' '.join(trajectories.IDENTIFICATION)}; all: "
                        f"{', '.join(trajectories.TRAJECTORIES)}; one named twice is recorded "
                        "twice)")
    p.add_argument("--rest", type=float, default=1.0,
                   help="seconds to let the arm settle between recordings (default 1)")
    p.add_argument("--yes", action="store_true",
                   help="do not wait for Enter between set-ups (unattended, e.g. virtual servo)")
    add_servo_arguments(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.bench_setup import BenchSetup
    from frictionsim.hw.recorder import record_new

    check_timing(args)
    setups = [BenchSetup(m, length, kp, args.arm_mass, args.vin)
              for m, length in args.setup for kp in args.kp]
    make_log_folder(args.logdir)
    total = len(setups) * len(args.trajectories)
    print(f"campaign: {counted(len(args.setup), 'set-up')} × {counted(len(args.kp), 'gain')} × "
          f"{counted(len(args.trajectories), 'trajectory', 'trajectories')} = "
          f"{counted(total, 'recording')}, about "
          f"{total * (args.duration + 1.5 + args.rest) / 60:.1f} min", flush=True)
    done: list[Path] = []
    try:
        with open_servo(args) as servo:
            current = None
            for setup in setups:
                if (setup.mass, setup.length) != current:
                    if current is not None and not args.yes:
                        servo.torque(False)
                        try:
                            input(f"mount {setup.mass:g} kg at {setup.length:g} m, let the arm "
                                  f"hang still, then press Enter (Ctrl-C stops) ")
                        except EOFError:
                            raise ConfigurationError("no terminal to confirm the next set-up on; pass "
                                                     "--yes to record unattended") from None
                    current = (setup.mass, setup.length)
                for trajectory in args.trajectories:
                    # counted once written, before the arm returns to 0: a Ctrl-C then
                    # leaves it complete
                    record_new(servo, trajectory, setup, args.logdir, args.rate, args.duration,
                               on_complete=done.append)
                    print(f"[{len(done)}/{total}]", flush=True)
                    time.sleep(args.rest)
    finally:
        print(f"campaign: {len(done)} of {total} recordings complete in {args.logdir}", flush=True)
        plot_recordings(done, args)
    return 0
