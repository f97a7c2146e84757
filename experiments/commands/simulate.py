"""``frictionsim simulate``: roll logs out with one parameter file, MAE per log and a figure."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    add_actuator_arguments,
    add_extensions_argument,
    add_other_motor_argument,
    add_output_argument,
    add_progress_argument,
    add_scheme_argument,
    check_plot_span,
)

DESCRIPTION = (
    "Roll every processed log out with the fixed-step simulator (docs/model.md §4-5) and the given "
    "parameter file, print the position MAE of each, and optionally plot logged vs simulated "
    "position with the goal and the torque-off spans shaded. --engine mujoco simulates the "
    "bench in MuJoCo instead (a pendulum built from each log's header, the servo attached "
    "with frictionsim's adapter; needs the mujoco extra)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path, help="parameter file (docs/model.md §7)")
    p.add_argument("logs", nargs="+", type=Path,
                   help="processed logs, or directories of them")
    add_output_argument(p, "--plot", FIGURE, "figure of logged vs simulated position (png/pdf/svg); "
                        "with backlash, the simulated motor side of the gear's gap too")
    p.add_argument("--plot-span", nargs=2, type=float, metavar=("START", "END"),
                   help="with --plot: show these seconds of each log only (a reversal through the "
                        "gear's gap is a fraction of a second)")
    add_output_argument(p, "--json", JSON, "write {log: MAE rad} and the mean to this file")
    add_scheme_argument(p)
    add_extensions_argument(p)
    p.add_argument("--engine", choices=("fixed_step", "mujoco"), default="fixed_step",
                   help="frictionsim's fixed step (default), or MuJoCo with the servo adapter "
                        "(semi-implicit Euler: compare with --scheme semi_implicit)")
    p.add_argument("--friction", choices=("budget", "frictionloss"), default=None,
                   help="with --engine mujoco: frictionsim's exact budget (default) or the "
                        "reference project's frictionloss/damping method")
    add_actuator_arguments(p)
    add_other_motor_argument(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from frictionsim.experiments.common.loading import check_motor_match, load_logs
    from frictionsim.experiments.common.output import counted, table, write_json
    from frictionsim.learned_files import LearnedActuator, load_servo_model
    from frictionsim.solvers.engines import get_engine

    check_plot_span(args.plot_span, args.plot)
    params = load_servo_model(args.params, args.extensions).with_scheme(args.scheme)
    learned = isinstance(params, LearnedActuator)
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    check_motor_match(logs, params.actuator, str(args.params), args.other_motor)
    if args.friction is not None and args.engine != "mujoco":
        raise ConfigurationError(f"--friction {args.friction} applies to --engine mujoco only (the fixed "
                                 "step always clips by the friction budget)")
    friction = args.friction or "budget"
    name = args.engine if args.engine != "mujoco" or friction == "budget" \
        else "mujoco_frictionloss"
    chosen = get_engine(name, "bench")
    try:
        chosen.check_bench(params)
    except ConfigurationError as error:
        raise ConfigurationError(f"{args.params}: {error}") if learned else error from None
    chosen.check_scheme(args.scheme)
    rollouts = [chosen.bench(log, params) for log in logs]
    rows = [[r.log.name, r.log.trajectory, f"{r.log.kp:g}", f"{1e3 * r.mae:.2f}"] for r in rollouts]
    engine = "" if args.engine == "fixed_step" else f", MuJoCo ({friction})"
    print(f"{params.model} on {params.actuator} ({args.params}{engine})")
    print(table(["log", "trajectory", "kp", "MAE (mrad)"], rows, "<<>>"))
    maes = np.array([r.mae for r in rollouts])
    print(f"mean MAE {1e3 * maes.mean():.2f} mrad over {counted(len(maes), 'log')}")
    if args.json:
        write_json(args.json, {"params": str(args.params), "mean": float(maes.mean()),
                               "per_log": {r.log.name: r.mae for r in rollouts}})
    if args.plot:
        from frictionsim.experiments.common.plots import rollouts_figure

        rollouts_figure(rollouts, args.plot, f"{params.model} / {params.actuator}: {args.params.name}",
                        args.plot_span)
    return 0
