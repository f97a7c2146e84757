"""``frictionsim run vs-mujoco``: MuJoCo's own servo model, fitted by ``mujoco.sysid``, against
frictionsim's, on the same training and held-out logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.interrupts import kept_on_interrupt
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    actuator_name,
    add_actuator_arguments,
    add_output_argument,
    add_progress_argument,
    seed,
)
from frictionsim.limits import check_budget, check_count
from frictionsim.robot_files import builtin_robots

DESCRIPTION = (
    "Why not just use MuJoCo? MuJoCo's <dcmotor> configured as the servo's firmware (exact: "
    "its controller in torque space with the back-EMF compensation cancelled), with each of "
    "its stock frictions (the joint's frictionloss and damping; the dcmotor's LuGre) fitted "
    "by mujoco.sysid, against frictionsim's M1, M6 and M6 with the current limit fitted by "
    "identify, on the same training and held-out logs: the training and held-out MAE (each "
    "log rolled out whole in closed loop), the seconds of each fit and the ns per simulated "
    "step, in one table and one figure. Needs MuJoCo >= 3.12 with its sysid extra "
    "(pip install 'mujoco[sysid]'). With --robot: a robot's recordings instead of bench logs: "
    "mujoco.sysid fitting the MJCF's native per-joint model (armature, frictionloss, damping "
    "and the position actuator's gain per joint, and a delay of the goals) on robot "
    "identify's windows, against frictionsim's M1 and M6 and M6 exported to plain MuJoCo "
    "(the native refit), every model scored on the held-out recordings replayed whole, each "
    "tool's fit time and peak memory in its own process."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_actuator_arguments(p, actuator=True)
    p.add_argument("--logs", nargs="+", type=Path, metavar="LOG",
                   help="processed training logs, or folders of them (bench; required without "
                        "--robot)")
    p.add_argument("--robot", metavar="NAME|FILE", default=None,
                   help="compare on a robot's recordings instead: a built-in robot "
                        f"({', '.join(builtin_robots())}) or a robot file")
    p.add_argument("--mjcf", type=Path, default=None, metavar="PATH",
                   help="with --robot: the robot's MJCF (default: the robot file's)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="with --robot: the data folder (default: $FRICTIONSIM_DATA, else "
                        "./shared/data or ../shared/data)")
    p.add_argument("--recordings", nargs="+", type=Path, metavar="DIR",
                   help="with --robot: the training recordings (default: the data folder's "
                        "so101/recordings less the ten held out, docs/results.md's 25/10 split)")
    held = p.add_mutually_exclusive_group()
    held.add_argument("--validation", nargs="+", type=Path, metavar="LOG",
                      help="held-out processed logs (or folders); with --robot, held-out "
                           "recordings (default: the 25/10 split's ten)")
    held.add_argument("--cross-validate", choices=("kp",), dest="cross_validate",
                      help="kp: leave-one-gain-out over --logs: every model fitted once per gain "
                           "on the other gains' logs and validated on that gain's")
    p.add_argument("--budget", type=int, default=None,
                   help="loss evaluations of each frictionsim fit (default 3000; with --robot "
                        "robot identify's 800)")
    p.add_argument("--max-iters", type=int, default=None,
                   help="iterations of each mujoco.sysid fit (default 60; with --robot 30)")
    p.add_argument("--seed", type=seed, default=0, help="seed of frictionsim's fits (default 0)")
    p.add_argument("--out", type=Path, default=Path("vs-mujoco"),
                   help="where frictionsim's fitted files go, one folder per fold (default "
                        "./vs-mujoco); an earlier run there is replaced only with --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier run in --out")
    add_output_argument(p, "--json", JSON, 'write {FOLD: {MODEL: {"train_mae", '
                        '"validation_mae", "fit_seconds", "ns_per_step", ...}}} and the means here')
    add_output_argument(p, "--plot", FIGURE, "held-out and training MAE and fit time per model")
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    if args.robot is not None:
        return run_robot(args)
    import numpy as np

    from frictionsim.experiments.common.loading import load_logs, warn_motor_mismatch
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.identification.pipeline import prepare_out, split_logs
    from frictionsim.experiments.identification.vs_mujoco import compare_fold, plot_comparison

    for option in ("recordings", "mjcf", "data"):
        if getattr(args, option) is not None:
            raise ConfigurationError(f"--{option} applies with --robot; the bench compares --logs")
    if args.logs is None or (args.validation is None and args.cross_validate is None):
        raise ConfigurationError("the bench comparison needs --logs and --validation or "
                                 "--cross-validate kp (or --robot for a robot's recordings)")
    args.budget = 3000 if args.budget is None else args.budget
    args.max_iters = 60 if args.max_iters is None else args.max_iters
    actuator = actuator_name(args)
    if schema_law(actuator) != "voltage":
        raise ConfigurationError(f"{actuator}: vs-mujoco compares voltage servos (the dcmotor as their "
                                 "firmware); the current law has no friction of MuJoCo's to fit against")
    check_budget(args.budget)
    check_count("--max-iters", args.max_iters, 1, 100_000)
    _check_sysid()
    show = not args.no_progress
    logs = load_logs(args.logs, processed=True, show_progress=show)
    if args.validation:
        held = load_logs(args.validation, processed=True, show_progress=show)
        split_logs(logs, held)  # refuses a validation log that is a training one
        folds = {"validation": (logs, held)}
    else:
        gains = sorted({log.kp for log in logs})
        if len(gains) < 2:
            raise ConfigurationError(f"--cross-validate kp needs two gains at least; every log has kp "
                                     f"{gains[0]:g}")
        folds = {f"kp_{g:g}": ([lg for lg in logs if lg.kp != g], [lg for lg in logs if lg.kp == g])
                 for g in gains}
    warn_motor_mismatch(logs, actuator)
    for name in folds:
        folder = args.out / name
        if folder.is_dir() and any(folder.iterdir()) and not args.overwrite:
            raise ConfigurationError(f"--out {args.out}: {folder} holds an earlier run; pass --overwrite "
                                     "to replace it, or another --out")
        prepare_out(folder, actuator, overwrite=args.overwrite)
        prepare_out(folder / "m6_current_limit", actuator, overwrite=args.overwrite)
    section: dict[str, dict] = {}
    try:
        for name, (train, held) in folds.items():
            print(f"{name}: fit on {counted(len(train), 'log')}, hold out {len(held)}", flush=True)
            scored = compare_fold(train, held, actuator, args.out / name, args.budget,
                                  args.seed, args.max_iters, show)
            section[name] = {m: s.summary() for m, s in scored.items()}
    except KeyboardInterrupt:
        kept_on_interrupt("the folds done so far are in the table; frictionsim's fits in "
                          f"{args.out}")
        if not section:
            return 130
    models = list(next(iter(section.values())))
    mean = {m: {k: float(np.mean([section[f][m][k] for f in section]))
                for k in ("train_mae", "validation_mae", "fit_seconds", "ns_per_step")}
            for m in models}
    rows = [[m, f"{1e3 * mean[m]['train_mae']:.1f}", f"{1e3 * mean[m]['validation_mae']:.1f}",
             " / ".join(f"{1e3 * section[f][m]['validation_mae']:.1f}" for f in section),
             f"{mean[m]['fit_seconds']:.1f}", f"{mean[m]['ns_per_step']:.0f}"] for m in models]
    print("MAE in mrad, means over the folds (held-out per fold: " + ", ".join(section) + ")")
    print(table(["model", "training", "held out", "per fold", "fit (s)", "ns/step"], rows))
    if args.json:
        write_json(args.json, {"folds": section, "mean": mean})
    if args.plot:
        plot_comparison(section, mean, args.plot)
    return 130 if len(section) < len(folds) else 0


#: What ``--robot`` writes in --out: frictionsim's fits, the export, the summary.
OURS = ("frictionsim", "export", "vs_mujoco.json")


def _check_sysid() -> None:
    try:
        from mujoco import sysid
        if not hasattr(sysid, "optimize"):
            raise ImportError
    except ImportError:
        raise ConfigurationError("vs-mujoco needs MuJoCo's sysid toolbox: pip install "
                                 "'mujoco[sysid]>=3.12'") from None


def run_robot(args: argparse.Namespace) -> int:
    """``--robot``: the robot comparison (:mod:`frictionsim.experiments.robots.peer`)."""
    from frictionsim.experiments.commands.robot import (
        _check_apart,
        check_out_apart,
        load_robot,
        read_recordings,
        same_rate,
    )
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.common.staging import StagedFolder
    from frictionsim.experiments.robots.peer import MODELS, compare_robot
    from frictionsim.experiments.robots.physics_vs_learned import held_out_motions

    for option in ("logs", "actuator", "cross_validate"):
        if getattr(args, option, None) not in (None, []):
            raise ConfigurationError(f"--{option.replace('_', '-')} applies to the bench "
                                     "comparison; --robot compares on recordings")
    if args.actuator_file:
        raise ConfigurationError("--actuator-file applies to the bench comparison; a robot file "
                                 "names its servos' actuators")
    budget = 800 if args.budget is None else args.budget
    max_iters = 30 if args.max_iters is None else args.max_iters
    check_budget(budget)
    check_count("--max-iters", max_iters, 1, 100_000)
    _check_sysid()
    robot, mjcf = load_robot(args)
    show = not args.no_progress
    if args.recordings is None:
        if args.validation is not None:
            raise ConfigurationError("--validation with the default recordings: give "
                                     "--recordings too")
        from frictionsim.experiments.common.loading import shared_data

        folder = shared_data(args.data) / robot.name / "recordings"
        robot, everything = read_recordings([folder], show, robot)
        train, held = held_out_motions(everything, 10, 0)
    else:
        if args.validation is None:
            raise ConfigurationError("--recordings needs --validation: the held-out recordings "
                                     "every model is scored on")
        as_filed = robot
        robot, train = read_recordings(args.recordings, show, as_filed)
        held_robot, held = read_recordings(args.validation, show, as_filed)
        same_rate(robot, held_robot, "--validation")
        _check_apart(train, held)
    check_out_apart(args.out, train + held)
    # written beside --out and swapped in when done, the user's own files in it kept: the
    # earlier run stays intact until then
    staged = StagedFolder(args.out, args.overwrite, keep=lambda entry: entry.name not in OURS)
    print(f"{robot.name}: {len(train)} training recordings, {len(held)} held out; frictionsim "
          f"budget {budget}, mujoco.sysid {max_iters} iterations", flush=True)
    with staged as out:
        rows = compare_robot(robot, mjcf, train, held, out, budget, seed=args.seed,
                             max_iters=max_iters, progress=show)
        summary = {"robot": robot.name, "training": [r.name for r in train],
                   "held_out": [r.name for r in held], "budget": budget,
                   "max_iters": max_iters, "models": rows}
        write_json(out / "vs_mujoco.json", summary)
    labels = {"mujoco_sysid_native": "mujoco.sysid: native per joint + delay (plain MuJoCo)",
              "m1": "frictionsim M1 (fixed step)", "m6": "frictionsim M6 (fixed step)",
              "m6_export_native": "M6 exported, native refit (plain MuJoCo)",
              "mujoco_sysid_from_export": "mujoco.sysid from the export's values (plain MuJoCo)"}
    print(table(["model", "held out (mrad)", "training windows (mrad)", "fit (s)",
                 "peak memory (MiB)"],
                [[labels[m], f"{1e3 * rows[m]['validation_mae']:.2f}",
                  f"{1e3 * rows[m]['window_loss']:.2f}", f"{rows[m]['fit_seconds']:.0f}",
                  f"{rows[m]['peak_memory_mib']:.0f}"] for m in MODELS]))
    m6 = rows["m6"]["validation_mae"]
    for name in ("mujoco_sysid_native", "mujoco_sysid_from_export"):
        ratio = rows[name]["validation_mae"] / m6
        print(f"{labels[name]}: {ratio:.2f}x M6's held-out error"
              + ("" if ratio >= 1 else " (the native model is ahead)"))
    if args.json:
        write_json(args.json, summary)
    if args.plot:
        _plot_robot(rows, labels, args.plot)
    return 0


def _plot_robot(rows: dict, labels: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    models = list(rows)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 3.6), gridspec_kw={"width_ratios": [2, 1]})
    colours = ["tab:red" if "native" in m else "tab:blue" for m in models]
    held = [1e3 * rows[m]["validation_mae"] for m in models]
    ax.barh(range(len(models)), held, color=colours)
    for y, x in enumerate(held):
        ax.annotate(f"{x:.2f}", (x, y), va="center", fontsize=8)
    ax.set_yticks(range(len(models)), [labels[m] for m in models], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("held-out MAE (mrad), recordings replayed whole")
    ax.grid(alpha=0.3, axis="x")
    seconds = [rows[m]["fit_seconds"] for m in models]
    bx.barh(range(len(models)), seconds, color=colours)
    bx.set_yticks([])
    bx.invert_yaxis()
    bx.set_xlabel("fit (s)")
    bx.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    save_figure(fig, path)


def schema_law(actuator: str) -> str:
    from frictionsim import schema

    return schema.get_actuator(actuator).law
