"""The limits shared by many commands and engines, checked in one place.

A loss-evaluation budget (``--budget`` of every command that fits, ``--hybrid-budget``, the
Python ``identify``), a count (bootstrap replicates, variants, folds, epochs, points), a
control period on a model's timestep: each has one check here, which raises
:class:`frictionsim.errors.ConfigurationError` naming the option, its range and the value.
"""

from __future__ import annotations

import math
import numbers

from frictionsim.errors import ConfigurationError

#: The most loss evaluations one fit may spend (a day of CMA-ES on hundreds of logs).
MAX_BUDGET = 10_000_000


def check_count(name: str, value, low: int, high: int, unit: str = "") -> int:
    """``value`` as an int if it is an integer in [low, high]; else ConfigurationError naming
    ``name`` (the option, ``--folds``…) and its range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not low <= value <= high:
        what = f" {unit}" if unit else ""
        raise ConfigurationError(f"{name} must be an integer in [{low:,}, {high:,}]{what}, "
                                 f"got {value!r}")
    return int(value)


def check_budget(value, name: str = "--budget", low: int = 1) -> int:
    """A budget of loss evaluations in [low, :data:`MAX_BUDGET`]."""
    return check_count(name, value, low, MAX_BUDGET, "loss evaluations")


def control_substeps(period: float, timestep: float) -> int:
    """The physics steps of ``timestep`` (s, the model's) in a control period of ``period``
    (s): a whole number ≥ 1, else ConfigurationError (the firmware's zero-order hold spans
    whole physics steps)."""
    substeps = period / timestep if timestep > 0 else math.nan
    if not (math.isfinite(period) and period > 0 and math.isfinite(substeps)
            and abs(substeps - round(substeps)) < 1e-9 and substeps >= 1):
        raise ConfigurationError(f"control period {period:g} s must be a multiple of the "
                                 f"model's timestep {timestep:g} s")
    return int(round(substeps))
