"""The fixed-step kernel as C function pointers, for simulators written in C or C++.

:data:`step_c` is a Numba ``cfunc`` with the C signature::

    void frictionsim_step(double *state, double u, double enable, double dt,
                          const double *theta, const double *bench);

``state`` is ``{q, v}`` (rad, rad/s), advanced in place by one step of SPEC §4;
``theta`` and ``bench`` are the flat vectors of :mod:`frictionsim.layout`
(``THETA_SIZE`` and ``BENCH_SIZE`` doubles). :data:`control_c` is the firmware
law::

    double frictionsim_control(double q_target, double q, double v, double *q_smooth,
                               const double *theta, const double *bench);

returning the control (V or A) and updating the sts3215 limiter state in place.
Their addresses (``step_c.address``, ``control_c.address``) can be handed to a
C/C++ simulator, e.g. through ``ctypes`` or a pybind11 module; the compiled
code runs without the Python interpreter.
"""

from __future__ import annotations

from numba import carray, cfunc, types

from frictionsim.actuator_laws import firmware_control
from frictionsim.layout import BENCH_SIZE, THETA_SIZE
from solvers.fixed_step import step

_double_p = types.CPointer(types.float64)


@cfunc(types.void(_double_p, types.float64, types.float64, types.float64, _double_p, _double_p),
       cache=True)
def step_c(state, u, enable, dt, theta_p, bench_p):  # pragma: no cover - runs as machine code
    theta = carray(theta_p, (THETA_SIZE,))
    bench = carray(bench_p, (BENCH_SIZE,))
    q, v = step(state[0], state[1], u, enable, dt, theta, bench)
    state[0] = q
    state[1] = v


@cfunc(types.float64(types.float64, types.float64, types.float64, _double_p, _double_p, _double_p),
       cache=True)
def control_c(q_target, q, v, q_smooth, theta_p, bench_p):  # pragma: no cover
    theta = carray(theta_p, (THETA_SIZE,))
    bench = carray(bench_p, (BENCH_SIZE,))
    u, smooth = firmware_control(q_target, q, v, q_smooth[0], theta, bench)
    q_smooth[0] = smooth
    return u
