"""The one schedule of the firmware's control period in a fixed-step engine.

The firmware computes its control once per control period and holds it (zero-order hold);
the physics steps k = 0, 1, 2, … since a reset are the engine's. A period starts at step k
when k is a whole number of periods::

    due(k) = k mod n == 0,     n = period / timestep, a whole number ≥ 1

A period that is not a whole number of physics steps is refused, never rounded (5 ms on a
2 ms step would otherwise run every 4 ms). Each world's phase is the step of its own reset:
its k counts from there. Every fixed-step driver decides it here: the robot's fixed step
(:mod:`frictionsim.solvers.robot`), the MuJoCo adapter's callback (its k counted from the
time it was reset), MuJoCo with the model's own actuators, and the batched engines' kernel
(:func:`frictionsim.solvers.batched.engine.period_due` is this function in Warp).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from numba import njit

from frictionsim.errors import ConfigurationError
from frictionsim.limits import is_number

#: How far from a whole number period/timestep may be and count as one (float round-off of
#: periods written in milliseconds).
WHOLE = 1e-9


@njit(cache=True, inline="always")
def period_due(steps: int, substeps: int) -> bool:
    """Whether a control period starts at physics step ``steps`` since the reset, for a
    period of ``substeps`` physics steps."""
    return steps % substeps == 0


@njit(cache=True, inline="always")
def steps_between(start: float, now: float, timestep: float) -> int:
    """The physics steps of ``timestep`` (s) from time ``start`` to ``now`` (s): a whole number
    however the times were rounded."""
    return int(math.floor((now - start) / timestep + 0.5))


@dataclass(frozen=True)
class ControlSchedule:
    """A control period of ``substeps`` physics steps of ``timestep`` s: ``period`` s."""

    period: float
    timestep: float
    substeps: int

    @classmethod
    def of(cls, period: float, timestep: float) -> ControlSchedule:
        """The schedule of a control period ``period`` (s) on a physics step ``timestep`` (s);
        ConfigurationError when the period is not a whole number ≥ 1 of steps."""
        for name, value in (("control period", period), ("timestep", timestep)):
            if not is_number(value):
                raise ConfigurationError(f"{name} {value!r} must be a number of seconds")
        substeps = period / timestep if timestep > 0 else math.nan
        if not (math.isfinite(period) and period > 0 and math.isfinite(substeps)
                and abs(substeps - round(substeps)) < WHOLE and substeps >= 1):
            raise ConfigurationError(f"control period {period:g} s must be a whole number of "
                                     f"the model's timestep {timestep:g} s (it is "
                                     f"{substeps:.6g} steps)")
        return cls(float(period), float(timestep), int(round(substeps)))

    def due(self, steps: int) -> bool:
        """Whether a control period starts at physics step ``steps`` since the reset."""
        return period_due(steps, self.substeps)

    def periods(self, steps: int) -> int:
        """The control periods that started within the first ``steps`` physics steps."""
        return -(-steps // self.substeps)
