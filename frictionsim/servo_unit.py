"""One servo's record and the pieces of its control period; the servo bank composes them.

A servo's firmware and motor carry a small state from one control period to the next: the
control it holds, the sts3215 limiter's internal target, the positions it measured (for
``latency``), the motor current it draws (for a sagging ``supply``), the torque-enable flag
and a learned network's torque and history. That state is one float64 vector, the *servo
record* (``layout.SERVO_*``, :data:`~frictionsim.layout.SERVO_STATE_SIZE` doubles). These
functions are the pieces that read and write it:

- :func:`servo_reset` (or :func:`servo_state`, which allocates one): before the first period,
  from the initial position q0 (rad) and velocity v0 (rad/s);
- :func:`servo_observe`: the position the servo reports (logs, its present-position
  register), which with ``observation_delay`` is the physical one of that many seconds ago;
- :func:`servo_control`: what the firmware measures (the state of ``latency_steps``
  periods ago), the supply voltage of the moment (constant ``vin``; with ``supply`` the
  logged ``input_volts``, or without a log E − R_s·|i_drawn|), and the firmware law
  (:func:`frictionsim.actuator_laws.firmware_law`); returns the control u (V or A) it then
  holds;
- :func:`servo_torque`: the motor torque τ_m (N·m) of the held control at velocity v, with
  ``current_limit`` (:func:`frictionsim.actuator_laws.motor_torque`); pure, so an
  event-driven right-hand side may call it;
- :func:`servo_draw`: records the motor current the servo draws (with ``supply`` only);
- :func:`share_supply`: servos on one supply see the sum of their currents.

**The order of a period is not written here but once, in the servo bank**
(:mod:`frictionsim.servo_bank`): observe, share the supply, feed a learned network,
run the firmware, draw the current at each physics step. Every engine drives the bank; use
its :func:`~frictionsim.servo_bank.period_servo` and
:func:`~frictionsim.servo_bank.step_servo` in a loop of your own. A firmware feature (the
Feetech D term, dead band, torque and acceleration limits were the first) is a change of
the law :func:`servo_control` calls, of the record and of :func:`lockstep_compatible`,
nowhere else.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from frictionsim.actuator_laws import (
    firmware_law,
    motor_current,
    motor_torque,
    plain_voltage_law,
    supply_voltage,
)
from frictionsim.errors import ConfigurationError
from frictionsim.layout import (
    BACKLASH,
    CURRENT_LIMIT,
    LATENCY,
    LAW,
    MAX_LATENCY,
    MAX_OBSERVATION_PERIODS,
    MESHING_AMPLITUDE,
    NET_RING,
    OBSERVATION_DELAY,
    OBSERVED_SIZE,
    RIPPLE_AMPLITUDE,
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
    SERVO_STATE_SIZE,
    SERVO_U,
    SERVO_VELOCITIES,
    SERVO_VIN,
    SUPPLY,
    SUPPLY_EMF,
    SUPPLY_RESISTANCE,
    VIN,
    VOLTAGE_LAW,
)
from frictionsim.vector_checks import SERVO_MESSAGE, check_record_theta, check_servo

#: ``logged_vin`` of :func:`servo_control` when no supply voltage was logged (robots, the
#: virtual servo, your own loop): with ``supply`` the source model E − R_s·|i| is used.
NO_LOG = math.nan


# The history is indexed inside the record, never sliced out of it: a slice would be a new,
# reference-counted array view at every control period of every lock-step lane.
@njit(cache=True, inline="always")
def reset_history(servo: np.ndarray, q: float, v: float) -> None:
    """Fill the firmware's measurement history with (q, v): before the first period, the
    delayed measurement is the initial state."""
    for slot in range(MAX_LATENCY + 1):
        servo[SERVO_HISTORY + 2 * slot] = q
        servo[SERVO_HISTORY + 2 * slot + 1] = v


@njit(cache=True, inline="always")
def measured(servo: np.ndarray, q: float, v: float, theta: np.ndarray) -> tuple:
    """(q, v) the firmware acts on at this control period k (``latency``): the state of period
    k − L; records the current state in the history. L = 0: (q, v) unchanged."""
    lag = int(theta[LATENCY])
    if lag == 0:
        return q, v
    k = int(servo[SERVO_PERIODS])
    slot = SERVO_HISTORY + 2 * (k % (MAX_LATENCY + 1))
    servo[slot] = q
    servo[slot + 1] = v
    old = SERVO_HISTORY + 2 * ((k - lag + MAX_LATENCY + 1) % (MAX_LATENCY + 1))
    return servo[old], servo[old + 1]


@njit(cache=True, inline="always")
def servo_reset(servo: np.ndarray, q: float, v: float) -> None:
    """Reset a servo record before the first control period, at position q (rad) and
    velocity v (rad/s): no control yet, the limiter at q, the history full of (q, v), torque
    enabled, no network torque and an empty network history."""
    if servo.shape[0] != SERVO_STATE_SIZE:
        raise ConfigurationError(SERVO_MESSAGE)
    reset_record(servo, q, v)


@njit(cache=True, inline="always")
def reset_record(servo: np.ndarray, q: float, v: float) -> None:
    """:func:`servo_reset` without its size check, for the package's parallel loops (a
    ``raise`` inside a ``prange`` body makes Numba run the loop serially)."""
    servo[SERVO_U] = 0.0
    servo[SERVO_Q_SMOOTH] = q
    servo[SERVO_PERIODS] = 0.0
    servo[SERVO_CURRENT] = 0.0
    servo[SERVO_DRAWN] = 0.0
    servo[SERVO_VIN] = math.nan
    servo[SERVO_ERROR] = math.nan
    servo[SERVO_RATE] = 0.0
    reset_history(servo, q, v)
    servo[SERVO_REPORTED] = q
    for slot in range(OBSERVED_SIZE):
        servo[SERVO_OBSERVED + slot] = q
    servo[SERVO_ENABLE] = 1.0
    servo[SERVO_EXTRA] = 0.0
    for slot in range(NET_RING):
        servo[SERVO_ERRORS + slot] = 0.0
        servo[SERVO_VELOCITIES + slot] = 0.0
    # backlash: the motor side moves with the load, and the first physics step decides which
    # end of the gap the load rests on (frictionsim.gear_gap.rest_on_gear)
    servo[SERVO_GAP] = 0.0
    servo[SERVO_MOTOR_SPEED] = v
    servo[SERVO_CONTACT] = math.nan


@njit(cache=True)
def servo_state(q: float, v: float) -> np.ndarray:
    """A new servo record (length SERVO_STATE_SIZE), reset at (q, v)."""
    servo = np.empty(SERVO_STATE_SIZE)
    servo_reset(servo, q, v)
    return servo


@njit(cache=True, inline="always")
def servo_observe(servo: np.ndarray, q: float, period: float, theta: np.ndarray) -> float:
    """The position (rad) the servo reports at this control period, q its physical position
    now (in the convention the loop passes to :func:`servo_control`), ``period`` the control
    period (s). Call it once per period, before :func:`servo_control`.

    With ``observation_delay`` d > 0 (docs/model.md §9) the report is the position of d
    seconds ago, linear between the two periods around it: with d/period = m + f (m whole,
    0 ≤ f < 1), q_reported(k) = (1 − f)·q(k − m) + f·q(k − m − 1), the position before the
    first period being the initial one. d = 0: q itself, nothing recorded. ValueError when
    d reaches back more than ``MAX_OBSERVATION_PERIODS`` periods."""
    check_record_theta(servo, theta)
    if delay_too_long(theta, period):
        raise ConfigurationError(DELAY_MESSAGE)
    return observe(servo, q, period, theta)


#: The error of a ``theta`` whose ``observation_delay`` the record's ring cannot hold.
DELAY_MESSAGE = "observation_delay reaches back more than MAX_OBSERVATION_PERIODS control periods"


@njit(cache=True, inline="always")
def delay_too_long(theta: np.ndarray, period: float) -> bool:
    """Whether ``theta``'s ``observation_delay`` reaches back more than the record keeps,
    ``MAX_OBSERVATION_PERIODS`` control periods of ``period`` s."""
    return theta[OBSERVATION_DELAY] > MAX_OBSERVATION_PERIODS * period


@njit(cache=True, inline="always")
def observe(servo: np.ndarray, q: float, period: float, theta: np.ndarray) -> float:
    """:func:`servo_observe` without its checks, for the package's loops (a delay beyond the
    ring is held at its longest, MAX_OBSERVATION_PERIODS + 1 periods)."""
    delay = theta[OBSERVATION_DELAY]
    if delay == 0.0:
        servo[SERVO_REPORTED] = q
        return q
    k = int(servo[SERVO_PERIODS])
    servo[SERVO_OBSERVED + k % OBSERVED_SIZE] = q
    lag = delay / period
    m = int(lag)
    f = lag - m
    if m > MAX_OBSERVATION_PERIODS:
        m = MAX_OBSERVATION_PERIODS
        f = 1.0
    # slots not yet written since the reset hold the initial position
    late = servo[SERVO_OBSERVED + (k - m + OBSERVED_SIZE) % OBSERVED_SIZE]
    early = servo[SERVO_OBSERVED + (k - m - 1 + OBSERVED_SIZE) % OBSERVED_SIZE]
    reported = (1.0 - f) * late + f * early
    servo[SERVO_REPORTED] = reported
    return reported


@njit(cache=True, inline="always")
def supply_at(servo: np.ndarray, logged_vin: float, theta: np.ndarray,
              bench: np.ndarray) -> float:
    """The supply voltage (V) of this period: ``bench[VIN]`` unless ``supply`` is on; then
    ``logged_vin`` when finite, else E − R_s·|i| with i the current the servo's supply
    delivered at the last physics step (:func:`servo_draw`, :func:`share_supply`)."""
    return supply_voltage(logged_vin, servo[SERVO_DRAWN], theta[SUPPLY], theta[SUPPLY_EMF],
                          theta[SUPPLY_RESISTANCE], bench[VIN])


@njit(cache=True)
def reported_supply(servo: np.ndarray, theta: np.ndarray, bench: np.ndarray) -> float:
    """The supply voltage (V) a servo reports: the one its last control period used, or,
    before the first, the one it would use now with nothing logged."""
    vin = servo[SERVO_VIN]
    return vin if math.isfinite(vin) else supply_at(servo, NO_LOG, theta, bench)


@njit(cache=True, inline="always")
def servo_control(servo: np.ndarray, q_target: float, q: float, v: float, logged_vin: float,
                  theta: np.ndarray, bench: np.ndarray) -> float:
    """One control period of the firmware: the control u (V or A) it holds until the next.

    q_target: goal position (rad); q, v: the joint's present position (rad) and velocity
    (rad/s), as the encoder reports them (no ``q_offset``); logged_vin: the supply voltage
    logged at this period (V), or :data:`NO_LOG`. With ``latency`` the law acts on the state
    ``latency_steps`` periods ago; with ``supply`` on the supply of the moment
    (:func:`supply_at`). ValueError when a vector has the wrong length.
    """
    check_servo(servo, theta, bench)
    return servo_period(servo, q_target, q, v, logged_vin, theta, bench)


@njit(cache=True, inline="always")
def servo_period(servo: np.ndarray, q_target: float, q: float, v: float, logged_vin: float,
                 theta: np.ndarray, bench: np.ndarray) -> float:
    """:func:`servo_control` without its size checks, for the package's loops that made them
    once before the loop."""
    q_m, v_m = measured(servo, q, v, theta)
    vin = supply_at(servo, logged_vin, theta, bench)
    out = firmware_law(q_target, q_m, v_m, servo[SERVO_Q_SMOOTH], servo[SERVO_RATE],
                       servo[SERVO_ERROR], vin, theta, bench)
    servo[SERVO_U] = out.u
    servo[SERVO_Q_SMOOTH] = out.q_smooth
    servo[SERVO_RATE] = out.rate
    servo[SERVO_ERROR] = out.error
    servo[SERVO_PERIODS] += 1.0
    servo[SERVO_VIN] = vin
    return out.u


@njit(cache=True, inline="always")
def servo_torque(servo: np.ndarray, enable: float, v: float, theta: np.ndarray) -> float:
    """Motor torque τ_m (N·m) of the held control at joint velocity v (rad/s), torque enable
    ``enable`` (0/1), with ``current_limit`` when on. Changes nothing."""
    check_record_theta(servo, theta)
    return motor_torque(servo[SERVO_U], enable, v, theta)


@njit(cache=True, inline="always")
def servo_draw(servo: np.ndarray, enable: float, v: float, theta: np.ndarray) -> None:
    """Record the motor current (A) the servo draws at this physics step (joint velocity v),
    for a sagging ``supply``; a no-op when ``supply`` is off."""
    check_record_theta(servo, theta)
    draw_current(servo, enable, v, theta)


@njit(cache=True, inline="always")
def draw_current(servo: np.ndarray, enable: float, v: float, theta: np.ndarray) -> None:
    """:func:`servo_draw` without its size checks, for the package's loops."""
    if theta[SUPPLY] > 0.0:
        current = enable * motor_current(servo[SERVO_U], v, theta)
        servo[SERVO_CURRENT] = current
        servo[SERVO_DRAWN] = current


@njit(cache=True, inline="always")
def share_supply(servos: np.ndarray) -> None:
    """Servos (rows of ``servos``) on one supply: each sees the sum of their currents."""
    if servos.shape[1] != SERVO_STATE_SIZE:
        raise ConfigurationError(SERVO_MESSAGE)
    total = 0.0
    for j in range(servos.shape[0]):
        total += servos[j, SERVO_CURRENT]
    for j in range(servos.shape[0]):
        servos[j, SERVO_DRAWN] = total


@njit(cache=True)
def lockstep_compatible(thetas: np.ndarray, benches: np.ndarray) -> bool:
    """Whether every row of ``thetas`` runs, with every row of ``benches``, the plain
    voltage law that the lock-step vector kernel (:mod:`frictionsim.solvers.lockstep`) writes
    out lane by lane: no ``current_limit``, no ``latency``, no ``observation_delay``, a logged
    ``supply`` at most, none of the Feetech terms, no ``backlash`` or ``ripple`` (its plant). A feature
    added to :func:`servo_control`, :func:`servo_observe` or the plant that the vector kernel
    lacks must be excluded here."""
    for i in range(thetas.shape[0]):
        if (thetas[i, LAW] != VOLTAGE_LAW or thetas[i, CURRENT_LIMIT] > 0.0
                or thetas[i, LATENCY] != 0.0 or thetas[i, OBSERVATION_DELAY] != 0.0
                or thetas[i, BACKLASH] != 0.0 or thetas[i, RIPPLE_AMPLITUDE] != 0.0
                or thetas[i, MESHING_AMPLITUDE] != 0.0):
            return False
        for j in range(benches.shape[0]):
            if not plain_voltage_law(thetas[i], benches[j]):
                return False
    return True
