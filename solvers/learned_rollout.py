"""Closed-loop rollouts of learned actuators on the bench, compiled: the network's torque inside
the same servo unit, plant and fixed step as M1–M6.

Each control period k (state q, v; ``theta`` the physical model: a hybrid's, or for a pure
network the bare joint of :func:`bare_theta`), a physics driver around the servo bank's
:func:`~frictionsim.servo_bank.learned_period`::

    reported = the position the servo reports      the position a log records
    e(k) = goal(k) − q ;  v(k) = v                 the network's history (the record's rings)
    r    = net_torque(features(k))                 N·m (clipped to ±authority for a hybrid)
    u    = servo control ;  τ_m, τ_e, budget B     the physical model's torques
    (q, v) ← clipped step with τ = τ_m + τ_e + r   friction clips the residual like any torque

so static friction holds a residual it can hold (a residual outside the clip would make a
resting joint creep). The budget B is the physical model's (its load-dependent terms see
τ_m and τ_e, not r). One step inverts exactly (:func:`teacher_forced`): from each *logged*
state (velocity a backward difference of the logged positions, the first the logged
speed) and the next logged position, the acceleration a the step needs and v' = v + a·dt;
slipping (v' ≠ 0), r = I·a − τ_m − τ_e + sign(v')·B; held (v' = 0), the r nearest 0 that
friction still holds. Those, or their average over a few periods (``horizon``), are the
training labels of ``identify --model net|hybrid``: torques by inverse dynamics through
the known bench (for a pure network, B = 0 and τ_m = 0: the whole actuator torque).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from frictionsim.actuator_net import net_features
from frictionsim.layout import (
    ARMATURE,
    DT,
    K_C,
    K_V,
    KP,
    KT,
    SCHEME,
    SEMI_IMPLICIT,
    SERVO_EXTRA,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
)
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.pendulum import load_inertia
from frictionsim.plant import bench_torques
from frictionsim.servo_bank import (
    WORK_SIZE,
    held_torque,
    learned_period,
    period_servo,
    reset_servo,
    step_servo,
)
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.fixed_step import plant_step
from frictionsim.solvers.rollouts import Rollout, check_finite


def bare_theta(actuator: str, armature: float = 0.0) -> np.ndarray:
    """``theta`` of a joint with no actuator but its rotor's reflected inertia ``armature``
    (kg·m²): no motor torque, no friction (the semi-implicit step): what a pure network
    drives."""
    theta = ParameterSet.defaults("m1", actuator).with_scheme("semi_implicit").theta()
    theta[KT] = theta[K_C] = theta[K_V] = 0.0
    theta[ARMATURE] = armature
    return theta


def physics_theta(model: LearnedActuator) -> np.ndarray:
    """The ``theta`` a learned actuator's network drives: its hybrid physics, or the bare
    joint with the net's rotor inertia."""
    return model.physics.theta() if model.physics is not None \
        else bare_theta(model.actuator, model.armature)


def learned_mae(model: LearnedActuator, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of a learned actuator's closed-loop rollouts of ``logs`` (+inf where
    one diverged)."""
    if not logs:
        return {}
    packed = PackedLogs.from_logs(logs, model.actuator)
    return dict(zip(packed.names, packed_errors(packed, physics_theta(model), model.net)))


def packed_errors(packed: PackedLogs, theta: np.ndarray, net: np.ndarray) -> np.ndarray:
    """MAE (rad) of each packed log rolled out with network ``net`` over ``theta`` (+inf where
    one diverged): for loops that evaluate many networks on logs packed once."""
    out = np.empty(packed.n_logs)
    learned_errors(packed.goal, packed.enable, packed.supply, packed.position, packed.offsets,
                   packed.v0, packed.bench, theta, net, out)
    return np.where(np.isfinite(out), out, np.inf)


def simulate_learned(log: Log, model: LearnedActuator) -> Rollout:
    """A processed log rolled out with a learned actuator, as
    :func:`frictionsim.solvers.rollouts.simulate` does with a parameter set."""
    goal = log.column("goal_position")
    q, v = np.empty_like(goal), np.empty_like(goal)
    learned_run(goal, log.column("torque_enable"), log.supply(), log.entries[0]["position"],
                float(log.entries[0].get("speed", 0.0)), physics_theta(model),
                log.bench(model.actuator), model.net, q, v)
    check_finite(log, q, model.source or f"the learned {model.model} model")
    return Rollout(log, np.arange(len(goal)) * log.dt, q, v, log.column("position"))


@njit(cache=True)
def learned_run(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray, q0: float, v0: float,
                theta: np.ndarray, bench: np.ndarray, net: np.ndarray, out_q: np.ndarray,
                out_v: np.ndarray) -> None:
    """Roll a log out with a learned actuator (module docstring): the reported position and
    the velocity before each control period into out_q, out_v. The period is ``bench[DT]``."""
    dt = bench[DT]
    servo = np.empty(SERVO_STATE_SIZE)
    work = np.empty(WORK_SIZE)
    q, v = q0, v0
    reset_servo(servo, q, v)
    for k in range(goal.shape[0]):
        u = learned_period(servo, theta, bench, net, work, goal[k], q, v, enable[k], supply[k],
                           dt, False)
        out_q[k] = servo[SERVO_REPORTED]
        out_v[k] = v
        step_servo(servo, theta, v)
        q, v = plant_step(servo, q, v, u, enable[k], servo[SERVO_EXTRA], dt, theta, bench)


@njit(cache=True, parallel=True)
def learned_errors(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray,
                   position: np.ndarray, offsets: np.ndarray, v0: np.ndarray,
                   bench: np.ndarray, theta: np.ndarray, net: np.ndarray,
                   out: np.ndarray) -> None:
    """out[j] = MAE (rad) of the learned actuator's rollout of packed log j (a
    :class:`~frictionsim.solvers.batch.PackedLogs`' arrays), the logs in parallel."""
    for j in prange(offsets.shape[0] - 1):
        a = offsets[j]
        b = offsets[j + 1]
        q = np.empty(b - a)
        v = np.empty(b - a)
        learned_run(goal[a:b], enable[a:b], supply[a:b], position[a], v0[j], theta, bench[j],
                    net, q, v)
        total = 0.0
        for k in range(b - a):
            total += abs(q[k] - position[a + k])
        out[j] = total / (b - a)


@njit(cache=True)
def teacher_forced(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray,
                   position: np.ndarray, v0: float, theta: np.ndarray, bench: np.ndarray,
                   horizon: int, features: np.ndarray, residual: np.ndarray) -> None:
    """The network's input (rows of ``features``, n × N_INPUTS) and the residual torque (N·m)
    the logged motion needs beyond the physical model at each period of a log.

    ``horizon`` 1: the exact one-step inversion of the module docstring. ``horizon`` H > 1:
    the constant residual that would close, after H periods of the physical model from the
    logged state, the gap to the logged position (an extra acceleration α moves the
    position by α·dt²·S, S = H(H+1)/2 semi-implicit, + H/2 for the reference update); the
    friction clip is ignored there. Its labels are far less noisy (a second difference of a
    quantised encoder over 1 period is mostly quantisation) and far less correlated with
    the velocity input, whose noise they otherwise share. Periods with fewer than H periods
    after them have no label: NaN."""
    dt = bench[DT]
    semi = theta[SCHEME] == SEMI_IMPLICIT
    # the position update of one step: q' = q + v·dt + c·a·dt² (c = 1 semi-implicit, 1.5
    # reference: v is updated first, then half an a·dt² more)
    c = 1.0 if semi else 1.5
    spread = horizon * (horizon + 1) / 2.0 + (0.0 if semi else horizon / 2.0)
    inertia = load_inertia(bench) + theta[ARMATURE]
    n = goal.shape[0]
    error = np.empty(n)
    velocity = np.empty(n)
    for k in range(n):
        error[k] = goal[k] - position[k]
        velocity[k] = v0 if k == 0 else (position[k] - position[k - 1]) / dt
    servo = np.empty(SERVO_STATE_SIZE)
    ahead = np.empty(SERVO_STATE_SIZE)
    reset_servo(servo, position[0], v0)
    for k in range(n):
        net_features(error, velocity, k, bench[KP], enable[k], features[k])
        residual[k] = np.nan
        if k >= n - 1:
            break
        q, v = position[k], velocity[k]
        if horizon > 1 and k + horizon < n:
            ahead[:] = servo
            qh, vh = q, v
            for i in range(k, k + horizon):
                u = period_servo(ahead, theta, bench, goal[i], qh, vh, enable[i], supply[i], dt,
                                 False)
                step_servo(ahead, theta, vh)
                qh, vh = plant_step(ahead, qh, vh, u, enable[i], 0.0, dt, theta, bench)
            residual[k] = inertia * (position[k + horizon] - qh) / (spread * dt * dt)
        u = period_servo(servo, theta, bench, goal[k], q, v, enable[k], supply[k], dt, False)
        step_servo(servo, theta, v)
        if horizon > 1:
            continue
        t = bench_torques(q, v, held_torque(servo, theta, v), theta, bench)
        budget = t.static + t.viscous * abs(v)
        tau = t.motor + t.external
        a = (position[k + 1] - q - v * dt) / (c * dt * dt)
        v_next = v + a * dt
        if abs(v_next) <= 1e-12 * max(1.0, abs(v)):
            # held: any r friction holds reproduces it; the one nearest 0
            stop = t.inertia * v / dt + tau
            residual[k] = min(max(0.0, -budget - stop), budget - stop)
        else:
            residual[k] = t.inertia * a - tau + math.copysign(budget, v_next)
