"""The servo bank, batched: :mod:`frictionsim.servo_bank`'s control period and physics step of
every servo of every world, as Warp functions and kernels.

The order of a period is the Numba bank's: the servos of a world on one supply share it (each
then sees the sum of the currents drawn at the last physics step), then per servo a learned
network's torque on its error and velocity history (held), the position it reports
(``observation_delay``), the torque enable latched, what the firmware measures (``latency``),
the supply of the moment and the firmware law, whose control it holds. A physics step draws
each servo's current (``supply``) and gives the torques the physics applies: τ_m of the held
control and the held network torque.

Memory (named shapes, MuJoCo Warp's convention): ``records`` (nworld, nservo,
SERVO_STATE_SIZE), ``thetas`` (nworld, nservo, THETA_SIZE), ``firmware`` (nworld, nservo,
BENCH_SIZE), ``nets`` (nservo, net width: a row per servo, first entry 0 without a network),
``work`` (nworld, nservo, :func:`~frictionsim.solvers.batched.memory.net_work_size`). A world may
carry its own parameters (domain randomisation): every world has its rows.

The functions read a period's records from ``rin`` and write the next into ``rout``
(:mod:`~frictionsim.solvers.batched.unit`: in place with ``full`` False, or every field into a
new array with ``full`` True for the reverse mode). The kernels below run a world per thread
and are what the equivalence test holds to the Numba bank.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.layout import (
    BACKLASH,
    KP,
    NET_HISTORY,
    NET_RING,
    NET_STRIDE,
    OBSERVED_SIZE,
    SERVO_CONTACT,
    SERVO_CURRENT,
    SERVO_DRAWN,
    SERVO_ENABLE,
    SERVO_ERROR,
    SERVO_ERRORS,
    SERVO_EXTRA,
    SERVO_GAP,
    SERVO_HISTORY,
    SERVO_MOTOR_SPEED,
    SERVO_OBSERVED,
    SERVO_PERIODS,
    SERVO_Q_SMOOTH,
    SERVO_RATE,
    SERVO_REPORTED,
    SERVO_U,
    SERVO_VELOCITIES,
    SERVO_VIN,
)
from frictionsim.solvers.batched.laws import firmware_law, motor_torque
from frictionsim.solvers.batched.memory import ENABLE, GOAL, POSITION, VELOCITY
from frictionsim.solvers.batched.net import net_torque
from frictionsim.solvers.batched.unit import (
    RING,
    drawn_current,
    draws,
    keep,
    measured,
    observe,
    reset_record,
    ring_value,
    supply_at,
    write_ring,
)


@wp.func
def network_torque(rin: wp.array3d(dtype=Any), e: int, j: int, nets: wp.array2d(dtype=Any),
                   work: wp.array3d(dtype=Any), error: Any, velocity: Any, kp: Any,
                   enable: Any):
    """(a learned actuator's torque this period (N·m), the ring slot the error and velocity go
    into): the input from the samples NET_STRIDE periods apart, the first period's standing
    in for those before it, then kp and enable (:func:`frictionsim.servo_bank.network_torque`)."""
    k = int(rin[e, j, SERVO_PERIODS])
    slot = k % NET_RING
    for h in range(NET_HISTORY):
        i = wp.max(k - h * NET_STRIDE, 0) % NET_RING
        work[e, j, h] = ring_value(rin, e, j, SERVO_ERRORS, i, slot, error)
        work[e, j, NET_HISTORY + h] = ring_value(rin, e, j, SERVO_VELOCITIES, i, slot, velocity)
    work[e, j, 2 * NET_HISTORY] = kp
    work[e, j, 2 * NET_HISTORY + 1] = enable
    return net_torque(nets, j, work, e), slot


@wp.func
def servo_period(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int, j: int,
                 thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
                 nets: wp.array2d(dtype=Any), work: wp.array3d(dtype=Any), goal: Any, q: Any,
                 v: Any, enable: Any, logged: Any, period: Any, drawn: Any, full: bool):
    """One control period of servo j of world e (:func:`frictionsim.servo_bank.learned_period`):
    its network (a row of ``nets`` starting with 0: none), its report, its enable, its
    firmware; ``drawn`` the current (A) its supply delivered (shared or its own),
    ``logged`` a logged supply (V, NaN: none), ``period`` the control period (s)."""
    has_net = nets[j, 0] > type(q)(0.0)
    extra = rin[e, j, SERVO_EXTRA]
    net_slot = int(-1)
    if has_net:
        extra, net_slot = network_torque(rin, e, j, nets, work, goal - q, v,
                                         firmware[e, j, KP], enable)
    reported, observed_slot = observe(rin, e, j, q, period, thetas)
    q_m, v_m, history_slot = measured(rin, e, j, q, v, thetas)
    vin = supply_at(drawn, logged, thetas, firmware, e, j)
    u, q_smooth, rate, error = firmware_law(goal, q_m, v_m, rin[e, j, SERVO_Q_SMOOTH],
                                            rin[e, j, SERVO_RATE], rin[e, j, SERVO_ERROR], vin,
                                            thetas, firmware, e, j)
    periods = rin[e, j, SERVO_PERIODS] + type(q)(1.0)
    rout[e, j, SERVO_EXTRA] = extra
    write_ring(rin, rout, e, j, SERVO_ERRORS, NET_RING, 1, net_slot, goal - q, full)
    write_ring(rin, rout, e, j, SERVO_VELOCITIES, NET_RING, 1, net_slot, v, full)
    rout[e, j, SERVO_REPORTED] = reported
    write_ring(rin, rout, e, j, SERVO_OBSERVED, OBSERVED_SIZE, 1, observed_slot, q, full)
    rout[e, j, SERVO_ENABLE] = enable
    write_ring(rin, rout, e, j, SERVO_HISTORY, RING, 2, history_slot, q, full)
    write_ring(rin, rout, e, j, SERVO_HISTORY + 1, RING, 2, history_slot, v, full)
    rout[e, j, SERVO_DRAWN] = drawn
    rout[e, j, SERVO_U] = u
    rout[e, j, SERVO_Q_SMOOTH] = q_smooth
    rout[e, j, SERVO_RATE] = rate
    rout[e, j, SERVO_ERROR] = error
    rout[e, j, SERVO_PERIODS] = periods
    rout[e, j, SERVO_VIN] = vin
    keep(rin, rout, e, j, SERVO_CURRENT, full)
    keep(rin, rout, e, j, SERVO_GAP, full)
    keep(rin, rout, e, j, SERVO_MOTOR_SPEED, full)
    keep(rin, rout, e, j, SERVO_CONTACT, full)
    return u


@wp.func
def world_period(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int,
                 thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
                 nets: wp.array2d(dtype=Any), work: wp.array3d(dtype=Any),
                 per_servo: wp.array3d(dtype=Any), logged: Any, period: Any,
                 shared_supply: bool, full: bool):
    """One control period of every servo of world e (:func:`frictionsim.servo_bank.bank_period`,
    fixed-step engines: the current is drawn at each physics step): each servo's goal,
    position, velocity and enable flag in ``per_servo[e, GOAL | POSITION | VELOCITY | ENABLE]``
    (:mod:`~frictionsim.solvers.batched.memory`); ``shared_supply``: the world's servos on one
    supply."""
    servos = rin.shape[1]
    total = rin[e, 0, SERVO_CURRENT] * type(logged)(0.0)
    if shared_supply:
        for j in range(servos):
            total = total + rin[e, j, SERVO_CURRENT]
    for j in range(servos):
        drawn = rin[e, j, SERVO_DRAWN]
        if shared_supply:
            drawn = total
        servo_period(rin, rout, e, j, thetas, firmware, nets, work, per_servo[e, GOAL, j],
                     per_servo[e, POSITION, j], per_servo[e, VELOCITY, j],
                     per_servo[e, ENABLE, j], logged, period, drawn, full)


@wp.func
def servo_step(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int, j: int,
               thetas: wp.array3d(dtype=Any), v: Any, full: bool):
    """One physics step of servo j at its joint's velocity v (rad/s): the current it draws
    (``supply``), at the motor side's speed where its gear's gap is open
    (:func:`frictionsim.servo_bank.step_servo`). Returns (τ_m of the held control at that
    speed, the held network torque), N·m."""
    speed = v
    if thetas[e, j, BACKLASH] > type(v)(0.0) and rin[e, j, SERVO_CONTACT] == type(v)(0.0):
        speed = rin[e, j, SERVO_MOTOR_SPEED]
    u = rin[e, j, SERVO_U]
    enable = rin[e, j, SERVO_ENABLE]
    if draws(thetas, e, j):
        current = drawn_current(u, enable, speed, thetas, e, j)
        rout[e, j, SERVO_CURRENT] = current
        rout[e, j, SERVO_DRAWN] = current
    else:
        keep(rin, rout, e, j, SERVO_CURRENT, full)
        keep(rin, rout, e, j, SERVO_DRAWN, full)
    if full:
        copy_except_current(rin, rout, e, j)
    return motor_torque(u, enable, speed, thetas, e, j), rin[e, j, SERVO_EXTRA]


@wp.func
def copy_except_current(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int,
                        j: int):
    """Every field but the current drawn, copied (a physics step changes nothing else)."""
    for column in range(rin.shape[2]):
        if column != SERVO_CURRENT and column != SERVO_DRAWN:
            rout[e, j, column] = rin[e, j, column]


@wp.func
def held_torque(records: wp.array3d(dtype=Any), e: int, j: int, thetas: wp.array3d(dtype=Any),
                v: Any):
    """τ_m (N·m) of the held control at velocity v with the latched enable; changes nothing."""
    return motor_torque(records[e, j, SERVO_U], records[e, j, SERVO_ENABLE], v, thetas, e, j)


# ----------------------------------------------------------------------------- the kernels

@wp.kernel
def reset_kernel(records: wp.array3d(dtype=Any), q: wp.array2d(dtype=Any),
                 v: wp.array2d(dtype=Any)):
    """Every record reset at q, v (nworld, nservo) (:func:`frictionsim.servo_bank.bank_reset`)."""
    e, j = wp.tid()
    reset_record(records, e, j, q[e, j], v[e, j])


@wp.kernel
def period_kernel(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any),
                  thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
                  nets: wp.array2d(dtype=Any), work: wp.array3d(dtype=Any),
                  per_servo: wp.array3d(dtype=Any), logged: wp.array(dtype=Any),
                  period: wp.array(dtype=Any), shared_supply: bool, full: bool):
    """One control period of every servo of every world (a thread per world; the goals, q, v
    and enable flags in ``per_servo``): ``logged`` a logged supply per world (V, NaN: none),
    ``period`` the control period per world (s)."""
    e = wp.tid()
    world_period(rin, rout, e, thetas, firmware, nets, work, per_servo, logged[e], period[e],
                 shared_supply, full)


@wp.kernel
def step_kernel(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any),
                thetas: wp.array3d(dtype=Any), v: wp.array2d(dtype=Any), full: bool,
                motor: wp.array2d(dtype=Any), extra: wp.array2d(dtype=Any)):
    """One physics step of every servo (a thread per servo): the currents drawn, τ_m and the
    held network torque into ``motor`` and ``extra`` (nworld, nservo)
    (:func:`frictionsim.servo_bank.bank_step`)."""
    e, j = wp.tid()
    tau_m, held = servo_step(rin, rout, e, j, thetas, v[e, j], full)
    motor[e, j] = tau_m
    extra[e, j] = held
