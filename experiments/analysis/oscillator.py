"""The Coulomb oscillator of docs/model.md §8, solved four ways (``frictionsim run oscillator``).

ẍ + x = F_f, |F_f| ≤ 1, x(0) = 2.75, ẋ(0) = 0: each half-swing loses 2 of
amplitude, the mass comes to rest at t = π at x = −0.75 and sticks for ever.

(a) the event-driven simulator (stick/slip phases, located switches);
(b) plain ``solve_ivp`` on ẍ = −x − sign(ẋ), no switching logic;
(c) friction smoothed as tanh(ẋ/ε), for a few ε;
(d) the fixed-step friction-budget clipping kernel, for a few dt.

For (b)–(d) the stick position is x at the end of the run and the stick time
the first time from which |ẋ| stays below 1e-6 (exactly 0 for the clipping
kernel, which stops the mass exactly); NaN when the mass never comes to rest
(smoothed friction creeps instead of sticking).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from numba import njit
from scipy.integrate import solve_ivp

from frictionsim.experiments.common.output import save_figure
from frictionsim.solvers.event_driven import Tolerances, stick_time_and_position
from frictionsim.solvers.fixed_step import clipped_step
from frictionsim.solvers.one_joint import simulate_oscillator

X0 = 2.75
T_END = 10.0
X_STICK = -0.75
T_STICK = math.pi


@njit(cache=True)
def oscillator_fixed_step(x0: float, dt: float, n: int, out_x: np.ndarray,
                          out_v: np.ndarray) -> None:
    """The oscillator with the fixed-step clipping kernel: spring torque −x, unit inertia, budget 1."""
    x = x0
    v = 0.0
    for k in range(n):
        out_x[k] = x
        out_v[k] = v
        x, v = clipped_step(x, v, -x, 1.0, 1.0, dt)
    out_x[n] = x
    out_v[n] = v


def _settling(t: np.ndarray, x: np.ndarray, v: np.ndarray, tol: float = 1e-6
              ) -> tuple[float, float]:
    """(first time from which |v| stays ≤ tol, or NaN; final x)."""
    moving = np.nonzero(np.abs(v) > tol)[0]
    if moving.size == 0:
        return float(t[0]), float(x[-1])
    if moving[-1] + 1 >= t.size:
        return math.nan, float(x[-1])
    return float(t[moving[-1] + 1]), float(x[-1])


def _row(name: str, t_stick: float, x_stick: float, nfev, seconds: float, t, x) -> dict:
    return {"method": name, "t_stick": t_stick, "x_stick": x_stick,
            "t_error": abs(t_stick - T_STICK), "x_error": abs(x_stick - X_STICK),
            "nfev": nfev, "seconds": seconds, "t": t, "x": x}


class _GaveUp(Exception):
    pass


def plain_sign(method: str, max_nfev: int = 200_000):
    """Plain solve_ivp on ẍ = −x − sign(ẋ): (time reached, dense x, RHS evaluations).

    After the stick the right-hand side chatters between ±1 around ẋ = 0 and an
    adaptive integrator shrinks its steps towards zero; the run is abandoned
    after ``max_nfev`` evaluations and what it reached is reported.
    """
    calls = {"n": 0, "t": 0.0}
    accepted: list = []

    def rhs(t, y):
        calls["n"] += 1
        if calls["n"] > max_nfev:
            raise _GaveUp
        return (y[1], -y[0] - np.sign(y[1]))

    def record(t, y):
        accepted.append((t, y[0], y[1]))
        return 1.0

    try:
        sol = solve_ivp(rhs, (0.0, T_END), (X0, 0.0), method=method, rtol=1e-8, atol=1e-10,
                        events=record, dense_output=True)
        return T_END, sol.sol, sol.nfev
    except _GaveUp:
        ts, xs, vs = (np.array(a) for a in zip(*accepted))
        return float(ts[-1]), lambda t: np.array([np.interp(t, ts, xs), np.interp(t, ts, vs)]), calls["n"]


def solve_all(epsilons=(1e-2, 1e-3, 1e-4), dts=(1e-2, 1e-3, 1e-4)) -> list[dict]:
    rows = []
    t0 = time.perf_counter()
    result = simulate_oscillator(X0, 0.0, T_END, Tolerances("DOP853", 1e-12, 1e-14))
    seconds = time.perf_counter() - t0
    t_stick, x_stick = stick_time_and_position(result)
    grid = np.linspace(0.0, T_END, 4001)
    rows.append(_row("event-driven (DOP853)", t_stick, x_stick, result.nfev, seconds, grid,
                     result.solver.dense(grid)[0]))

    for method in ("RK45", "LSODA"):
        t0 = time.perf_counter()
        t_reached, x_reached, nfev = plain_sign(method)
        seconds = time.perf_counter() - t0
        mask = grid <= t_reached
        x, v = x_reached(grid[mask])
        label = f"plain sign(v), {method}" + ("" if t_reached >= T_END else
                                               f" (gave up at t={t_reached:.4f})")
        rows.append(_row(label, *_settling(grid[mask], x, v), nfev, seconds, grid[mask], x))

    for eps in epsilons:
        def smooth(t, y, eps=eps):
            return (y[1], -y[0] - math.tanh(y[1] / eps))

        t0 = time.perf_counter()
        sol = solve_ivp(smooth, (0.0, T_END), (X0, 0.0), method="LSODA", rtol=1e-10, atol=1e-12,
                        dense_output=True)
        seconds = time.perf_counter() - t0
        x, v = sol.sol(grid)
        rows.append(_row(f"tanh(v/{eps:g}), LSODA", *_settling(grid, x, v), sol.nfev, seconds,
                         grid, x))

    for dt in dts:
        n = int(round(T_END / dt))
        x = np.empty(n + 1)
        v = np.empty(n + 1)
        oscillator_fixed_step(X0, dt, 10, x[:11], v[:11])  # compile outside the timing
        t0 = time.perf_counter()
        oscillator_fixed_step(X0, dt, n, x, v)
        seconds = time.perf_counter() - t0
        t = np.arange(n + 1) * dt
        rows.append(_row(f"fixed-step clipping dt={dt:g}", *_settling(t, x, v, 0.0), n, seconds,
                         t, x))
    return rows


def plot_oscillator(rows: list[dict], path: Path) -> None:
    """x(t) of every approach, and a zoom after the stick at t = π."""

    a = rows[0]
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.2))
    for r in rows:
        for axis in (ax, zoom):
            axis.plot(r["t"], r["x"], lw=1.8 if r is a else 0.9, label=r["method"])
    zoom.set_xlim(T_STICK - 0.3, T_END)
    zoom.set_ylim(X_STICK - 0.05, X_STICK + 0.1)
    for axis in (ax, zoom):
        axis.axhline(X_STICK, color="k", lw=0.5, ls=":")
        axis.set_xlabel("t")
        axis.grid(alpha=0.3)
    ax.set_ylabel("x")
    ax.set_title("Coulomb oscillator")
    zoom.set_title("after the stick at t = π")
    zoom.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
