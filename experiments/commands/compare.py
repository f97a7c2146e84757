"""``frictionsim compare``: every parameter file against every log."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    add_actuator_arguments,
    add_extensions_argument,
    add_other_motor_argument,
    add_output_argument,
    add_progress_argument,
    add_scheme_argument,
)

DESCRIPTION = (
    "Simulate every processed log with every parameter file (directories stand for their "
    "*.json files) and print the mean ± std position MAE per parameter file. --json writes "
    "{LABEL: {mean, std, per_log}} in radians with LABEL the file's stem (prefixed by its "
    "folder when two files share a stem); --plot a box plot."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", nargs="+", required=True, type=Path,
                   help="parameter files, or directories of them (an identify output folder "
                        "stands for its m*.json fits)")
    p.add_argument("--logs", nargs="+", required=True, type=Path,
                   help="processed logs, or directories of them")
    add_output_argument(p, "--json", JSON,
                        'write {LABEL: {"mean", "std", "per_log": {LOG: MAE}}} (rad) here')
    add_output_argument(p, "--plot", FIGURE, "box plot of the per-log MAE per parameter file")
    add_scheme_argument(p)
    add_extensions_argument(p)
    add_actuator_arguments(p)
    add_other_motor_argument(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.analysis.comparison import compare, comparison_table, labels
    from frictionsim.experiments.common.loading import check_motor_match, load_logs
    from frictionsim.experiments.common.output import write_json
    from frictionsim.learned_files import load_servo_model
    from frictionsim.params import parameter_files

    files = parameter_files(args.params)
    params = {label: load_servo_model(f, args.extensions).with_scheme(args.scheme)
              for label, f in zip(labels(files), files)}
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    for actuator in {p.actuator for p in params.values()}:
        check_motor_match(logs, actuator, "the parameter files", args.other_motor)
    results = compare(params, logs)
    print(f"{counted(len(params), 'parameter file')} × {counted(len(logs), 'log')}")
    print(comparison_table(results))
    if args.json:
        write_json(args.json, results)
    if args.plot:
        from frictionsim.experiments.common.plots import mae_boxplot

        mae_boxplot({k: list(r["per_log"].values()) for k, r in results.items()}, args.plot,
                    f"MAE per log ({counted(len(logs), 'log')})")
    return 0
