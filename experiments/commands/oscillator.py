"""``frictionsim run oscillator``: the Coulomb oscillator of docs/model.md §8, solved four ways."""

from __future__ import annotations

import argparse

from frictionsim.experiments.runner.arguments import FIGURE, JSON, add_output_argument

DESCRIPTION = (
    "Solve the Coulomb oscillator of docs/model.md §8 with the event-driven simulator, with plain "
    "solve_ivp on the discontinuous right-hand side, with tanh-smoothed friction and with the "
    "fixed-step clipping kernel; print the stick time and position, their errors, the cost."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output_argument(p, "--json", JSON, 'write {"x_stick", "t_stick", "nfev"} of the '
                        'event-driven solution and "methods" (all four approaches) here')
    add_output_argument(p, "--plot", FIGURE, "figure of x(t) for every approach, with a zoom at t = π")


def run(args: argparse.Namespace) -> int:
    import math

    from frictionsim.experiments.analysis.oscillator import plot_oscillator, solve_all
    from frictionsim.experiments.common.output import table, write_json

    rows = solve_all()
    print("Coulomb oscillator ẍ + x = F_f, |F_f| ≤ 1, x(0) = 2.75: exact stick at t = π, x = −0.75")
    print(table(["method", "t_stick", "x_stick", "|t − π|", "|x + 0.75|", "RHS evals / steps",
                 "seconds"],
                [[r["method"], f"{r['t_stick']:.10f}" if math.isfinite(r["t_stick"]) else "never",
                  f"{r['x_stick']:.10f}",
                  f"{r['t_error']:.1e}", f"{r['x_error']:.1e}", r["nfev"], f"{r['seconds']:.4f}"]
                 for r in rows]))
    a = rows[0]
    if args.json:
        write_json(args.json, {
            "x_stick": a["x_stick"], "t_stick": a["t_stick"], "nfev": a["nfev"],
            "x_error": a["x_error"], "t_error": a["t_error"],
            "methods": [{k: v for k, v in r.items() if k not in ("t", "x")} for r in rows],
        })
    if args.plot:
        plot_oscillator(rows, args.plot)
    ok = a["x_error"] <= 1e-10 and a["t_error"] <= 1e-9
    if not ok:
        print("event-driven solution outside 1e-10 (x) / 1e-9 (t)")
    return 0 if ok else 1
