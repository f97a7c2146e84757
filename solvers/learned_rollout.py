"""Closed-loop rollouts of learned actuators on the bench, compiled: the network's torque inside
the same servo unit, plant and fixed step as M1–M6.

Each control period k (state q, v; ``theta`` the physical model: a hybrid's, or for a pure
network the bare joint of :func:`bare_theta`)::

    reported = servo_observe(q)                    the position a log records
    e(k) = goal(k) − q ;  v(k) = v                 the network's history
    r    = net_torque(features(k))                 N·m (clipped to ±authority for a hybrid)
    u    = servo control ;  (q', v') = fixed step of the physical model
    v ← v' + r·dt/I ;  q ← q' + r·dt²/I            the residual, as an extra torque over the step

with I = I_load + armature. The residual acts outside the friction clip, so one step of it
can be inverted exactly: :func:`teacher_forced` runs the physical model one step from each
*logged* state and returns the torque r that would have reached the next logged position,
I·(q_logged(k+1) − q'(k+1))/dt², with the network's input at k: the training set of
``identify --model net|hybrid``. Logged velocities are backward differences of the logged
positions (the first, the logged speed), as the semi-implicit step makes them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from frictionsim.actuator_net import MAX_WIDTH, N_INPUTS, net_features, net_torque
from frictionsim.layout import ARMATURE, DT, K_C, K_V, KP, KT, SERVO_STATE_SIZE
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.pendulum import load_inertia
from frictionsim.servo_unit import draw_current, observe, reset_record, servo_period
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.fixed_step import bench_step
from frictionsim.solvers.rollouts import Rollout, check_finite


def bare_theta(actuator: str) -> np.ndarray:
    """``theta`` of a joint with no actuator: no motor torque, no friction, no rotor inertia
    (the semi-implicit step): what a pure network drives."""
    theta = ParameterSet.defaults("m1", actuator).with_scheme("semi_implicit").theta()
    theta[KT] = theta[ARMATURE] = theta[K_C] = theta[K_V] = 0.0
    return theta


def physics_theta(model: LearnedActuator) -> np.ndarray:
    """The ``theta`` a learned actuator's network drives: its hybrid physics, or the bare
    joint."""
    return model.physics.theta() if model.physics is not None else bare_theta(model.actuator)


def learned_mae(model: LearnedActuator, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of a learned actuator's closed-loop rollouts of ``logs`` (+inf where
    one diverged)."""
    if not logs:
        return {}
    packed = PackedLogs.from_logs(logs, model.actuator)
    out = np.empty(packed.n_logs)
    learned_errors(packed.goal, packed.enable, packed.supply, packed.position, packed.offsets,
                   packed.v0, packed.bench, physics_theta(model), model.net, out)
    return dict(zip(packed.names, np.where(np.isfinite(out), out, np.inf).tolist()))


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
    inertia = load_inertia(bench) + theta[ARMATURE]
    n = goal.shape[0]
    error = np.empty(n)
    velocity = np.empty(n)
    x = np.empty(N_INPUTS)
    work = np.empty(2 * MAX_WIDTH)
    servo = np.empty(SERVO_STATE_SIZE)
    q, v = q0, v0
    reset_record(servo, q, v)
    for k in range(n):
        out_q[k] = observe(servo, q, dt, theta)
        out_v[k] = v
        error[k] = goal[k] - q
        velocity[k] = v
        net_features(error, velocity, k, bench[KP], enable[k], x)
        r = net_torque(net, x, work)
        u = servo_period(servo, goal[k], q, v, supply[k], theta, bench)
        draw_current(servo, enable[k], v, theta)
        q, v = bench_step(q, v, u, enable[k], dt, theta, bench)
        v += r * dt / inertia
        q += r * dt * dt / inertia


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
                   features: np.ndarray, residual: np.ndarray) -> None:
    """The network's input (rows of ``features``, n × N_INPUTS) and the residual torque (N·m)
    the logged motion needs beyond the physical model at each period of a log (module
    docstring); the last period has no next position: its residual is NaN."""
    dt = bench[DT]
    inertia = load_inertia(bench) + theta[ARMATURE]
    n = goal.shape[0]
    error = np.empty(n)
    velocity = np.empty(n)
    for k in range(n):
        error[k] = goal[k] - position[k]
        velocity[k] = v0 if k == 0 else (position[k] - position[k - 1]) / dt
    servo = np.empty(SERVO_STATE_SIZE)
    reset_record(servo, position[0], v0)
    residual[n - 1] = np.nan
    for k in range(n):
        net_features(error, velocity, k, bench[KP], enable[k], features[k])
        if k == n - 1:
            break
        q, v = position[k], velocity[k]
        u = servo_period(servo, goal[k], q, v, supply[k], theta, bench)
        draw_current(servo, enable[k], v, theta)
        q1, _ = bench_step(q, v, u, enable[k], dt, theta, bench)
        residual[k] = inertia * (position[k + 1] - q1) / (dt * dt)
