"""``frictionsim crosscheck``: the fixed-step kernel against the event-driven solver."""

from __future__ import annotations

import argparse
import math
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
from frictionsim.solvers import METHODS

DESCRIPTION = (
    "Simulate each log with the event-driven solver (tight tolerances) and with the fixed-step "
    "kernel sub-stepping the control period at dt = T … T/16; report the position errors, the "
    "observed convergence order and the stick intervals each finds."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path, help="parameter file (docs/model.md §7)")
    p.add_argument("--logs", nargs="+", required=True, type=Path,
                   help="processed logs, or directories of them")
    p.add_argument("--dts", nargs="+", type=float,
                   help="fixed-step sizes in seconds, each dividing the logs' period "
                        "(default T, T/2, T/4, T/8, T/16 with T the log's dt)")
    p.add_argument("--method", default="DOP853", choices=METHODS,
                   help="integrator of the event-driven reference (default DOP853)")
    p.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance (default 1e-10)")
    p.add_argument("--atol", type=float, default=1e-12, help="absolute tolerance (default 1e-12)")
    add_output_argument(p, "--json", JSON,
                        'write {"dts", "max_error", "mean_error", "order", "per_log"} here')
    add_output_argument(p, "--plot", FIGURE,
                        "error vs dt (log-log) and one trajectory with stick intervals shaded")
    add_scheme_argument(p)
    add_extensions_argument(p)
    add_actuator_arguments(p)
    add_other_motor_argument(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.analysis.crosscheck import (
        ORDER_UNAVAILABLE,
        crosscheck,
        order_entries,
        plot_crosscheck,
    )
    from frictionsim.experiments.common.loading import check_motor_match, load_logs
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.params import load_params
    from frictionsim.solvers.event_driven import Tolerances

    params = load_params(args.params, args.extensions).with_scheme(args.scheme)
    tolerances = Tolerances(args.method, args.rtol, args.atol)
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    check_motor_match(logs, params.actuator, str(args.params), args.other_motor)
    result = crosscheck(params, logs, args.dts, tolerances, show_progress=not args.no_progress)
    print(f"{params.model}/{params.actuator} on {counted(len(logs), 'log')}; reference: event-driven "
          f"{tolerances.method}, rtol {tolerances.rtol:g}, atol {tolerances.atol:g}")
    rows = []
    for i, dt in enumerate(result.dts):
        sticks = [r["stick"][i] for r in result.per_log.values()]
        rows.append([f"T/{result.substeps[i]}", f"{dt:.3e}", f"{1e3 * result.worst_max[i]:.4f}",
                     f"{1e3 * result.worst_mean[i]:.4f}",
                     f"{sum(s['matched'] for s in sticks)}/{sum(s['event_driven'] for s in sticks)}",
                     f"{1e3 * max(s['max_entry_difference'] for s in sticks):.1f}",
                     f"{1e3 * max(s['max_exit_difference'] for s in sticks):.1f}"])
    print(table(["step", "dt (s)", "max error (mrad)", "mean error (mrad)",
                 "stick intervals matched", "entry Δt max (ms)", "exit Δt max (ms)"], rows))
    if math.isfinite(result.order):
        print(f"observed order {result.order:.2f} (per log: "
              + ", ".join("–" if r["order"] is None else f"{r['order']:.2f}"
                          for r in result.per_log.values()) + ")")
    else:
        print(f"observed order {ORDER_UNAVAILABLE}")
    if not result.falling:
        print("warning: the error does not fall at every halving of dt")
    if args.json:
        write_json(args.json, {"params": str(args.params), "dts": result.dts,
                               "substeps": result.substeps, "max_error": result.worst_max,
                               "mean_error": result.worst_mean,
                               **order_entries(result.order), "per_log": result.per_log})
    if args.plot:
        plot_crosscheck(result, args.plot)
    return 0

