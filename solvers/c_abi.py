"""The servo bank and the fixed step as C function pointers, for simulators written in C or C++.

Numba ``cfunc`` s with these C signatures. ``thetas``, ``firmware`` and ``records`` are the
servo bank's flat memory (:mod:`frictionsim.servo_bank`): ``n`` rows of ``THETA_SIZE``,
``BENCH_SIZE`` and ``SERVO_STATE_SIZE`` doubles (:mod:`frictionsim.layout`); ``nets`` is
``n`` rows of ``net_width`` ≥ 1 doubles (a network vector of :mod:`frictionsim.actuator_net`,
or a row starting with 0 for a servo without one); ``work`` is ``WORK_SIZE`` doubles of
scratch (:data:`frictionsim.servo_bank.WORK_SIZE`). The period and the step are the bank's
own, the functions every engine of frictionsim drives; C code is one more physics driver::

    /* the bank: reset every servo at q[j], v[j] */
    void frictionsim_bank_reset(long n, const double *thetas, const double *firmware,
                                double *records, const double *nets, long net_width,
                                double *work, const double *q, const double *v);

    /* one control period of every servo: goals, q, v, enable one per servo; logged_vin the
       logged supply (V) or NaN; period (s); shared_supply 1: the servos share one supply;
       draw_at_period 1: draw the current now (an engine with no physics steps) */
    void frictionsim_bank_period(long n, const double *thetas, const double *firmware,
                                 double *records, const double *nets, long net_width,
                                 double *work, const double *goals, const double *q,
                                 const double *v, const double *enable, double logged_vin,
                                 double period, long shared_supply, long draw_at_period);

    /* one physics step at the joint velocities v: the currents drawn, motor[j] = τ_m of the
       held control, extra[j] = the held network torque (N·m) */
    void frictionsim_bank_step(long n, const double *thetas, const double *firmware,
                               double *records, const double *nets, long net_width,
                               double *work, const double *v, double *motor, double *extra);

    /* one fixed step of the bench (docs/model.md §4) with a held control u; state = {q, v}.
       No servo record, so no motor side: a servo with ``backlash`` steps by
       frictionsim_servo_step, whose record holds it */
    void frictionsim_step(double *state, double u, double enable, double dt,
                          const double *theta, const double *bench);

    /* the same with a torque extra (N·m) beside the motor's: a learned servo's held network
       torque (records[j * SERVO_STATE_SIZE + SERVO_EXTRA]), which friction clips */
    void frictionsim_step_with(double *state, double u, double enable, double extra,
                               double dt, const double *theta, const double *bench);

    /* a servo whose firmware runs at the physics rate: a bank period of one servo, then one
       fixed step; state = {q, v} advanced in place */
    void frictionsim_servo_step(double *servo, double *state, double q_target, double enable,
                                double logged_vin, double dt, const double *theta,
                                const double *bench);

The pieces the bank composes are exported too, for a driver that needs one alone
(``frictionsim_servo_reset``, ``frictionsim_servo_control``: the firmware law with its
``latency`` and supply, ``frictionsim_servo_torque``: τ_m of the held control at v,
``frictionsim_servo_observe``: the reported position). Their addresses (``bank_period_c.address``
…) can be handed to a C/C++ simulator through ``ctypes`` or a pybind11 module; the compiled
code runs without the Python interpreter, and honours every extension ``theta`` enables. C
code cannot receive a Python exception: the caller owns the sizes of the arrays it passes,
as with any C API.
"""

from __future__ import annotations

from numba import carray, cfunc, njit, types

from frictionsim.layout import BENCH_SIZE, SERVO_STATE_SIZE, THETA_SIZE
from frictionsim.servo_bank import WORK_SIZE, ServoBank, bank_period, bank_reset, bank_step
from frictionsim.servo_unit import observe, servo_control, servo_reset, servo_torque
from frictionsim.solvers.fixed_step import bench_step_with, servo_step, step

_p = types.CPointer(types.float64)
_f = types.float64
_n = types.int64


@njit(cache=True)
def _bank_of(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p):  # pragma: no cover
    """The bank over the C caller's memory."""
    return ServoBank(carray(thetas_p, (n, THETA_SIZE)), carray(firmware_p, (n, BENCH_SIZE)),
                     carray(records_p, (n, SERVO_STATE_SIZE)), carray(nets_p, (n, net_width)),
                     carray(work_p, (WORK_SIZE,)))


_BANK = (_n, _p, _p, _p, _p, _n, _p)


@cfunc(types.void(*_BANK, _p, _p), cache=True)
def bank_reset_c(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p, q_p,
                 v_p):  # pragma: no cover - runs as machine code
    bank_reset(_bank_of(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p),
               carray(q_p, (n,)), carray(v_p, (n,)))


@cfunc(types.void(*_BANK, _p, _p, _p, _p, _f, _f, _n, _n), cache=True)
def bank_period_c(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p, goals_p, q_p,
                  v_p, enable_p, logged_vin, period, shared_supply,
                  draw_at_period):  # pragma: no cover
    bank_period(_bank_of(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p),
                carray(goals_p, (n,)), carray(q_p, (n,)), carray(v_p, (n,)),
                carray(enable_p, (n,)), logged_vin, period, shared_supply != 0,
                draw_at_period != 0)


@cfunc(types.void(*_BANK, _p, _p, _p), cache=True)
def bank_step_c(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p, v_p, motor_p,
                extra_p):  # pragma: no cover
    bank_step(_bank_of(n, thetas_p, firmware_p, records_p, nets_p, net_width, work_p),
              carray(v_p, (n,)), carray(motor_p, (n,)), carray(extra_p, (n,)))


@cfunc(types.void(_p, _f, _f, _f, _p, _p), cache=True)
def step_c(state, u, enable, dt, theta_p, bench_p):  # pragma: no cover - runs as machine code
    theta = carray(theta_p, (THETA_SIZE,))
    bench = carray(bench_p, (BENCH_SIZE,))
    q, v = step(state[0], state[1], u, enable, dt, theta, bench)
    state[0] = q
    state[1] = v


@cfunc(types.void(_p, _f, _f, _f, _f, _p, _p), cache=True)
def step_with_c(state, u, enable, extra, dt, theta_p, bench_p):  # pragma: no cover
    q, v = bench_step_with(state[0], state[1], u, enable, extra, dt,
                           carray(theta_p, (THETA_SIZE,)), carray(bench_p, (BENCH_SIZE,)))
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
