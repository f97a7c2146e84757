"""``frictionsim record`` and ``record-campaign``: record bench logs from a servo (SPEC §6 raw logs)."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

from experiments.output import FIGURE, add_output_argument, add_overwrite_argument
from experiments.registry import register
from frictionsim import trajectories
from frictionsim.logs import load_log
from hw.connect import MOTORS, open_servo
from hw.recorder import BenchSetup, record
from hw.servo import Servo


def _add_servo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--motor", required=True, choices=MOTORS, help="the servo's actuator name")
    p.add_argument("--port", required=True,
                   help="serial device (/dev/ttyUSB0, a virtual servo's /dev/pts/N) or, for an "
                        "eRob, the EtherCAT network interface (eth0)")
    p.add_argument("--id", type=int, default=1, dest="servo_id", help="servo id (default 1)")
    p.add_argument("--protocol", type=int, choices=(1, 2), default=None,
                   help="Dynamixel protocol (default 2.0; MX servos with 1.0 firmware: 1)")
    p.add_argument("--baud", type=int, default=None,
                   help="serial baud rate (default: the model's factory setting)")
    p.add_argument("--arm-mass", type=float, default=0.0, dest="arm_mass",
                   help="mass of the arm itself in kg (default 0)")
    p.add_argument("--vin", type=float, default=None,
                   help="supply voltage in V written to the logs (default: not recorded)")
    p.add_argument("--rate", type=float, default=200.0,
                   help="control and logging rate in Hz (default 200)")
    p.add_argument("--duration", type=float, default=trajectories.DURATION,
                   help=f"seconds per trajectory (default {trajectories.DURATION})")
    p.add_argument("--logdir", type=Path, required=True, help="directory to write raw logs to")
    add_overwrite_argument(p, "replace an existing --plot figure (logs are never replaced: "
                              "a new recording gets a new file name)")
    add_output_argument(p, "--plot", FIGURE,
                        "figure of the recorded position vs goal (png/pdf/svg)")


def log_path(logdir: Path, trajectory: str, setup: BenchSetup) -> Path:
    """A new file name in ``logdir`` naming the set-up; never one that exists already."""
    stem = f"{trajectory}_kp{setup.kp:g}_m{setup.mass:g}_l{setup.length:g}"
    path = logdir / f"{stem}.json"
    for n in itertools.count(2):
        if not path.exists():
            return path
        path = logdir / f"{stem}_{n}.json"
    raise AssertionError("unreachable")


def summarise(path: Path, rate: float) -> str:
    """One line on a recorded log: entries, duration and the actual control period."""
    log = load_log(path)
    t = np.array([e["timestamp"] for e in log.entries])
    period = np.diff(t) * 1e3
    late = np.mean(period > 1.5e3 / rate) * 100 if len(period) else 0.0
    return (f"{path}: {len(t)} entries over {t[-1]:.2f} s, period {period.mean():.2f} ± "
            f"{period.std():.2f} ms (max {period.max():.1f} ms, {late:.1f} % late by > 50 %)")


def _record_one(servo: Servo, trajectory: str, setup: BenchSetup, args: argparse.Namespace) -> Path:
    path = log_path(args.logdir, trajectory, setup)
    print(f"recording {trajectory} (kp {setup.kp:g}, {setup.mass:g} kg at {setup.length:g} m) "
          f"-> {path}", flush=True)
    try:
        record(servo, trajectory, setup, path, rate=args.rate, duration=args.duration)
    except BaseException:
        if path.exists():
            print(f"partial log kept (marked incomplete): {path}", file=sys.stderr)
        raise
    print(summarise(path, args.rate), flush=True)
    return path


def _plot(paths: list[Path], args: argparse.Namespace) -> None:
    if args.plot and paths:
        from experiments.plots import recordings_figure

        recordings_figure([load_log(p) for p in paths], args.plot,
                          title=f"{args.motor} on {args.port}")


def _open(args: argparse.Namespace) -> Servo:
    return open_servo(args.motor, args.port, servo_id=args.servo_id, protocol=args.protocol,
                      baudrate=args.baud)


def add_record_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mass", type=float, required=True, help="point mass at the arm's end, kg")
    p.add_argument("--length", type=float, required=True, help="arm length, m")
    p.add_argument("--kp", type=float, required=True, help="firmware P gain (register units)")
    p.add_argument("--trajectory", required=True, choices=list(trajectories.TRAJECTORIES),
                   help="goal trajectory to follow")
    _add_servo_arguments(p)


MAX_RATE = 10_000.0  # Hz: beyond any serial servo bus
MAX_DURATION = 3600.0  # s per trajectory


def check_timing(args: argparse.Namespace) -> None:
    """Refuse a rate, duration or rest that no recording can use, before the servo is touched
    (the set-up itself is checked by :class:`hw.recorder.BenchSetup`)."""
    if not 0 < args.rate <= MAX_RATE:
        raise ValueError(f"--rate {args.rate:g}: must be in (0, {MAX_RATE:g}] Hz")
    if not 0 < args.duration <= MAX_DURATION:
        raise ValueError(f"--duration {args.duration:g}: must be in (0, {MAX_DURATION:g}] s")
    if not 0 <= getattr(args, "rest", 0.0) <= MAX_DURATION:
        raise ValueError(f"--rest {args.rest:g}: must be in [0, {MAX_DURATION:g}] s")


def run_record(args: argparse.Namespace) -> int:
    check_timing(args)
    setup = BenchSetup(args.mass, args.length, args.kp, args.arm_mass, args.vin)
    args.logdir.mkdir(parents=True, exist_ok=True)
    servo = _open(args)
    try:
        path = _record_one(servo, args.trajectory, setup, args)
    finally:
        servo.close()
    _plot([path], args)
    return 0


def _setup(text: str) -> tuple[float, float]:
    try:
        mass, length = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"set-up {text!r} must be MASS:LENGTH, e.g. 0.5:0.1") from None
    return mass, length


def add_campaign_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setup", type=_setup, action="append", required=True, metavar="MASS:LENGTH",
                   help="a bench set-up, mass in kg at length in m (repeat for several; the "
                        "command waits for Enter before each set-up after the first)")
    p.add_argument("--kp", type=float, nargs="+", required=True, help="firmware P gains")
    p.add_argument("--trajectories", nargs="+", default=list(trajectories.IDENTIFICATION),
                   choices=list(trajectories.TRAJECTORIES), metavar="TRAJECTORY",
                   help="trajectories to record (default: the identification set "
                        f"{' '.join(trajectories.IDENTIFICATION)}; all: "
                        f"{', '.join(trajectories.TRAJECTORIES)})")
    p.add_argument("--rest", type=float, default=1.0,
                   help="seconds to let the arm settle between recordings (default 1)")
    p.add_argument("--yes", action="store_true",
                   help="do not wait for Enter between set-ups (unattended, e.g. virtual servo)")
    _add_servo_arguments(p)


def run_campaign(args: argparse.Namespace) -> int:
    check_timing(args)
    setups = [BenchSetup(m, length, kp, args.arm_mass, args.vin)
              for m, length in args.setup for kp in args.kp]
    args.logdir.mkdir(parents=True, exist_ok=True)
    total = len(setups) * len(args.trajectories)
    print(f"campaign: {len(args.setup)} set-up(s) × {len(args.kp)} gain(s) × "
          f"{len(args.trajectories)} trajectories = {total} recordings, about "
          f"{total * (args.duration + 1.5 + args.rest) / 60:.1f} min", flush=True)
    servo = _open(args)
    done: list[Path] = []
    try:
        current = None
        for setup in setups:
            if (setup.mass, setup.length) != current:
                if current is not None and not args.yes:
                    servo.torque(False)
                    try:
                        input(f"mount {setup.mass:g} kg at {setup.length:g} m, let the arm "
                              f"hang still, then press Enter (Ctrl-C stops) ")
                    except EOFError:
                        raise ValueError("no terminal to confirm the next set-up on; pass --yes "
                                         "to record unattended") from None
                current = (setup.mass, setup.length)
            for trajectory in args.trajectories:
                done.append(_record_one(servo, trajectory, setup, args))
                print(f"[{len(done)}/{total}]", flush=True)
                time.sleep(args.rest)
    finally:
        servo.close()
        print(f"campaign: {len(done)} of {total} recordings complete in {args.logdir}", flush=True)
        _plot(done, args)
    return 0


register(
    "record",
    "record one bench log from a servo",
    "Set the servo's P gain, follow TRAJECTORY at a fixed rate (actual period logged) and "
    "write a raw log (SPEC §6) to LOGDIR incrementally and atomically: an interrupted or "
    "failed run keeps what it recorded, marked incomplete. On exit the arm returns slowly "
    "to 0 and the torque is disabled. Works the same against `frictionsim virtual-servo`.",
    add_record_arguments,
    run_record,
    subcommand=True,
)

register(
    "record-campaign",
    "record every trajectory x gain for one or more bench set-ups",
    "Record each trajectory at each P gain for each MASS:LENGTH set-up (the identification "
    "campaign), prompting between set-ups to change the mass. Ctrl-C stops after saving the "
    "current log as incomplete.",
    add_campaign_arguments,
    run_campaign,
    subcommand=True,
)
