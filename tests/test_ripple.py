"""The ``ripple`` friction (docs/model.md §15, seed 002's eq. 16): the position ripple and the
meshing friction added to the budget, in the bench's engines, the robot's and MuJoCo's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from frictionsim.errors import ConfigurationError
from frictionsim.friction import ripple_friction, rippled_static
from frictionsim.logs import load_log
from frictionsim.params import ParameterFileError, load_params
from frictionsim.solvers.fixed_step import rollout_substeps
from frictionsim.solvers.one_joint import simulate_log_events
from frictionsim.solvers.rollouts import rollout_inputs, simulate
from tests.pendulum_robot import pendulum_robot_run

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOG = "2026-01-15_10h28m49.json"
RIPPLE = {"ripple_amplitude": 0.01, "ripple_frequency": 300.0, "ripple_phase": 0.4,
          "meshing_amplitude": 0.005, "meshing_decay": 2.0, "meshing_frequency": 600.0,
          "meshing_phase": 1.0}


@pytest.fixture(scope="module")
def data():
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


def rippled(params, **values):
    return params.with_extensions(["ripple"]).with_values(**(RIPPLE | values))


def test_the_ripple_is_eq_16_and_never_makes_friction_push(data):
    theta = rippled(load_params(data / "xl330" / "params" / "m1.json")).theta()
    angle, v = 0.3, -0.7
    expected = (0.01 * math.sin(300.0 * angle + 0.4)
                + 0.005 * math.exp(-2.0 * 0.7) * math.sin(600.0 * angle + 1.0))
    assert ripple_friction(angle, v, theta) == pytest.approx(expected, rel=1e-15)
    # a ripple deeper than the budget leaves τ_fm = F + K_v·|v| at 0, not below
    deep = rippled(load_params(data / "xl330" / "params" / "m1.json"),
                   ripple_amplitude=10.0).theta()
    lowest = min(rippled_static(0.05, 0.1, a, v, deep) + 0.1 * abs(v)
                 for a in np.linspace(0, 0.1, 200))
    assert lowest == 0.0


def test_an_off_ripple_changes_no_bit_and_an_on_one_changes_the_rollout(data):
    params = load_params(data / "xl330" / "params" / "m6.json")
    log = load_log(data / "xl330" / "processed" / LOG)
    plain = simulate(log, params)
    off = simulate(log, rippled(params, ripple_amplitude=0.0, meshing_amplitude=0.0))
    assert np.array_equal(plain.q, off.q)
    assert not np.array_equal(plain.q, simulate(log, rippled(params)).q)


def test_the_fixed_step_converges_to_the_exact_rippled_friction(data):
    params = rippled(load_params(data / "xl330" / "params" / "m6.json"))
    log = load_log(data / "xl330" / "processed" / LOG)
    x = rollout_inputs(log, params)
    exact = simulate_log_events(x.goal, x.enable, x.position[0], x.v0, x.theta, x.bench, log.dt,
                                supply=x.supply)
    errors = []
    for n in (1, 4, 16):
        q, v = np.empty_like(x.goal), np.empty_like(x.goal)
        rollout_substeps(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench,
                         log.dt, n, q, v)
        errors.append(float(np.mean(np.abs(q - exact.q))))
    assert errors[2] < 1e-3 and errors[2] < errors[1] < errors[0]


def test_the_robot_and_mujoco_take_the_ripple_at_the_joint_angle(data):
    pytest.importorskip("mujoco")
    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf, simulate_bench

    params = rippled(load_params(data / "xl330" / "params" / "m6.json")) \
        .with_scheme("semi_implicit")
    log = load_log(data / "xl330" / "processed" / LOG)
    robot, q = pendulum_robot_run(log, params)
    ref = simulate(log, params)
    assert np.max(np.abs(q - ref.q)) < 1e-8
    assert np.max(np.abs(simulate_bench(log, params).q - ref.q)) < 1e-8
    with pytest.raises(ConfigurationError, match="position ripple"):
        ServoModel(bench_mjcf(log.mass, log.length, log.arm_mass, log.dt), robot.servos,
                   friction="frictionloss", control_period=log.dt)
    with pytest.raises(ParameterFileError, match="ripple and backlash"):
        params.with_extensions(["ripple", "backlash"])
