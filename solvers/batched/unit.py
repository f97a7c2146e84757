"""One servo's record and the pieces of its control period, as Warp functions:
:mod:`frictionsim.servo_unit`, formula for formula.

A record is row (e, j) of a records array (worlds × servos × :data:`~frictionsim.layout.SERVO_STATE_SIZE`),
its fields at the columns :mod:`frictionsim.layout` names (``SERVO_U``, ``SERVO_Q_SMOOTH``, …):
the Numba bank's memory, so that the equivalence test compares them field by field.

**Records in, records out.** The bank (:mod:`frictionsim.solvers.batched.bank`) reads a
period's record from ``rin`` and writes the next into ``rout``, every field once. The engines
pass one array for both (in place, ``full`` False: only the fields that change are written);
the training through the rollout passes two (``full`` True: every field is written, so the
reverse mode finds each value it needs where the forward pass left it). The pieces here
therefore read, and the bank writes: a ring's new slot is substituted where it is read
(:func:`ring_value`), never written and read back.

Ring indices are whole numbers kept non-negative before ``%`` (Warp's remainder is C's).
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.layout import (
    LATENCY,
    MAX_LATENCY,
    MAX_OBSERVATION_PERIODS,
    NET_RING,
    OBSERVATION_DELAY,
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
    SUPPLY,
    SUPPLY_EMF,
    SUPPLY_RESISTANCE,
    VIN,
)
from frictionsim.solvers.batched.laws import motor_current, supply_voltage

#: Slots of the measurement history (``latency``).
RING = MAX_LATENCY + 1


@wp.func
def reset_record(rout: wp.array3d(dtype=Any), e: int, j: int, q: Any, v: Any):
    """The record at position q (rad) and velocity v (rad/s): no control, the limiter at q,
    the histories full of the initial state, torque enabled, no network torque, the gear not
    yet settled (:func:`frictionsim.servo_unit.reset_record`)."""
    zero = type(q)(0.0)
    nan = type(q)(wp.nan)
    rout[e, j, SERVO_U] = zero
    rout[e, j, SERVO_Q_SMOOTH] = q
    rout[e, j, SERVO_PERIODS] = zero
    rout[e, j, SERVO_CURRENT] = zero
    rout[e, j, SERVO_DRAWN] = zero
    rout[e, j, SERVO_VIN] = nan
    rout[e, j, SERVO_ERROR] = nan
    rout[e, j, SERVO_RATE] = zero
    for slot in range(RING):
        rout[e, j, SERVO_HISTORY + 2 * slot] = q
        rout[e, j, SERVO_HISTORY + 2 * slot + 1] = v
    rout[e, j, SERVO_REPORTED] = q
    for slot in range(OBSERVED_SIZE):
        rout[e, j, SERVO_OBSERVED + slot] = q
    rout[e, j, SERVO_ENABLE] = type(q)(1.0)
    rout[e, j, SERVO_EXTRA] = zero
    for slot in range(NET_RING):
        rout[e, j, SERVO_ERRORS + slot] = zero
        rout[e, j, SERVO_VELOCITIES + slot] = zero
    rout[e, j, SERVO_GAP] = zero
    rout[e, j, SERVO_MOTOR_SPEED] = v
    rout[e, j, SERVO_CONTACT] = nan


@wp.func
def ring_value(rin: wp.array3d(dtype=Any), e: int, j: int, column: int, slot: int,
               written: int, value: Any):
    """Slot ``slot`` of the ring at ``column`` as it is after this period writes ``value``
    into slot ``written`` (−1: none)."""
    if slot == written:
        return value
    return rin[e, j, column + slot]


@wp.func
def write_ring(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int, j: int,
               column: int, size: int, stride: int, written: int, value: Any, full: bool):
    """The ring at ``column`` (``size`` slots ``stride`` apart) into ``rout`` with ``value`` in
    slot ``written`` (−1: none); the other slots copied only when ``full``."""
    if full:
        for slot in range(size):
            if slot == written:
                rout[e, j, column + stride * slot] = value
            else:
                rout[e, j, column + stride * slot] = rin[e, j, column + stride * slot]
    elif written >= 0:
        rout[e, j, column + stride * written] = value


@wp.func
def observe(rin: wp.array3d(dtype=Any), e: int, j: int, q: Any, period: Any,
            thetas: wp.array3d(dtype=Any)):
    """(the position reported this period, the slot of the ring q goes into, −1: none): with
    ``observation_delay`` d the position of d seconds ago, linear between the two periods
    around it (:func:`frictionsim.servo_unit.observe`)."""
    delay = thetas[e, j, OBSERVATION_DELAY]
    if delay == type(q)(0.0):
        return q, -1
    k = int(rin[e, j, SERVO_PERIODS])
    slot = k % OBSERVED_SIZE
    lag = delay / period
    m = int(lag)
    f = lag - type(q)(m)
    if m > MAX_OBSERVATION_PERIODS:
        m = MAX_OBSERVATION_PERIODS
        f = type(q)(1.0)
    late = ring_value(rin, e, j, SERVO_OBSERVED, (k - m + OBSERVED_SIZE) % OBSERVED_SIZE, slot, q)
    early = ring_value(rin, e, j, SERVO_OBSERVED, (k - m - 1 + OBSERVED_SIZE) % OBSERVED_SIZE,
                       slot, q)
    return (type(q)(1.0) - f) * late + f * early, slot


@wp.func
def measured(rin: wp.array3d(dtype=Any), e: int, j: int, q: Any, v: Any,
             thetas: wp.array3d(dtype=Any)):
    """(q, v the firmware acts on, the history slot (q, v) go into, −1: none): with
    ``latency`` L the state of L periods ago (:func:`frictionsim.servo_unit.measured`)."""
    lag = int(thetas[e, j, LATENCY])
    if lag == 0:
        return q, v, -1
    k = int(rin[e, j, SERVO_PERIODS])
    slot = k % RING
    old = (k - lag + RING) % RING
    return rin[e, j, SERVO_HISTORY + 2 * old], rin[e, j, SERVO_HISTORY + 2 * old + 1], slot


@wp.func
def supply_at(drawn: Any, logged: Any, thetas: wp.array3d(dtype=Any),
              firmware: wp.array3d(dtype=Any), e: int, j: int):
    """The supply voltage (V) of this period under the current ``drawn`` (A)
    (:func:`frictionsim.servo_unit.supply_at`)."""
    return supply_voltage(logged, drawn, thetas[e, j, SUPPLY], thetas[e, j, SUPPLY_EMF],
                          thetas[e, j, SUPPLY_RESISTANCE], firmware[e, j, VIN])


@wp.func
def drawn_current(u: Any, enable: Any, v: Any, thetas: wp.array3d(dtype=Any), e: int, j: int):
    """The motor current (A) the servo draws at velocity v with its held control u
    (:func:`frictionsim.servo_unit.draw_current`, which records it with ``supply`` on)."""
    return enable * motor_current(u, v, thetas, e, j)


@wp.func
def draws(thetas: wp.array3d(dtype=Any), e: int, j: int):
    """Whether the servo records the current it draws (``supply`` on)."""
    return thetas[e, j, SUPPLY] > type(thetas[e, j, SUPPLY])(0.0)


@wp.func
def keep(rin: wp.array3d(dtype=Any), rout: wp.array3d(dtype=Any), e: int, j: int, column: int,
         full: bool):
    """A field a step leaves as it was: copied into ``rout`` when ``full``."""
    if full:
        rout[e, j, column] = rin[e, j, column]


# the record's fields a period writes (the bank) and those it leaves (copied when ``full``)
PERIOD_KEEPS = (SERVO_CURRENT, SERVO_GAP, SERVO_MOTOR_SPEED, SERVO_CONTACT)
