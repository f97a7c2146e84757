"""The fixed-step simulator (SPEC §4–5): friction-budget clipping, compiled with Numba.

:func:`step` is a public API. Call it from your own ``@njit`` code with the
flat vectors of :mod:`frictionsim.layout` (``theta`` from
``ParameterSet.theta()``, ``bench`` from ``Log.bench(actuator)``)::

    from numba import njit
    from solvers.fixed_step import step
    from frictionsim.actuator_laws import firmware_control

    @njit
    def my_loop(theta, bench, q, v, targets):
        q_smooth = q
        for target in targets:
            u, q_smooth = firmware_control(target, q, v, q_smooth, theta, bench)
            q, v = step(q, v, u, 1.0, bench[6], theta, bench)
        return q, v

One step, in this order (state q rad, v rad/s; control u V or A; enable 0/1; dt s)::

    q_e    = q + q_offset
    τ_e    = gravity torque at q_e ;  τ_m = motor torque(u, enable, v)
    F, K_v = friction budget(v, τ_m, τ_e) ;  I = I_load + armature
    τ      = τ_m + τ_e
    τ_stop = (I/dt)·v + τ                      torque that would stop v in one step
    τ_f    = −sign(τ_stop)·min(|τ_stop|, F + K_v·|v|)
    a      = (τ + τ_f)/I
    v     ← clip(v + a·dt, −100, 100)
    q     ← q + (v·dt + ½·a·dt²)               with the updated v
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.actuator_laws import firmware_control, motor_torque
from frictionsim.friction import friction_budget
from frictionsim.layout import ARMATURE, Q_OFFSET
from frictionsim.pendulum import gravity_torque, load_inertia

MAX_SPEED = 100.0


@njit(cache=True)
def step(
    q: float, v: float, u: float, enable: float, dt: float, theta: np.ndarray, bench: np.ndarray
) -> tuple:
    """Advance the pendulum bench one fixed step; returns the new ``(q, v)``."""
    q_e = q + theta[Q_OFFSET]
    tau_e = gravity_torque(q_e, bench)
    tau_m = motor_torque(u, enable, v, theta)
    static, viscous = friction_budget(v, tau_m, tau_e, theta)
    inertia = load_inertia(bench) + theta[ARMATURE]
    tau = tau_m + tau_e
    tau_stop = (inertia / dt) * v + tau
    tau_f = -np.sign(tau_stop) * min(abs(tau_stop), static + viscous * abs(v))
    accel = (tau + tau_f) / inertia
    v = min(max(v + accel * dt, -MAX_SPEED), MAX_SPEED)
    q += v * dt + 0.5 * accel * dt**2
    return q, v


@njit(cache=True)
def rollout(
    goal: np.ndarray,
    enable: np.ndarray,
    q0: float,
    v0: float,
    theta: np.ndarray,
    bench: np.ndarray,
    dt: float,
    out_q: np.ndarray,
    out_v: np.ndarray,
) -> None:
    """Roll a log out (SPEC §5), writing the simulated state before each step.

    goal, enable: the log's goal positions (rad) and torque-enable flags (0/1);
    q0, v0: initial state (first logged position and speed). The firmware sees
    the simulated q and v; the sts3215 limiter starts at q0.
    """
    q = q0
    v = v0
    q_smooth = q0
    for k in range(goal.shape[0]):
        out_q[k] = q
        out_v[k] = v
        u, q_smooth = firmware_control(goal[k], q, v, q_smooth, theta, bench)
        q, v = step(q, v, u, enable[k], dt, theta, bench)


@njit(cache=True)
def rollout_error(
    goal: np.ndarray,
    enable: np.ndarray,
    position: np.ndarray,
    v0: float,
    theta: np.ndarray,
    bench: np.ndarray,
    dt: float,
) -> float:
    """Mean absolute position error (rad) of the rollout against the logged positions.

    Same rollout as :func:`rollout`, without storing the trajectory (no allocation).
    """
    q = position[0]
    v = v0
    q_smooth = q
    total = 0.0
    n = goal.shape[0]
    for k in range(n):
        total += abs(q - position[k])
        u, q_smooth = firmware_control(goal[k], q, v, q_smooth, theta, bench)
        q, v = step(q, v, u, enable[k], dt, theta, bench)
    return total / n
