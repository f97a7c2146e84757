"""The pendulum test bench (docs/model.md §1): a rod with a point mass at its tip.

    I_load = m·L² + (m_arm/3)·L²                       (kg·m²)
    τ_e(q) = (m + m_arm/2)·g·L·sin(q),   g = −9.80665   (N·m)

q = 0 is the arm hanging down, positive counter-clockwise. The negative g is
part of the contract: τ_e pulls the arm back towards q = 0.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from frictionsim.layout import ARM_MASS, LENGTH, MASS

GRAVITY = -9.80665


@njit(cache=True, inline="always")
def load_inertia(bench: np.ndarray) -> float:
    """I_load = m·L² + (m_arm/3)·L² (kg·m²) of the bench vector."""
    return bench[MASS] * bench[LENGTH] ** 2 + (bench[ARM_MASS] / 3) * bench[LENGTH] ** 2


@njit(cache=True, inline="always")
def gravity_torque(q: float, bench: np.ndarray) -> float:
    """τ_e(q) = (m + m_arm/2)·g·L·sin(q) (N·m) at the physical angle q (rad)."""
    return gravity_coefficient(bench) * math.sin(q)


@njit(cache=True, inline="always")
def gravity_coefficient(bench: np.ndarray) -> float:
    """(m + m_arm/2)·g·L (N·m): τ_e = coefficient·sin(q)."""
    return (bench[MASS] + bench[ARM_MASS] / 2) * GRAVITY * bench[LENGTH]
