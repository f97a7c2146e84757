"""Size checks of the flat vectors, run by the public compiled kernels before they index them.

Numba does not check bounds: a ``theta`` one entry short, or an output array shorter than its
input, would read or write past the end of the array (garbage, or heap corruption). Each
public kernel calls these first; the messages are constants (compiled code raises them) and
name the vector and its expected length (:mod:`frictionsim.layout`). The hot loops inside
the package call the unchecked cores once the sizes are known.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.layout import BENCH_SIZE, SERVO_STATE_SIZE, THETA_SIZE

THETA_MESSAGE = f"theta must hold layout.THETA_SIZE = {THETA_SIZE} doubles (ParameterSet.theta())"
BENCH_MESSAGE = f"bench must hold layout.BENCH_SIZE = {BENCH_SIZE} doubles (layout.bench_vector)"
SERVO_MESSAGE = (f"the servo record must hold layout.SERVO_STATE_SIZE = {SERVO_STATE_SIZE} "
                 "doubles (servo_unit.servo_state)")


@njit(cache=True, inline="always")
def check_theta_bench(theta: np.ndarray, bench: np.ndarray) -> None:
    """ValueError unless theta and bench have their layouts' lengths."""
    if theta.shape[0] != THETA_SIZE:
        raise ValueError(THETA_MESSAGE)
    if bench.shape[0] != BENCH_SIZE:
        raise ValueError(BENCH_MESSAGE)


@njit(cache=True, inline="always")
def check_servo(servo: np.ndarray, theta: np.ndarray, bench: np.ndarray) -> None:
    """ValueError unless the servo record, theta and bench have their layouts' lengths."""
    if servo.shape[0] != SERVO_STATE_SIZE:
        raise ValueError(SERVO_MESSAGE)
    check_theta_bench(theta, bench)
