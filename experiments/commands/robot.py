"""``frictionsim robot simulate``: a real robot's recordings replayed in simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    add_extensions_argument,
    add_output_argument,
    add_progress_argument,
)

DESCRIPTION = (
    "A robot described by a robot file (--robot so101, built in, or a TOML file; docs/model.md "
    "§12) and its recordings. 'robot simulate' replays each recording in closed loop from its "
    "goal positions and its first recorded state, with the servos of a parameter file, and "
    "reports each joint's mean absolute position error."
)
ENGINES = ("fixed_step", "mujoco", "event_driven")


def _robot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--robot", required=True, metavar="NAME|FILE",
                   help="a built-in robot (so101) or a robot file (TOML, docs/model.md §12)")
    p.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                   help="the robot's MJCF (default: the robot file's, in the data folder)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="the data folder the robot file's MJCF path is relative to (default: "
                        "$FRICTIONSIM_DATA, else ./shared/data or ../shared/data)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="robot_command", metavar="ACTION", required=True)
    s = sub.add_parser("simulate", help="replay recordings in closed loop; MAE per joint",
                       description=DESCRIPTION)
    _robot_arguments(s)
    s.add_argument("--params", required=True, type=Path,
                   help="a robot parameter file (robot identify) or a plain parameter file "
                        "(docs/model.md §7): every servo of its actuator gets it")
    s.add_argument("recordings", nargs="+", type=Path, metavar="RECORDING_DIR",
                   help="recording folders, or folders of them")
    s.add_argument("--engine", choices=ENGINES, default="fixed_step",
                   help="frictionsim's fixed step (default), MuJoCo's step with the servo "
                        "adapter, or the exact event-driven solver (slow)")
    s.add_argument("--scheme", choices=("semi_implicit", "reference"), default=None,
                   help="the fixed step's position update (default: the parameter file's; "
                        "MuJoCo's is semi_implicit)")
    add_extensions_argument(s)
    add_output_argument(s, "--json", JSON,
                        'write {"recordings": {NAME: {"joint_mae_rad": {JOINT: ...}, '
                        '"mean_mae_rad": ...}}, "mean_mae_rad": ..., "engine": ...}')
    add_output_argument(s, "--plot", FIGURE,
                        "measured, goal and simulated position per joint (a row per recording)")
    add_progress_argument(s)


def run(args: argparse.Namespace) -> int:
    return simulate(args)


def load_robot(args: argparse.Namespace):
    """The robot description, its MJCF path and the data folder, from the common options."""
    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.robot_files import get_robot

    robot = get_robot(args.robot)
    data = None
    if args.mjcf is None:
        data = shared_data(args.data)
    return robot, robot.mjcf_path(data, args.mjcf)


def read_recordings(paths, show_progress: bool) -> list:
    from frictionsim.experiments.common.progress import progress
    from frictionsim.robot_recordings import read_recording, recording_folders

    folders = recording_folders(paths)
    return [read_recording(f) for f in progress(folders, desc="reading recordings",
                                                 enabled=show_progress)]


def simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.common.progress import progress
    from frictionsim.experiments.robots.recorded import robot_spec, simulate_recording
    from frictionsim.robot_params import load_robot_params

    robot, mjcf = load_robot(args)
    params = load_robot_params(args.params, args.extensions)
    robot = params.apply(robot)
    servos = {a: p.with_scheme(args.scheme) for a, p in params.servos.items()}
    recordings = read_recordings(args.recordings, not args.no_progress)
    runs = []
    for rec in progress(recordings, desc=f"simulating ({args.engine})",
                        enabled=not args.no_progress):
        runs.append(simulate_recording(robot, robot_spec(robot, mjcf), servos, rec, args.engine))
    joints = runs[0].joints
    rows = [[r.name, *(f"{1e3 * r.joint_mae[j]:.2f}" for j in joints), f"{1e3 * r.mean_mae:.2f}",
             f"{r.seconds:.2f}"] for r in runs]
    mean = float(np.mean([r.mean_mae for r in runs]))
    per_joint = {j: float(np.mean([r.joint_mae[j] for r in runs])) for j in joints}
    rows.append(["mean", *(f"{1e3 * per_joint[j]:.2f}" for j in joints), f"{1e3 * mean:.2f}", ""])
    print(table(["recording", *(f"{j} (mrad)" for j in joints), "mean (mrad)", "seconds"], rows,
                "<" + ">" * (len(joints) + 2)))
    if args.json:
        write_json(args.json, {
            "recordings": {r.name: {"joint_mae_rad": r.joint_mae, "mean_mae_rad": r.mean_mae}
                           for r in runs},
            "mean_mae_rad": mean, "joint_mae_rad": per_joint, "engine": args.engine,
            "robot": robot.name, "params": str(args.params)})
    if args.plot:
        from frictionsim.experiments.robots.plots import recordings_figure

        recordings_figure(runs, args.plot, f"{robot.title}: {args.params.name}, {args.engine}")
    return 0
