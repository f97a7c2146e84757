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
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.layout import (
    DAMPING,
    DT,
    ERROR_GAIN,
    ERROR_GAIN_RATIO,
    KP,
    KT,
    LAW,
    MAX_CURRENT,
    MAX_PWM,
    MAX_VELOCITY,
    MAX_VOLTAGE,
    RESISTANCE,
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
def limit_target(q_target: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray) -> float:
    """sts3215 target-speed limiter: the new internal target (rad); q_target when off."""
    w = theta[MAX_VELOCITY]
    if w <= 0.0:
        return q_target
    step = w * bench[DT]
    return clip(q_target, q_smooth - step, q_smooth + step)


@njit(cache=True, inline="always")
def firmware_control(
    q_target: float, q: float, v: float, q_smooth: float, theta: np.ndarray, bench: np.ndarray
) -> Control:
    """Control signal and new limiter state: ``Control(u, q_smooth)``.

    u is volts (voltage law) or amps (current law). q, v: measured position (rad)
    and velocity (rad/s); q_smooth: the sts3215 limiter state (rad). Servos
    without a limiter return q_target as the new state (their target is not
    smoothed), so callers can thread the state through uniformly.
    """
    if theta[LAW] == VOLTAGE_LAW:
        q_smooth = limit_target(q_target, q_smooth, theta, bench)
        duty = (q_smooth - q) * bench[KP] * theta[ERROR_GAIN] * theta[ERROR_GAIN_RATIO]
        duty = clip(duty, -theta[MAX_PWM], theta[MAX_PWM])
        return Control(bench[VIN] * duty, q_smooth)
    kp = bench[KP]
    amps = (q_target - q) * kp + bench[DAMPING] * math.sqrt(kp) * (0.0 - v)
    return Control(clip(amps, -theta[MAX_CURRENT], theta[MAX_CURRENT]), q_target)


@njit(cache=True, inline="always")
def motor_torque(u: float, enable: float, v: float, theta: np.ndarray) -> float:
    """Motor torque τ_m (N·m) from control u (V or A), enable flag (0/1) and velocity v (rad/s)."""
    kt = theta[KT]
    r = theta[RESISTANCE]
    if theta[LAW] == VOLTAGE_LAW:
        return enable * (kt * u / r - kt**2 * v / r)
    emf = kt**2 * v / r
    window = kt * theta[MAX_VOLTAGE] / r
    return clip(enable * kt * u, -window - emf, window - emf)
