"""Firmware control laws and motor torques of the servos (docs/model.md §3), as Numba kernels.

Voltage-controlled servo (Dynamixel, Feetech)::

    duty = clip((q_target − q)·kp·error_gain·error_gain_ratio, −max_pwm, max_pwm)
    u    = V = vin·duty                                            (V)
    τ_m  = enable·(k_t·V/R − k_t²·v/R)                             (N·m)

with, on the sts3215 (``MAX_VELOCITY`` > 0), the firmware target first
rate-limited: q_smooth ← clip(q_target, q_smooth − ω_max·dt, q_smooth + ω_max·dt).

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

from frictionsim.layout import (
    CURRENT_LIMIT,
    DAMPING,
    DT,
    ERROR_GAIN,
    ERROR_GAIN_RATIO,
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
    VIN,
    VOLTAGE_LAW,
)


class Control(NamedTuple):
    """The firmware's output: control ``u`` (V or A) and its new limiter state ``q_smooth`` (rad)."""

    u: float
    q_smooth: float


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
def firmware_law(
    q_target: float, q: float, v: float, q_smooth: float, vin: float, theta: np.ndarray,
    bench: np.ndarray,
) -> Control:
    """Control signal and new limiter state, ``Control(u, q_smooth)``, with the supply voltage
    ``vin`` (V) of the moment.

    u is volts (voltage law) or amps (current law). q, v: the position (rad) and velocity
    (rad/s) the firmware acts on; q_smooth: the sts3215 limiter state (rad). Servos without a
    limiter return q_target as the new state, so callers thread the state uniformly. This is
    the law alone: :func:`frictionsim.servo_unit.servo_control` adds what the firmware
    measures (``latency``) and the supply of the moment (``supply``).
    """
    if theta[LAW] == VOLTAGE_LAW:
        return voltage_control(q_target, q, q_smooth, vin, bench[KP], theta[ERROR_GAIN],
                               theta[ERROR_GAIN_RATIO], theta[MAX_PWM], theta[MAX_VELOCITY],
                               bench[DT])
    kp = bench[KP]
    amps = (q_target - q) * kp + bench[DAMPING] * math.sqrt(kp) * (0.0 - v)
    return Control(clip(amps, -theta[MAX_CURRENT], theta[MAX_CURRENT]), q_target)


@njit(cache=True, inline="always")
def firmware_control(
    q_target: float, q: float, v: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray
) -> Control:
    """:func:`firmware_law` at the bench's constant supply ``bench[VIN]``, for a servo with
    neither ``latency`` nor ``supply``: it keeps no measurement history and no motor current,
    so it refuses (ValueError naming the extension) a ``theta`` that enables either rather than
    ignore it. :func:`frictionsim.servo_unit.servo_control` honours both."""
    if theta[LATENCY] != 0.0:
        raise ValueError("firmware_control cannot honour the latency extension (it keeps no "
                         "measurement history): use frictionsim.servo_unit.servo_control")
    if theta[SUPPLY] != 0.0:
        raise ValueError("firmware_control cannot honour the supply extension (it keeps no "
                         "supply state): use frictionsim.servo_unit.servo_control")
    return firmware_law(q_target, q, v, q_smooth, bench[VIN], theta, bench)


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
