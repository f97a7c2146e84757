"""The fixed-step kernel against the event-driven solver (``frictionsim crosscheck``).

Every log is simulated with the event-driven solver at tight tolerances (the
reference) and with the fixed-step kernel sub-stepping the same control period
T at dt = T, T/2, …, T/16. For each dt: the max and mean position error at the
sample times, worst over the logs; the observed convergence order (least-squares
slope of log error against log dt); and the stick intervals each finds, matched
by entry and exit time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import save_figure
from frictionsim.experiments.common.plots import figure_legend, shade_torque_off
from frictionsim.experiments.common.progress import progress
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.schedule import ControlSchedule
from frictionsim.solvers.errors import SimulationError, check_inertia
from frictionsim.solvers.event_driven import EventResult, Tolerances
from frictionsim.solvers.fixed_step import rollout_substeps
from frictionsim.solvers.one_joint import simulate_log_events

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


#: Why :func:`order_of` gave no order: what the JSON outputs say beside ``"order": null``.
ORDER_UNAVAILABLE = "not estimated: it needs two or more step sizes with a non-zero error"


def order_of(dts: np.ndarray, errors: np.ndarray) -> float:
    """Least-squares slope of log(error) against log(dt); NaN with fewer than two step sizes
    with a non-zero error (:data:`ORDER_UNAVAILABLE`)."""
    ok = errors > 0
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(dts[ok]), np.log(errors[ok]), 1)[0])


def order_entries(order: float) -> dict:
    """``{"order": …}`` for the JSON outputs, or ``{"order": null, "order_unavailable": why}``
    when :func:`order_of` found none: never a bare null."""
    if math.isfinite(order):
        return {"order": order}
    return {"order": None, "order_unavailable": ORDER_UNAVAILABLE}


def crosscheck_log(log: Log, params: ParameterSet, substeps: list[int],
                   tolerances: Tolerances) -> tuple[dict, EventResult, dict]:
    bench = log.bench(params.actuator)
    theta = params.theta()
    goal = log.column("goal_position")
    enable = log.column("torque_enable")
    supply = log.supply()
    q0 = log.entries[0]["position"]
    v0 = float(log.entries[0].get("speed", 0.0))
    what = params.source or f"{params.model}/{params.actuator}"
    check_inertia(theta, bench, f"{log.name} with {what}")
    t0 = time.perf_counter()
    try:
        ref = simulate_log_events(goal, enable, q0, v0, theta, bench, log.dt, tolerances,
                                  supply=supply)
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
        rollout_substeps(goal, enable, supply, q0, v0, theta, bench, log.dt, n, q, v)
        if not np.isfinite(q).all():
            raise SimulationError(f"{log.name} with {what}: the fixed step at T/{n} gives a "
                                  "non-finite position (the state overflowed)")
        err = np.abs(q - ref.q)
        out["max_error"].append(float(err.max()))
        out["mean_error"].append(float(err.mean()))
        out["stick"].append(match_intervals(stick_ref, fixed_stick_intervals(ref.t, v), log.dt))
        trajectories[n] = q
    dts = log.dt / np.array(substeps, dtype=float)
    out.update(order_entries(order_of(dts, np.array(out["max_error"]))))
    return out, ref, trajectories


def substeps_of(dts: list[float] | None, period: float) -> list[int]:
    """Sub-steps of the control ``period`` for the fixed steps ``dts`` (s); default T … T/16.
    ``ValueError`` naming a step that is not positive, does not divide T, or is too fine."""
    if dts is None:
        return list(DIVISORS)
    out = []
    for dt in dts:
        if not (math.isfinite(dt) and dt > 0):
            raise ConfigurationError(f"--dts {dt:g}: a step must be a positive number of seconds")
        n = period / dt
        if n > MAX_SUBSTEPS + 0.5:  # before the divisibility, whose message would print n
            raise ConfigurationError(f"--dts {dt:g}: {n:.3g} steps per log period; at most "
                                     f"{MAX_SUBSTEPS} (dt ≥ {period / MAX_SUBSTEPS:g} s)")
        try:  # the one schedule of the control period: whole physics steps or refused
            out.append(ControlSchedule.of(period, dt).substeps)
        except ConfigurationError:
            raise ConfigurationError(f"--dts {dt:g}: must divide the log period {period:g} s "
                                     "exactly") from None
    return out


@dataclass
class Crosscheck:
    """The cross-check of a parameter set on several logs.

    ``dts``: the fixed steps (s); ``worst_max``, ``worst_mean``: per step, the worst
    over the logs of the max and mean position error (rad); ``order``: observed
    convergence order of ``worst_max``; ``per_log``: each log's figures (see
    :func:`crosscheck_log`); ``shown``: (log, event-driven result, fixed-step
    trajectories) of the log with the most stick intervals, for the figure.
    """

    substeps: list[int]
    dts: list[float]
    worst_max: list[float]
    worst_mean: list[float]
    order: float
    per_log: dict
    shown: tuple

    @property
    def falling(self) -> bool:
        """True when the worst error falls at every refinement."""
        return all(b < a for a, b in zip(self.worst_max, self.worst_max[1:]))


def crosscheck(params: ParameterSet, logs: list[Log], dts: list[float] | None,
               tolerances: Tolerances, show_progress: bool = True) -> Crosscheck:
    """Cross-check ``params`` on ``logs`` (one common dt) at the fixed steps ``dts``."""
    periods = {log.dt for log in logs}
    if len(periods) != 1:
        raise ConfigurationError(f"the logs have different dt ({sorted(periods)}); cross-check them apart")
    period = periods.pop()
    substeps = substeps_of(dts, period)
    per_log, shown = {}, None
    for log in progress(logs, desc="cross-check", unit="log", enabled=show_progress, minimum=2):
        result, ref, trajectories = crosscheck_log(log, params, substeps, tolerances)
        per_log[log.name] = result
        if shown is None or len(ref.stick_intervals()) > len(shown[1].stick_intervals()):
            shown = (log, ref, trajectories)
    steps = [period / n for n in substeps]
    worst_max = [max(r["max_error"][i] for r in per_log.values()) for i in range(len(steps))]
    worst_mean = [max(r["mean_error"][i] for r in per_log.values()) for i in range(len(steps))]
    return Crosscheck(substeps, steps, worst_max, worst_mean,
                      order_of(np.array(steps), np.array(worst_max)), per_log, shown)


def plot_crosscheck(result: Crosscheck, path: Path) -> None:
    """Error vs dt (log-log) per log, and the trajectory of the log with the most sticks."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    dts, per_log, worst_max, substeps = (result.dts, result.per_log, result.worst_max,
                                         result.substeps)
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
    log, ref, trajectories = result.shown
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
