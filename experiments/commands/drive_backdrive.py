"""``frictionsim run drive-backdrive``: the drive/backdrive diagram of parameter files."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import FIGURE, JSON, add_actuator_arguments, add_output_argument
from frictionsim.solvers.fixed_step import MAX_SPEED

DESCRIPTION = (
    "For a grid of external torques τ_e, the static interval of motor torques τ_m for which a "
    "joint at rest stays at rest, |τ_m + τ_e| ≤ F(0, τ_m, τ_e) (docs/model.md §2), of each parameter "
    "file: its edge where the motor wins against the load is the drive torque, the other the "
    "backdrive torque (seed 000, figures 2-4). Exact for M1 (−τ_e ± K_c); for the "
    "load-dependent models each edge is found by walking out from the equilibrium τ_m = −τ_e "
    "and bisecting. With --velocity, the same edges at those speeds (faded in the figure)."
)

#: Grid points of the torque axis: beyond it the figure has more points than pixels.
MAX_POINTS = 100_000
#: The largest --tau-e-max (N·m): a thousand times the stall torque of the strongest actuator
#: shipped (an eRob80 at about 100 N·m); the quadratic friction terms stay finite far beyond.
MAX_TAU_E = 1e5


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", nargs="+", required=True, type=Path, metavar="FILE",
                   help="parameter files (docs/model.md §7); several are overlaid (e.g. M1-M6 of a servo)")
    p.add_argument("--velocity", nargs="+", type=float, default=[], metavar="V",
                   help="also the edges at these speeds (rad/s), e.g. 1 2 3")
    p.add_argument("--tau-e-max", type=float, metavar="T",
                   help="the grid spans τ_e in [−T, T] N·m (default: the largest stall torque "
                        "of the files' motors, k_t·V·max_pwm/R or k_t·I_max)")
    p.add_argument("--points", type=int, default=201, help="grid points (default 201)")
    add_output_argument(p, "--json", JSON, 'write {LABEL: {"tau_e", "drive", "backdrive", '
                        '"static_low", "static_high", "velocities"}} here (N·m; null where '
                        'friction holds whatever the motor does)')
    add_output_argument(p, "--plot", FIGURE, "the diagrams: one panel per file and one overlay")
    add_actuator_arguments(p)


def run(args: argparse.Namespace) -> int:
    import math

    import numpy as np

    from frictionsim.experiments.analysis.drive_backdrive import (
        diagram,
        labels_for,
        stall_torque,
        torque_grid,
    )
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.params import load_params

    if not 3 <= args.points <= MAX_POINTS:
        raise ConfigurationError(f"--points must be in [3, {MAX_POINTS}], got {args.points}")
    # Beyond these the friction terms overflow to NaN, which the JSON would show as null, the
    # mark of a self-locking servo: refused rather than reported as something they are not.
    if any(not (math.isfinite(v) and abs(v) <= MAX_SPEED) for v in args.velocity) \
            or len(args.velocity) > 100:
        raise ConfigurationError(f"--velocity must be at most 100 speeds within ±{MAX_SPEED:g} rad/s "
                                 "(the fastest any of frictionsim's simulators lets a joint "
                                 f"move), got {args.velocity[:5]}"
                                 f"{' …' if len(args.velocity) > 5 else ''}")
    if args.tau_e_max is not None and not (math.isfinite(args.tau_e_max)
                                           and 0 < args.tau_e_max <= MAX_TAU_E):
        raise ConfigurationError(f"--tau-e-max must be a torque in (0, {MAX_TAU_E:g}] N·m, got "
                                 f"{args.tau_e_max:g}")
    sets = [load_params(p) for p in args.params]
    limit = args.tau_e_max if args.tau_e_max is not None else max(stall_torque(p) for p in sets)
    if not (math.isfinite(limit) and limit > 0):
        raise ConfigurationError(f"--tau-e-max must be a positive torque (N·m), got {limit:g}")
    tau_e = torque_grid(limit, args.points)
    diagrams = [diagram(label, p, tau_e, tuple(args.velocity))
                for label, p in zip(labels_for(args.params), sets)]
    probe = [-limit, -0.5 * limit, 0.0, 0.5 * limit, limit]
    rows = []
    for d in diagrams:
        cells = [d.label, d.params.model]
        for x in probe:
            k = int(np.argmin(np.abs(d.tau_e - x)))
            cells.append(f"{d.rest.drive[k]:.4g} / {d.rest.backdrive[k]:.4g}")
        rows.append(cells)
    print(f"drive / backdrive torque τ_m (N·m) at rest, τ_e on {args.points} points in "
          f"[{-limit:.4g}, {limit:.4g}] N·m")
    print(table(["file", "model"] + [f"τ_e = {x:.3g}" for x in probe], rows))
    locked = [d.label for d in diagrams if np.isnan(d.rest.drive).any()
              or np.isnan(d.rest.backdrive).any()]
    if locked:
        print(f"friction holds whatever the motor does somewhere on the grid (self-locking; "
              f"null in the JSON): {', '.join(locked)}")
    if args.json:
        write_json(args.json, {d.label: d.to_json() for d in diagrams})
    if args.plot:
        from frictionsim.experiments.analysis.drive_backdrive import plot_diagrams

        plot_diagrams(diagrams, args.plot)
    return 0
