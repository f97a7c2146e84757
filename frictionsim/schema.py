"""Parameter schema: which parameters each friction model and actuator has,
their defaults and search bounds (SPEC §2–3).

A *parameter set* is a (model, actuator) pair; its parameters are
``q_offset``, the model's friction terms, and the actuator's motor terms.
Everything here is plain data; :mod:`frictionsim.params` turns it into the flat
``theta`` vector of :mod:`frictionsim.layout`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from frictionsim import layout


@dataclass(frozen=True)
class Parameter:
    """One identifiable parameter: default value, search bounds and unit."""

    name: str
    default: float
    lower: float
    upper: float
    unit: str = ""


@dataclass(frozen=True)
class FrictionModel:
    """A friction model M1–M6: its name, title and friction parameter names."""

    name: str
    title: str
    friction: tuple[str, ...]

    @property
    def stribeck(self) -> bool:
        return "dtheta_stribeck" in self.friction


@dataclass(frozen=True)
class Actuator:
    """A servo: firmware control law constants and motor parameter bounds.

    ``law`` is ``"voltage"`` (duty-cycle P controller, Dynamixel/Feetech) or
    ``"current"`` (current P-D controller, eRob). ``vin`` and ``kp`` are the
    defaults used when a log does not say.
    """

    name: str
    law: str
    vin: float
    kp: float
    error_gain: float
    max_pwm: float
    motor: tuple[Parameter, ...]
    fmax: float = 0.2
    lmax: float = 0.5
    vmax: float = 1.0
    q_offset_bounds: tuple[float, float] = (-0.1, 0.1)
    damping: float = 0.0
    max_current: float = 0.0
    max_voltage: float = 0.0
    target_speed_limit: bool = False
    encoder_counts: int = 4096



MODELS: dict[str, FrictionModel] = {
    "m1": FrictionModel("m1", "Coulomb–viscous (M1)", ("friction_base", "friction_viscous")),
    "m2": FrictionModel(
        "m2",
        "Stribeck (M2)",
        ("friction_base", "friction_stribeck", "dtheta_stribeck", "alpha", "friction_viscous"),
    ),
    "m3": FrictionModel(
        "m3", "Load-dependent (M3)", ("friction_base", "load_friction_base", "friction_viscous")
    ),
    "m4": FrictionModel(
        "m4",
        "Stribeck load-dependent (M4)",
        (
            "friction_base",
            "friction_stribeck",
            "load_friction_base",
            "load_friction_stribeck",
            "dtheta_stribeck",
            "alpha",
            "friction_viscous",
        ),
    ),
    "m5": FrictionModel(
        "m5",
        "Directional load-dependent (M5)",
        (
            "friction_base",
            "friction_stribeck",
            "load_friction_motor",
            "load_friction_external",
            "load_friction_motor_stribeck",
            "load_friction_external_stribeck",
            "dtheta_stribeck",
            "alpha",
            "friction_viscous",
        ),
    ),
    "m6": FrictionModel(
        "m6",
        "Quadratic directional (M6)",
        (
            "friction_base",
            "friction_stribeck",
            "load_friction_motor",
            "load_friction_external",
            "load_friction_motor_stribeck",
            "load_friction_external_stribeck",
            "load_friction_motor_quad",
            "load_friction_external_quad",
            "dtheta_stribeck",
            "alpha",
            "friction_viscous",
        ),
    ),
}


def _motor(kt: tuple, r: tuple, armature: tuple) -> tuple[Parameter, ...]:
    return (
        Parameter("kt", *kt, unit="N·m/A"),
        Parameter("R", *r, unit="Ω"),
        Parameter("armature", *armature, unit="kg·m²"),
    )


_STS_MAX_VELOCITY = 3400 * 2 * math.pi / 4096

ACTUATORS: dict[str, Actuator] = {
    "mx64": Actuator(
        "mx64", "voltage", 15.0, 32.0, 0.158, 0.9625,
        _motor((1.6, 1.0, 3.0), (2.0, 1.0, 5.0), (0.005, 0.001, 0.05)),
    ),
    "mx106": Actuator(
        "mx106", "voltage", 15.0, 32.0, 0.158, 0.9625,
        _motor((1.6, 1.0, 3.0), (2.0, 1.0, 5.0), (0.005, 0.001, 0.05)),
    ),
    "xl320": Actuator(
        "xl320", "voltage", 7.5, 32.0, 0.05048199, 1.0,
        _motor((0.7, 0.25, 1.5), (5.0, 3.0, 40.0), (0.0005, 0.0001, 0.01)),
        lmax=1.0, encoder_counts=1024,
    ),
    "xl330": Actuator(
        "xl330", "voltage", 7.5, 400.0, (4096 / (2 * math.pi)) / (256 * 885), 1.0,
        _motor((1.6, 0.1, 3.0), (2.6, 2.0, 5.0), (0.005, 0.0001, 0.05)),
    ),
    "sts3215": Actuator(
        "sts3215", "voltage", 7.4, 32.0, 0.166, 0.97,
        _motor((0.784532, 0.05, 2.5), (2.0, 0.1, 10.0), (0.0001, 0.00001, 0.04))
        + (
            Parameter(
                "max_velocity", _STS_MAX_VELOCITY, 0.1 * _STS_MAX_VELOCITY,
                10.0 * _STS_MAX_VELOCITY, unit="rad/s",
            ),
            Parameter("error_gain_ratio", 1.0, 0.1, 10.0),
        ),
        q_offset_bounds=(-0.2, 0.2), target_speed_limit=True,
    ),
    "erob80_100": Actuator(
        "erob80_100", "current", 0.0, 0.0, 0.0, 0.0,
        _motor((1.6, 1.0, 15.0), (2.0, 0.1, 3.5), (0.005, 0.001, 2.0)),
        fmax=10.0, lmax=1.0, vmax=30.0, damping=2.0, max_current=12.0, max_voltage=48.0,
        encoder_counts=1 << 19,
    ),
    "erob80_50": Actuator(
        "erob80_50", "current", 0.0, 0.0, 0.0, 0.0,
        _motor((1.6, 1.0, 15.0), (2.0, 0.1, 3.5), (0.005, 0.001, 2.0)),
        fmax=10.0, lmax=1.0, vmax=30.0, damping=1.0, max_current=12.0, max_voltage=48.0,
        encoder_counts=1 << 19,
    ),
}


def friction_parameter(name: str, actuator: Actuator) -> Parameter:
    """Default and bounds of a friction parameter, with the actuator's overrides."""
    fmax, lmax, vmax = actuator.fmax, actuator.lmax, actuator.vmax
    table = {
        "friction_base": (0.05, 0.0, fmax, "N·m"),
        "friction_stribeck": (0.05, 0.0, fmax, "N·m"),
        "load_friction_base": (0.05, 0.0, lmax, ""),
        "load_friction_motor": (0.05, 0.0, lmax, ""),
        "load_friction_external": (0.05, 0.0, lmax, ""),
        "load_friction_stribeck": (0.05, 0.0, 1.0, ""),
        "load_friction_motor_stribeck": (0.05, 0.0, 1.0, ""),
        "load_friction_external_stribeck": (0.05, 0.0, 1.0, ""),
        "load_friction_motor_quad": (0.0, 0.0, 0.01, "1/(N·m)"),
        "load_friction_external_quad": (0.0, 0.0, 0.01, "1/(N·m)"),
        "dtheta_stribeck": (0.2, 0.1, 3.0, "rad/s"),
        "alpha": (1.35, 1.0, 10.0, ""),
        "friction_viscous": (0.1, 0.0, vmax, "N·m·s/rad"),
    }
    default, lower, upper, unit = table[name]
    return Parameter(name, default, lower, upper, unit)


def parameters(model: str, actuator: str) -> dict[str, Parameter]:
    """Every parameter of a (model, actuator) pair, in file order.

    Raises ``ValueError`` naming the unknown model or actuator.
    """
    model_spec = get_model(model)
    act = get_actuator(actuator)
    out = {"q_offset": Parameter("q_offset", 0.0, *act.q_offset_bounds, unit="rad")}
    for p in act.motor:
        out[p.name] = p
    for name in model_spec.friction:
        out[name] = friction_parameter(name, act)
    return out


def get_model(name: str) -> FrictionModel:
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown friction model {name!r} (expected one of {', '.join(MODELS)})"
        ) from None


def get_actuator(name: str) -> Actuator:
    try:
        return ACTUATORS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown actuator {name!r} (expected one of {', '.join(ACTUATORS)})"
        ) from None


def actuator_constants(act: Actuator) -> dict[int, float]:
    """The firmware constants of an actuator, by ``theta`` index."""
    return {
        layout.LAW: layout.VOLTAGE_LAW if act.law == "voltage" else layout.CURRENT_LAW,
        layout.ERROR_GAIN: act.error_gain,
        layout.MAX_PWM: act.max_pwm,
        layout.MAX_CURRENT: act.max_current,
        layout.MAX_VOLTAGE: act.max_voltage,
        layout.ERROR_GAIN_RATIO: 1.0,
    }
