"""``frictionsim robot simulate``: a real robot's recordings replayed in simulation."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.interrupts import kept_on_interrupt
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.robots.fit_defaults import (
    MIN_WINDOWS,
    START_VELOCITIES,
    START_VELOCITY,
    STRIDE,
    WINDOW,
)
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    ROBOT_ROLLOUT,
    add_actuator_arguments,
    add_extensions_argument,
    add_fits_argument,
    add_learning_arguments,
    add_output_argument,
    add_progress_argument,
    check_plot_span,
    seed,
)
from frictionsim.limits import check_budget, check_count
from frictionsim.robot_files import builtin_robots
from frictionsim.solvers.engines import engine_names

DESCRIPTION = (
    "A robot described by a robot file (--robot so101, built in, or a TOML file; docs/model.md "
    "§12) and its recordings. 'robot simulate' replays each recording in closed loop from its "
    "goal positions and its first recorded state, with the servos of a parameter file, and "
    "reports each joint's mean absolute position error. 'robot identify' fits the servos' "
    "parameters (shared by the servos of one actuator type; a calibration offset per joint "
    "when asked) to the robot's own recordings, no test bench: the same fitter as "
    "'identify' on windows of the recordings restarted from the recorded state."
)
IDENTIFY = (
    "Identify a robot's servos from its own recordings. The servos of one actuator type share "
    "one parameter set; each joint adds a calibration offset (--per-joint offsets) or not "
    "(none, the default: on the SO-101 cross-validation by motion finds offsets do not help), "
    "or cross-validation by motion decides (--cross-validate motion). "
    "The loss is the mean absolute position error over windows of the training recordings "
    "(--window s, one in --stride), each restarted from its recorded state, minimised by "
    "CMA-ES with restarts as in 'identify'; richer models start from the simpler model they "
    "contain. Each model's best is written to OUT/<model>.json whenever it improves (Ctrl-C "
    "loses nothing), for 'robot simulate --params'; held-out recordings are replayed whole "
    "and OUT/report.md, report.json and a figure summarise them. Learned actuators (--model "
    "net hybrid) are trained after the physical models and written as OUT/net.json, "
    "OUT/hybrid.json, robot parameter files 'robot simulate --params' takes too."
)
EXPORT = (
    "Write the robot's MJCF with every servo joint's armature, damping, frictionloss and "
    "actuator set from a fit, for plain MuJoCo, MJX or mjlab without frictionsim: the Feetech "
    "position loop and the voltage law as a <position> actuator (kp, kv from the P and D "
    "terms, the torque limit as forcerange), back-EMF and viscous friction as damping, the "
    "Coulomb level as frictionloss, at the robot's control period with MuJoCo's Euler step. "
    "What has no attribute (dead band, target-speed limiter, Stribeck and load-dependent "
    "friction) is dropped and listed. With --validation, the exported file is replayed in "
    "plain MuJoCo on those recordings, beside frictionsim's own servos."
)
SYNTHESIZE = (
    "Make recordings of the robot with frictionsim's own simulation of its servos (the fixed "
    "step): every servo joint moves between set points drawn within the middle 60 % of its "
    "range and holds each, the robot starting at rest. The recordings are in the format robot "
    "identify and robot simulate read, with the servos they were made with beside them "
    "(truth.json): a fit of them should land on those servos, which tests the identification "
    "of a robot before any real recording exists."
)

#: The engines a recording replays on, from the registry (frictionsim.solvers.engines), and
#: those that replay many recordings at once, a world each.
ENGINES = engine_names("robot")
BATCHED = engine_names("robot", batched=True)
#: Loss evaluations of export-mjcf's native refit unless --budget says.
NATIVE_REFIT_BUDGET = 400


def _robot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--robot", required=True, metavar="NAME|FILE",
                   help=f"a built-in robot ({', '.join(builtin_robots())}) or a robot file "
                        "(TOML, docs/model.md §12)")
    add_actuator_arguments(p)
    p.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                   help="the robot's MJCF (default: the robot file's, beside it or in the "
                        "data folder)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="the data folder the robot file's MJCF path is relative to (default: "
                        "$FRICTIONSIM_DATA, else ./shared/data or ../shared/data)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="robot_command", metavar="ACTION", required=True)
    s = sub.add_parser("simulate", help="replay recordings in closed loop; MAE per joint",
                       description=DESCRIPTION)
    _robot_arguments(s)
    s.add_argument("--params", type=Path,
                   help="a robot parameter file (robot identify) or a plain parameter file "
                        "(docs/model.md §7) or learned actuator file (§13): every servo of "
                        "its actuator gets it (with --engine mjcf: none; default: the "
                        "robot file's published servos where it names them, as the Open Duck "
                        "Mini v2 and the SO-100 do)")
    s.add_argument("recordings", nargs="+", type=Path, metavar="RECORDING_DIR",
                   help="recording folders, or folders of them, or LeRobot dataset folders")
    s.add_argument("--engine", choices=ENGINES, default="fixed_step",
                   help="frictionsim's fixed step (default), MuJoCo's step with the servo "
                        "adapter, the exact event-driven solver (slow), mjcf: the baseline "
                        "without frictionsim, the MJCF as shipped in plain MuJoCo (its own "
                        "actuators, armature, damping and frictionloss); or batched, a world "
                        "per recording: mjlab (MuJoCo Warp, the servos' Warp kernel; extra "
                        "mjlab), mjx (MJX, the same kernel through JAX's FFI; extra jax)")
    s.add_argument("--device", default="cpu", metavar="cpu|cuda",
                   help="with a batched engine: the device it runs on (default cpu; cuda needs "
                        "a GPU; MJX runs on JAX's default device, which must be this one)")
    s.add_argument("--envs", type=int, default=None, metavar="N",
                   help="with --engine mjlab or mjx: worlds per batch (default: every "
                        "recording at once)")
    s.add_argument("--scheme", choices=("semi_implicit", "reference"), default=None,
                   help="the fixed step's position update (default: the parameter file's; "
                        "MuJoCo's is semi_implicit)")
    s.add_argument("--variants", type=int, default=None, metavar="N",
                   help="domain randomisation: also replay with N servo sets drawn within the "
                        "parameter file's ranges (identify --uncertainty), every servo drawn "
                        "on its own; reports each variant's MAE and their spread")
    s.add_argument("--seed", type=seed, default=None,
                   help="seed of the --variants draws (default 0)")
    add_extensions_argument(s)
    add_output_argument(s, "--json", JSON,
                        'write {"recordings": {NAME: {"joint_mae_rad": {JOINT: ...}, '
                        '"mean_mae_rad": ...}}, "mean_mae_rad": ..., "engine": ...} (and '
                        '"variants": [{"seed", "mean_mae_rad", "joint_mae_rad"}, …])')
    add_output_argument(s, "--plot", FIGURE,
                        "measured, goal and simulated position per joint (a row per recording; "
                        "with backlash, the simulated motor side of the gap too)")
    s.add_argument("--plot-span", nargs=2, type=float, metavar=("START", "END"),
                   help="with --plot: show these seconds of each recording only (a reversal "
                        "through the gear's gap is a fraction of a second)")
    _lerobot_arguments(s)
    add_progress_argument(s)

    i = sub.add_parser("identify", help="fit the servos to the robot's own recordings",
                       description=IDENTIFY)
    _robot_arguments(i)
    i.add_argument("--recordings", nargs="+", required=True, type=Path, metavar="DIR",
                   help="training recording folders, or folders of them, or LeRobot dataset "
                        "folders (--episodes)")
    held = i.add_mutually_exclusive_group()
    held.add_argument("--validation", nargs="+", type=Path, metavar="DIR",
                      help="held-out recording folders to replay after the fit")
    held.add_argument("--cross-validate", choices=("motion",), dest="cross_validate",
                      help="motion: split the recordings into --folds groups of motions; fit "
                           "on the others and replay each group, with and without per-joint "
                           "offsets; the final fit on every recording uses the better")
    i.add_argument("--folds", type=int, default=5,
                   help="groups of motions for --cross-validate motion (default 5)")
    i.add_argument("--model", nargs="+", required=True, metavar="MODEL",
                   help="friction models to fit: m1 … m6, or all; and learned actuators "
                        "trained after them on the same recordings: net (an MLP on the error "
                        "and velocity history, the gain and the enable flag, torque labels by "
                        "the robot's inverse dynamics) and hybrid (m6 plus a learned residual "
                        "torque of bounded authority; needs m6); they need scikit-learn "
                        "(frictionsim[learn])")
    add_learning_arguments(i, "600, on the training windows", ROBOT_ROLLOUT)
    i.add_argument("--per-joint", choices=("offsets", "none"), default="none",
                   help="a calibration offset per joint, or none (default); ignored with "
                        "--cross-validate motion, which decides")
    i.add_argument("--budget", type=int, default=None,
                   help="loss evaluations per model (default 800; the time grows with it: "
                        "M6 alone on the 35 SO-101 recordings takes 2 to 3 min on 2 "
                        "cores, docs/results.md)")
    i.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    add_fits_argument(i)
    i.add_argument("--uncertainty", type=int, nargs="?", const=20, default=None, metavar="N",
                   help="after the fit, N robot identifications (default 20) on the training "
                        "recordings drawn with replacement: per parameter, the range another "
                        "fit lands in 90 %% of the time, written into OUT/<model>.json "
                        "('ranges', which robot simulate --variants and every randomisation "
                        "draw from); each costs one identification")
    i.add_argument("--fix", nargs="+", default=[], metavar="NAME=VALUE",
                   help="hold servo parameters at given values")
    i.add_argument("--window", type=float, default=WINDOW, metavar="SECONDS",
                   help=f"length of the windows restarted from the recorded state (default "
                        f"{WINDOW:g})")
    i.add_argument("--stride", type=int, default=None, metavar="N",
                   help=f"fit on one window in N of the recordings (default {STRIDE}, or "
                        f"fewer so that about {MIN_WINDOWS} windows are kept; 1: all; cheaper "
                        "cuts lost 24-42 %% on motions the fit never saw, docs/results.md)")
    i.add_argument("--search-stride", type=int, default=None, metavar="N",
                   dest="search_stride",
                   help="run CMA-ES on one window in N of the recordings, and the polish, "
                        "the joint scales and every reported loss on the --stride windows "
                        "(default: the --stride windows throughout; one in 16 took the "
                        "SO-101's fit from 3 min 50 s to 2 min 27 s; 15 folds could not tell "
                        "it from the default held out, docs/results.md)")
    i.add_argument("--start-velocity", choices=tuple(START_VELOCITIES), default=START_VELOCITY,
                   dest="start_velocity",
                   help="where each window's starting velocity comes from: the servo's own "
                        "reading ('recorded') or the positions' central difference "
                        f"('difference', all a LeRobot dataset has); default {START_VELOCITY}")
    i.add_argument("--threads", type=int, default=2,
                   help="threads evaluating the windows (default 2)")
    i.add_argument("--exact-dynamics", action="store_true", dest="exact_dynamics",
                   help="ask MuJoCo for M(q) and the bias at every physics step of every "
                        "candidate (default: candidates reuse them along a reference "
                        "candidate's run, with a first-order correction, and each model's "
                        "final loss is the exact one; the fit reports what reuse moved)")
    i.add_argument("--no-polish", action="store_false", dest="polish",
                   help="leave each physical model where CMA-ES ends (default: polished by "
                        "Gauss-Newton steps on each window's and joint's error, 100-550 "
                        "evaluations, kept only if its exact loss is lower; docs/model.md §12)")
    i.add_argument("--joint-scales", action=argparse.BooleanOptionalAction, default=None,
                   dest="joint_scales",
                   help="after each physical model, fit a friction scale and an armature scale "
                        "per servo joint (the shared set's friction budget and armature times "
                        "each; Gauss-Newton steps, about 250 evaluations and 50 s on the "
                        "SO-101's 25 recordings), written to the parameter file's "
                        "joint_scales. On by default (better held out in every fold of a "
                        "cross-validation by motion, docs/results.md); off with --hold and "
                        "with a learned --model")
    i.add_argument("--hold", nargs="+", default=[], metavar="TYPE=FILE",
                   help="on a robot of several actuator types (the Koch v1.1's xl430 and "
                        "xl330): keep the servos of TYPE at its set in FILE (a robot parameter "
                        "file, such as an earlier fit, or a plain parameter file) and fit the one "
                        "type left; the saved files carry both")
    i.add_argument("--out", type=Path, default=Path("robot_identification"),
                   help="output directory (default ./robot_identification); a non-empty one "
                        "is refused unless --resume or --overwrite")
    again = i.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue from the fits in --out: each model also starts from its "
                            "saved parameters")
    again.add_argument("--overwrite", action="store_true", default=False,
                       help="replace the earlier robot identification in --out (and --json)")
    add_extensions_argument(i)
    add_output_argument(i, "--json", JSON, "write the summary (report.json) here too")
    _lerobot_arguments(i, validation=True)
    add_progress_argument(i)

    e = sub.add_parser("export-mjcf", help="the robot's MJCF with a fit's servos as plain MuJoCo "
                       "attributes", description=EXPORT)
    _robot_arguments(e)
    e.add_argument("--params", type=Path, required=True,
                   help="a robot parameter file (robot identify) or a plain parameter file")
    e.add_argument("--target", choices=("position", "dcmotor"), default="position",
                   help="position: a <position> actuator per servo, with joint armature, "
                        "damping and frictionloss (default; any MuJoCo, MJX, mjlab); dcmotor: "
                        "MuJoCo's own DC motor (MuJoCo >= 3.12), which also carries the "
                        "target-speed limiter")
    e.add_argument("--backlash-hinge", action="store_true",
                   help="a fit with backlash: give each servo joint a second hinge "
                        "<joint>_backlash free within the fitted gap (the Open Duck Mini's "
                        "expression of it); without it the gap is dropped and listed")
    e.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="the folder to write <robot>.xml and its meshes (assets/) into; a "
                        "non-empty one is refused unless --overwrite")
    e.add_argument("--overwrite", action="store_true",
                   help="replace an earlier export in --out")
    e.add_argument("--recordings", nargs="+", type=Path, metavar="DIR",
                   help="training recordings: a fit richer than M1 (whose Stribeck and "
                        "load-dependent friction have no MuJoCo attribute) is refitted on them "
                        "as the closest native model, an M1 started from its values; without "
                        "them its M1 terms are exported as they are")
    e.add_argument("--budget", type=int, default=None,
                   help=f"loss evaluations of that refit (default {NATIVE_REFIT_BUDGET})")
    e.add_argument("--seed", type=seed, default=None,
                   help="random seed of the refit (default 0)")
    e.add_argument("--validation", nargs="+", type=Path, metavar="DIR",
                   help="recordings to replay the exported model on in plain MuJoCo (the mjcf "
                        "engine), beside frictionsim's servos: how much fidelity the export keeps")
    add_output_argument(e, "--json", JSON, 'write {"joints": {NAME: {armature, damping, '
                        'frictionloss, kp, kv, force_limit}}, "dropped": [...], "validation": '
                        '{"export_mae_rad", "frictionsim_mae_rad"}} here')
    _lerobot_arguments(e, validation=True)
    add_progress_argument(e)


    y = sub.add_parser("synthesize", help="recordings of the robot made by frictionsim's own "
                       "simulation, to try robot identify on a known ground truth",
                       description=SYNTHESIZE)
    _robot_arguments(y)
    y.add_argument("--params", type=Path, default=None,
                   help="the servos to simulate (the ground truth): a robot parameter file or a "
                        "plain parameter file (default: the robot file's published servos, "
                        "where it names them)")
    y.add_argument("--motions", type=int, default=6, help="recordings to make (default 6)")
    y.add_argument("--seconds", type=float, default=20.0,
                   help="length of each recording (default 20 s)")
    y.add_argument("--seed", type=seed, default=0, help="seed of the set points (default 0)")
    y.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="the folder to write the recordings (motion_00, …) and the servos "
                        "they were made with (truth.json) into; a non-empty one is refused "
                        "unless --overwrite")
    y.add_argument("--overwrite", action="store_true",
                   help="replace the earlier recordings in --out")
    add_progress_argument(y)


def run(args: argparse.Namespace) -> int:
    if args.robot_command == "identify":
        return identify(args)
    if args.robot_command == "export-mjcf":
        return export_mjcf(args)
    if args.robot_command == "synthesize":
        return synthesize(args)
    return simulate(args)


def synthesize(args: argparse.Namespace) -> int:
    """``robot synthesize``: frictionsim's own simulation of the robot's servos, written as
    recordings, with the servos it used (truth.json, a robot parameter file)."""
    from frictionsim.atomic import write_json
    from frictionsim.experiments.common.staging import StagedFolder
    from frictionsim.experiments.robots.synthetic_motions import synthetic_recordings
    from frictionsim.robot_params import RobotParameters, load_robot_params
    from frictionsim.robot_recordings import write_recording
    from frictionsim.solvers.robot_servos import robot_spec

    check_count("--motions", args.motions, 1, 10_000)
    if not 0.1 <= args.seconds <= 3600:
        raise ConfigurationError(f"--seconds {args.seconds:g}: a recording of 0.1 s to an hour")
    robot, mjcf = load_robot(args)
    if args.params is None:
        args.params = default_params(robot, "give --params (the ground truth to simulate)")
    truth = load_robot_params(args.params)
    robot_with_offsets, sets = truth.for_robot(robot)
    with StagedFolder(args.out, args.overwrite) as stage:
        recordings = synthetic_recordings(robot_with_offsets, robot_spec(robot, mjcf), sets,
                                          args.motions, args.seconds, args.seed,
                                          not args.no_progress)
        for rec in recordings:
            write_recording(stage / rec.name, rec)
        saved = RobotParameters(robot.name, dict(truth.servos), dict(truth.joint_offsets),
                                {"synthesized": {"motions": args.motions, "seconds": args.seconds,
                                                 "seed": args.seed, "from": str(args.params)}},
                                joint_scales=dict(truth.joint_scales))
        write_json(stage / "truth.json", saved.to_dict())
    print(f"{args.motions} recordings of {args.seconds:g} s of {robot.title} in {args.out}, "
          f"made with {args.params} (truth.json); fit them with: frictionsim robot identify "
          f"--robot {args.robot} --recordings {args.out} --model …")
    return 0


def default_params(robot, refusal: str) -> Path:
    """The published parameter file the robot file names for its servos, said; without one,
    ConfigurationError: ``refusal`` and that the robot ships none."""
    from frictionsim.params import published_path

    if not robot.default_params:
        raise ConfigurationError(f"{refusal}: {robot.name} ships no default servos")
    print(f"no --params: {robot.name}'s default servos, the published "
          f"{robot.default_params} (frictionsim/published/README.md)", flush=True)
    return published_path(robot.default_params)


def load_robot(args: argparse.Namespace):
    """The robot description, its MJCF path and the data folder, from the common options."""
    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.robot_files import get_robot

    robot = get_robot(args.robot)
    data = None
    if args.mjcf is None and robot.needs_data:
        data = shared_data(args.data)
    elif args.data is not None:
        raise ConfigurationError("--data is the folder the robot's MJCF is read from; "
                                 + ("--mjcf gives it" if args.mjcf is not None else
                                    f"{robot.name} ships its own ({robot.mjcf_beside})"
                                    if robot.mjcf_beside is not None else
                                    f"{robot.name}'s is at {robot.mjcf}"))
    return robot, robot.mjcf_path(data, args.mjcf)


def _lerobot_arguments(p: argparse.ArgumentParser, validation: bool = False) -> None:
    p.add_argument("--episodes", metavar="LIST", default=None,
                   help="with a LeRobot dataset folder among the recordings: the episodes to use, "
                        "e.g. 0-24,30 (default: all)")
    if validation:
        p.add_argument("--validation-episodes", metavar="LIST", default=None,
                       help="the same for the LeRobot datasets among --validation")
    p.add_argument("--calibration", type=Path, default=None, metavar="FILE",
                   help="the arm's LeRobot calibration file (calibration/robots/<type>/<id>.json), "
                        "needed when the dataset's values are normalised (LeRobot's default)")
    p.add_argument("--units", choices=("normalised", "degrees"), default=None,
                   help="how the LeRobot dataset stores joint values (default: the robot file's "
                        "[lerobot] units)")


def read_recordings(paths, show_progress: bool, robot, args: argparse.Namespace | None = None,
                    validation: bool = False) -> tuple:
    """The robot at the recordings' bus rate and the recordings in ``paths``: recording
    folders (their row spacing checked against ``robot``'s bus period) and LeRobot dataset
    folders (``args``' episodes, calibration and units; the robot then runs at the dataset's
    fps, :meth:`~frictionsim.robot_files.RobotDescription.at_rate`)."""
    from frictionsim.experiments.common.progress import progress
    from frictionsim.lerobot_datasets import is_dataset, read_lerobot
    from frictionsim.robot_recordings import read_recording, recording_folders

    paths = list(paths)
    datasets = [p for p in paths if is_dataset(p)]
    episodes = getattr(args, "validation_episodes" if validation else "episodes", None)
    if not datasets:  # --episodes without a dataset is refused by check_lerobot_options
        folders = recording_folders(paths)
        return robot, [read_recording(f, robot.bus_period, robot.source)
                       for f in progress(folders, desc="reading recordings", enabled=show_progress)]
    out, rate = [], None
    for path in datasets:
        read = read_lerobot(path, robot, episodes=episodes,
                            calibration=getattr(args, "calibration", None),
                            units=getattr(args, "units", None))
        if rate is not None and rate.bus_period != read.robot.bus_period:
            raise ConfigurationError(f"{path}: recorded at {read.info.fps:g} fps, the other datasets "
                                     f"at {1 / rate.bus_period:g}: one robot runs at one bus rate")
        rate = read.robot
        out.extend(read.recordings)
    others = [p for p in paths if not is_dataset(p)]
    if others:
        raise ConfigurationError(f"{others[0]}: a recording folder among LeRobot datasets "
                                 f"({datasets[0]}); give one kind to a run (a dataset sets the "
                                 "robot's bus rate)")
    return rate, out


def check_lerobot_options(args: argparse.Namespace, recordings, validation=None) -> None:
    """--calibration and --units act on LeRobot datasets only: refused without one;
    --episodes without one among ``recordings``, --validation-episodes without one among
    ``validation`` (--validation) too."""
    from frictionsim.lerobot_datasets import is_dataset

    if getattr(args, "validation_episodes", None) is not None and not args.validation:
        raise ConfigurationError("--validation-episodes chooses episodes of the datasets given to "
                                 "--validation; there is no --validation")
    for option, paths in (("--episodes", recordings), ("--validation-episodes", validation)):
        if (getattr(args, option[2:].replace("-", "_"), None) is not None
                and not any(is_dataset(p) for p in paths or ())):
            raise ConfigurationError(
                f"{option}: none of {', '.join(map(str, paths))} is a LeRobot dataset "
                "(meta/info.json)" if paths else
                f"{option} chooses episodes of LeRobot datasets, and no recordings are given")
    if any(is_dataset(p) for p in (*(recordings or ()), *(validation or ()))):
        return
    for option, value in (("--calibration", args.calibration), ("--units", args.units)):
        if value is not None:
            raise ConfigurationError(f"{option} applies to LeRobot datasets (a folder with "
                                     "meta/info.json); none was given")


def same_rate(robot, other, what: str) -> None:
    """Training and held-out recordings must share the robot's bus rate."""
    if abs(robot.bus_period - other.bus_period) > 1e-12:
        raise ConfigurationError(f"{what}: recorded at {1 / other.bus_period:g} Hz, the training "
                                 f"recordings at {1 / robot.bus_period:g} Hz: one fit, one bus rate")


def simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.common.progress import progress
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.robot_params import load_robot_params
    from frictionsim.solvers.robot_servos import robot_spec

    check_plot_span(args.plot_span, args.plot)
    from frictionsim.solvers.engines import get_engine

    robot, mjcf = load_robot(args)
    chosen = get_engine(args.engine)
    plain = not chosen.servos
    if plain and args.scheme is not None:
        raise ConfigurationError("--scheme is the fixed step's position update; --engine mjcf "
                                 "steps the MJCF as shipped, with MuJoCo's integrator")
    if plain and args.params is not None:
        raise ConfigurationError("--engine mjcf simulates the MJCF as shipped, without frictionsim's "
                                 "servos: it takes no --params")
    if plain and args.extensions:
        raise ConfigurationError(f"--with {' '.join(args.extensions)} switches on terms of "
                                 "frictionsim's servos; --engine mjcf simulates the MJCF as "
                                 "shipped, without them")
    if args.seed is not None and args.variants is None:
        raise ConfigurationError("--seed seeds the --variants draws: without --variants it "
                                 "does nothing")
    if args.seed is None:
        args.seed = 0
    if not plain:
        chosen.check_scheme(args.scheme)
    if not plain and args.params is None:
        args.params = default_params(robot, f"--engine {args.engine} needs --params (a robot "
                                            "parameter file or a plain parameter file)")
    servos = {}
    if not plain:
        robot, sets = load_robot_params(args.params, args.extensions).for_robot(robot)
        servos = {a: p.with_scheme(args.scheme) for a, p in sets.items()}
    batched = chosen.batched
    if not batched and (args.envs is not None or args.device != "cpu"):
        raise ConfigurationError(f"--envs and --device apply to the batched engines "
                                 f"({', '.join(BATCHED)}), not to {args.engine}")
    if args.envs is not None:
        check_count("--envs", args.envs, 1, 100_000)
    if batched:  # the device before the recordings are read
        chosen.check(device=args.device)
    if args.variants is not None:
        _check_variants(args, servos)
    check_lerobot_options(args, args.recordings)
    robot, recordings = read_recordings(args.recordings, not args.no_progress, robot, args)
    if batched:
        from frictionsim.experiments.robots.recorded import replay_batched

        print(f"{counted(len(recordings), 'recording')} as {args.envs or len(recordings)} worlds at a "
              f"time on {args.engine} ({args.device})", flush=True)
        runs = replay_batched(robot, robot_spec(robot, mjcf), servos, recordings, args.engine,
                              args.device, args.envs, args.scheme)
    else:
        replay = Replay(robot, robot_spec(robot, mjcf, plain), servos, args.engine)
        runs = [replay.run(rec) for rec in progress(recordings,
                                                    desc=f"simulating ({args.engine})",
                                                    enabled=not args.no_progress)]
    shortest = min(r.timestep for r in runs)
    if shortest < robot.control_period:
        print(f"note: physics step {1e3 * shortest:g} ms, not the control period's "
              f"{1e3 * robot.control_period:g} ms: the servos' damping kt²/R over the lightest "
              "joint's inertia needs it for a stable step (docs/model.md §12)")
    joints = runs[0].joints
    rows = [[r.name, *(f"{1e3 * r.joint_mae[j]:.2f}" for j in joints), f"{1e3 * r.mean_mae:.2f}",
             f"{r.seconds:.2f}"] for r in runs]
    mean = float(np.mean([r.mean_mae for r in runs]))
    per_joint = {j: float(np.mean([r.joint_mae[j] for r in runs])) for j in joints}
    rows.append(["mean", *(f"{1e3 * per_joint[j]:.2f}" for j in joints), f"{1e3 * mean:.2f}", ""])
    print(table(["recording", *(f"{j} (mrad)" for j in joints), "mean (mrad)", "seconds"], rows,
                "<" + ">" * (len(joints) + 2)))
    variants = _variants(args, robot, mjcf, servos, recordings, joints) \
        if args.variants is not None else []
    if args.json:
        write_json(args.json, {
            "recordings": {r.name: {"joint_mae_rad": r.joint_mae, "mean_mae_rad": r.mean_mae}
                           for r in runs},
            "mean_mae_rad": mean, "joint_mae_rad": per_joint, "engine": args.engine,
            "robot": robot.name, "params": None if plain else str(args.params),
            **({"variants": variants} if variants else {})})
    if args.plot:
        from frictionsim.experiments.robots.plots import recordings_figure

        label = "the MJCF as shipped" if plain else args.params.name
        recordings_figure(runs, args.plot, f"{robot.title}: {label}, {args.engine}",
                          args.plot_span)
    return 0


def _check_variants(args: argparse.Namespace, servos: dict) -> None:
    """``--variants``, checked before any replay: a count, an engine with servos, and a
    parameter file with ranges to draw within."""
    from frictionsim.params import ParameterSet

    check_count("--variants", args.variants, 1, 10_000)
    from frictionsim.solvers.engines import get_engine

    if not get_engine(args.engine).servos:
        raise ConfigurationError(f"--variants draws frictionsim's servos; --engine {args.engine} "
                                 "has none")
    if args.engine in BATCHED:
        raise ConfigurationError(f"--variants replays on the one-recording engines; --engine "
                                 f"{args.engine} randomises through its Randomisation instead "
                                 "(docs/robots.md)")
    if not any(isinstance(p, ParameterSet) and p.ranges for p in servos.values()):
        raise ConfigurationError(f"--variants: {args.params} has no ranges to draw servos within "
                                 "(robot identify --uncertainty N, or identify --uncertainty N, "
                                 "writes them)")


def _variants(args: argparse.Namespace, robot, mjcf, servos: dict, recordings: list,
              joints: tuple) -> list[dict]:
    """Each recording replayed with ``args.variants`` servo sets drawn within the parameter
    files' ranges; their MAE printed and returned (JSON rows)."""
    import numpy as np

    from frictionsim.experiments.common.output import table
    from frictionsim.experiments.common.progress import progress
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.solvers.robot_servos import robot_spec

    seeds = [int(x) for x in np.random.default_rng(args.seed).integers(2**63, size=args.variants)]
    spec = robot_spec(robot, mjcf)
    rows = []
    for seed_i in progress(seeds, desc="variants", enabled=not args.no_progress):
        replay = Replay(robot, spec, servos, args.engine, variant=int(seed_i))
        runs = [replay.run(rec) for rec in recordings]
        per_joint = {j: float(np.mean([r.joint_mae[j] for r in runs])) for j in joints}
        rows.append({"seed": int(seed_i), "mean_mae_rad": float(np.mean(list(per_joint.values()))),
                     "joint_mae_rad": per_joint})
    means = np.array([r["mean_mae_rad"] for r in rows])
    shown = [[f"variant {i + 1}", *(f"{1e3 * r['joint_mae_rad'][j]:.2f}" for j in joints),
              f"{1e3 * r['mean_mae_rad']:.2f}"] for i, r in enumerate(rows)]
    print(f"{args.variants} servo sets drawn within the ranges (seed {args.seed}): mean MAE "
          f"{1e3 * means.mean():.2f} mrad, from {1e3 * means.min():.2f} to {1e3 * means.max():.2f}")
    print(table(["variant", *(f"{j} (mrad)" for j in joints), "mean (mrad)"], shown,
                "<" + ">" * (len(joints) + 1)))
    return rows


def export_mjcf(args: argparse.Namespace) -> int:
    import numpy as np

    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.params import ParameterSet
    from frictionsim.robot_params import load_robot_params
    from frictionsim.solvers.mjcf_export import check_native_values
    from frictionsim.solvers.robot_export import export_robot, exported_physics, write_export

    robot, mjcf = load_robot(args)
    fit = load_robot_params(args.params)
    for name, servo in fit.servos.items():  # before a refit of minutes, not after it
        check_native_values(exported_physics(servo, args.params), f"{args.params}: servos.{name}")
    gaps = None
    if args.backlash_hinge:
        gaps = {name: p.values.get("backlash", 0.0) for name, p in fit.servos.items()
                if isinstance(p, ParameterSet)}
        if not any(g > 0.0 for g in gaps.values()):
            raise ConfigurationError(f"--backlash-hinge: {args.params} has no backlash (robot "
                                     "identify --with backlash fits it)")
    out = args.out
    if out.exists() and not out.is_dir():
        raise ConfigurationError(f"--out {out} is a file: the export is a folder (<robot>.xml "
                                 "and its meshes); give a folder's path")
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise ConfigurationError(f"--out {out} is not an empty folder: pass --overwrite to "
                                 "replace an earlier export, or another --out")
    from frictionsim.experiments.common.staging import StagedFolder
    richer = [s for s in fit.servos.values() if getattr(s, "model", "m1") != "m1"]
    for option, given in (("--budget", args.budget is not None), ("--seed", args.seed is not None)):
        if given and not args.recordings:
            raise ConfigurationError(f"{option} acts on the native refit on --recordings, and "
                                     "none are given")
    if args.recordings and not richer:
        raise ConfigurationError(f"--recordings: {args.params} is an M1 fit, which MuJoCo "
                                 "carries as it is; there is nothing to refit on them")
    args.budget = NATIVE_REFIT_BUDGET if args.budget is None else args.budget
    args.seed = 0 if args.seed is None else args.seed
    check_budget(args.budget)
    show = not args.no_progress
    check_lerobot_options(args, args.recordings, args.validation)
    held_robot, validation = read_recordings(args.validation, show, robot, args, True) \
        if args.validation else (robot, [])
    robot, train = read_recordings(args.recordings, show, robot, args) if args.recordings \
        else (held_robot, [])
    same_rate(robot, held_robot, "--validation")
    _check_apart(train, validation)
    check_out_apart(out, validation + train)
    exported = fit
    if richer and train:
        from frictionsim.experiments.robots.native_refit import native_refit

        print(f"{richer[0].model} has no MuJoCo attribute for its Stribeck and load-dependent "
              f"friction: refitting the closest native model (M1) on {counted(len(train), 'recording')}, "
              f"budget {args.budget}", flush=True)
        exported, loss = native_refit(robot, mjcf, fit, train, args.budget, args.seed,
                                      progress=show)
        print(f"native M1 refit: window loss {1e3 * loss:.2f} mrad")
    elif richer:
        print(f"note: {richer[0].model}'s M1 terms are exported as they are; give --recordings "
              "to refit the closest native model on them")
    export = export_robot(robot, mjcf, exported, args.target, gaps)
    if exported is not fit:
        export.dropped.insert(0, f"{richer[0].model}'s Stribeck and load-dependent friction: the "
                                 "closest native model, an M1 refitted on "
                                 f"{counted(len(train), 'recording')}, stands for it")
    header = (f"frictionsim robot export-mjcf: {robot.title}, servos of {args.params.name} as "
              f"{args.target} actuators at the control period "
              f"{1e3 * robot.control_period:g} ms.\nNot carried: " +
              ("; ".join(export.dropped) or "nothing") + ".")
    # written beside --out and swapped in whole: an earlier export stays intact until then
    with StagedFolder(out, args.overwrite) as stage:
        write_export(export, mjcf, stage, robot.name, header)
    path = out / f"{robot.name}.xml"
    print(f"wrote {path}")
    print(table(["joint", "armature (kg·m²)", "damping (N·m·s/rad)", "frictionloss (N·m)",
                 "kp (N·m/rad)", "kv (N·m·s/rad)", "force limit (N·m)"],
                [[j.joint, f"{j.armature:.4g}", f"{j.damping:.4g}", f"{j.frictionloss:.4g}",
                  f"{j.kp:.4g}", f"{j.kv:.4g}", f"{j.force_limit:.4g}"] for j in export.joints]))
    for line in export.dropped:
        print(f"not carried: {line}")
    summary = {"mjcf": str(path), "target": args.target, "refitted": exported is not fit,
               "joints": {j.joint: {k: v for k, v in vars(j).items() if k != "joint"}
                          for j in export.joints}, "dropped": export.dropped}
    if validation:
        from frictionsim.solvers.robot_servos import robot_spec

        # both with the fit's joint offsets (the recorded↔model angles), the servos' own
        # replay with the fit itself, not the export
        applied, sets = fit.for_robot(robot)
        as_exported = exported.for_robot(robot)[0]
        native = Replay(as_exported, robot_spec(as_exported, path, plain=True), {}, "mjcf")
        ours = Replay(applied, robot_spec(applied, mjcf), sets, "fixed_step")
        rows, both = [], {"export": [], "frictionsim": []}
        for rec in validation:
            a, b = native.run(rec), ours.run(rec)
            both["export"].append(a.mean_mae)
            both["frictionsim"].append(b.mean_mae)
            rows.append([rec.name, f"{1e3 * a.mean_mae:.2f}", f"{1e3 * b.mean_mae:.2f}"])
        means = {k: float(np.mean(v)) for k, v in both.items()}
        rows.append(["mean", f"{1e3 * means['export']:.2f}", f"{1e3 * means['frictionsim']:.2f}"])
        print(table(["recording", "exported MJCF in MuJoCo (mrad)", "frictionsim's servos (mrad)"],
                    rows))
        summary["validation"] = {"export_mae_rad": means["export"],
                                 "frictionsim_mae_rad": means["frictionsim"],
                                 "recordings": [r.name for r in validation]}
    if args.json:
        write_json(args.json, summary)
    return 0


def _check_apart(train: list, held: list) -> None:
    """A held-out recording must not be a training one (same folder or same content)."""
    import numpy as np

    for h in held:
        for t in train:
            same_path = h.path is not None and t.path is not None \
                and h.path.resolve() == t.path.resolve()
            if same_path or (len(h.t) == len(t.t) and np.array_equal(h.position, t.position)):
                raise ConfigurationError(f"--validation: {h.name} is the training recording {t.name}; a "
                                         "held-out error must come from motions the fit has not seen")


def check_out_apart(out: Path, recordings: list) -> None:
    """``--out`` must not hold a recording the command reads: its outputs would sit among the
    data, and ``--overwrite`` would be clearing a folder of recordings."""
    folder = out.resolve()
    for rec in recordings:
        if rec.path is not None and (rec.path.resolve() == folder
                                     or folder in rec.path.resolve().parents):
            raise ConfigurationError(f"--out {out} holds the recording {rec.name} this command "
                                     "reads; write the results to a folder of their own")


def _robot_uncertainty(args: argparse.Namespace, robot, mjcf, train: list, settings,
                       fits: dict) -> bool:
    """The bootstrap's ranges (:mod:`~frictionsim.experiments.robots.uncertainty`) written
    into each physical model's robot parameter file; whether Ctrl-C cut it short."""

    from frictionsim.atomic import write_json
    from frictionsim.experiments.identification.uncertainty import interrupted_bootstrap
    from frictionsim.experiments.robots.identify import RobotModelFit, actuator_of
    from frictionsim.experiments.robots.uncertainty import robot_bootstrap
    from frictionsim.robot_params import load_robot_params

    physical = {m: f for m, f in fits.items() if isinstance(f, RobotModelFit)}
    fitted = {m: f.result.params.params for m, f in physical.items()}
    print(f"uncertainty: {args.uncertainty} robot identifications of {' '.join(fitted)} on "
          f"{counted(len(train), 'recording')} drawn with replacement", flush=True)
    result = robot_bootstrap(robot, mjcf, train, settings, fitted, args.uncertainty)
    actuator = actuator_of(robot)
    for model, ranges in result.ranges.items():
        saved = load_robot_params(physical[model].path)
        saved.servos[actuator] = saved.servos[actuator].with_ranges(ranges)
        saved.fit["uncertainty"] = {**{k: v for k, v in result.summary().items()
                                       if k != "ranges"}, "method": "bootstrap over recordings"}
        write_json(physical[model].path, saved.to_dict())
        wide = sorted(ranges, key=lambda k: -(ranges[k][1] - ranges[k][0])
                      / max(abs(fitted[model].values[k]), 1e-12))[:3]
        print(f"{model}: ranges of {len(ranges)} parameters from "
              f"{len(result.replicates[model])} replicates ({result.seconds:.0f} s); widest "
              "relative to the fit: " + ", ".join(
                  f"{k} [{ranges[k][0]:.4g}, {ranges[k][1]:.4g}]" for k in wide))
    if result.interrupted:
        kept_on_interrupt(interrupted_bootstrap(result, physical))
    return result.interrupted


def _held_sets(pairs: list[str], robot) -> dict:
    """``--hold TYPE=FILE …`` → {actuator: ParameterSet}: each TYPE a servo type of the
    robot, its set read from FILE (a robot parameter file or a plain one)."""
    from frictionsim.learned_files import LearnedActuator
    from frictionsim.robot_params import load_robot_params

    out = {}
    types = sorted({j.actuator for j in robot.servo_joints})
    for pair in pairs:
        kind, sep, path = pair.partition("=")
        if not sep or not kind or not path:
            raise ConfigurationError(f"--hold {pair}: expected TYPE=FILE (e.g. xl430=fit/m1.json)")
        if kind not in types:
            raise ConfigurationError(f"--hold {pair}: robot {robot.name} has no {kind} servo "
                                     f"(its types: {', '.join(types)})")
        if kind in out:
            raise ConfigurationError(f"--hold {pair}: {kind} is held twice")
        sets = load_robot_params(path).servos
        if kind not in sets:
            raise ConfigurationError(f"--hold {pair}: {path} has no {kind} set (it has "
                                     f"{', '.join(sets) or 'none'})")
        if isinstance(sets[kind], LearnedActuator):
            raise ConfigurationError(f"--hold {pair}: a learned actuator; hold a physical set")
        out[kind] = sets[kind]
    return out


def identify(args: argparse.Namespace) -> int:
    import sys

    from frictionsim import schema
    from frictionsim.experiments.commands.identify import parse_fixed, parse_models
    from frictionsim.experiments.common.output import write_json
    from frictionsim.experiments.common.staging import StagedFolder
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.pipeline import note_kept_fits
    from frictionsim.experiments.identification.starts import check_fixed
    from frictionsim.experiments.robots.identify import (
        RobotFitSettings,
        actuator_of,
    )
    from frictionsim.experiments.robots.report import OUTPUT_FILES as ROBOT_OUTPUT_FILES
    from frictionsim.experiments.robots.report import not_ours, prepare_robot_out
    from frictionsim.experiments.runner.arguments import (
        check_fits,
        check_learning_use,
        check_physical_options,
        net_settings,
        physical_budget,
    )

    robot, mjcf = load_robot(args)
    held = _held_sets(args.hold, robot)
    actuator = actuator_of(robot, held)
    models, learned = parse_models(args.model)
    check_learning_use(args, learned)
    for option, given in (("--model net/hybrid", learned), ("--uncertainty", args.uncertainty),
                          ("--cross-validate", args.cross_validate)):
        if held and given:
            raise ConfigurationError(f"--hold with {option}: not supported yet; fit the robot's "
                                     "types in turn without it")
    if learned and args.cross_validate:
        raise ConfigurationError("--cross-validate motion decides the per-joint terms of the physical "
                                 "models; train learned actuators in the final fit (without it) or "
                                 "compare them with 'frictionsim run physics-vs-learned --robot'")
    check_physical_options(models, (("--no-polish", not args.polish),
                                    ("--search-stride", args.search_stride is not None),
                                    ("--joint-scales", args.joint_scales is True),
                                    ("--no-joint-scales", args.joint_scales is False),
                                    ("--uncertainty", args.uncertainty is not None),
                                    # a learned actuator's runs never reuse the dynamics
                                    ("--exact-dynamics", args.exact_dynamics)))
    for option, given, why in (("--hold", held, "the scales would move the held servos too"),
                               ("--model net/hybrid", learned,
                                "a learned actuator is trained over the shared set")):
        if given and args.joint_scales:
            raise ConfigurationError(f"--joint-scales with {option}: not supported yet ({why}); "
                                     "fit the scales in a run without it")
    joint_scales = bool(models) and not held and not learned and args.joint_scales is not False
    learning = net_settings(args, 600)
    extensions = schema.check_extensions(args.extensions)
    fixed = parse_fixed(args.fix)
    if "q_offset" in fixed:
        raise ConfigurationError("--fix q_offset: not fitted on a robot (held at 0: the goals are "
                                 "joint angles; --per-joint offsets fits the joints' calibration)")
    check_fixed(fixed, models, actuator, extensions)
    args.budget = physical_budget(args.budget, models, 800)
    check_fits(args.fits, models)
    if not 0.1 <= args.window <= 600:
        raise ConfigurationError(f"--window must be 0.1 to 600 s, got {args.window:g}")
    for option, stride in (("--stride", args.stride), ("--search-stride", args.search_stride)):
        if stride is not None and not 1 <= stride <= 1000:
            raise ConfigurationError(f"{option} must be 1 to 1000, got {stride}")
    if args.folds != 5 and not args.cross_validate:
        raise ConfigurationError("--folds applies to --cross-validate motion only")
    if not 1 <= args.threads <= 256:
        raise ConfigurationError(f"--threads must be 1 to 256, got {args.threads}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cores and args.threads > cores:  # accepted: the fit is the same, only no faster
        print(f"warning: --threads {args.threads} on {counted(cores, 'core')} this process may "
              f"use: the threads beyond {cores} share them (the same fit, no faster)",
              file=sys.stderr)
    if args.uncertainty is not None:
        check_count("--uncertainty", args.uncertainty, 2, 10_000, "bootstrap identifications")
    show = not args.no_progress
    check_lerobot_options(args, args.recordings, args.validation)
    as_filed = robot  # a dataset's rate replaces the file's bus period; held-out folders keep it
    robot, train = read_recordings(args.recordings, show, as_filed, args)
    if args.uncertainty is not None and len(train) < 2:
        raise ConfigurationError("--uncertainty resamples the training recordings; one recording "
                                 "gives every bootstrap replicate the same data (give two or more)")
    held_robot, validation = read_recordings(args.validation, show, as_filed, args, True) \
        if args.validation else (robot, [])
    same_rate(robot, held_robot, "--validation")
    _check_apart(train, validation)
    check_out_apart(args.out, train + validation)
    earlier = prepare_robot_out(args.out, robot.name, args.resume, args.overwrite, extensions)
    if args.resume:
        note_kept_fits(args.out, ROBOT_OUTPUT_FILES, list(models) + list(learned))
    settings = RobotFitSettings(tuple(models), FitSettings(args.budget, args.seed, args.fits), extensions,
                                fixed, args.per_joint, args.window, args.stride, args.threads,
                                show, tuple(learned), learning,
                                not args.exact_dynamics, joint_scales,
                                held, args.polish, args.start_velocity,
                                args.search_stride).resolved(robot, train)
    kept = "".join(f"; {a} held at {p.source}" for a, p in held.items())
    print(f"{robot.name}: {len(robot.servo_joints)} servos ({actuator}{kept}); models "
          f"{' '.join(models + learned)}"
          + (f"; budget {args.budget} evaluations each" if models else "")
          + (f"; with {' '.join(extensions)}" if extensions else ""))
    # written beside --out and swapped in when done: the earlier result is intact until then
    staged = StagedFolder(args.out, overwrite=True, carry=args.resume, keep=not_ours)
    with staged as out:
        summary, interrupted, stage = _robot_identify_into(
            out, args, robot, mjcf, train, validation, settings, earlier)
        staged.interrupted = interrupted
    if stage == "cross-validation":
        return kept_on_interrupt("each fold's best so far is saved in "
                                 f"{staged.result / 'cross_validation'}")
    print((staged.result / "report.md").read_text())
    if args.json:
        write_json(args.json, summary)
    if interrupted:
        return kept_on_interrupt(f"the best parameters so far are saved in {staged.result}")
    return 130 if stage == "uncertainty" else 0


def _robot_identify_into(out, args, robot, mjcf, train, validation, settings, earlier):
    """The robot identification written into ``out`` (the staged folder): (the summary,
    whether Ctrl-C ended the fit, and where the run ended: "cross-validation" when it was
    cut short there, "uncertainty" when the bootstrap was, else "fit")."""
    import dataclasses

    from frictionsim.experiments.robots.identify import fit_robot
    from frictionsim.experiments.robots.report import write_robot_report

    section = None
    if args.cross_validate:
        from frictionsim.experiments.robots.cross_validation import (
            cross_validate_motions,
        )

        section, interrupted = cross_validate_motions(robot, mjcf, train, settings, out,
                                                      args.folds, args.resume, args.overwrite)
        if interrupted:
            return None, True, "cross-validation"
        settings = dataclasses.replace(settings, per_joint=section["chosen"])
        print(f"cross-validation chose per joint: {section['chosen']}; fitting on all "
              f"{counted(len(train), 'recording')}")
    fits, interrupted, cost = fit_robot(robot, mjcf, train, validation, settings, out, earlier)
    cut_short = False
    if args.uncertainty is not None and not interrupted:
        cut_short = _robot_uncertainty(args, robot, mjcf, train, settings, fits)
    joints = tuple(j.name for j in robot.servo_joints)
    summary = write_robot_report(out, robot.name, fits, settings, train, validation, cost,
                                 joints, section, interrupted)
    return summary, interrupted, "uncertainty" if cut_short else "fit"
