"""A servo's firmware settings, built once: the one constructor of the ``firmware`` vector.

The servo bank (:mod:`frictionsim.servo_bank`) runs each servo's firmware law with its
settings, a float64 vector laid out by :mod:`frictionsim.layout` (``BENCH_SIZE`` doubles:
the pendulum a bench log recorded, then the gain, supply, damping, control period, Feetech
D coefficient, torque limit and acceleration limit). Every entry point — a log header
(:meth:`frictionsim.logs.Log.bench`), a recording's set-up
(:meth:`frictionsim.bench_setup.BenchSetup.bench`), a robot file's joint
(:meth:`frictionsim.solvers.robot.JointServo.firmware`), ``frictionsim.Servo``, the virtual
servo and the EtherCAT drive — builds it here, so one set-up gives one vector whichever
way it comes in.

The rules, for an actuator declaration ``act`` (:mod:`frictionsim.schema`):

- ``kp`` is the set-up's (a log's is required);
- ``vin`` the set-up's, else the actuator's (a current-law drive ignores it);
- ``damping`` the set-up's, else the actuator's (the eRob's d);
- ``kd`` (Feetech ``D_Coefficient``) only on an actuator that declares the D term: the
  set-up's, else the actuator's default; 0 on any other;
- ``torque_limit`` (a fraction of the full duty cycle) and ``acceleration`` (rad/s²) the
  set-up's, else 0 (none);
- ``mass``, ``length``, ``arm_mass``: the bench pendulum (0 on a robot joint, where the
  model supplies the dynamics).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from frictionsim import layout, schema
from frictionsim.errors import ConfigurationError
from frictionsim.limits import is_number

#: The set-up keys :func:`firmware_settings` reads (a log header may hold more).
SETUP_KEYS = ("mass", "length", "arm_mass", "kp", "vin", "damping", "kd", "torque_limit",
              "acceleration")


def firmware_settings(actuator: str | schema.Actuator, setup: Mapping[str, float],
                      dt: float, **overrides: float | None) -> np.ndarray:
    """The firmware vector (:mod:`frictionsim.layout`'s ``bench``) of ``actuator`` (a name or
    a declaration) with the set-up ``setup`` (a log header, a robot joint's settings; keys
    :data:`SETUP_KEYS`, others ignored, a value None meaning "not given") at the control
    period ``dt`` (s); ``overrides`` replace set-up values (None: keep). The module
    docstring gives the defaults. ConfigurationError naming a value that is not a finite
    number ≥ 0, a voltage-law servo's supply ≤ 0, a period ≤ 0, an unknown override (a
    ``kd`` is checked even on an actuator that ignores it)."""
    act = schema.get_actuator(actuator) if isinstance(actuator, str) else actuator
    unknown = set(overrides) - set(SETUP_KEYS)
    if unknown:
        raise ConfigurationError(f"firmware_settings: unknown setting(s) {', '.join(sorted(unknown))} "
                                 f"(known: {', '.join(SETUP_KEYS)})")
    given = {k: setup.get(k) for k in SETUP_KEYS}
    given.update({k: v for k, v in overrides.items() if v is not None})
    if given["kp"] is None:
        raise ConfigurationError("firmware_settings: the firmware gain kp is required")
    for key, v in given.items():
        # a string or a flag would convert silently ("400" → 400, True → 1)
        if v is not None and not is_number(v):
            raise ConfigurationError(f"firmware_settings: {key} = {v!r} must be a number")
    if act.law == "voltage" and given["vin"] is not None and not given["vin"] > 0:
        # the log headers' rule: a voltage-law servo without supply has no torque at all
        raise ConfigurationError(f"firmware_settings: vin = {given['vin']!r} V: the "
                                 f"{act.name}'s supply must be positive")
    if given["kd"] is not None and not (math.isfinite(given["kd"]) and given["kd"] >= 0):
        # checked even where ignored: a negative D coefficient is wrong on any servo
        raise ConfigurationError(f"firmware_settings: kd = {given['kd']!r} must be a finite "
                                 "number ≥ 0")

    def value(key: str, default: float) -> float:
        v = given[key]
        return default if v is None else float(v)

    kd = value("kd", act.kd) if act.derivative else 0.0
    return layout.bench_vector(
        mass=value("mass", 0.0), length=value("length", 0.0), arm_mass=value("arm_mass", 0.0),
        kp=float(given["kp"]), vin=value("vin", act.vin), damping=value("damping", act.damping),
        dt=float(dt), kd=kd, torque_limit=value("torque_limit", 0.0),
        acceleration=value("acceleration", 0.0))
