"""``frictionsim run torque-contributions``: which torques matter along real motions."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    add_actuator_arguments,
    add_extensions_argument,
    add_output_argument,
    add_progress_argument,
    add_scheme_argument,
)

DESCRIPTION = (
    "Simulate each log with a parameter file and split the torque along it into the terms of "
    "the equation of motion (inertia I·a, gravity τ_e, motor τ_m, friction τ_f) and, inside "
    "the friction, the model's terms (Coulomb, Stribeck, load-dependent, directional, "
    "quadratic, viscous); print each term's RMS share of the torque balance per log and flag "
    "the terms under 5 % on every log as negligible (seed 002, section 4). --plot: stacked "
    "contributions per log."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path, help="parameter file (docs/model.md §7)")
    p.add_argument("--logs", nargs="+", required=True, type=Path, metavar="LOG",
                   help="processed logs, or directories of them")
    add_output_argument(p, "--json", JSON, 'write {"terms": {TERM: {"max_share", "verdict", '
                        '"per_log": {LOG: {"rms", "share"}}}}, "negligible": [...]} here')
    add_output_argument(p, "--plot", FIGURE, "stacked torque contributions per log")
    add_scheme_argument(p)
    add_extensions_argument(p)
    add_actuator_arguments(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.analysis.torque_contributions import (
        EQUATION_TERMS,
        FRICTION_TERMS,
        NEGLIGIBLE,
        contributions,
        summarise,
    )
    from frictionsim.experiments.common.loading import load_logs, warn_motor_mismatch
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.params import load_params

    params = load_params(args.params, args.extensions).with_scheme(args.scheme)
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    warn_motor_mismatch(logs, params.actuator)
    results = [contributions(log, params) for log in logs]
    terms = summarise(results, params)
    names = EQUATION_TERMS + FRICTION_TERMS
    print(f"{params.model} on {params.actuator} ({args.params}): RMS share of the torque "
          "balance (%) per log")
    rows = [[r.log.name] + [f"{100 * r.shares[n]:.1f}" for n in names] for r in results]
    rows.append(["largest"] + [f"{100 * terms[n]['max_share']:.1f}" for n in names])
    rows.append(["verdict"] + [terms[n]["verdict"] for n in names])
    print(table(["log"] + [n.replace("friction.", "f.") for n in names], rows))
    negligible = [n for n in names if terms[n]["verdict"] == "negligible"]
    absent = [n for n in names if terms[n]["verdict"] == "absent"]
    print(f"negligible (under {100 * NEGLIGIBLE:g} % on every log): "
          f"{', '.join(negligible) or 'none'}")
    if absent:
        print(f"not in {params.model}: {', '.join(absent)}")
    residual = max(r.residual for r in results)
    print(f"largest |I·a − (τ_m + τ_e + τ_f)| over every step: {residual:.2g} N·m")
    if args.json:
        write_json(args.json, {"params": str(args.params), "model": params.model,
                               "threshold": NEGLIGIBLE, "terms": terms,
                               "negligible": negligible, "absent": absent})
    if args.plot:
        from frictionsim.experiments.analysis.torque_contributions import plot_contributions

        plot_contributions(results, args.plot,
                           title=f"torque contributions, {params.model} ({args.params.name})")
    return 0
