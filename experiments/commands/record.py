"""``frictionsim record``: record one bench log from a servo (docs/model.md §6 raw log)."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim import trajectories
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    add_actuator_arguments,
    add_output_argument,
    add_overwrite_argument,
)

DESCRIPTION = (
    "Set the servo's P gain, follow TRAJECTORY at a fixed rate (actual period logged) and "
    "write a raw log (docs/model.md §6) to LOGDIR incrementally and atomically: an interrupted or "
    "failed run keeps what it recorded, marked incomplete. On exit the arm returns slowly "
    "to 0 and the torque is disabled. Works the same against `frictionsim virtual-servo`."
)
MAX_RATE = 10_000.0  # Hz: beyond any serial servo bus
MIN_RATE = 1.0  # Hz: a slower log cannot follow a trajectory of a few seconds
MAX_BAUD = 100_000_000  # the fastest serial servo buses run at 10.5 Mbit/s
MAX_DURATION = 3600.0  # s per trajectory
MAX_REPLY_TIMEOUT = 5.0  # s: a reply later than this is a servo that is not there


def add_servo_arguments(p: argparse.ArgumentParser) -> None:
    """The servo, its port and the recording settings (shared with ``record-campaign``)."""
    p.add_argument("--motor", required=True,
                   help="the servo's actuator name (a built-in one with a [hardware] family, or "
                        "one declared by --actuator-file)")
    p.add_argument("--port", required=True,
                   help="serial device (/dev/ttyUSB0, a virtual servo's /dev/pts/N) or, for an "
                        "eRob, the EtherCAT network interface (eth0)")
    p.add_argument("--id", type=int, default=1, dest="servo_id", help="servo id (default 1)")
    p.add_argument("--protocol", type=int, choices=(1, 2), default=None,
                   help="Dynamixel protocol (default: the actuator's first; MX servos with 1.0 "
                        "firmware: 1)")
    p.add_argument("--baud", type=int, default=None,
                   help="serial baud rate (default: the model's factory setting)")
    p.add_argument("--reply-timeout", type=float, default=None, dest="reply_timeout",
                   metavar="S",
                   help="seconds to wait for each reply of a serial servo before retrying "
                        f"(default 0.05; up to {MAX_REPLY_TIMEOUT:g}: more for a slow USB adapter "
                        "or a virtual servo on a busy machine)")
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
    add_actuator_arguments(p)


def check_timing(args: argparse.Namespace) -> None:
    """Refuse a rate, duration or rest that no recording can use, before the servo is touched
    (the set-up itself is checked by :class:`frictionsim.bench_setup.BenchSetup`)."""
    if not MIN_RATE <= args.rate <= MAX_RATE:
        raise ConfigurationError(f"--rate {args.rate:g}: must be in [{MIN_RATE:g}, {MAX_RATE:g}] Hz")
    baud = getattr(args, "baud", None)
    if baud is not None and not 0 < baud <= MAX_BAUD:
        raise ConfigurationError(f"--baud {baud}: must be a serial baud rate in (0, {MAX_BAUD}]")
    timeout = getattr(args, "reply_timeout", None)
    if timeout is not None and not 0 < timeout <= MAX_REPLY_TIMEOUT:
        raise ConfigurationError(f"--reply-timeout {timeout:g}: must be in (0, {MAX_REPLY_TIMEOUT:g}] s")
    if not 0 < args.duration <= MAX_DURATION:
        raise ConfigurationError(f"--duration {args.duration:g}: must be in (0, {MAX_DURATION:g}] s")
    if not 0 <= getattr(args, "rest", 0.0) <= MAX_DURATION:
        raise ConfigurationError(f"--rest {args.rest:g}: must be in [0, {MAX_DURATION:g}] s")


def make_log_folder(folder: Path) -> None:
    """``--logdir``, made with its parents before the servo is touched; ConfigurationError
    for a file there or on the way, or a folder the system will not make."""
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"--logdir {folder}: a file, not a folder for the logs")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigurationError(f"--logdir {folder}: a file stands on the way to it") from None
    except OSError as e:
        raise ConfigurationError(f"--logdir {folder}: cannot make the folder "
                                 f"({e.strerror or type(e).__name__})") from None


def open_servo(args: argparse.Namespace):
    """The servo of ``--motor`` on ``--port``, checked to answer."""
    from frictionsim.hw.connect import motors, open_servo

    if args.motor not in motors():
        raise ConfigurationError(f"--motor {args.motor}: not a servo that can be driven (known: "
                                 f"{', '.join(motors())}; declare one with --actuator-file)")
    return open_servo(args.motor, args.port, servo_id=args.servo_id, protocol=args.protocol,
                      baudrate=args.baud, reply_timeout=args.reply_timeout)


def plot_recordings(paths: list[Path], args: argparse.Namespace) -> None:
    """The --plot figure of the logs recorded, if asked for."""
    if args.plot and paths:
        from frictionsim.experiments.common.plots import recordings_figure
        from frictionsim.logs import load_log

        recordings_figure([load_log(p) for p in paths], args.plot,
                          title=f"{args.motor} on {args.port}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mass", type=float, required=True, help="point mass at the arm's end, kg")
    p.add_argument("--length", type=float, required=True, help="arm length, m")
    p.add_argument("--kp", type=float, required=True, help="firmware P gain (register units)")
    p.add_argument("--trajectory", required=True, choices=list(trajectories.TRAJECTORIES),
                   help="goal trajectory to follow")
    add_servo_arguments(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.bench_setup import BenchSetup
    from frictionsim.hw.recorder import record_new

    check_timing(args)
    setup = BenchSetup(args.mass, args.length, args.kp, args.arm_mass, args.vin)
    make_log_folder(args.logdir)
    with open_servo(args) as servo:
        path = record_new(servo, args.trajectory, setup, args.logdir, args.rate, args.duration)
    plot_recordings([path], args)
    return 0
