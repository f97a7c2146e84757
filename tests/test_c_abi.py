"""The C function pointers of the step and the servo unit, called through ctypes."""

from __future__ import annotations

import ctypes

import numpy as np

from frictionsim import layout
from frictionsim.actuator_laws import motor_torque
from frictionsim.layout import SERVO_STATE_SIZE
from frictionsim.params import ParameterSet
from frictionsim.solvers.c_abi import servo_control_c, servo_reset_c, servo_torque_c, step_c
from frictionsim.solvers.fixed_step import rollout


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def test_c_pointers_reproduce_the_rollout():
    for actuator, model in (("xl330", "m6"), ("sts3215", "m4"), ("erob80_100", "m1")):
        theta = ParameterSet.defaults(model, actuator).theta()
        bench = layout.bench_vector(mass=0.5, length=0.1, arm_mass=0.05,
                                   kp=30.0 if actuator != "xl330" else 400.0, vin=7.4,
                                   damping=2.0, dt=0.005)
        goal = np.sin(np.linspace(0, 6, 600)) * 0.8
        enable = (np.arange(600) < 450).astype(float)
        q_ref = np.empty(600)
        v_ref = np.empty(600)
        rollout(goal, enable, np.full(600, 7.4), 0.0, 0.0, theta, bench, 0.005, q_ref, v_ref)

        step = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_double), ctypes.c_double,
                                ctypes.c_double, ctypes.c_double, ctypes.POINTER(ctypes.c_double),
                                ctypes.POINTER(ctypes.c_double))(step_c.address)
        P, D = ctypes.POINTER(ctypes.c_double), ctypes.c_double
        reset = ctypes.CFUNCTYPE(None, P, D, D)(servo_reset_c.address)
        control = ctypes.CFUNCTYPE(D, P, D, D, D, D, P, P)(servo_control_c.address)
        torque = ctypes.CFUNCTYPE(D, P, D, D, P)(servo_torque_c.address)
        state = np.zeros(2)
        servo = np.empty(SERVO_STATE_SIZE)
        reset(_ptr(servo), 0.0, 0.0)
        q = np.empty(600)
        for k in range(600):
            q[k] = state[0]
            u = control(_ptr(servo), goal[k], state[0], state[1], 7.4, _ptr(theta), _ptr(bench))
            assert torque(_ptr(servo), enable[k], state[1], _ptr(theta)) == motor_torque(
                u, enable[k], state[1], theta)
            step(_ptr(state), u, enable[k], 0.005, _ptr(theta), _ptr(bench))
        assert np.array_equal(q, q_ref), actuator
        assert np.ptp(q) > 0.1
