"""``frictionsim crosscheck``: the fixed-step kernel against the event-driven solver.

Every log is simulated with the event-driven solver at tight tolerances (the
reference) and with the fixed-step kernel sub-stepping the same control period
T at dt = T, T/2, …, T/16. For each dt: the max and mean position error at the
sample times, worst over the logs; the observed convergence order (least-squares
slope of log error against log dt); and the stick intervals each finds, matched
by entry and exit time.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from experiments.common import warn_motor_mismatch
from experiments.output import FIGURE, JSON, add_output_argument, save_figure, table, write_json
from experiments.plots import figure_legend, shade_torque_off
from experiments.registry import register
from frictionsim.logs import Log, load_logs
from frictionsim.params import ParameterSet, load_params
from solvers.errors import SimulationError, check_inertia
from solvers.event_driven import METHODS, EventResult, Tolerances, simulate_log_events
from solvers.fixed_step import rollout_substeps

DIVISORS = (1, 2, 4, 8, 16)
#: The finest fixed step, as sub-steps of a log period (beyond it the comparison is rounding).
MAX_SUBSTEPS = 4096


def fixed_stick_intervals(t: np.ndarray, v: np.ndarray, rest: float = 1e-9
                          ) -> list[tuple[float, float]]:
    """Intervals of consecutive samples at rest (|v| ≤ ``rest`` rad/s).

    The clipping kernel stops a joint within one step, to rounding (v + a·dt
    with a = −v/dt is 0 up to an ulp), and holds it at exactly 0 afterwards.
    """
    at_rest = np.abs(v) <= rest
    intervals, start = [], None
    for k, rest in enumerate(at_rest):
        if rest and start is None:
            start = t[k]
        elif not rest and start is not None:
            if t[k] - start > 0:
                intervals.append((float(start), float(t[k])))
            start = None
    if start is not None and t[-1] > start:
        intervals.append((float(start), float(t[-1])))
    return intervals


def match_intervals(reference: list, other: list, period: float) -> dict:
    """Pair each reference stick interval with the overlapping one; entry/exit differences (s)."""
    pairs = []
    # Intervals shorter than two samples cannot be resolved at the sample times.
    reference = [a for a in reference if a[1] - a[0] >= 2 * period]
    for a in reference:
        overlaps = [b for b in other if b[0] < a[1] and b[1] > a[0]]
        if overlaps:
            b = max(overlaps, key=lambda b: min(a[1], b[1]) - max(a[0], b[0]))
            pairs.append((a, b))
    return {
        "event_driven": len(reference),
        "fixed_step": len(other),
        "matched": len(pairs),
        "max_entry_difference": max((abs(a[0] - b[0]) for a, b in pairs), default=0.0),
        "max_exit_difference": max((abs(a[1] - b[1]) for a, b in pairs), default=0.0),
    }


def order_of(dts: np.ndarray, errors: np.ndarray) -> float:
    """Least-squares slope of log(error) against log(dt)."""
    ok = errors > 0
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(dts[ok]), np.log(errors[ok]), 1)[0])


def crosscheck_log(log: Log, params: ParameterSet, substeps: list[int],
                   tolerances: Tolerances) -> tuple[dict, EventResult, dict]:
    bench = log.bench(params.actuator)
    theta = params.theta()
    goal = log.column("goal_position")
    enable = log.column("torque_enable")
    q0 = log.entries[0]["position"]
    v0 = float(log.entries[0].get("speed", 0.0))
    what = params.source or f"{params.model}/{params.actuator}"
    check_inertia(theta, bench, f"{log.name} with {what}")
    t0 = time.perf_counter()
    try:
        ref = simulate_log_events(goal, enable, q0, v0, theta, bench, log.dt, tolerances)
    except SimulationError as e:
        raise SimulationError(f"{log.name} with {what}: {e}") from None
    seconds = time.perf_counter() - t0
    stick_ref = ref.stick_intervals()
    out = {"max_error": [], "mean_error": [], "stick": [],
           "event_driven": {"seconds": seconds, "nfev": ref.nfev, "segments": ref.n_segments,
                            "events": len(ref.events), "stick_intervals": stick_ref}}
    trajectories = {}
    for n in substeps:
        q = np.empty_like(goal)
        v = np.empty_like(goal)
        rollout_substeps(goal, enable, q0, v0, theta, bench, log.dt, n, q, v)
        if not np.isfinite(q).all():
            raise SimulationError(f"{log.name} with {what}: the fixed step at T/{n} gives a "
                                  "non-finite position (the state overflowed)")
        err = np.abs(q - ref.q)
        out["max_error"].append(float(err.max()))
        out["mean_error"].append(float(err.mean()))
        out["stick"].append(match_intervals(stick_ref, fixed_stick_intervals(ref.t, v), log.dt))
        trajectories[n] = q
    dts = log.dt / np.array(substeps, dtype=float)
    out["order"] = order_of(dts, np.array(out["max_error"]))
    return out, ref, trajectories


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", required=True, type=Path, help="parameter file (SPEC §7)")
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


def _substeps(dts: list[float] | None, period: float) -> list[int]:
    if dts is None:
        return list(DIVISORS)
    out = []
    for dt in dts:
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError(f"--dts {dt:g}: a step must be a positive number of seconds")
        n = period / dt
        if abs(n - round(n)) > 1e-6 or round(n) < 1:
            raise ValueError(f"--dts {dt:g}: must divide the log period {period:g} s exactly")
        if round(n) > MAX_SUBSTEPS:
            raise ValueError(f"--dts {dt:g}: {round(n)} steps per log period; at most "
                             f"{MAX_SUBSTEPS} (dt ≥ {period / MAX_SUBSTEPS:g} s)")
        out.append(int(round(n)))
    return out


def run(args: argparse.Namespace) -> int:
    params = load_params(args.params)
    logs = load_logs(args.logs, processed=True)
    warn_motor_mismatch(logs, params.actuator)
    periods = {log.dt for log in logs}
    if len(periods) != 1:
        raise ValueError(f"the logs have different dt ({sorted(periods)}); cross-check them apart")
    period = periods.pop()
    substeps = _substeps(args.dts, period)
    tolerances = Tolerances(args.method, args.rtol, args.atol)
    per_log, keep = {}, None
    for log in logs:
        result, ref, trajectories = crosscheck_log(log, params, substeps, tolerances)
        per_log[log.name] = result
        if keep is None or len(ref.stick_intervals()) > len(keep[1].stick_intervals()):
            keep = (log, ref, trajectories)
    dts = [period / n for n in substeps]
    worst_max = [max(r["max_error"][i] for r in per_log.values()) for i in range(len(dts))]
    worst_mean = [max(r["mean_error"][i] for r in per_log.values()) for i in range(len(dts))]
    order = order_of(np.array(dts), np.array(worst_max))
    print(f"{params.model}/{params.actuator} on {len(logs)} logs; reference: event-driven "
          f"{tolerances.method}, rtol {tolerances.rtol:g}, atol {tolerances.atol:g}")
    rows = []
    for i, dt in enumerate(dts):
        sticks = [r["stick"][i] for r in per_log.values()]
        rows.append([f"T/{substeps[i]}", f"{dt:.3e}", f"{1e3 * worst_max[i]:.4f}",
                     f"{1e3 * worst_mean[i]:.4f}",
                     f"{sum(s['matched'] for s in sticks)}/{sum(s['event_driven'] for s in sticks)}",
                     f"{1e3 * max(s['max_entry_difference'] for s in sticks):.1f}",
                     f"{1e3 * max(s['max_exit_difference'] for s in sticks):.1f}"])
    print(table(["step", "dt (s)", "max error (mrad)", "mean error (mrad)",
                 "stick intervals matched", "entry Δt max (ms)", "exit Δt max (ms)"], rows))
    print(f"observed order {order:.2f} (per log: "
          + ", ".join(f"{r['order']:.2f}" for r in per_log.values()) + ")")
    falling = all(b < a for a, b in zip(worst_max, worst_max[1:]))
    if not falling:
        print("warning: the error does not fall at every halving of dt")
    if args.json:
        write_json(args.json, {"params": str(args.params), "dts": dts, "substeps": substeps,
                               "max_error": worst_max, "mean_error": worst_mean, "order": order,
                               "per_log": per_log})
    if args.plot:
        _plot(args.plot, dts, per_log, worst_max, keep, substeps)
    return 0


def _plot(path: Path, dts, per_log, worst_max, keep, substeps) -> None:
    fig, (ax, traj) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 1.6]})
    for name, r in per_log.items():
        ax.loglog(dts, r["max_error"], "o-", lw=0.8, ms=3, alpha=0.6, label=name)
    ax.loglog(dts, worst_max, "ks-", lw=2, label="worst")
    ref_line = worst_max[0] * (np.array(dts) / dts[0])
    ax.loglog(dts, ref_line, "k:", lw=1, label="order 1")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("fixed step dt (s)")
    ax.set_ylabel("max position error vs event-driven (rad)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6)
    log, ref, trajectories = keep
    for a, b in ref.stick_intervals():
        traj.axvspan(a, b, color="C2", alpha=0.15, label="stick (event-driven)")
    shade_torque_off(traj, ref.t, log.column("torque_enable"))
    traj.plot(ref.t, log.column("position"), "k", lw=0.8, alpha=0.5, label="logged")
    traj.plot(ref.t, ref.q, "C0", lw=1.6, label="event-driven")
    for n in (substeps[0], substeps[-1]):
        traj.plot(ref.t, trajectories[n], "--", lw=1.0, label=f"fixed step T/{n}")
    traj.set_title(log.name, fontsize=9)
    traj.set_xlabel("time (s)")
    traj.set_ylabel("position (rad)")
    traj.grid(alpha=0.3)
    fig.tight_layout()
    figure_legend(fig, [traj])
    save_figure(fig, path)


register(
    "crosscheck",
    "fixed-step kernel vs the event-driven solver: errors, order, stick intervals",
    "Simulate each log with the event-driven solver (tight tolerances) and with the fixed-step "
    "kernel sub-stepping the control period at dt = T … T/16; report the position errors, the "
    "observed convergence order and the stick intervals each finds.",
    add_arguments,
    run,
    subcommand=True,
)
