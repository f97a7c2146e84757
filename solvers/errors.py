"""The error a simulation raises instead of returning a wrong number or running for ever."""

from __future__ import annotations

import math

import numpy as np

from frictionsim.errors import FrictionsimError
from frictionsim.layout import ARMATURE
from frictionsim.pendulum import load_inertia


class SimulationError(FrictionsimError, ArithmeticError):
    """A simulation that cannot give a meaningful result: zero inertia, a non-finite state,
    or an event-driven run that exceeded its work bound. The message names the log (and
    the parameters when known) and what went wrong."""


def check_inertia(theta: np.ndarray, bench: np.ndarray, where: str) -> None:
    """Raise :class:`SimulationError` unless I = I_load + armature is positive and finite.

    The step divides by I; numba would raise a bare ZeroDivisionError, or return NaN.
    """
    inertia = load_inertia(bench) + theta[ARMATURE]
    if not (inertia > 0 and math.isfinite(inertia)):
        raise SimulationError(
            f"{where}: the joint's inertia I = m·L² + m_arm·L²/3 + armature = {inertia:g} kg·m² "
            "is not positive and finite; nothing can be simulated (check mass, arm_mass, length "
            "and armature)"
        )


def non_finite(values: np.ndarray, names: tuple[str, ...] | list[str], what: str) -> None:
    """Raise :class:`SimulationError` naming the first log whose ``values`` entry is not finite."""
    bad = ~np.isfinite(values)
    if bad.any():
        j = int(np.argmax(bad))
        raise SimulationError(
            f"{names[j]}: simulating it with {what} gives a non-finite position (the state "
            "overflowed); check the log's header and the parameters for absurd values"
        )
