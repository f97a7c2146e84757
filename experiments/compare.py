"""``frictionsim compare``: every parameter file against every log."""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common import warn_motor_mismatch
from experiments.output import FIGURE, JSON, add_output_argument, table, write_json
from experiments.plots import mae_boxplot
from experiments.registry import register
from frictionsim.logs import Log, json_files, load_logs
from frictionsim.params import ParameterSet, load_params
from solvers.batch import PackedLogs
from solvers.errors import non_finite


def compare(params: dict[str, ParameterSet], logs: list[Log]) -> dict:
    """``{label: {"mean", "std", "per_log": {log name: MAE}}}`` (rad) of every parameter set."""
    results = {}
    packed: dict[str, PackedLogs] = {}
    for label, p in params.items():
        if p.actuator not in packed:
            packed[p.actuator] = PackedLogs.from_logs(logs, p.actuator)
        errors = packed[p.actuator].errors(p.theta())[0]
        non_finite(errors, packed[p.actuator].names, p.source or label)
        results[label] = {
            "mean": float(errors.mean()),
            "std": float(errors.std()),
            "per_log": {name: float(e) for name, e in zip(packed[p.actuator].names, errors)},
        }
    return results


def print_comparison(results: dict) -> None:
    rows = [
        [label, f"{1e3 * r['mean']:.2f} ± {1e3 * r['std']:.2f}", f"{1e3 * min(r['per_log'].values()):.2f}",
         f"{1e3 * max(r['per_log'].values()):.2f}"]
        for label, r in results.items()
    ]
    print(table(["parameters", "MAE mean ± std (mrad)", "best", "worst"], rows))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", nargs="+", required=True, type=Path,
                   help="parameter files, or directories of them")
    p.add_argument("--logs", nargs="+", required=True, type=Path,
                   help="processed logs, or directories of them")
    add_output_argument(p, "--json", JSON,
                        'write {LABEL: {"mean", "std", "per_log": {LOG: MAE}}} (rad) here')
    add_output_argument(p, "--plot", FIGURE, "box plot of the per-log MAE per parameter file")


def run(args: argparse.Namespace) -> int:
    files = json_files(args.params)
    params = {}
    for f in files:
        if f.stem in params:
            raise ValueError(f"two parameter files share the label {f.stem!r}; rename one")
        params[f.stem] = load_params(f)
    logs = load_logs(args.logs, processed=True)
    for p in {p.actuator for p in params.values()}:
        warn_motor_mismatch(logs, p)
    results = compare(params, logs)
    print(f"{len(params)} parameter files × {len(logs)} logs")
    print_comparison(results)
    if args.json:
        write_json(args.json, results)
    if args.plot:
        mae_boxplot({k: list(r["per_log"].values()) for k, r in results.items()}, args.plot,
                    f"MAE per log ({len(logs)} logs)")
    return 0


register(
    "compare",
    "evaluate every parameter file on every log",
    "Simulate every processed log with every parameter file (directories stand for their "
    "*.json files) and print the mean ± std position MAE per parameter file. --json writes "
    "{LABEL: {mean, std, per_log}} in radians with LABEL the file's stem; --plot a box plot.",
    add_arguments,
    run,
    subcommand=True,
)
