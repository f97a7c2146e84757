"""Every torque of the bench's equation of motion along a rollout, step by step.

The rollout is :func:`frictionsim.solvers.fixed_step.rollout_error`'s (the same servo bank
period and step, :func:`~frictionsim.plant.bench_torques`, friction clipping and step), and
at each step it records the terms of

    I·a = τ_m + τ_e + τ_f,    |τ_f| ≤ τ_fm = F + K_v·|v|

(I·a with a = (τ_m + τ_e + τ_f)/I before the speed clip, so the terms sum to it up to
rounding) and the friction budget split into the model's terms
(:func:`frictionsim.friction.budget_terms`). The seed-002 analysis of which terms matter
along real motions (:mod:`frictionsim.experiments.analysis.torque_contributions`) is built on it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.friction import BUDGET_TERMS, budget_terms
from frictionsim.layout import SCHEME, SEMI_IMPLICIT, SERVO_STATE_SIZE
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.plant import bench_torques
from frictionsim.servo_bank import held_torque, period_servo, reset_servo, step_servo
from frictionsim.solvers.fixed_step import clipped_step
from frictionsim.solvers.joint_friction import stop_friction
from frictionsim.solvers.rollouts import check_finite, rollout_inputs

#: Columns of :func:`rollout_torques`' output: state before the step (rad, rad/s), then
#: torques (N·m): I·a, τ_e, τ_m, the applied τ_f, the budget τ_fm and its terms.
COLUMNS = ("position", "velocity", "inertia", "external", "motor", "friction", "budget",
           *BUDGET_TERMS)


@njit(cache=True)
def rollout_torques(goal: np.ndarray, enable: np.ndarray, supply: np.ndarray, q0: float,
                    v0: float, theta: np.ndarray, bench: np.ndarray, dt: float,
                    out: np.ndarray) -> None:
    """Roll a log out (docs/model.md §5) writing row k of ``out`` (shape (n, len(COLUMNS))) with the
    state before step k and the torques acting during it."""
    q = q0
    v = v0
    servo = np.empty(SERVO_STATE_SIZE)
    reset_servo(servo, q, v)
    semi_implicit = theta[SCHEME] == SEMI_IMPLICIT
    for k in range(goal.shape[0]):
        period_servo(servo, theta, bench, goal[k], q, v, enable[k], supply[k], dt, False)
        step_servo(servo, theta, v)
        t = bench_torques(q, v, held_torque(servo, theta, v), theta, bench)
        tau = t.motor + t.external
        budget = t.static + t.viscous * abs(v)
        tau_f = stop_friction(t.inertia, tau, v, budget, dt)
        terms = budget_terms(v, t.motor, t.external, theta)
        out[k, 0] = q
        out[k, 1] = v
        out[k, 2] = t.inertia * ((tau + tau_f) / t.inertia)
        out[k, 3] = t.external
        out[k, 4] = t.motor
        out[k, 5] = tau_f
        out[k, 6] = budget
        for i in range(len(terms)):
            out[k, 7 + i] = terms[i]
        q, v = clipped_step(q, v, tau, t.inertia, budget, dt, semi_implicit)


def trace_torques(log: Log, params: ParameterSet) -> np.ndarray:
    """:func:`rollout_torques` of a processed log: shape (steps, len(COLUMNS)); the same
    SimulationError as :func:`frictionsim.solvers.rollouts.simulate` for a joint without inertia, a
    missing supply or an overflowing state."""
    x = rollout_inputs(log, params)
    out = np.empty((len(x.goal), len(COLUMNS)))
    rollout_torques(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench, log.dt,
                    out)
    check_finite(log, out[:, 0], x.what)
    return out
