"""``frictionsim run arm2r``: the 2R arms of docs/model.md §10 on every engine."""

from __future__ import annotations

import argparse

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import FIGURE, JSON, add_output_argument, add_progress_argument

DESCRIPTION = (
    "The paper's 2R arms (MX-106 + MX-64, eRob80:100 + eRob80:50) with their published "
    "parameters on the four paths of docs/model.md §10, at low and high gain, with M1 and M6, simulated "
    "by the event-driven n-joint solver (the exact reference), frictionsim's standalone fixed "
    "step, and MuJoCo with the servo adapter in both friction modes. Prints each engine's joint "
    "and end-effector error against the event-driven run, and how far M1 lands from M6."
)
ENGINES = ("event_driven", "fixed_step", "mujoco_budget", "mujoco_frictionloss")
PATHS = ("circle", "square", "square_wave", "triangle_wave")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arm", choices=("mx", "erob", "both"), default="both",
                   help="which arm (default both)")
    p.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS),
                   help="paths to run (default all four)")
    p.add_argument("--gains", nargs="+", choices=("low", "high"), default=["low", "high"])
    p.add_argument("--models", nargs="+", choices=("m1", "m2", "m3", "m4", "m5", "m6"),
                   default=["m1", "m6"])
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--seconds", type=float, default=None,
                   help="cut every path after this many seconds (default: the whole path)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="the published data folder with arm2r/ and params/ (default: "
                        "$FRICTIONSIM_DATA, else ./shared/data or ../shared/data)")
    add_output_argument(p, "--json", JSON,
                        'write {"runs": [{"arm", "path", "gain", "model", "engine", '
                        '"joint_mae_rad", "end_effector_mae_m", "seconds"}], "m1_vs_m6": [...]}')
    add_output_argument(p, "--plot", FIGURE,
                        "paths in the plane per engine, and joint errors over time")
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.robots.arm2r import arm2r, plot_arm2r

    if args.seconds is not None and not 0 < args.seconds <= 60:
        raise ConfigurationError(f"--seconds {args.seconds:g}: must be in (0, 60]")
    arms = ["mx", "erob"] if args.arm == "both" else [args.arm]
    result = arm2r(arms, args.paths, args.gains, args.models, args.engines, args.seconds,
                   not args.no_progress, args.data)
    rows = [[r["arm"], r["path"], r["gain"], r["model"], r["engine"],
             f"{1e3 * r['joint_mae_rad']:.3f}", f"{1e3 * r['end_effector_mae_m']:.3f}",
             f"{r['seconds']:.2f}"] for r in result["runs"]]
    print(table(["arm", "path", "gain", "model", "engine", "joint MAE (mrad)", "end MAE (mm)",
                 "seconds"], rows, "<<<<<>>>"))
    if result["m1_vs_m6"]:
        print("\nhow far M1 lands from M6 (event-driven):")
        print(table(["arm", "path", "gain", "joint MAE (mrad)", "end MAE (mm)"],
                    [[g["arm"], g["path"], g["gain"], f"{1e3 * g['joint_mae_rad']:.2f}",
                      f"{1e3 * g['end_effector_mae_m']:.2f}"] for g in result["m1_vs_m6"]],
                    "<<<>>"))
    if args.json:
        write_json(args.json, {k: v for k, v in result.items() if k != "trajectories"})
    if args.plot:
        plot_arm2r(result, args.plot, args.data)
    return 0
