"""Firmware control laws and motor torques of the servos (SPEC §3), as Numba kernels.

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

The electrical extensions of SPEC §9, each off when its ``theta`` entry is 0:

- ``current_limit`` (voltage law): the motor current (V − k_t·v)/R levels off smoothly at
  ±i_lim, i = i_lim·tanh((V − k_t·v)/(R·i_lim)), τ_m = enable·k_t·i. SPEC §9 writes a
  hard clip; the smooth saturation is what the logs support (the firmware's current
  loop and the driver's limit act gradually): on the 12 XL330 logs, leave-one-gain-out
  over kp 200/400/800 with the limit at the e-manual's 1.75 A, M4 and M6 predict a
  held-out gain at 39.7 and 36.2 mrad with it and at 50.9 and 41.7 mrad with a clip
  (51.5 and 50.4 without a limit; measured with the fitter's earlier two-run exploration;
  the README has the table). Well below i_lim the two
  agree to second order, far above it both give ±i_lim;
- ``supply``: the law uses the supply voltage of the moment instead of the constant
  vin: the log's ``input_volts`` at that entry, or, without a log, a source with
  internal resistance, vin = E − R_s·|i| (:func:`source_voltage`; i the motor current
  of the previous physics step, summed over the servos sharing the supply);
- ``latency``: the firmware acts on the position and velocity measured L control
  periods earlier (:func:`measured`, a history of the last L + 1 measurements).
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
    MAX_LATENCY,
    MAX_PWM,
    MAX_VELOCITY,
    MAX_VOLTAGE,
    RESISTANCE,
    SUPPLY,
    SUPPLY_EMF,
    SUPPLY_RESISTANCE,
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
def limit_target(q_target: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray) -> float:
    """sts3215 target-speed limiter: the new internal target (rad); q_target when off."""
    return limited_target(q_target, q_smooth, theta[MAX_VELOCITY], bench[DT])


@njit(cache=True, inline="always")
def voltage_duty(error: float, kp: float, error_gain: float, ratio: float,
                 max_pwm: float) -> float:
    """The voltage law's duty cycle for a position error (rad): clip(error·kp·error_gain·ratio,
    ±max_pwm)."""
    return clip(error * kp * error_gain * ratio, -max_pwm, max_pwm)


@njit(cache=True, inline="always")
def firmware_control(
    q_target: float, q: float, v: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray
) -> Control:
    """Control signal and new limiter state: ``Control(u, q_smooth)``.

    u is volts (voltage law) or amps (current law). q, v: measured position (rad)
    and velocity (rad/s); q_smooth: the sts3215 limiter state (rad). Servos
    without a limiter return q_target as the new state (their target is not
    smoothed), so callers can thread the state through uniformly. The supply is
    the bench's constant vin; :func:`firmware_law` takes the supply of the moment.
    """
    return firmware_law(q_target, q, v, q_smooth, bench[VIN], theta, bench)


@njit(cache=True, inline="always")
def firmware_law(
    q_target: float, q: float, v: float, q_smooth: float, vin: float, theta: np.ndarray,
    bench: np.ndarray,
) -> Control:
    """:func:`firmware_control` with the supply voltage ``vin`` (V) given (SPEC §9 ``supply``)."""
    if theta[LAW] == VOLTAGE_LAW:
        q_smooth = limit_target(q_target, q_smooth, theta, bench)
        duty = voltage_duty(q_smooth - q, bench[KP], theta[ERROR_GAIN], theta[ERROR_GAIN_RATIO],
                            theta[MAX_PWM])
        return Control(vin * duty, q_smooth)
    kp = bench[KP]
    amps = (q_target - q) * kp + bench[DAMPING] * math.sqrt(kp) * (0.0 - v)
    return Control(clip(amps, -theta[MAX_CURRENT], theta[MAX_CURRENT]), q_target)


@njit(cache=True, inline="always")
def supply_voltage(logged: float, theta: np.ndarray, bench: np.ndarray) -> float:
    """The supply the voltage law uses at a log entry (V): the logged ``input_volts`` with
    the ``supply`` extension, else the bench's constant vin."""
    if theta[SUPPLY] > 0.0:
        return logged
    return bench[VIN]


@njit(cache=True, inline="always")
def source_voltage(current: float, theta: np.ndarray, bench: np.ndarray) -> float:
    """Without a log: vin = E − R_s·|i| with the ``supply`` extension (i: the motor current
    drawn, A), else the bench's constant vin (V)."""
    if theta[SUPPLY] > 0.0:
        return theta[SUPPLY_EMF] - theta[SUPPLY_RESISTANCE] * abs(current)
    return bench[VIN]


@njit(cache=True, inline="always")
def reset_history(history: np.ndarray, q: float, v: float) -> None:
    """Fill the firmware's measurement history with (q, v): before the first period, the
    delayed measurement is the initial state."""
    for slot in range(MAX_LATENCY + 1):
        history[2 * slot] = q
        history[2 * slot + 1] = v


@njit(cache=True, inline="always")
def measured(history: np.ndarray, k: int, q: float, v: float, theta: np.ndarray) -> tuple:
    """(q, v) the firmware acts on at control period k (SPEC §9 ``latency``): the state of
    period k − L; records the current state. L = 0: (q, v) unchanged."""
    lag = int(theta[LATENCY])
    if lag == 0:
        return q, v
    slot = k % (MAX_LATENCY + 1)
    history[2 * slot] = q
    history[2 * slot + 1] = v
    old = (k - lag + MAX_LATENCY + 1) % (MAX_LATENCY + 1)
    return history[2 * old], history[2 * old + 1]


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
