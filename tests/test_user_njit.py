"""The public compiled API: a user's own @njit loop built on step and firmware_control."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from synthetic_logs import random_values, rng_for, synthetic_log

from frictionsim import load_log, load_params
from frictionsim.actuator_laws import firmware_control
from frictionsim.layout import DT
from frictionsim.params import ParameterSet
from frictionsim.solvers.fixed_step import rollout, step


@njit
def user_rollout(goal, enable, q0, v0, theta, bench):
    """A user's loop: record the state, run the firmware, step (docs/model.md §5)."""
    n = goal.shape[0]
    qs = np.empty(n)
    vs = np.empty(n)
    q = q0
    v = v0
    q_smooth = q0
    for k in range(n):
        qs[k] = q
        vs[k] = v
        u, q_smooth = firmware_control(goal[k], q, v, q_smooth, theta, bench)
        q, v = step(q, v, u, enable[k], bench[DT], theta, bench)
    return qs, vs


@njit
def my_loop(theta, bench, q, v, targets):
    """The example of solvers/fixed_step.py's docstring, verbatim."""
    q_smooth = q
    for target in targets:
        u, q_smooth = firmware_control(target, q, v, q_smooth, theta, bench)
        q, v = step(q, v, u, 1.0, bench[6], theta, bench)
    return q, v


def package_rollout(log, theta, bench):
    goal = log.column("goal_position")
    enable = log.column("torque_enable")
    q = np.empty_like(goal)
    v = np.empty_like(goal)
    v0 = float(log.entries[0].get("speed", 0.0))
    rollout(goal, enable, log.supply(), log.column("position")[0], v0, theta, bench, log.dt,
            q, v)
    return goal, enable, v0, q, v


def cases():
    out = []
    for actuator, model in (("sts3215", "m4"), ("erob80_100", "m6"), ("xl320", "m2")):
        rng = rng_for("njit", actuator)
        values = random_values(model, actuator, rng, 0.25)
        log = synthetic_log(actuator, rng, values, n=250)
        params = ParameterSet(model, actuator, values)
        out.append(pytest.param(actuator, params, log, id=f"{model}-{actuator}"))
    return out


@pytest.mark.parametrize("actuator,params,log", cases())
def test_user_loop_equals_rollout(actuator, params, log):
    theta, bench = params.theta(), log.bench(actuator)
    goal, enable, v0, q_pkg, v_pkg = package_rollout(log, theta, bench)
    q_user, v_user = user_rollout(goal, enable, log.column("position")[0], v0, theta, bench)
    np.testing.assert_array_equal(q_user, q_pkg)
    np.testing.assert_array_equal(v_user, v_pkg)
    assert np.ptp(q_pkg) > 1e-3


def test_user_loop_on_published_log(shared):
    log = load_log(shared / "processed" / "2026-01-15_10h28m42.json")
    params = load_params(shared / "params" / "m6.json")
    theta, bench = params.theta(), log.bench(params.actuator)
    goal, enable, v0, q_pkg, v_pkg = package_rollout(log, theta, bench)
    q_user, v_user = user_rollout(goal, enable, log.column("position")[0], v0, theta, bench)
    np.testing.assert_array_equal(q_user, q_pkg)
    np.testing.assert_array_equal(v_user, v_pkg)


def test_docstring_example_matches_rollout():
    rng = rng_for("njit", "docstring")
    values = random_values("m5", "sts3215", rng, 0.25)
    params = ParameterSet("m5", "sts3215", values)
    log = synthetic_log("sts3215", rng, values, n=200, disabled=False)
    theta, bench = params.theta(), log.bench("sts3215")
    goal, _, v0, q_pkg, v_pkg = package_rollout(log, theta, bench)
    # rollout records the state *before* each step: after the first n−1 targets, the
    # example's final state is the rollout's last recorded one
    q, v = my_loop(theta, bench, log.column("position")[0], v0, goal[:-1])
    assert (q, v) == (q_pkg[-1], v_pkg[-1])


def test_clip_friction_is_the_compiled_solve_inside_a_users_njit_code():
    """From Python it checks its arrays' type (one line naming the argument); from a user's
    ``@njit`` function the same name compiles to the solve itself."""
    import numpy as np
    from numba import njit

    from frictionsim.solvers.joint_friction import clip_friction

    @njit
    def rollout_friction(mass, tau, v, budget):
        return clip_friction(mass, tau, v, budget, 0.001)

    mass = np.array([[2.0, 0.3], [0.3, 1.0]])
    args = (mass, np.array([0.4, -2.0]), np.array([0.0, 0.1]), np.array([1.0, 0.5]))
    np.testing.assert_array_equal(rollout_friction(*args), clip_friction(*args, 0.001))
