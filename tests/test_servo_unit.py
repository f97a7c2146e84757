"""One servo unit: every loop gives the same trajectory for every combination of extensions.

The loops: a user's own ``@njit`` loop written as the README shows, the C ABI called through
ctypes, ``rollout``, the lock-step evaluator (its MAE against a recorded trajectory), the
robot's standalone fixed step and the MuJoCo adapter (both on the bench as an MJCF model,
whose gravity MuJoCo computes in its own order of operations: to 1e-9 rad), the virtual
servo's physics. With no supply logged, ``supply`` is the source model E − R_s·|i| in all.
"""

from __future__ import annotations

import ctypes
import itertools
import math

import numpy as np
import pytest
from numba import njit

from frictionsim import layout
from frictionsim.actuator_laws import firmware_control
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import (
    NO_LOG,
    servo_control,
    servo_draw,
    servo_observe,
    servo_reset,
    servo_state,
    share_supply,
)
from frictionsim.solvers.c_abi import (
    servo_control_c,
    servo_observe_c,
    servo_reset_c,
    servo_step_c,
    step_c,
)
from frictionsim.solvers.fixed_step import rollout, servo_step, step
from frictionsim.solvers.lockstep import interleaved_errors, lockstep_errors

EXTENSIONS = ("supply", "current_limit", "latency", "observation_delay")
COMBINATIONS = [c for r in range(len(EXTENSIONS) + 1)
                for c in itertools.combinations(EXTENSIONS, r)]
N = 500
DT = 0.005
MASS, LENGTH = 0.3, 0.12


def servo_params(extensions, actuator="xl330", model="m6") -> ParameterSet:
    values = {"friction_base": 0.03, "friction_stribeck": 0.02, "load_friction_motor": 0.1,
              "load_friction_external": 0.08}
    params = ParameterSet(model, actuator, values).with_extensions(extensions)
    extra = {}
    if "supply" in extensions:
        extra.update(supply_emf=7.4, supply_resistance=1.5)
    if "current_limit" in extensions:
        extra["max_current_limit"] = 0.6
    if "latency" in extensions:
        extra["latency_steps"] = 2.0
    if "observation_delay" in extensions:
        extra["observation_delay"] = 3.46 * DT  # between two periods: the interpolation counts
    return params.with_values(**extra).with_scheme("semi_implicit")


def goals() -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(N) * DT
    goal = 0.9 * np.sign(np.sin(2 * np.pi * t / 1.1)) + 0.2 * np.sin(7 * t)
    enable = (t < 2.1).astype(float)
    return goal, enable


def bench(kp=400.0, dt=DT) -> np.ndarray:
    return layout.bench_vector(mass=MASS, length=LENGTH, kp=kp, vin=7.4, dt=dt)


@njit
def readme_loop(theta, bench, goal, enable, q, v):
    """The README's own loop: the servo unit, then the step."""
    out = np.empty(goal.shape[0])
    servo = servo_state(q, v)
    for k in range(goal.shape[0]):
        out[k] = servo_observe(servo, q, bench[layout.DT], theta)
        u = servo_control(servo, goal[k], q, v, NO_LOG, theta, bench)
        servo_draw(servo, enable[k], v, theta)
        q, v = step(q, v, u, enable[k], bench[layout.DT], theta, bench)
    return out


def package_rollout(theta, bench_vector, goal, enable) -> np.ndarray:
    q, v = np.empty(N), np.empty(N)
    rollout(goal, enable, np.full(N, NO_LOG), 0.0, 0.0, theta, bench_vector, DT, q, v)
    return q


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def c_abi_loop(theta, bench_vector, goal, enable) -> np.ndarray:
    P, D = ctypes.POINTER(ctypes.c_double), ctypes.c_double
    reset = ctypes.CFUNCTYPE(None, P, D, D)(servo_reset_c.address)
    control = ctypes.CFUNCTYPE(D, P, D, D, D, D, P, P)(servo_control_c.address)
    step_fn = ctypes.CFUNCTYPE(None, P, D, D, D, P, P)(step_c.address)
    servo_step_fn = ctypes.CFUNCTYPE(None, P, P, D, D, D, D, P, P)(servo_step_c.address)
    observe = ctypes.CFUNCTYPE(D, P, D, D, P)(servo_observe_c.address)
    out = np.empty((2, N))
    for row, fused in enumerate((False, True)):
        servo = np.empty(layout.SERVO_STATE_SIZE)
        state = np.zeros(2)
        reset(_ptr(servo), 0.0, 0.0)
        for k in range(N):
            out[row, k] = observe(_ptr(servo), state[0], DT, _ptr(theta))
            if fused:
                servo_step_fn(_ptr(servo), _ptr(state), goal[k], enable[k], math.nan, DT,
                              _ptr(theta), _ptr(bench_vector))
            else:
                u = control(_ptr(servo), goal[k], state[0], state[1], math.nan, _ptr(theta),
                            _ptr(bench_vector))
                servo_draw(servo, enable[k], state[1], theta)  # what servo_step does in C
                step_fn(_ptr(state), u, enable[k], DT, _ptr(theta), _ptr(bench_vector))
    assert np.array_equal(out[0], out[1])
    return out[1]


@pytest.mark.parametrize("extensions", COMBINATIONS, ids=lambda c: "+".join(c) or "none")
def test_every_loop_gives_the_same_trajectory(extensions):
    params = servo_params(extensions)
    theta, b = params.theta(), bench()
    goal, enable = goals()
    reference = package_rollout(theta, b, goal, enable)
    assert np.isfinite(reference).all() and np.ptp(reference) > 0.3
    np.testing.assert_array_equal(readme_loop(theta, b, goal, enable, 0.0, 0.0), reference)
    np.testing.assert_array_equal(c_abi_loop(theta, b, goal, enable), reference)
    # the lock-step evaluators: MAE 0 against the reference trajectory, bit for bit
    thetas = np.array([theta, theta])
    args = (thetas, goal, enable, np.full(N, NO_LOG), reference, np.array([0, N]),
            np.zeros(1), b[None, :])
    for kernel in (interleaved_errors, lockstep_errors):
        out = np.full((2, 1), np.nan)
        kernel(*args, out)
        assert (out == 0.0).all(), (kernel.__name__, out)


@pytest.mark.parametrize("extensions", COMBINATIONS, ids=lambda c: "+".join(c) or "none")
def test_the_extensions_change_the_trajectory(extensions):
    """The comparison above would prove nothing if an extension changed nothing."""
    goal, enable = goals()
    plain = package_rollout(servo_params(()).theta(), bench(), goal, enable)
    if extensions:
        moved = package_rollout(servo_params(extensions).theta(), bench(), goal, enable)
        assert np.max(np.abs(moved - plain)) > 1e-3


@pytest.mark.parametrize("extensions", COMBINATIONS, ids=lambda c: "+".join(c) or "none")
def test_robot_fixed_step_and_mujoco_adapter_give_the_rollout(extensions):
    pytest.importorskip("mujoco")
    import mujoco

    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf
    from frictionsim.solvers.robot import JointServo, Robot

    params = servo_params(extensions)
    goal, enable = goals()
    reference = package_rollout(params.theta(), bench(), goal, enable)
    servo = JointServo("servo", params, kp=400.0, vin=7.4)
    mjcf = bench_mjcf(MASS, LENGTH, 0.0, DT)
    robot = Robot(mjcf, [servo], control_period=DT)
    run = robot.fixed_step(goal[:, None], enable[:, None])
    np.testing.assert_allclose(run.q[:, 0], reference, rtol=0, atol=1e-9)
    sm = ServoModel(mjcf, [servo], control_period=DT)
    data = sm.make_data()
    q = np.empty(N)
    for k in range(N):
        sm.set_goals(data, [goal[k]])
        sm.set_enable(data, enable[k] > 0.5)
        mujoco.mj_step(sm.model, data)
        q[k] = sm.reported_positions(data)[0]
    sm.check(data)
    np.testing.assert_allclose(q, reference, rtol=0, atol=1e-9)


@pytest.mark.parametrize("extensions", [(), ("supply", "latency", "current_limit")],
                         ids=["none", "all"])
def test_the_virtual_servo_runs_the_same_physics(extensions):
    from frictionsim.hw.virtual_servo.joint import SimulatedJoint

    params = servo_params(extensions)
    clock = [0.0]
    joint = SimulatedJoint(params, MASS, LENGTH, vin=7.4, physics_dt=DT, noise=0.0,
                           clock=lambda: clock[0])
    joint.bench[layout.KP] = 400.0
    goal, enable = goals()
    q = np.empty(N)
    for k in range(N):
        q[k] = joint.q
        joint.goal, joint.enable = goal[k], enable[k]
        clock[0] += DT
        joint.advance()
    reference = package_rollout(params.theta(), joint.bench, goal, enable)
    np.testing.assert_array_equal(q, reference)


def test_servos_on_one_supply_see_the_sum_of_their_currents():
    theta = servo_params(("supply",)).theta()
    b = bench()
    servos = np.array([servo_state(0.0, 0.0), servo_state(0.0, 0.0)])
    for j, target in enumerate((0.5, 0.2)):
        servo_control(servos[j], target, 0.0, 0.0, NO_LOG, theta, b)
        servo_draw(servos[j], 1.0, 0.0, theta)
    alone = [servos[j, layout.SERVO_CURRENT] for j in range(2)]
    share_supply(servos)
    assert servos[0, layout.SERVO_DRAWN] == servos[1, layout.SERVO_DRAWN] == sum(alone)
    u = servo_control(servos[0], 0.5, 0.0, 0.0, NO_LOG, theta, b)
    emf, rs = theta[layout.SUPPLY_EMF], theta[layout.SUPPLY_RESISTANCE]
    assert servos[0, layout.SERVO_VIN] == emf - rs * abs(sum(alone))
    assert sum(alone) > 0.1 and servos[0, layout.SERVO_VIN] < emf
    duty = 0.5 * 400.0 * theta[layout.ERROR_GAIN] * theta[layout.ERROR_GAIN_RATIO]
    assert u == pytest.approx(servos[0, layout.SERVO_VIN] * duty, rel=1e-14)
    # a logged supply wins over the model
    servo_reset(servos[1], 0.0, 0.0)
    servo_control(servos[1], 0.5, 0.0, 0.0, 6.1, theta, b)
    assert servos[1, layout.SERVO_VIN] == 6.1


@pytest.mark.parametrize("extension,key,value", [("latency", "latency_steps", 1.0),
                                                 ("supply", "supply_resistance", 0.1)])
def test_the_stateless_firmware_law_refuses_what_it_cannot_honour(extension, key, value):
    theta = servo_params((extension,)).with_values(**{key: value}).theta()
    with pytest.raises(ValueError, match=extension):
        firmware_control(0.5, 0.0, 0.0, 0.0, theta, bench())
    assert math.isfinite(firmware_control(0.5, 0.0, 0.0, 0.0, servo_params(()).theta(),
                                          bench())[0])


def test_servo_step_is_control_then_step():
    params = servo_params(("latency", "current_limit"))
    theta, b = params.theta(), bench()
    goal, enable = goals()
    a, c = servo_state(0.0, 0.0), servo_state(0.0, 0.0)
    q1 = v1 = q2 = v2 = 0.0
    for k in range(N):
        q1, v1 = servo_step(a, goal[k], q1, v1, enable[k], NO_LOG, DT, theta, b)
        u = servo_control(c, goal[k], q2, v2, NO_LOG, theta, b)
        q2, v2 = step(q2, v2, u, enable[k], DT, theta, b)
    assert (q1, v1) == (q2, v2)
    np.testing.assert_array_equal(a, c)


def test_the_observation_delay_reports_the_position_of_that_long_ago():
    goal, enable = goals()
    plain = package_rollout(servo_params(()).theta(), bench(), goal, enable)
    for periods in (3.0, 3.25):
        params = servo_params(()).with_extensions(("observation_delay",)).with_values(
            observation_delay=periods * DT)
        reported = package_rollout(params.theta(), bench(), goal, enable)
        # the physics is untouched: the report is the plain trajectory, late
        m, f = int(periods), periods - int(periods)
        late = np.concatenate([np.full(m, plain[0]), plain[:N - m]])
        early = np.concatenate([np.full(m + 1, plain[0]), plain[:N - m - 1]])
        np.testing.assert_allclose(reported, (1 - f) * late + f * early, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="observation_delay"):
        long = params.with_values(observation_delay=0.05).theta()
        rollout(goal, enable, np.full(N, NO_LOG), 0.0, 0.0, long, bench(dt=0.0005), 0.0005,
                np.empty(N), np.empty(N))
