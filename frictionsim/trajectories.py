"""Bench trajectories: target angle (rad) and torque-enable flag as functions of time (s).

Each lasts :data:`DURATION` = 6 s. The four *identification* trajectories
excite complementary regimes: ``lift_and_drop`` (a free fall against friction
with the torque off), ``sin_time_square`` (a chirp sweeping velocities),
``up_and_down`` (slow moves dominated by static and load friction) and
``sin_sin`` (rich spectrum).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from frictionsim.errors import ConfigurationError

DURATION = 6.0


def cubic(keyframes: list[tuple[float, float, float]], t: float) -> float:
    """Cubic Hermite interpolation through keyframes (time s, value rad, slope rad/s).

    Held constant before the first and after the last keyframe.
    """
    if t <= keyframes[0][0]:
        return keyframes[0][1]
    if t >= keyframes[-1][0]:
        return keyframes[-1][1]
    for (t0, x0, d0), (t1, x1, d1) in zip(keyframes, keyframes[1:]):
        if t0 <= t <= t1:
            h = t1 - t0
            s = (t - t0) / h
            h00 = 2 * s**3 - 3 * s**2 + 1
            h10 = s**3 - 2 * s**2 + s
            h01 = -2 * s**3 + 3 * s**2
            h11 = s**3 - s**2
            return h00 * x0 + h10 * h * d0 + h01 * x1 + h11 * h * d1
    raise AssertionError("unreachable: keyframes must be sorted")


def lift_and_drop(t: float) -> tuple[float, bool]:
    """Cubic move 0 → −π/2 over 2 s, then torque off: the arm falls back under gravity."""
    return cubic([(0.0, 0.0, 0.0), (2.0, -math.pi / 2, 0.0)], t), t < 2.0


def sin_time_square(t: float) -> tuple[float, bool]:
    """sin(t²): a chirp, progressively faster."""
    return math.sin(t**2), True


def up_and_down(t: float) -> tuple[float, bool]:
    """Cubic 0 → π/2 at 3 s → 0.8·π/2 at 6 s: slow, static and load friction dominate."""
    keyframes = [(0.0, 0.0, 0.0), (3.0, math.pi / 2, 0.0), (6.0, 0.8 * math.pi / 2, 0.0)]
    return cubic(keyframes, t), True


def sin_sin(t: float) -> tuple[float, bool]:
    """sin(t)·π/2 + 0.5·sin(5t)·sin(2t): several frequencies at once."""
    return math.sin(t) * math.pi / 2 + math.sin(5.0 * t) * 0.5 * math.sin(t * 2.0), True


_STEPS = ((0.0, 0.0), (1.0, 0.75), (2.5, 1.55), (4.0, 0.75), (5.0, 0.0))


def steps(t: float) -> tuple[float, bool]:
    """Steps 0, 0.75, 1.55, 0.75, 0 rad at t = 0, 1, 2.5, 4, 5 s."""
    angle = 0.0
    for start, value in _STEPS:
        if t >= start:
            angle = value
    return angle, True


def half_sine(t: float) -> tuple[float, bool]:
    """sin(t/2)·π/2: a slow half sine 0 → π/2 → (almost) back."""
    return math.sin(t / 2) * math.pi / 2, True


def nothing(t: float) -> tuple[float, bool]:
    """Torque off for the whole run: the passive dynamics alone."""
    return 0.0, False


TRAJECTORIES: dict[str, Callable[[float], tuple[float, bool]]] = {
    "lift_and_drop": lift_and_drop,
    "sin_time_square": sin_time_square,
    "up_and_down": up_and_down,
    "sin_sin": sin_sin,
    "steps": steps,
    "half_sine": half_sine,
    "nothing": nothing,
}

IDENTIFICATION = ("lift_and_drop", "sin_time_square", "up_and_down", "sin_sin")


def get_trajectory(name: str) -> Callable[[float], tuple[float, bool]]:
    """The trajectory function of a name; ``ValueError`` listing the names otherwise."""
    try:
        return TRAJECTORIES[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown trajectory {name!r} (expected one of {', '.join(TRAJECTORIES)})"
        ) from None
