"""Firmware control laws and motor torques of the servos (docs/model.md §3), as Numba kernels.

Voltage-controlled servo (Dynamixel, Feetech)::

    duty = clip((q_target − q)·kp·error_gain·error_gain_ratio, −max_pwm, max_pwm)
    u    = V = vin·duty                                            (V)
    τ_m  = enable·(k_t·V/R − k_t²·v/R)                             (N·m)

with, on the sts3215 (``MAX_VELOCITY`` > 0), the firmware target first
rate-limited: q_smooth ← clip(q_target, q_smooth − ω_max·dt, q_smooth + ω_max·dt).

The Feetech position loop as it runs on a robot (docs/model.md §12), each part off at 0:

- a D term on the error's rate, in the firmware's register units: with e = q_smooth − q,
  duty = clip((kp·e + k_d·T_d·(e − e_prev)/dt)·error_gain·error_gain_ratio, ±max_pwm),
  k_d the ``D_Coefficient`` (``bench[KD]``), T_d the identified ``derivative_time`` (s);
- a dead band: |e| ≤ ``DEAD_BAND`` gives duty 0 (the motor is not driven);
- a torque limit: the duty saturates at max_pwm·``TORQUE_LIMIT`` (``Max_Torque_Limit``/1000);
- an acceleration limit on the internal target (``Acceleration``): its velocity r changes by
  at most a·dt per period, towards ±min(ω_max, a·dt·(√(1/4 + 2·|q_target − q_smooth|/(a·dt²))
  − 1/2)) (the fastest speed that still stops on the target, slowing by a·dt per period),
  then q_smooth ← q_smooth + r·dt, settling on the target once it reaches or passes it.

Current-controlled servo (eRob)::

    u = i = clip(kp·(q_target − q) − d·√kp·v, −i_max, i_max)        (A)
    τ_m   = clip(enable·k_t·i, −k_t·V_max/R − k_t²·v/R, k_t·V_max/R − k_t²·v/R)

The back-EMF window is applied after the enable flag, so a disabled eRob spun
faster than V_max/k_t brakes.

The electrical extensions of docs/model.md §9, each off when its ``theta`` entry is 0:

- ``current_limit`` (voltage law): the motor current (V − k_t·v)/R levels off smoothly at
  ±i_lim, i = i_lim·tanh((V − k_t·v)/(R·i_lim)), τ_m = enable·k_t·i. docs/model.md §9 writes a
  hard clip; the smooth saturation is what the logs support (the firmware's current
  loop and the driver's limit act gradually): on the 12 XL330 logs, leave-one-gain-out
  over kp 200/400/800 with the limit at the e-manual's 1.75 A, M4 and M6 predict a
  held-out gain at 39.7 and 36.2 mrad with it and at 50.9 and 41.7 mrad with a clip
  (51.5 and 50.4 without a limit; measured with the fitter's earlier two-run exploration;
  the README has the table). Well below i_lim the two
  agree to second order, far above it both give ±i_lim;
- ``supply``: the law uses the supply voltage of the moment instead of the constant
  vin: the log's ``input_volts`` at that entry, or, without a log, a source with
  internal resistance, vin = E − R_s·|i| (:func:`supply_voltage`; i the motor current
  of the previous physics step, summed over the servos sharing the supply);
- ``latency``: the firmware acts on the position and velocity measured L control
  periods earlier.

The servo's state from one control period to the next (limiter, measurement history,
supply current) and the order of the work of a period are :mod:`frictionsim.servo_unit`'s:
every loop calls that unit, not these laws directly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.errors import ConfigurationError
from frictionsim.layout import (
    ACCELERATION,
    CURRENT_LIMIT,
    DAMPING,
    DEAD_BAND,
    DERIVATIVE_TIME,
    DT,
    ERROR_GAIN,
    ERROR_GAIN_RATIO,
    KD,
    KP,
    KT,
    LATENCY,
    LAW,
    MAX_CURRENT,
    MAX_PWM,
    MAX_VELOCITY,
    MAX_VOLTAGE,
    RESISTANCE,
    SUPPLY,
    TORQUE_LIMIT,
    VIN,
    VOLTAGE_LAW,
)


class Control(NamedTuple):
    """The firmware's output: control ``u`` (V or A) and its new limiter state ``q_smooth`` (rad)."""

    u: float
    q_smooth: float


class FirmwareState(NamedTuple):
    """One period of the firmware with its memory: control ``u`` (V or A), the internal
    target ``q_smooth`` (rad) and its velocity ``rate`` (rad/s), and the position error
    ``error`` (rad) the D term differentiates at the next period."""

    u: float
    q_smooth: float
    rate: float
    error: float


@njit(cache=True, inline="always")
def clip(x: float, lo: float, hi: float) -> float:
    """min(max(x, lo), hi), as numpy.clip on a scalar."""
    return min(max(x, lo), hi)


@njit(cache=True, inline="always")
def limited_target(q_target: float, q_smooth: float, max_velocity: float, dt: float) -> float:
    """sts3215 target-speed limiter with ω_max = ``max_velocity`` (rad/s; ≤ 0: off) over a
    control period ``dt`` (s): the new internal target (rad)."""
    if max_velocity <= 0.0:
        return q_target
    step = max_velocity * dt
    return clip(q_target, q_smooth - step, q_smooth + step)


@njit(cache=True, inline="always")
def profiled_target(q_target: float, q_smooth: float, rate: float, max_velocity: float,
                    acceleration: float, dt: float) -> tuple:
    """The internal target (rad) and its velocity (rad/s) after one period ``dt`` (s): the
    speed limiter alone when ``acceleration`` ≤ 0, else the acceleration-limited profile of
    the module docstring (speed at most ``max_velocity`` when > 0)."""
    if acceleration <= 0.0:
        return limited_target(q_target, q_smooth, max_velocity, dt), 0.0
    remaining = q_target - q_smooth
    # the fastest speed from which steps slowing by a·dt each period stop on the target (the
    # discrete form of √(2·a·|e|): speeds n·a·dt, (n−1)·a·dt, … cover a·dt²·n(n+1)/2)
    dv = acceleration * dt
    stopping = math.copysign(dv * (math.sqrt(0.25 + 2.0 * abs(remaining) / (dv * dt)) - 0.5),
                             remaining)
    if max_velocity > 0.0:
        stopping = clip(stopping, -max_velocity, max_velocity)
    rate = clip(stopping, rate - acceleration * dt, rate + acceleration * dt)
    q_next = q_smooth + rate * dt
    if (q_target - q_next) * remaining <= 0.0:  # reached or passed: no overshoot
        return q_target, 0.0
    return q_next, rate


@njit(cache=True, inline="always")
def feetech_duty(error: float, error_rate: float, theta: np.ndarray, bench: np.ndarray) -> float:
    """The Feetech position loop's duty cycle (module docstring): the dead band, the P and D
    terms, the torque limit. ``error`` (rad), ``error_rate`` (rad/s)."""
    return feetech_lane_duty(error, error_rate, theta[DEAD_BAND], theta[MAX_PWM],
                             bench[TORQUE_LIMIT], theta[ERROR_GAIN], theta[ERROR_GAIN_RATIO],
                             bench[KP], bench[KD], theta[DERIVATIVE_TIME])


@njit(cache=True, inline="always")
def feetech_lane_duty(error: float, error_rate: float, dead_band: float, max_pwm: float,
                      limit: float, error_gain: float, ratio: float, kp: float, kd: float,
                      derivative_time: float) -> float:
    """:func:`feetech_duty` on scalars (the form a loop over lock-step lanes vectorises: its
    branches are selects): 0 inside the dead band, else clip((error·kp + kd·T_d·error_rate)·
    error_gain·ratio, ±max_pwm·limit) (the torque limit a fraction of full duty; 0: none)."""
    if dead_band > 0.0 and abs(error) <= dead_band:
        return 0.0
    max_pwm = max_pwm * limit if limit > 0.0 else max_pwm
    gain = error_gain * ratio
    drive = error * kp + kd * derivative_time * error_rate
    return clip(drive * gain, -max_pwm, max_pwm)


@njit(cache=True, inline="always")
def plain_voltage_law(theta: np.ndarray, bench: np.ndarray) -> bool:
    """Whether the voltage law runs without the Feetech terms (none of them set)."""
    return (bench[KD] * theta[DERIVATIVE_TIME] == 0.0 and theta[DEAD_BAND] == 0.0
            and bench[TORQUE_LIMIT] == 0.0 and bench[ACCELERATION] == 0.0)


@njit(cache=True, inline="always")
def voltage_duty(error: float, kp: float, error_gain: float, ratio: float,
                 max_pwm: float) -> float:
    """The voltage law's duty cycle for a position error (rad): clip(error·kp·error_gain·ratio,
    ±max_pwm)."""
    return clip(error * kp * error_gain * ratio, -max_pwm, max_pwm)


@njit(cache=True, inline="always")
def voltage_control(q_target: float, q: float, q_smooth: float, vin: float, kp: float,
                    error_gain: float, ratio: float, max_pwm: float, max_velocity: float,
                    dt: float) -> Control:
    """The voltage law on scalars: the limiter, then u = vin·clip((q_smooth − q)·kp·error_gain·
    ratio, ±max_pwm) (V); the new limiter state. The lock-step kernel calls it lane by lane."""
    q_smooth = limited_target(q_target, q_smooth, max_velocity, dt)
    return Control(vin * voltage_duty(q_smooth - q, kp, error_gain, ratio, max_pwm), q_smooth)


@njit(cache=True, inline="always")
def feetech_lane_law(q_target: float, q: float, q_smooth: float, rate: float,
                     error_prev: float, vin: float, max_velocity: float, acceleration: float,
                     dt: float, dead_band: float, max_pwm: float, limit: float,
                     error_gain: float, ratio: float, kp: float, kd: float,
                     derivative_time: float) -> FirmwareState:
    """:func:`firmware_law`'s voltage law with the Feetech terms, on scalars (the lock-step
    lanes call it): the internal target's profile (:func:`profiled_target`), the error to it,
    its rate since the last period (0 at the first, ``error_prev`` NaN), then ``vin`` times
    :func:`feetech_lane_duty`."""
    target, rate = profiled_target(q_target, q_smooth, rate, max_velocity, acceleration, dt)
    error = target - q
    error_rate = (error - error_prev) / dt if math.isfinite(error_prev) else 0.0
    return FirmwareState(vin * feetech_lane_duty(error, error_rate, dead_band, max_pwm, limit,
                                                 error_gain, ratio, kp, kd, derivative_time),
                         target, rate, error)


@njit(cache=True, inline="always")
def firmware_law(
    q_target: float, q: float, v: float, q_smooth: float, rate: float, error_prev: float,
    vin: float, theta: np.ndarray, bench: np.ndarray,
) -> FirmwareState:
    """One control period of the firmware with the supply voltage ``vin`` (V) of the moment:
    ``FirmwareState(u, q_smooth, rate, error)``.

    u is volts (voltage law) or amps (current law). q, v: the position (rad) and velocity
    (rad/s) the firmware acts on; q_smooth, rate: the internal target (rad) and its velocity
    (rad/s) after the last period; error_prev: the last period's error (rad; NaN before the
    first period: no D term then). Servos without a limiter return q_target as the new
    target, so callers thread the state uniformly. This is the law alone:
    :func:`frictionsim.servo_unit.servo_control` adds what the firmware measures (``latency``)
    and the supply of the moment (``supply``), and keeps the state.
    """
    if theta[LAW] == VOLTAGE_LAW:
        if plain_voltage_law(theta, bench):
            c = voltage_control(q_target, q, q_smooth, vin, bench[KP], theta[ERROR_GAIN],
                                theta[ERROR_GAIN_RATIO], theta[MAX_PWM], theta[MAX_VELOCITY],
                                bench[DT])
            return FirmwareState(c.u, c.q_smooth, 0.0, c.q_smooth - q)
        return feetech_lane_law(q_target, q, q_smooth, rate, error_prev, vin,
                                theta[MAX_VELOCITY], bench[ACCELERATION], bench[DT],
                                theta[DEAD_BAND], theta[MAX_PWM], bench[TORQUE_LIMIT],
                                theta[ERROR_GAIN], theta[ERROR_GAIN_RATIO], bench[KP],
                                bench[KD], theta[DERIVATIVE_TIME])
    kp = bench[KP]
    amps = (q_target - q) * kp + bench[DAMPING] * math.sqrt(kp) * (0.0 - v)
    return FirmwareState(clip(amps, -theta[MAX_CURRENT], theta[MAX_CURRENT]), q_target, 0.0,
                         q_target - q)


@njit(cache=True, inline="always")
def firmware_control(
    q_target: float, q: float, v: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray
) -> Control:
    """:func:`firmware_law` at the bench's constant supply ``bench[VIN]``: ``Control(u,
    q_smooth)``, for a servo with neither ``latency`` nor ``supply``, nor a D term or an
    acceleration limit: it keeps no measurement history, motor current, last error or target
    velocity, so it refuses (ValueError naming the feature) a ``theta``/``bench`` that enables
    one rather than ignore it. :func:`frictionsim.servo_unit.servo_control` honours them all."""
    if theta[LATENCY] != 0.0:
        raise ConfigurationError("firmware_control cannot honour the latency extension (it keeps no "
                                 "measurement history): use frictionsim.servo_unit.servo_control")
    if theta[SUPPLY] != 0.0:
        raise ConfigurationError("firmware_control cannot honour the supply extension (it keeps no "
                                 "supply state): use frictionsim.servo_unit.servo_control")
    if bench[KD] * theta[DERIVATIVE_TIME] != 0.0:
        raise ConfigurationError("firmware_control cannot honour the D term (it keeps no last error): "
                                 "use frictionsim.servo_unit.servo_control")
    if bench[ACCELERATION] != 0.0:
        raise ConfigurationError("firmware_control cannot honour the acceleration limit (it keeps no "
                                 "target velocity): use frictionsim.servo_unit.servo_control")
    out = firmware_law(q_target, q, v, q_smooth, 0.0, math.nan, bench[VIN], theta, bench)
    return Control(out.u, out.q_smooth)


@njit(cache=True, inline="always")
def supply_voltage(logged: float, drawn: float, on: float, emf: float, resistance: float,
                   vin: float) -> float:
    """The supply the voltage law uses (V). ``on`` ≤ 0 (``supply`` off): the constant ``vin``.
    On: the ``logged`` input voltage when one is logged (finite), else a source of EMF ``emf``
    (V) and internal resistance ``resistance`` (Ω) under the current ``drawn`` (A):
    emf − resistance·|drawn|."""
    if on <= 0.0:
        return vin
    if math.isfinite(logged):
        return logged
    return emf - resistance * abs(drawn)


@njit(cache=True, inline="always")
def motor_current(u: float, v: float, theta: np.ndarray) -> float:
    """Motor current (A) of the voltage law, (V − k_t·v)/R, saturated by ``current_limit``
    (i_lim·tanh(i/i_lim)); the current law's command u itself."""
    if theta[LAW] != VOLTAGE_LAW:
        return u
    i = (u - theta[KT] * v) / theta[RESISTANCE]
    limit = theta[CURRENT_LIMIT]
    return limit * math.tanh(i / limit) if limit > 0.0 else i


@njit(cache=True, inline="always")
def voltage_motor_torque(u: float, enable: float, v: float, kt: float, r: float,
                         limit: float) -> float:
    """τ_m (N·m) of the voltage law: enable·(k_t·V/R − k_t²·v/R), or with a current limit
    ``limit`` > 0 (A) enable·k_t·i_lim·tanh((V − k_t·v)/(R·i_lim))."""
    if limit > 0.0:
        return enable * kt * limit * math.tanh((u - kt * v) / (r * limit))
    return enable * (kt * u / r - kt**2 * v / r)


@njit(cache=True, inline="always")
def motor_torque(u: float, enable: float, v: float, theta: np.ndarray) -> float:
    """Motor torque τ_m (N·m) from control u (V or A), enable flag (0/1) and velocity v (rad/s)."""
    kt = theta[KT]
    r = theta[RESISTANCE]
    if theta[LAW] == VOLTAGE_LAW:
        return voltage_motor_torque(u, enable, v, kt, r, theta[CURRENT_LIMIT])
    emf = kt**2 * v / r
    window = kt * theta[MAX_VOLTAGE] / r
    return clip(enable * kt * u, -window - emf, window - emf)
