"""Sane limits of bench quantities, beyond the type checks.

A value can be a finite number and still be no pendulum bench's: a 1e308 kg mass
overflows the simulation into NaN, Unix-epoch timestamps make the resampler
allocate for 1.7e9 s, a gain of 0 makes every fit meaningless. Each quantity
has a hard range (outside it: an error naming the file, the field and the value)
and a soft range (outside it: a :class:`PlausibilityWarning`, the value is still
used).

Warnings go through Python's :mod:`warnings`, so a library user can filter them
or turn them into errors (``warnings.simplefilter("error", PlausibilityWarning)``);
the command line prints them as ``warning: …`` lines.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass


class PlausibilityWarning(UserWarning):
    """A value that is possible but suspicious on a bench (the message names file, field, value)."""


@dataclass(frozen=True)
class Limit:
    """Hard range [lower, upper] (``lower_open``: lower excluded) and soft range of a quantity.

    ``warn_zero``: warn when the value is exactly 0 (possible, but probably a mistake).
    """

    lower: float
    upper: float
    unit: str
    lower_open: bool = False
    warn_lower: float = -math.inf
    warn_upper: float = math.inf
    warn_zero: str = ""

    def check(self, value: float, where: str, error: type[Exception]) -> None:
        """Raise ``error`` outside the hard range, warn outside the soft one."""
        unit = f" {self.unit}" if self.unit else ""
        below = value <= self.lower if self.lower_open else value < self.lower
        if below or value > self.upper:
            low = "(" if self.lower_open else "["
            raise error(f"{where} = {value!r}{unit} is outside the plausible range "
                        f"{low}{self.lower:g}, {self.upper:g}]{unit}")
        if value == 0 and self.warn_zero:
            warn(f"{where} = 0{unit}: {self.warn_zero}")
        elif value < self.warn_lower or value > self.warn_upper:
            warn(f"{where} = {value!r}{unit} is unusual on a bench (expected "
                 f"{self.expected()}{unit}); it is used as given")

    def expected(self) -> str:
        """The soft range in words."""
        if self.warn_lower == -math.inf:
            return f"at most {self.warn_upper:g}"
        if self.warn_upper == math.inf:
            return f"at least {self.warn_lower:g}"
        return f"{self.warn_lower:g} to {self.warn_upper:g}"


def warn(message: str) -> None:
    """Issue a :class:`PlausibilityWarning` attributed to the caller's caller."""
    warnings.warn(message, PlausibilityWarning, stacklevel=3)


#: Log header fields (docs/model.md §6).
HEADER: dict[str, Limit] = {
    "mass": Limit(0.0, 1000.0, "kg", warn_upper=100.0,
                  warn_zero="no point mass at the tip; only the arm (and the rotor) load the joint"),
    "length": Limit(0.0, 10.0, "m", lower_open=True, warn_upper=2.0),
    "arm_mass": Limit(0.0, 1000.0, "kg", warn_upper=100.0),
    "arm-mass": Limit(0.0, 1000.0, "kg", warn_upper=100.0),
    "kp": Limit(0.0, 1e5, "", warn_zero="the firmware's proportional gain is off: the motor "
                                        "only brakes, nothing in the log can identify it"),
    "vin": Limit(0.0, 100.0, "V", lower_open=True),
    "damping": Limit(0.0, 1e4, ""),
    "kd": Limit(0.0, 1e5, ""),
    "dt": Limit(0.0, 1.0, "s", lower_open=True, warn_upper=0.05),
}

#: Entry fields used by the simulation; the informative ones (load, temp, input_volts)
#: only have to be finite.
ENTRY: dict[str, Limit] = {
    "position": Limit(-1e3, 1e3, "rad", warn_lower=-4 * math.pi, warn_upper=4 * math.pi),
    "goal_position": Limit(-1e3, 1e3, "rad", warn_lower=-4 * math.pi, warn_upper=4 * math.pi),
    "speed": Limit(-1e4, 1e4, "rad/s", warn_lower=-100.0, warn_upper=100.0),
}

#: Timing of a recording.
MAX_FIRST_TIMESTAMP = 1.0
"""s: processing samples from t = 0 (docs/model.md §6); a log that starts later would be
extrapolated back over that whole span (Unix-epoch timestamps, say)."""
MAX_GAP = 1.0
"""s: a raw log's largest gap between entries, at least (see :data:`MAX_GAP_PERIODS`)."""
MAX_GAP_PERIODS = 100
"""A gap longer than this many median periods (and than :data:`MAX_GAP`) is refused."""
WARN_GAP_PERIODS = 20
"""A gap longer than this many median periods (and than 0.1 s) is interpolated with a warning."""

#: A parameter this many times above the top of its search bounds is warned about.
FAR_ABOVE_BOUNDS = 1000.0

#: Resampling: the most samples a raw entry may be turned into, and the most entries of a log.
MAX_UPSAMPLING = 100
MAX_PROCESSED_ENTRIES = 2_000_000
