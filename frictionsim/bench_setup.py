"""The set-up of one bench recording: what the log header says about the pendulum and firmware.

One definition for everything that makes or reads a recording: the recorder
(:mod:`frictionsim.hw.recorder`), the virtual bench, the virtual servo. Values are checked
against :mod:`frictionsim.plausibility` (errors outside the hard ranges).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from frictionsim import plausibility
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings


@dataclass(frozen=True)
class BenchSetup:
    """Point mass ``mass`` (kg) at ``length`` (m) on a rod of ``arm_mass`` (kg); firmware gain
    ``kp``; supply ``vin`` (V) and damping ``damping`` when known (else the actuator's)."""

    mass: float
    length: float
    kp: float
    arm_mass: float = 0.0
    vin: float | None = None
    damping: float | None = None

    def __post_init__(self) -> None:
        for name in ("mass", "length", "kp", "arm_mass", "vin", "damping"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise ConfigurationError(f"{name} = {value!r} must be a finite number")
            plausibility.HEADER[name].check(value, name, ConfigurationError)

    def header(self) -> dict:
        """The log header fields of this set-up (``vin``, ``damping`` only when known)."""
        out = {"mass": self.mass, "length": self.length, "arm_mass": self.arm_mass, "kp": self.kp}
        if self.vin is not None:
            out["vin"] = self.vin
        if self.damping is not None:
            out["damping"] = self.damping
        return out

    def bench(self, actuator: str, dt: float) -> np.ndarray:
        """The ``bench`` vector (:mod:`frictionsim.layout`) for ``actuator`` at step ``dt``."""
        return firmware_settings(actuator, self.header(), dt)
