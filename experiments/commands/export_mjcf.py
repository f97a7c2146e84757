"""``frictionsim export-mjcf``: a parameter file as MuJoCo attributes: a ``<position>`` actuator,
or MuJoCo's own ``<dcmotor>``."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import (
    JSON,
    TEXT,
    add_actuator_arguments,
    add_output_argument,
    add_progress_argument,
)
from frictionsim.limits import check_budget

#: Evaluations of each fit of the closest native M1 unless --budget says.
NATIVE_BUDGET = 1000

DESCRIPTION = (
    "Print a parameter file as plain MuJoCo, no frictionsim in the step. --target position "
    "(default): an M1 file's joint armature, damping, frictionloss with a friction row that "
    "stops the joint within one step, a position actuator's kp and forcerange, the Euler "
    "integrator without eulerdamp: exact for the voltage law with MuJoCo's Euler step "
    "(frictionsim's semi_implicit scheme). --target dcmotor: a complete MJCF document with "
    "the servo as MuJoCo's own <dcmotor> (MuJoCo >= 3.12): the firmware as its on-board "
    "controller, the motor's k_t and R, the current limit as its saturation, M1's friction on "
    "the joint, as a default class your joint and actuator can take. M2-M6 friction has no "
    "MuJoCo attribute: with --logs, the closest native model (M1 refitted on the logs from the "
    "file's values, with and without the current limit's saturation; the one MuJoCo runs "
    "closer to the logs) is exported and its fidelity loss printed: the MAE of each candidate "
    "run in plain MuJoCo beside frictionsim's MAE of the file, on the same logs."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path,
                   help="a parameter file (docs/model.md §7); M1 for --target position")
    p.add_argument("--target", choices=("position", "dcmotor"), default="position",
                   help="a <position> actuator with joint attributes (default), or MuJoCo's "
                        "<dcmotor> actuator")
    p.add_argument("--joint", default="servo", help="the joint's name in your model (default servo)")
    p.add_argument("--kp", type=float, default=None,
                   help="firmware gain (default: the actuator's declared default)")
    p.add_argument("--vin", type=float, default=None,
                   help="supply voltage, V (default: the actuator's)")
    p.add_argument("--timestep", type=float, default=0.001,
                   help="your model's timestep, s: the friction row's stiffness depends on it "
                        "(default 0.001)")
    p.add_argument("--logs", nargs="+", type=Path, metavar="LOG",
                   help="--target dcmotor: processed bench logs (or folders) on which the "
                        "closest native M1 is fitted and the export's fidelity measured (each "
                        "log rolled out in plain MuJoCo); required for M2-M6")
    p.add_argument("--budget", type=int, default=None,
                   help=f"--logs: evaluations of each fit of the closest native M1 (default "
                        f"{NATIVE_BUDGET})")
    add_output_argument(p, "--out", TEXT, "write the snippet or document to this file")
    add_output_argument(p, "--json", JSON, "--logs: write the fidelity (per-log MAE, rad) here")
    add_actuator_arguments(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim import atomic
    from frictionsim.params import load_params
    from frictionsim.solvers.mjcf_export import export_dcmotor, export_m1

    for option, given in (("--budget", args.budget is not None), ("--json", args.json)):
        if given and not args.logs:
            raise ConfigurationError(f"{option} acts on the fit and fidelity of --logs (with "
                                     "--target dcmotor), and none are given")
    args.budget = NATIVE_BUDGET if args.budget is None else args.budget
    check_budget(args.budget)
    params = load_params(args.params)
    if args.target == "position":
        if args.logs:
            raise ConfigurationError("--logs measures a --target dcmotor export")
        snippet = export_m1(params, args.joint, args.kp, args.vin, args.timestep)
    else:
        snippet = _dcmotor(args, params, export_dcmotor)
    if args.out is not None:
        atomic.write_text(args.out, snippet)
        print(f"wrote {args.out}")
    else:
        print(snippet, end="")
    return 0


def _dcmotor(args: argparse.Namespace, params, export_dcmotor) -> str:
    """The ``<dcmotor>`` document of ``params`` (with ``--logs``, the native model closest to
    them: :func:`~frictionsim.experiments.identification.native_export.closest_native`), the
    fidelity printed (on stderr when the document goes to stdout) and written to --json."""
    import sys

    native, note = params, ""
    if params.model != "m1" and not args.logs:
        raise ConfigurationError(f"{args.params}: model {params.model}'s friction has no MuJoCo "
                                 "attribute; name --logs to fit and measure the closest native M1 on")
    if args.logs:
        from frictionsim.experiments.common.loading import load_logs, refuse_motor_mismatch
        from frictionsim.experiments.common.output import write_json
        from frictionsim.experiments.identification.native_export import (
            closest_native,
            native_fidelity,
        )

        logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
        refuse_motor_mismatch(logs, params.actuator, str(args.params))
        native, candidates = closest_native(params, logs, args.budget,
                                            progress=not args.no_progress)
        fid = native_fidelity(params, candidates, logs)
        ours = 1e3 * fid["frictionsim"]["mean_mae"]
        theirs = min(1e3 * c["mean_mae"] for c in fid["native"].values())
        note = (f"Fidelity on {counted(len(logs), 'log')}: frictionsim {params.model} {ours:.2f} mrad, this "
                f"export in plain MuJoCo {theirs:.2f} mrad.")
        out = sys.stderr if args.out is None else sys.stdout
        print(f"fidelity on {counted(len(logs), 'log')} (MAE): frictionsim {params.model} ({params.scheme}) "
              f"{ours:.2f} mrad; native <dcmotor> in plain MuJoCo:", file=out)
        for name, c in fid["native"].items():
            print(f"  {name}: {1e3 * c['mean_mae']:.2f} mrad ({1e3 * c['mean_mae'] - ours:+.2f})",
                  file=out)
        friction = ", ".join(f"{k} {native.values[k]:.4g}" for k in ("friction_base",
                                                                     "friction_viscous"))
        print(f"exported: M1 with {friction}"
              + (", saturation at max_current_limit" if native.extensions else ""), file=out)
        if args.json:
            write_json(args.json, fid)
    return export_dcmotor(native, args.joint, args.kp, args.vin, args.timestep, note=note)
