"""``frictionsim virtual-servo``: a simulated servo on a simulated bench, on a pseudo-terminal."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import add_actuator_arguments, add_extensions_argument, seed

DESCRIPTION = (
    "Open a pseudo-terminal and answer the servo's protocol like the real one (PING, READ, "
    "WRITE, SYNC READ/WRITE, REBOOT): firmware control law, motor, friction and pendulum "
    "simulated in real time with the compiled step, encoder quantisation and noise. The "
    "device path is printed (last line of the banner); point `frictionsim record --port` or "
    "the official SDKs at it. Ctrl-C stops."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", type=Path, required=True,
                   help="parameter file (docs/model.md §7) of the simulated servo: its model and actuator")
    p.add_argument("--motor", default=None,
                   help="servo to emulate (default: the parameter file's actuator)")
    p.add_argument("--mass", type=float, default=0.5, help="point mass at the arm's end, kg "
                                                           "(default 0.5)")
    p.add_argument("--length", type=float, default=0.1, help="arm length, m (default 0.1)")
    p.add_argument("--arm-mass", type=float, default=0.0, dest="arm_mass",
                   help="mass of the arm itself, kg (default 0)")
    p.add_argument("--vin", type=float, default=None,
                   help="supply voltage, V (default: the actuator's)")
    p.add_argument("--id", type=int, default=1, dest="servo_id", help="servo id (default 1)")
    p.add_argument("--protocol", type=int, choices=(1, 2), default=None,
                   help="Dynamixel protocol to answer (default: the actuator's first; MX also 1.0)")
    p.add_argument("--noise", type=float, default=0.0005,
                   help="encoder noise, rad standard deviation, before quantisation "
                        "(default 0.0005)")
    p.add_argument("--physics-dt", type=float, default=0.001, dest="physics_dt",
                   help="firmware and physics period, s (default 0.001)")
    p.add_argument("--seed", type=seed, default=0, help="noise seed (default 0)")
    p.add_argument("--link", default=None,
                   help="also make this symbolic link to the device (e.g. /tmp/ttyVIRTUAL)")
    add_extensions_argument(p)
    add_actuator_arguments(p)


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from frictionsim.hw.virtual_servo.device import make_device
    from frictionsim.hw.virtual_servo.joint import SimulatedJoint
    from frictionsim.hw.virtual_servo.pty_link import PtyLink
    from frictionsim.params import load_params

    params = load_params(args.params, args.extensions)
    motor = args.motor or params.actuator
    if motor != params.actuator:
        raise ConfigurationError(f"--motor {motor} but {args.params} describes a {params.actuator}")
    joint = SimulatedJoint(params, args.mass, args.length, args.arm_mass, vin=args.vin,
                           physics_dt=args.physics_dt, noise=args.noise, seed=args.seed)
    device = make_device(motor, joint, servo_id=args.servo_id, protocol=args.protocol)
    if args.link is not None and os.path.lexists(args.link) and not os.path.islink(args.link):
        raise ConfigurationError(f"--link {args.link} exists and is not a symbolic link; it is not replaced")
    stop = threading.Event()
    received: list[int] = []

    def stopping(signum, frame) -> None:
        received.append(signum)
        stop.set()

    previous = {sig: signal.signal(sig, stopping)  # also when started in the background
                for sig in (signal.SIGTERM, signal.SIGINT)}
    with PtyLink(args.link) as link:
        where = f"{link.path}" + (f" (link {args.link})" if args.link else "")
        print(f"virtual {motor} ({device.describe()}, id {args.servo_id}, {params.model}, "
              f"{args.mass:g} kg at {args.length:g} m) on {where}", flush=True)
        print(link.path, flush=True)
        link.serve(device, stop)
        print(f"virtual servo stopped after {link.packets} packets", flush=True)
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    if received:  # the link is closed: the signal now ends the command as every other's
        signal.raise_signal(received[0])
    return 0
