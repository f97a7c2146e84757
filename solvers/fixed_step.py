"""The fixed-step simulator (docs/model.md §4–5): friction-budget clipping, compiled with Numba.

:func:`step` is a public API. Call it from your own ``@njit`` code with the
flat vectors of :mod:`frictionsim.layout` (``theta`` from
``ParameterSet.theta()``, ``bench`` from ``Log.bench(actuator)``), the servo's control
period run by the servo bank (:mod:`frictionsim.servo_bank`)::

    import numpy as np
    from numba import njit
    from frictionsim.layout import DT, SERVO_STATE_SIZE
    from frictionsim.servo_bank import period_servo, reset_servo, step_servo
    from frictionsim.servo_unit import NO_LOG
    from frictionsim.solvers.fixed_step import step

    @njit
    def my_loop(theta, bench, q, v, targets):
        servo = np.empty(SERVO_STATE_SIZE)
        reset_servo(servo, q, v)
        for target in targets:
            u = period_servo(servo, theta, bench, target, q, v, 1.0, NO_LOG, bench[DT], False)
            step_servo(servo, theta, v)          # the current it draws (``supply``)
            q, v = step(q, v, u, 1.0, bench[DT], theta, bench)
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

or, when ``theta[SCHEME]`` is ``SEMI_IMPLICIT`` (MuJoCo's Euler), ``q ← q + v·dt``. The
friction line is :func:`frictionsim.solvers.joint_friction.stop_friction`, the n = 1 case of the
n-joint clipping of docs/model.md §10.

The rollouts are physics drivers around a bank of one servo: at each control period the
bank's :func:`~frictionsim.servo_bank.period_servo` (the report, ``latency``, the log's
``supply`` — ``input_volts`` per entry, V; NaN where none was logged —, the firmware), at
each physics step its :func:`~frictionsim.servo_bank.step_servo` (the current drawn), then
the bench's step with the held control.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.actuator_laws import motor_torque
from frictionsim.errors import ConfigurationError
from frictionsim.gear_gap import gear_torque, impact_velocity, motor_side_budget, settle_gear
from frictionsim.layout import (
    ARMATURE,
    BACKLASH,
    SCHEME,
    SEMI_IMPLICIT,
    SERVO_CONTACT,
    SERVO_GAP,
    SERVO_MOTOR_SPEED,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
)
from frictionsim.pendulum import load_inertia
from frictionsim.plant import bench_torques
from frictionsim.servo_bank import period_servo, reset_servo, step_servo
from frictionsim.servo_unit import DELAY_MESSAGE, delay_too_long
from frictionsim.solvers.joint_friction import stop_friction
from frictionsim.vector_checks import check_float64, check_servo, check_theta_bench

MAX_SPEED = 100.0


class JointState(NamedTuple):
    """Position q (rad) and velocity v (rad/s) of a joint."""

    q: float
    v: float


@njit(cache=True, inline="always")
def clipped_step(
    q: float, v: float, tau: float, inertia: float, budget: float, dt: float,
    semi_implicit: bool = False,
) -> JointState:
    """One step of friction-budget clipping for a joint; returns the new ``(q, v)``.

    tau: every torque but friction (N·m); inertia (kg·m²); budget: τ_fm (N·m).
    Friction opposes the torque that would stop the joint within the step,
    up to the budget, so a joint whose budget covers it stops exactly.
    ``semi_implicit``: q ← q + v·dt instead of the reference q ← q + v·dt + ½·a·dt².
    """
    tau_f = stop_friction(inertia, tau, v, budget, dt)
    accel = (tau + tau_f) / inertia
    v = min(max(v + accel * dt, -MAX_SPEED), MAX_SPEED)
    if semi_implicit:
        q += v * dt
    else:
        q += v * dt + 0.5 * accel * dt**2
    return JointState(q, v)


@njit(cache=True)
def step(
    q: float, v: float, u: float, enable: float, dt: float, theta: np.ndarray, bench: np.ndarray
) -> JointState:
    """Advance the pendulum bench one fixed step with the control u (V or A) held; returns the
    new ``JointState(q, v)``. ValueError when theta or bench has the wrong length or dt is
    not positive."""
    check_theta_bench(theta, bench)
    if not dt > 0.0:
        raise ConfigurationError("step: dt must be positive (s)")
    if theta[BACKLASH] > 0.0:
        raise ConfigurationError("step: with backlash the motor side's state lives in the servo "
                                 "record: use servo_step or plant_step")
    return bench_step(q, v, u, enable, dt, theta, bench)


@njit(cache=True)
def bench_step(
    q: float, v: float, u: float, enable: float, dt: float, theta: np.ndarray, bench: np.ndarray
) -> JointState:
    """:func:`step` without its checks, for the package's loops that made them once."""
    return bench_step_with(q, v, u, enable, 0.0, dt, theta, bench)


@njit(cache=True, inline="always")
def bench_step_with(q: float, v: float, u: float, enable: float, extra: float, dt: float,
                    theta: np.ndarray, bench: np.ndarray) -> JointState:
    """:func:`bench_step` with a torque ``extra`` (N·m) beside the motor's and gravity's, which
    friction clips like them (a learned actuator's held network torque)."""
    return bench_physics(q, v, motor_torque(u, enable, v, theta), extra, dt, theta, bench)


@njit(cache=True, inline="always")
def bench_physics(q: float, v: float, tau_m: float, extra: float, dt: float,
                  theta: np.ndarray, bench: np.ndarray) -> JointState:
    """The bench's physics for one step: the motor torque τ_m and a torque ``extra`` beside it
    (N·m, a learned actuator's), which friction clips like the others; the budget sees τ_m
    and gravity's τ_e."""
    t = bench_torques(q, v, tau_m, theta, bench)
    return clipped_step(q, v, t.motor + t.external + extra, t.inertia,
                        t.static + t.viscous * abs(v), dt, theta[SCHEME] == SEMI_IMPLICIT)


@njit(cache=True, inline="always")
def plant_step(record: np.ndarray, q: float, v: float, u: float, enable: float, extra: float,
               dt: float, theta: np.ndarray, bench: np.ndarray) -> JointState:
    """One physics step of the bench whose servo's record is ``record``: :func:`geared_step`
    with ``backlash`` on, else :func:`bench_step_with` (the record untouched)."""
    if theta[BACKLASH] > 0.0:
        return geared_step(record, q, v, u, enable, extra, dt, theta, bench)
    return bench_step_with(q, v, u, enable, extra, dt, theta, bench)


@njit(cache=True)
def geared_step(record: np.ndarray, q: float, v: float, u: float, enable: float, extra: float,
                dt: float, theta: np.ndarray, bench: np.ndarray) -> JointState:
    """The bench's physics for one step with ``backlash`` (:mod:`frictionsim.gear_gap`); returns
    the output's new ``(q, v)``, the motor side's δ, w and the contact state in ``record``.

    Engaged, the step is :func:`bench_physics`'s, unless the gear would pull the load
    (c·τ_c < 0 with this step's acceleration) and the two sides, stepped apart, part
    (:func:`apart_step` leaves δ inside the gap): then they part. Apart, each side takes its
    own step; where δ crosses ±g/2 within the step the impact is inelastic, both sides at the
    momentum-conserving velocity, δ set to ±g/2 around the inertia-weighted mean position.
    The first step rests the load on the end of the gap its external torque leans it on."""
    half = 0.5 * theta[BACKLASH]
    j_load = load_inertia(bench)
    semi = theta[SCHEME] == SEMI_IMPLICIT
    t = bench_torques(q, v, motor_torque(u, enable, v, theta), theta, bench)
    tau_e = t.external
    settle_gear(record, theta, tau_e, v)
    contact = record[SERVO_CONTACT]
    if contact != 0.0 or not j_load > 0.0:  # a massless output cannot leave the gear
        budget = t.static + t.viscous * abs(v)
        inertia = t.inertia
        tau = t.motor + tau_e + extra
        tau_f = stop_friction(inertia, tau, v, budget, dt)
        if contact * gear_torque(j_load, (tau + tau_f) / inertia, tau_e) < 0.0 \
                and j_load > 0.0:
            load, w, gap = apart_step(q, v, v, contact * half, u, enable, extra, tau_e, dt,
                                      theta, j_load, semi)
            if contact * gap < half:  # the sides part
                record[SERVO_GAP] = gap
                record[SERVO_MOTOR_SPEED] = w
                record[SERVO_CONTACT] = 0.0
                return load
        state = clipped_step(q, v, tau, inertia, budget, dt, semi)
        record[SERVO_MOTOR_SPEED] = state.v
        record[SERVO_CONTACT] = contact
        return state
    load, w, gap = apart_step(q, v, record[SERVO_MOTOR_SPEED], record[SERVO_GAP], u, enable,
                              extra, tau_e, dt, theta, j_load, semi)
    if abs(gap) < half:
        record[SERVO_GAP] = gap
        record[SERVO_MOTOR_SPEED] = w
        record[SERVO_CONTACT] = 0.0
        return load
    side = 1.0 if gap > 0.0 else -1.0
    j_motor = theta[ARMATURE]
    q_new = load.q + j_motor / (j_motor + j_load) * (gap - side * half)
    v_new = impact_velocity(j_motor, w, j_load, load.v)
    record[SERVO_GAP] = side * half
    record[SERVO_MOTOR_SPEED] = v_new
    record[SERVO_CONTACT] = side
    return JointState(q_new, v_new)


@njit(cache=True, inline="always")
def apart_step(q: float, v: float, w: float, gap: float, u: float, enable: float, extra: float,
               tau_e: float, dt: float, theta: np.ndarray, j_load: float, semi: bool) -> tuple:
    """One step of the two sides of an open gap from the output (q, v), the motor side at
    velocity w and place δ = ``gap``: (the load's new JointState, the motor side's new
    velocity, the new δ, which may lie beyond ±g/2). The load is free (τ_e only); the motor
    side is clipped by its own budget τ_fm(w, τ_m, 0), τ_m's back-EMF at w."""
    motor = motor_side_step(w, motor_torque(u, enable, w, theta), extra, theta, dt, semi)
    load = clipped_step(q, v, tau_e, j_load, 0.0, dt, semi)
    return load, motor.v, gap + motor.q - (load.q - q)


@njit(cache=True, inline="always")
def motor_side_step(w: float, tau_m: float, extra: float, theta: np.ndarray, dt: float,
                    semi: bool) -> JointState:
    """One clipped step of an open gap's motor side from velocity w (rad/s), its inertia the
    armature, its torques τ_m and ``extra`` (N·m), its budget τ_fm(w, τ_m, 0)
    (:func:`frictionsim.gear_gap.motor_side_budget`): its move from 0 and its new velocity."""
    return clipped_step(0.0, w, tau_m + extra, theta[ARMATURE],
                        motor_side_budget(w, tau_m, theta), dt, semi)


@njit(cache=True)
def servo_step(servo: np.ndarray, q_target: float, q: float, v: float, enable: float,
               logged_vin: float, dt: float, theta: np.ndarray, bench: np.ndarray) -> JointState:
    """A servo whose firmware runs at the physics rate: one control period of the servo bank
    (:func:`frictionsim.servo_bank.period_servo`, the record ``servo`` updated), then one
    physics step (the bank's :func:`~frictionsim.servo_bank.step_servo`, :func:`bench_step`);
    returns the new ``JointState(q, v)``.

    q_target: goal (rad); enable: 0/1; logged_vin: the logged supply (V) or
    :data:`frictionsim.servo_unit.NO_LOG`; dt: the period (s). ValueError when a vector
    has the wrong length or dt is not positive."""
    check_servo(servo, theta, bench)
    if not dt > 0.0:
        raise ConfigurationError("servo_step: dt must be positive (s)")
    u = period_servo(servo, theta, bench, q_target, q, v, enable, logged_vin, dt, False)
    step_servo(servo, theta, v)
    return plant_step(servo, q, v, u, enable, 0.0, dt, theta, bench)


@njit(cache=True)
def rollout(
    goal: np.ndarray,
    enable: np.ndarray,
    supply: np.ndarray,
    q0: float,
    v0: float,
    theta: np.ndarray,
    bench: np.ndarray,
    dt: float,
    out_q: np.ndarray,
    out_v: np.ndarray,
) -> None:
    """Roll a log out (docs/model.md §5), writing the simulated state before each step.

    goal, enable, supply: the log's goal positions (rad), torque-enable flags (0/1) and
    supply voltages (V; used with the ``supply`` extension only); q0, v0: initial state
    (first logged position and speed). The firmware sees the simulated q and v; the
    sts3215 limiter starts at q0. out_q holds the position the servo reports
    (:func:`frictionsim.servo_unit.servo_observe`): the simulated one, or with
    ``observation_delay`` the simulated one of that long ago, as a log records it.
    """
    rollout_substeps(goal, enable, supply, q0, v0, theta, bench, dt, 1, out_q, out_v)


@njit(cache=True, inline="always")
def check_log_arrays(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray,
                     theta: np.ndarray, bench: np.ndarray, dt: float) -> None:
    """ValueError unless the log's columns have one length (≥ 1), theta and bench theirs, and
    dt is positive."""
    check_float64(goal)
    check_float64(enable)
    check_float64(supply)
    n = goal.shape[0]
    if n == 0:
        raise ConfigurationError("the goal has no entry")
    if enable.shape[0] != n:
        raise ConfigurationError("enable must have the length of goal")
    if supply.shape[0] != n:
        raise ConfigurationError("supply must have the length of goal (NaN where none was logged)")
    check_theta_bench(theta, bench)
    if not dt > 0.0:
        raise ConfigurationError("dt must be positive (s)")
    if delay_too_long(theta, dt):
        raise ConfigurationError(DELAY_MESSAGE)


@njit(cache=True)
def rollout_error(
    goal: np.ndarray,
    enable: np.ndarray,
    supply: np.ndarray,
    position: np.ndarray,
    v0: float,
    theta: np.ndarray,
    bench: np.ndarray,
    dt: float,
) -> float:
    """Mean absolute position error (rad) of the rollout's reported positions against the
    logged ones.

    Same rollout as :func:`rollout`, without storing the trajectory.
    """
    check_log_arrays(goal, enable, supply, theta, bench, dt)
    if position.shape[0] != goal.shape[0]:
        raise ConfigurationError("position must have the length of goal")
    return log_error(goal, enable, supply, position, v0, theta, bench, dt)


@njit(cache=True)
def log_error(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray, position: np.ndarray,
              v0: float, theta: np.ndarray, bench: np.ndarray, dt: float) -> float:
    """:func:`rollout_error` without its checks, for the batched evaluator's parallel loop
    (a ``raise`` inside a ``prange`` body makes Numba run the loop serially; the batch
    packs and checks its logs once)."""
    q = position[0]
    v = v0
    servo = np.empty(SERVO_STATE_SIZE)
    reset_servo(servo, q, v)
    total = 0.0
    n = goal.shape[0]
    for k in range(n):
        u = period_servo(servo, theta, bench, goal[k], q, v, enable[k], supply[k], dt, False)
        total += abs(servo[SERVO_REPORTED] - position[k])
        step_servo(servo, theta, v)
        q, v = plant_step(servo, q, v, u, enable[k], 0.0, dt, theta, bench)
    return total / n


@njit(cache=True)
def rollout_substeps(
    goal: np.ndarray,
    enable: np.ndarray,
    supply: np.ndarray,
    q0: float,
    v0: float,
    theta: np.ndarray,
    bench: np.ndarray,
    period: float,
    substeps: int,
    out_q: np.ndarray,
    out_v: np.ndarray,
) -> None:
    """:func:`rollout` with the control period split into ``substeps`` steps of period/substeps.

    The firmware control is still computed once per period (zero-order hold),
    so as ``substeps`` grows the result converges to the event-driven solution.
    With ``substeps = 1`` this is exactly :func:`rollout`. ValueError (before anything is
    written) when an array is shorter than the goal or a vector has the wrong length.
    """
    check_log_arrays(goal, enable, supply, theta, bench, period)
    check_float64(out_q)
    check_float64(out_v)
    if out_q.shape[0] < goal.shape[0] or out_v.shape[0] < goal.shape[0]:
        raise ConfigurationError("out_q and out_v must hold at least as many entries as goal")
    if substeps < 1:
        raise ConfigurationError("substeps must be at least 1")
    rollout_loop(goal, enable, supply, q0, v0, theta, bench, period, substeps, out_q, out_v,
                 np.empty(0))


@njit(cache=True)
def rollout_loop(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray, q0: float, v0: float,
                 theta: np.ndarray, bench: np.ndarray, period: float, substeps: int,
                 out_q: np.ndarray, out_v: np.ndarray, out_motor: np.ndarray) -> None:
    """:func:`rollout_substeps` without its checks, also writing the motor side of the gear's
    gap, p = q + δ (rad, q the physical angle), before each period into ``out_motor``
    (``backlash``; an empty array skips it)."""
    q = q0
    v = v0
    servo = np.empty(SERVO_STATE_SIZE)
    reset_servo(servo, q, v)
    dt = period / substeps
    for k in range(goal.shape[0]):
        u = period_servo(servo, theta, bench, goal[k], q, v, enable[k], supply[k], period,
                         False)
        out_q[k] = servo[SERVO_REPORTED]
        out_v[k] = v
        if out_motor.shape[0] > k:
            out_motor[k] = q + servo[SERVO_GAP]
        for _ in range(substeps):
            step_servo(servo, theta, v)
            q, v = plant_step(servo, q, v, u, enable[k], 0.0, dt, theta, bench)
