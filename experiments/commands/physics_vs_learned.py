"""``frictionsim run physics-vs-learned``: M1, M6, a learned network and a hybrid on held-out
repetitions, gains and masses of the user's logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.interrupts import kept_on_interrupt
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.identification.physics_vs_learned import (
    DEFAULT_LEARNED,
    LEARNED,
    SPLITS,
)
from frictionsim.experiments.runner.arguments import (
    BENCH_ROLLOUT,
    FIGURE,
    JSON,
    ROBOT_ROLLOUT,
    add_actuator_arguments,
    add_extensions_argument,
    add_learning_arguments,
    add_other_motor_argument,
    add_output_argument,
    add_progress_argument,
    seed,
)
from frictionsim.limits import check_budget
from frictionsim.robot_files import builtin_robots

DESCRIPTION = (
    "Compare identified physical models (M1, M6) with a learned actuator network (an MLP on "
    "the error and velocity history, the gain and the enable flag, trained on torques from "
    "inverse dynamics through the bench) and a hybrid (M6 plus a learned residual of bounded "
    "authority) on held-out sets chosen from the logs' headers: repetitions of trained "
    "conditions, higher gains (trained on the lower ones), lower gains (trained on the higher "
    "ones), the heaviest mass (trained on the others); those the logs allow (--splits: some "
    "of them). --learned gru adds a sequence model (a GRU on the error, velocity, gain and "
    "enable; torch, bench logs only, rolled out in torch: no engine carries it). Each split is "
    "fitted and trained on its own training logs only; its files go to OUT/<split>/. "
    "With --robot and --recordings instead of --logs, the same on a robot's own recordings "
    "(robot identify's fits, inverse dynamics through the robot): the held-out set is motions "
    "(--validation, or --held-out of a seeded permutation), its files in OUT/motions/."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_actuator_arguments(p, actuator=True)
    add_other_motor_argument(p)
    p.add_argument("--logs", nargs="+", type=Path, metavar="LOG",
                   help="processed bench logs, or directories of them (with --actuator)")
    robot = p.add_argument_group("a robot's recordings instead of bench logs")
    robot.add_argument("--robot", metavar="NAME|FILE",
                       help=f"a built-in robot ({', '.join(builtin_robots())}) or a robot file "
                            "(docs/model.md §12)")
    robot.add_argument("--recordings", nargs="+", type=Path, metavar="DIR",
                       help="the robot's recording folders, or folders of them")
    held = robot.add_mutually_exclusive_group()
    held.add_argument("--validation", nargs="+", type=Path, metavar="DIR",
                      help="held-out recordings (default: --held-out of --recordings)")
    held.add_argument("--held-out", type=int, default=None, metavar="N",
                      help="hold out the first N of a permutation of the recordings seeded by "
                           "--seed (default: a third of them, at most 10)")
    robot.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                       help="the robot's MJCF (default: the robot file's, in the data folder)")
    robot.add_argument("--data", metavar="DIR", default=None,
                       help="the data folder the robot file's MJCF path is relative to")
    p.add_argument("--out", type=Path, default=Path("physics-vs-learned"),
                   help="where each split's fits and learned files go (OUT/<split>/; default "
                        "./physics-vs-learned); an earlier run there is replaced only with "
                        "--overwrite")
    p.add_argument("--budget", type=int, default=None,
                   help="loss evaluations per physical model and split (default 3000 on bench "
                        "logs, 800 on a robot)")
    p.add_argument("--splits", nargs="+", choices=SPLITS, default=None, metavar="SPLIT",
                   help="the held-out sets to make, of " + ", ".join(SPLITS) + " (bench logs; "
                        "default: every one the logs allow)")
    p.add_argument("--learned", nargs="+", choices=LEARNED, default=list(DEFAULT_LEARNED),
                   metavar="MODEL",
                   help="the learned models beside M1 and M6: net, hybrid, gru (a sequence "
                        "model, bench logs only, needs torch; trained through the rollout as "
                        "the network is, --rollout-epochs; default: net hybrid)")
    add_learning_arguments(p, "2000 per split on bench logs, 600 on a robot",
                           f"on bench logs {BENCH_ROLLOUT}; on a robot {ROBOT_ROLLOUT}")
    p.add_argument("--seed", type=seed, default=0,
                   help="random seed of the fits and the training (default 0)")
    add_extensions_argument(p)
    add_output_argument(p, "--json", JSON, 'write {SPLIT: {MODEL: {"train_mae", '
                        '"validation_mae"}}} here (rad)')
    add_output_argument(p, "--plot", FIGURE, "held-out MAE per split and model")
    add_progress_argument(p)


def _check(args: argparse.Namespace) -> None:
    """Bench or robot, not both; budgets in range (the learning settings into ``args.net``);
    scikit-learn at hand."""
    from frictionsim.experiments.runner.arguments import net_settings

    bench = args.logs is not None
    if bench == (args.robot is not None):
        raise ConfigurationError("give bench logs (--actuator, --logs) or a robot's recordings "
                                 "(--robot, --recordings)")
    if bench and (args.recordings or args.validation or args.held_out is not None):
        raise ConfigurationError("--recordings, --validation and --held-out are a robot's (--robot)")
    if not bench and not args.recordings:
        raise ConfigurationError("--robot needs --recordings")
    if not bench and args.splits:
        raise ConfigurationError("--splits are the bench's: a robot's held-out set is motions "
                                 "(--validation, --held-out)")
    if not bench and "gru" in args.learned:
        raise ConfigurationError("--learned gru trains through the bench's rollouts: on a "
                                 "robot, net and hybrid")
    if "gru" in args.learned:
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ConfigurationError("--learned gru needs torch: pip install "
                                     "'frictionsim[torch]'") from None
    if not bench and (args.actuator or args.actuator_file):
        raise ConfigurationError("--actuator and --actuator-file are the bench's: on a robot the "
                                 "robot file names each joint's servo")
    if args.budget is None:
        args.budget = 3000 if bench else 800
    check_budget(args.budget)
    args.net = net_settings(args, 2000 if bench else 600)
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ConfigurationError("the learned models need scikit-learn: pip install "
                                 "'frictionsim[learn]'") from None


def _prepare(out: Path, folders: dict[str, Path], overwrite: bool, prepare) -> None:
    """Each split's folder ready; an earlier run refused unless ``overwrite``."""
    for folder in folders.values():
        if folder.is_dir() and any(folder.iterdir()) and not overwrite:
            raise ConfigurationError(f"--out {out}: {folder} holds an earlier run; pass "
                                     "--overwrite to replace it, or another --out")
        prepare(folder)


def _robot_run(args: argparse.Namespace) -> tuple[dict, bool]:
    """The robot's table: {"motions": {MODEL: {train_mae, validation_mae, fit_seconds, …}}}
    (:func:`~frictionsim.experiments.robots.physics_vs_learned.compare_motions`)."""
    from frictionsim.experiments.commands.robot import (
        _check_apart,
        check_out_apart,
        load_robot,
        read_recordings,
        same_rate,
    )
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.robots.identify import STRIDE, WINDOW, RobotFitSettings
    from frictionsim.experiments.robots.physics_vs_learned import (
        SPLIT,
        compare_motions,
        held_out_motions,
    )
    from frictionsim.experiments.robots.report import prepare_robot_out

    if args.other_motor:
        raise ConfigurationError("--other-motor takes bench logs of another servo; a robot's "
                                 "recordings name no motor")
    robot, mjcf = load_robot(args)
    show = not args.no_progress
    as_filed = robot
    robot, recordings = read_recordings(args.recordings, show, as_filed)
    if args.validation:
        held_robot, held = read_recordings(args.validation, show, as_filed)
        same_rate(robot, held_robot, "--validation")
        train = recordings
        _check_apart(train, held)
    else:
        count = args.held_out if args.held_out is not None else min(10, len(recordings) // 3)
        train, held = held_out_motions(recordings, count, args.seed)
    check_out_apart(args.out, train + held)
    folder = args.out / SPLIT
    _prepare(args.out, {SPLIT: folder}, args.overwrite,
             lambda f: prepare_robot_out(f, robot.name, overwrite=args.overwrite))
    print(f"{SPLIT}: train on {counted(len(train), 'recording')}, hold out {len(held)} "
          f"({', '.join(r.name for r in held)})")
    # the windows the published comparison was measured on; the hybrid's search rolls them out
    settings = RobotFitSettings(("m1", "m6"), FitSettings(args.budget, args.seed),
                                tuple(args.extensions), window=WINDOW, stride=STRIDE,
                                progress=show,
                                learned=tuple(args.learned), net=args.net)
    result, interrupted = compare_motions(robot, mjcf, train, held, settings, folder)
    return {SPLIT: result}, interrupted


def _bench_run(args: argparse.Namespace) -> tuple[dict, bool]:
    """The bench's table: {SPLIT: {MODEL: {train_mae, validation_mae}}} for the splits the
    logs' headers allow."""
    from frictionsim.experiments.common.loading import check_motor_match, load_logs
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.physics_vs_learned import (
        PHYSICAL_CHAIN,
        compare_split,
        describe,
        held_out_splits,
    )
    from frictionsim.experiments.identification.pipeline import IdentifySettings, prepare_out
    from frictionsim.experiments.runner.arguments import actuator_name

    actuator = actuator_name(args)
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    check_motor_match(logs, actuator, f"--actuator {actuator}", args.other_motor)
    splits, why = held_out_splits(logs)
    if args.splits:
        refused = [f"{s} ({why[s]})" for s in args.splits if s in why]
        if refused:
            raise ConfigurationError("--splits: not possible with these logs: "
                                     + "; ".join(refused))
        splits = {name: pair for name, pair in splits.items() if name in args.splits}
        why = {}
    for name, reason in why.items():
        print(f"{name}: not possible with these logs ({reason})")
    if not splits:
        raise ConfigurationError("these logs allow no held-out split: they need repeated conditions, "
                                 "two gains or two masses")
    folders = {name: args.out / name for name in splits}
    _prepare(args.out, folders, args.overwrite,
             lambda f: prepare_out(f, actuator, overwrite=args.overwrite))
    settings = IdentifySettings(PHYSICAL_CHAIN, actuator, FitSettings(args.budget, args.seed),
                                progress=not args.no_progress,
                                extensions=tuple(args.extensions))
    section: dict[str, dict] = {}
    interrupted = False
    for name, (train, held) in splits.items():
        print(f"{name}: {describe(train, held)}")
        section[name], interrupted = compare_split(train, held, settings, folders[name],
                                                   args.net, tuple(args.learned))
        if interrupted:
            break
    return section, interrupted


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.identification.physics_vs_learned import (
        plot_splits,
        present_models,
    )

    _check(args)
    section, interrupted = _robot_run(args) if args.robot else _bench_run(args)
    models = present_models(section)
    rows = [[name] + [f"{1e3 * r[m]['validation_mae']:.1f} ({1e3 * r[m]['train_mae']:.1f})"
                      if m in r else "–" for m in models] for name, r in section.items()]
    print("held-out MAE in mrad (training MAE in parentheses)")
    print(table(["held-out set", *models], rows))
    _print_open_loop(section, table)
    if args.json:
        write_json(args.json, section)
    if args.plot:
        plot_splits(section, args.plot)
    if interrupted:
        return kept_on_interrupt(f"the fits so far are saved in {args.out}")
    return 0


def _print_open_loop(section: dict, table) -> None:
    """The learned models' open-loop torque error beside their closed-loop MAE, and every
    model's fit time: a network that predicts the held-out torques well and still lands far
    from the motion drifts in closed loop."""
    rows = [[name, m, f"{r[m]['validation_torque_mae']:.3f}",
             f"{r[m]['validation_torque_spread']:.3f}", f"{1e3 * r[m]['validation_mae']:.1f}"]
            for name, r in section.items() for m in LEARNED
            if "validation_torque_mae" in r.get(m, {})]
    if rows:
        print("learned models held out: open-loop torque MAE against the labels' spread (N·m), "
              "closed-loop MAE (mrad)")
        print(table(["held-out set", "model", "torque MAE", "label spread", "closed loop"], rows))
    models = list(dict.fromkeys(m for r in section.values() for m in r))
    if models:
        times = [[name] + [f"{r[m]['fit_seconds']:.0f}" if "fit_seconds" in r.get(m, {})
                           else "–" for m in models] for name, r in section.items()]
        print("fit time (s)")
        print(table(["held-out set", *models], times))
