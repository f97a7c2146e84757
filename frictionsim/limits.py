"""The limits shared by many commands and engines, checked in one place.

A loss-evaluation budget (``--budget`` of every command that fits, ``--hybrid-budget``, the
Python ``identify``), a count (bootstrap replicates, variants, folds, epochs, points): each
has one check here (a control period on a model's timestep: :mod:`frictionsim.schedule`), which raises
:class:`frictionsim.errors.ConfigurationError` naming the option, its range and the value.
"""

from __future__ import annotations

import numbers

from frictionsim.errors import ConfigurationError

#: The most loss evaluations one fit may spend (a day of CMA-ES on hundreds of logs).
MAX_BUDGET = 10_000_000
#: The largest seed numpy's generators take (``--seed``, the fits' ``seed``).
MAX_SEED = 2**32 - 1


def is_number(value) -> bool:
    """Whether ``value`` is a real number (an int, a float, a numpy scalar), not a bool,
    a string or anything else; finiteness is the caller's to check."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


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


