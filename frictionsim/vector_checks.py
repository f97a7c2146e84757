"""Size checks of the flat vectors, run by the public compiled kernels before they index them.

Numba does not check bounds: a ``theta`` one entry short, or an output array shorter than its
input, would read or write past the end of the array (garbage, or heap corruption). Each
public kernel calls these first; the messages are constants (compiled code raises them) and
name the vector and its expected length (:mod:`frictionsim.layout`). The hot loops inside
the package call the unchecked cores once the sizes are known.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from frictionsim.errors import ConfigurationError
from frictionsim.layout import BENCH_SIZE, SERVO_STATE_SIZE, THETA_SIZE

THETA_MESSAGE = f"theta must hold layout.THETA_SIZE = {THETA_SIZE} doubles (ParameterSet.theta())"
BENCH_MESSAGE = f"bench must hold layout.BENCH_SIZE = {BENCH_SIZE} doubles (layout.bench_vector)"
SERVO_MESSAGE = (f"the servo record must hold layout.SERVO_STATE_SIZE = {SERVO_STATE_SIZE} "
                 "doubles (servo_unit.servo_state)")


DTYPE_MESSAGE = ("frictionsim's kernels take float64 arrays (numpy.float64); convert with "
                 "numpy.asarray(x, dtype=float)")


def check_float64(array) -> None:
    """Refuse anything but a float64 array, when the kernel is compiled for the argument's
    type (no cost at run time): Numba's TypingError then carries :data:`DTYPE_MESSAGE`. An
    integer or float32 array would otherwise be accepted, and an output written into it
    truncated or rounded without a word."""


@overload(check_float64, jit_options={"cache": True})
def _check_float64(array):
    if isinstance(array, types.Array) and array.dtype == types.float64:
        return lambda array: None
    raise TypingError(f"{DTYPE_MESSAGE}; got {array}")


@njit(cache=True, inline="always")
def check_theta_bench(theta: np.ndarray, bench: np.ndarray) -> None:
    """TypeError unless theta and bench are float64 arrays; ValueError unless they have their
    layouts' lengths."""
    check_float64(theta)
    check_float64(bench)
    if theta.shape[0] != THETA_SIZE:
        raise ConfigurationError(THETA_MESSAGE)
    if bench.shape[0] != BENCH_SIZE:
        raise ConfigurationError(BENCH_MESSAGE)


@njit(cache=True, inline="always")
def check_record_theta(servo: np.ndarray, theta: np.ndarray) -> None:
    """ValueError unless the servo record and theta have their layouts' lengths (TypeError
    unless float64)."""
    check_float64(servo)
    check_float64(theta)
    if servo.shape[0] != SERVO_STATE_SIZE:
        raise ConfigurationError(SERVO_MESSAGE)
    if theta.shape[0] != THETA_SIZE:
        raise ConfigurationError(THETA_MESSAGE)


@njit(cache=True, inline="always")
def check_servo(servo: np.ndarray, theta: np.ndarray, bench: np.ndarray) -> None:
    """ValueError unless the servo record, theta and bench have their layouts' lengths (and
    TypeError unless they are float64 arrays)."""
    check_float64(servo)
    if servo.shape[0] != SERVO_STATE_SIZE:
        raise ConfigurationError(SERVO_MESSAGE)
    check_theta_bench(theta, bench)
