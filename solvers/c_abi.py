"""The fixed step and the servo unit as C function pointers, for simulators written in C or C++.

Numba ``cfunc`` s with these C signatures (``theta``, ``bench`` and ``servo`` are the flat
vectors of :mod:`frictionsim.layout`: ``THETA_SIZE``, ``BENCH_SIZE`` and
``SERVO_STATE_SIZE`` doubles)::

    /* one fixed step of the bench (docs/physics.md §4); state = {q, v}, advanced in place */
    void frictionsim_step(double *state, double u, double enable, double dt,
                          const double *theta, const double *bench);

    /* the servo unit (frictionsim.servo_unit): reset a servo record at (q, v) */
    void frictionsim_servo_reset(double *servo, double q, double v);

    /* one control period: the control u (V or A) the servo then holds; logged_vin is the
       logged supply (V) or NaN when there is none */
    double frictionsim_servo_control(double *servo, double q_target, double q, double v,
                                     double logged_vin, const double *theta,
                                     const double *bench);

    /* a servo whose firmware runs at the physics rate: its control period, the current it
       draws, one fixed step; state = {q, v} advanced in place */
    void frictionsim_servo_step(double *servo, double *state, double q_target, double enable,
                                double logged_vin, double dt, const double *theta,
                                const double *bench);

    /* the motor torque (N·m) of the held control at velocity v; changes nothing */
    double frictionsim_servo_torque(const double *servo, double enable, double v,
                                    const double *theta);

    /* the position the servo reports this control period (observation_delay), q its
       physical one, period the control period (s); call before servo_control */
    double frictionsim_servo_observe(double *servo, double q, double period,
                                     const double *theta);

Their addresses (``step_c.address`` …) can be handed to a C/C++ simulator through
``ctypes`` or a pybind11 module; the compiled code runs without the Python interpreter. Being
the servo unit's, they honour every extension ``theta`` enables (``latency``, ``supply``,
``current_limit``, ``observation_delay``). C code cannot receive a Python exception: the
caller owns the sizes of the arrays it passes, as with any C API.
"""

from __future__ import annotations

from numba import carray, cfunc, types

from frictionsim.layout import BENCH_SIZE, SERVO_STATE_SIZE, THETA_SIZE
from frictionsim.servo_unit import observe, servo_control, servo_reset, servo_torque
from frictionsim.solvers.fixed_step import servo_step, step

_p = types.CPointer(types.float64)
_f = types.float64


@cfunc(types.void(_p, _f, _f, _f, _p, _p), cache=True)
def step_c(state, u, enable, dt, theta_p, bench_p):  # pragma: no cover - runs as machine code
    theta = carray(theta_p, (THETA_SIZE,))
    bench = carray(bench_p, (BENCH_SIZE,))
    q, v = step(state[0], state[1], u, enable, dt, theta, bench)
    state[0] = q
    state[1] = v


@cfunc(types.void(_p, _f, _f), cache=True)
def servo_reset_c(servo_p, q, v):  # pragma: no cover
    servo_reset(carray(servo_p, (SERVO_STATE_SIZE,)), q, v)


@cfunc(_f(_p, _f, _f, _f, _f, _p, _p), cache=True)
def servo_control_c(servo_p, q_target, q, v, logged_vin, theta_p, bench_p):  # pragma: no cover
    return servo_control(carray(servo_p, (SERVO_STATE_SIZE,)), q_target, q, v, logged_vin,
                         carray(theta_p, (THETA_SIZE,)), carray(bench_p, (BENCH_SIZE,)))


@cfunc(types.void(_p, _p, _f, _f, _f, _f, _p, _p), cache=True)
def servo_step_c(servo_p, state, q_target, enable, logged_vin, dt, theta_p,
                 bench_p):  # pragma: no cover
    q, v = servo_step(carray(servo_p, (SERVO_STATE_SIZE,)), q_target, state[0], state[1], enable,
                      logged_vin, dt, carray(theta_p, (THETA_SIZE,)),
                      carray(bench_p, (BENCH_SIZE,)))
    state[0] = q
    state[1] = v


@cfunc(_f(_p, _f, _f, _p), cache=True)
def servo_torque_c(servo_p, enable, v, theta_p):  # pragma: no cover
    return servo_torque(carray(servo_p, (SERVO_STATE_SIZE,)), enable, v,
                        carray(theta_p, (THETA_SIZE,)))


@cfunc(_f(_p, _f, _f, _p), cache=True)
def servo_observe_c(servo_p, q, period, theta_p):  # pragma: no cover
    # the unchecked kernel: C receives no exception, and a delay beyond the ring is held at
    # its longest
    return observe(carray(servo_p, (SERVO_STATE_SIZE,)), q, period,
                   carray(theta_p, (THETA_SIZE,)))
