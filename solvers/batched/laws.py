"""Firmware control laws and motor torques of the servos (docs/model.md §3, §9, §12), as Warp
functions: :mod:`frictionsim.actuator_laws`, line for line.

Every function is generic over the scalar (``float32`` or ``float64``, Warp's ``Any``): a
literal is made of its operands' type, ``type(x)(0.5)``, so that one source compiles for
MuJoCo Warp's float32 and for the float64 the equivalence tests hold to the Numba kernels.
A servo's parameters are read where they lie, ``thetas[e, j, KT]`` (world e, servo j, the
column :mod:`frictionsim.layout` names), never copied out.
"""

from __future__ import annotations

from typing import Any

import warp as wp

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
    LAW,
    MAX_CURRENT,
    MAX_PWM,
    MAX_VELOCITY,
    MAX_VOLTAGE,
    RESISTANCE,
    TORQUE_LIMIT,
    VOLTAGE_LAW,
)


@wp.func
def clip(x: Any, lo: Any, hi: Any):
    """min(max(x, lo), hi)."""
    return wp.min(wp.max(x, lo), hi)


@wp.func
def sign(x: Any):
    """numpy.sign: −1, 0 or +1 (Warp's own ``sign`` gives +1 at 0)."""
    if x > type(x)(0.0):
        return type(x)(1.0)
    if x < type(x)(0.0):
        return type(x)(-1.0)
    return x * type(x)(0.0)


@wp.func
def copysign(magnitude: Any, direction: Any):
    """|magnitude| with the sign of ``direction`` (+ at 0)."""
    if direction < type(direction)(0.0):
        return -wp.abs(magnitude)
    return wp.abs(magnitude)


@wp.func
def limited_target(q_target: Any, q_smooth: Any, max_velocity: Any, dt: Any):
    """The sts3215 target-speed limiter (ω_max ≤ 0: off): the new internal target (rad)."""
    if max_velocity <= type(dt)(0.0):
        return q_target
    step = max_velocity * dt
    return clip(q_target, q_smooth - step, q_smooth + step)


@wp.func
def profiled_target(q_target: Any, q_smooth: Any, rate: Any, max_velocity: Any,
                    acceleration: Any, dt: Any):
    """(internal target, its velocity) after one period: the speed limiter alone when
    ``acceleration`` ≤ 0, else the acceleration-limited profile that stops on the target."""
    zero = type(dt)(0.0)
    if acceleration <= zero:
        return limited_target(q_target, q_smooth, max_velocity, dt), zero
    remaining = q_target - q_smooth
    dv = acceleration * dt
    stopping = copysign(dv * (wp.sqrt(type(dt)(0.25) + type(dt)(2.0) * wp.abs(remaining)
                                      / (dv * dt)) - type(dt)(0.5)), remaining)
    if max_velocity > zero:
        stopping = clip(stopping, -max_velocity, max_velocity)
    new_rate = clip(stopping, rate - acceleration * dt, rate + acceleration * dt)
    q_next = q_smooth + new_rate * dt
    if (q_target - q_next) * remaining <= zero:  # reached or passed: no overshoot
        return q_target, zero
    return q_next, new_rate


@wp.func
def feetech_duty(error: Any, error_rate: Any, thetas: wp.array3d(dtype=Any),
                 firmware: wp.array3d(dtype=Any), e: int, j: int):
    """The Feetech position loop's duty cycle: dead band, P and D terms, torque limit."""
    dead_band = thetas[e, j, DEAD_BAND]
    if dead_band > type(error)(0.0) and wp.abs(error) <= dead_band:
        return type(error)(0.0)
    limit = firmware[e, j, TORQUE_LIMIT]
    max_pwm = thetas[e, j, MAX_PWM]
    if limit > type(error)(0.0):
        max_pwm = thetas[e, j, MAX_PWM] * limit
    gain = thetas[e, j, ERROR_GAIN] * thetas[e, j, ERROR_GAIN_RATIO]
    drive = error * firmware[e, j, KP] + firmware[e, j, KD] * thetas[e, j, DERIVATIVE_TIME] \
        * error_rate
    return clip(drive * gain, -max_pwm, max_pwm)


@wp.func
def plain_voltage_law(thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any), e: int,
                      j: int):
    """Whether the voltage law runs without the Feetech terms (none of them set)."""
    zero = type(thetas[e, j, LAW])(0.0)
    return (firmware[e, j, KD] * thetas[e, j, DERIVATIVE_TIME] == zero
            and thetas[e, j, DEAD_BAND] == zero and firmware[e, j, TORQUE_LIMIT] == zero
            and firmware[e, j, ACCELERATION] == zero)


@wp.func
def firmware_law(q_target: Any, q: Any, v: Any, q_smooth: Any, rate: Any, error_prev: Any,
                 vin: Any, thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
                 e: int, j: int):
    """One control period of the firmware at the supply ``vin`` (V): (u, q_smooth, rate,
    error), u in volts (voltage law) or amps (current law)."""
    zero = type(q)(0.0)
    if thetas[e, j, LAW] == type(q)(VOLTAGE_LAW):
        if plain_voltage_law(thetas, firmware, e, j):
            smooth = limited_target(q_target, q_smooth, thetas[e, j, MAX_VELOCITY],
                                    firmware[e, j, DT])
            duty = clip((smooth - q) * firmware[e, j, KP] * thetas[e, j, ERROR_GAIN]
                        * thetas[e, j, ERROR_GAIN_RATIO], -thetas[e, j, MAX_PWM],
                        thetas[e, j, MAX_PWM])
            return vin * duty, smooth, zero, smooth - q
        dt = firmware[e, j, DT]
        target, new_rate = profiled_target(q_target, q_smooth, rate, thetas[e, j, MAX_VELOCITY],
                                           firmware[e, j, ACCELERATION], dt)
        error = target - q
        error_rate = zero
        if wp.isfinite(error_prev):
            error_rate = (error - error_prev) / dt
        return vin * feetech_duty(error, error_rate, thetas, firmware, e, j), target, new_rate, \
            error
    kp = firmware[e, j, KP]
    amps = (q_target - q) * kp + firmware[e, j, DAMPING] * wp.sqrt(kp) * (zero - v)
    return clip(amps, -thetas[e, j, MAX_CURRENT], thetas[e, j, MAX_CURRENT]), q_target, zero, \
        q_target - q


@wp.func
def supply_voltage(logged: Any, drawn: Any, on: Any, emf: Any, resistance: Any, vin: Any):
    """The supply the voltage law uses (V): ``vin`` with ``supply`` off, else the logged volts
    when finite, else emf − resistance·|drawn|."""
    if on <= type(vin)(0.0):
        return vin
    if wp.isfinite(logged):
        return logged
    return emf - resistance * wp.abs(drawn)


@wp.func
def motor_current(u: Any, v: Any, thetas: wp.array3d(dtype=Any), e: int, j: int):
    """The motor current (A): (V − k_t·v)/R saturated by ``current_limit``, or the current
    law's command itself."""
    if thetas[e, j, LAW] != type(u)(VOLTAGE_LAW):
        return u
    i = (u - thetas[e, j, KT] * v) / thetas[e, j, RESISTANCE]
    limit = thetas[e, j, CURRENT_LIMIT]
    if limit > type(u)(0.0):
        return limit * wp.tanh(i / limit)
    return i


@wp.func
def voltage_motor_torque(u: Any, enable: Any, v: Any, kt: Any, r: Any, limit: Any):
    """τ_m (N·m) of the voltage law, with a current limit when ``limit`` > 0 (A)."""
    if limit > type(u)(0.0):
        return enable * kt * limit * wp.tanh((u - kt * v) / (r * limit))
    return enable * (kt * u / r - kt * kt * v / r)


@wp.func
def motor_torque(u: Any, enable: Any, v: Any, thetas: wp.array3d(dtype=Any), e: int, j: int):
    """τ_m (N·m) of the control u (V or A), the enable flag and the velocity v (rad/s)."""
    kt = thetas[e, j, KT]
    r = thetas[e, j, RESISTANCE]
    if thetas[e, j, LAW] == type(u)(VOLTAGE_LAW):
        return voltage_motor_torque(u, enable, v, kt, r, thetas[e, j, CURRENT_LIMIT])
    emf = kt * kt * v / r
    window = kt * thetas[e, j, MAX_VOLTAGE] / r
    return clip(enable * kt * u, -window - emf, window - emf)
