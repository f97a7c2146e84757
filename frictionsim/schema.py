"""Parameter schema: which parameters each friction model and actuator has,
their defaults and search bounds (docs/model.md §2–3).

A *parameter set* is a (model, actuator) pair; its parameters are
``q_offset``, the model's friction terms, and the actuator's motor terms.
Everything here is plain data; :mod:`frictionsim.params` turns it into the flat
``theta`` vector of :mod:`frictionsim.layout`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from frictionsim import layout
from frictionsim.errors import ConfigurationError


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
class Hardware:
    """What the drivers, the virtual servo and the virtual bench need to know of a servo.

    ``family``: the bus (``"dynamixel"``, ``"feetech"``, ``"ethercat"``; empty when it
    cannot be driven); ``model_numbers``: what a PING may report, the first the default
    model; ``protocols``: Dynamixel protocol versions, the first the default;
    ``baudrate``: factory setting (bit/s); ``ids``: the lowest and highest id;
    ``counts_per_turn``: encoder counts per output turn; ``velocity_unit_rpm``: rpm per
    unit of the present-velocity register.
    """

    family: str = ""
    model_numbers: tuple[int, ...] = ()
    protocols: tuple[int, ...] = ()
    baudrate: int = 0
    ids: tuple[int, int] = (0, 252)
    counts_per_turn: float = 4096.0
    velocity_unit_rpm: float = 0.229

    @property
    def position_resolution(self) -> float:
        """One encoder count (rad)."""
        return 2.0 * math.pi / self.counts_per_turn

    @property
    def velocity_resolution(self) -> float:
        """One unit of the present-velocity register (rad/s)."""
        return self.velocity_unit_rpm * 2.0 * math.pi / 60.0


@dataclass(frozen=True)
class Actuator:
    """A servo: firmware control law constants, motor parameters and hardware facts.

    Declared in a TOML file (:mod:`frictionsim.actuator_files`, docs/model.md §11). ``law`` is
    ``"voltage"`` (duty-cycle P controller, Dynamixel/Feetech) or ``"current"``
    (current P-D controller, eRob). ``vin`` and ``kp`` are the defaults used when a
    log does not say. ``current_limit`` (A, 0: not declared) is the firmware's current
    limit, the default of docs/model.md §9's ``max_current_limit``; ``recommended`` the docs/model.md §9
    extensions cross-validation favours for it (a hint only). ``bound_overrides`` holds
    ``(name, default or None, min, max)`` for parameters whose section-2 bounds this
    actuator changes. ``derivative`` declares the Feetech D term (parameter
    ``derivative_time``; ``kd`` the D coefficient when a log does not say), ``dead_band``
    the firmware's dead band (rad; docs/model.md §12).
    ``rotor_inertia`` (kg·m², at the motor shaft) and ``gear_ratio``
    (0: not declared) give the reflected inertia J_rotor·N², then the armature's default.
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
    bound_overrides: tuple[tuple[str, float | None, float, float], ...] = ()
    damping: float = 0.0
    max_current: float = 0.0
    max_voltage: float = 0.0
    target_speed_limit: bool = False
    derivative: bool = False
    kd: float = 0.0
    dead_band: float = 0.0
    current_limit: float = 0.0
    recommended: tuple[str, ...] = ()
    hardware: Hardware = Hardware()
    title: str = ""
    source: str = ""
    rotor_inertia: float = 0.0
    gear_ratio: float = 0.0

    @property
    def reflected_inertia(self) -> float | None:
        """J_rotor·N² (kg·m²), the rotor's inertia seen at the output, if declared."""
        if self.rotor_inertia > 0 and self.gear_ratio > 0:
            return self.rotor_inertia * self.gear_ratio**2
        return None

    def override(self, name: str) -> tuple[float | None, float, float] | None:
        """(default or None, min, max) this actuator sets for parameter ``name``, if any."""
        for key, default, lo, hi in self.bound_overrides:
            if key == name:
                return default, lo, hi
        return None


class ReplacedActuatorWarning(UserWarning):
    """A user's actuator file declares a name a built-in actuator has: the file's declaration
    is used for the run (the command line shows it as one ``warning:`` line)."""


class ActuatorRegistry(Mapping):
    """Every known actuator by name: the built-in declarations, then the files registered.

    Read like a dict (``ACTUATORS["xl330"]``, ``list(ACTUATORS)``). A user's file is
    added with :meth:`load` (``--actuator-file``); a name may be registered again only
    with the same declaration. The registry does not parse files itself: ``reader``
    (a path → :class:`Actuator` function) and ``builtins`` (the shipped declarations)
    are :mod:`frictionsim.actuator_files`'s, set by ``frictionsim/__init__.py``.
    """

    def __init__(self) -> None:
        self._actuators: dict[str, Actuator] | None = None
        self.reader = None
        self.builtins = None

    def _all(self) -> dict[str, Actuator]:
        if self._actuators is None:
            self._actuators = {a.name: a for a in self.builtins()}
        return self._actuators

    def __getitem__(self, name: str) -> Actuator:
        return self._all()[name]

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def register(self, actuator: Actuator) -> Actuator:
        """Add ``actuator``. A user's declaration may replace a built-in one of its name (a
        warning says so: docs/model.md §11's example declares ``sts3215_12v``, also built in);
        ``ValueError`` if another user declaration already has its name."""
        known = self._all().get(actuator.name)
        if known is not None and replace(known, source="") != replace(actuator, source=""):
            if not self._is_builtin(known):
                raise ConfigurationError(f"{actuator.source or 'actuator'}: an actuator named "
                                         f"{actuator.name!r} is already declared ({known.source}); "
                                         "choose another name")
            import warnings

            warnings.warn(f"{actuator.source or 'actuator'} replaces the built-in declaration "
                          f"of {actuator.name!r} for this run", ReplacedActuatorWarning,
                          stacklevel=2)
        self._all()[actuator.name] = actuator
        return actuator

    def _is_builtin(self, actuator: Actuator) -> bool:
        return any(b == actuator for b in self.builtins())

    def load(self, path) -> Actuator:
        """Read a declaration file and register its actuator."""
        return self.register(self.reader(path))

    def unregister(self, name: str) -> None:
        """Forget a registered actuator (tests); a built-in one replaced comes back."""
        self._all().pop(name, None)
        for b in self.builtins():
            if b.name == name:
                self._all()[name] = b

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


#: The registry of actuators (built-in declarations, then the user's files).
ACTUATORS = ActuatorRegistry()

#: Section 2: default, lower bound, upper bound (a name: Fmax, Lmax, Vmax of the actuator), unit.
FRICTION_DEFAULTS: dict[str, tuple[float, float, float | str, str]] = {
    "friction_base": (0.05, 0.0, "Fmax", "N·m"),
    "friction_stribeck": (0.05, 0.0, "Fmax", "N·m"),
    "load_friction_base": (0.05, 0.0, "Lmax", ""),
    "load_friction_motor": (0.05, 0.0, "Lmax", ""),
    "load_friction_external": (0.05, 0.0, "Lmax", ""),
    "load_friction_stribeck": (0.05, 0.0, 1.0, ""),
    "load_friction_motor_stribeck": (0.05, 0.0, 1.0, ""),
    "load_friction_external_stribeck": (0.05, 0.0, 1.0, ""),
    "load_friction_motor_quad": (0.0, 0.0, 0.01, "1/(N·m)"),
    "load_friction_external_quad": (0.0, 0.0, 0.01, "1/(N·m)"),
    "dtheta_stribeck": (0.2, 0.1, 3.0, "rad/s"),
    "alpha": (1.35, 1.0, 10.0, ""),
    "friction_viscous": (0.1, 0.0, "Vmax", "N·m·s/rad"),
}
Q_OFFSET = (0.0, -0.1, 0.1)

#: docs/model.md §9: each electrical extension and the parameter-file keys it adds.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "supply": ("supply_emf", "supply_resistance"),
    "current_limit": ("max_current_limit",),
    "latency": ("latency_steps",),
    "observation_delay": ("observation_delay",),
    "backlash": ("backlash",),
    "ripple": ("ripple_amplitude", "ripple_frequency", "ripple_phase", "meshing_amplitude",
               "meshing_decay", "meshing_frequency", "meshing_phase"),
}
#: Extensions of any drive, not only a voltage-controlled one.
ANY_LAW = ("latency", "observation_delay", "backlash", "ripple")
#: Highest ripple frequency searched on the output angle (1/rad): twelve periods per motor turn
#: behind a 1:400 gear train.
MAX_RIPPLE_FREQUENCY = 5000.0
#: Widest gear-train gap searched (rad, about 3.4°): users measure about 1° on hobby servos.
MAX_BACKLASH = 0.06
#: Longest observation delay searched (s): a logging chain 50 ms late is already a broken one.
MAX_OBSERVATION_DELAY = 0.05
#: The learned actuator models (docs/model.md §13), beside the friction models M1–M6.
LEARNED_MODELS = ("net", "hybrid")
#: Parameters an extension adds that CMA does not search (integers: tried one by one).
DISCRETE = ("latency_steps",)
#: ``max_current_limit`` default when an actuator declares no ``current_limit`` (A).
CURRENT_LIMIT_FALLBACK = 2.0


#: Why ripple and backlash are not switched on together (a run's --with, a parameter file).
RIPPLE_WITH_BACKLASH = ("ripple and backlash together are not modelled yet (the ripple would "
                        "follow the motor side across the gap): use one of them")


def check_extensions(names) -> tuple[str, ...]:
    """The extensions ``names`` in docs/model.md §9's order; ConfigurationError naming an
    unknown one, or ripple with backlash (:data:`RIPPLE_WITH_BACKLASH`)."""
    names = (names,) if isinstance(names, str) else tuple(names or ())
    for name in names:
        if name not in EXTENSIONS:
            raise ConfigurationError(f"unknown extension {name!r} (expected one of "
                                     f"{', '.join(EXTENSIONS)})")
    if "ripple" in names and "backlash" in names:
        raise ConfigurationError(f"extensions: {RIPPLE_WITH_BACKLASH}")
    return tuple(n for n in EXTENSIONS if n in names)


def extension_of(key: str) -> str | None:
    """The extension whose parameter ``key`` is, if any."""
    return next((name for name, keys in EXTENSIONS.items() if key in keys), None)


def extension_parameters(name: str, actuator: Actuator) -> list[Parameter]:
    """Default and bounds of the parameters extension ``name`` adds (docs/model.md §9)."""
    if name == "supply":
        return [Parameter("supply_emf", actuator.vin, 0.5 * actuator.vin, 1.5 * actuator.vin, "V"),
                Parameter("supply_resistance", 0.0, 0.0, 2.0, "Ω")]
    if name == "current_limit":
        return [Parameter("max_current_limit", actuator.current_limit or CURRENT_LIMIT_FALLBACK,
                          0.1, 10.0, "A")]
    if name == "observation_delay":
        return [Parameter("observation_delay", 0.0, 0.0, MAX_OBSERVATION_DELAY, "s")]
    if name == "backlash":
        return [Parameter("backlash", 0.01, 0.0, MAX_BACKLASH, "rad")]
    if name == "ripple":
        # frequencies on the output angle: a motor harmonic k of a gear ratio N is k·N per rad
        return [Parameter("ripple_amplitude", 0.0, 0.0, 0.5 * actuator.fmax, "N·m"),
                Parameter("ripple_frequency", 300.0, 10.0, MAX_RIPPLE_FREQUENCY, "1/rad"),
                Parameter("ripple_phase", 0.0, 0.0, 2 * math.pi, "rad"),
                Parameter("meshing_amplitude", 0.0, 0.0, 0.5 * actuator.fmax, "N·m"),
                Parameter("meshing_decay", 1.0, 0.0, 100.0, "s/rad"),
                Parameter("meshing_frequency", 600.0, 10.0, MAX_RIPPLE_FREQUENCY, "1/rad"),
                Parameter("meshing_phase", 0.0, 0.0, 2 * math.pi, "rad")]
    return [Parameter("latency_steps", 0.0, 0.0, float(layout.MAX_LATENCY), "periods")]


def friction_parameter(name: str, actuator: Actuator) -> Parameter:
    """Default and bounds of a friction parameter, with the actuator's overrides."""
    default, lower, upper, unit = FRICTION_DEFAULTS[name]
    if isinstance(upper, str):
        upper = {"Fmax": actuator.fmax, "Lmax": actuator.lmax, "Vmax": actuator.vmax}[upper]
    return _overridden(Parameter(name, default, lower, upper, unit), actuator)


def _overridden(p: Parameter, actuator: Actuator) -> Parameter:
    own = actuator.override(p.name)
    if own is None:
        return p
    default, lower, upper = own
    return Parameter(p.name, p.default if default is None else default, lower, upper, p.unit)


def parameters(model: str, actuator: str, extensions=()) -> dict[str, Parameter]:
    """Every parameter of a (model, actuator) pair with the docs/model.md §9 ``extensions``, in file
    order.

    Raises ``ValueError`` naming the unknown model, actuator or extension.
    """
    model_spec = get_model(model)
    act = get_actuator(actuator)
    out = {"q_offset": _overridden(Parameter("q_offset", *Q_OFFSET, unit="rad"), act)}
    for p in act.motor:
        out[p.name] = p
    for name in model_spec.friction:
        out[name] = friction_parameter(name, act)
    for extension in check_extensions(extensions):
        if act.law != "voltage" and extension not in ANY_LAW:
            raise ConfigurationError(f"extension {extension!r} applies to voltage-controlled servos; "
                                     f"{actuator} is current-controlled")
        for p in extension_parameters(extension, act):
            out[p.name] = p
    return out


def get_model(name: str) -> FrictionModel:
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise ConfigurationError(
            f"unknown friction model {name!r} (expected one of {', '.join(MODELS)})"
        ) from None


def get_actuator(name: str) -> Actuator:
    """The declared actuator ``name``; ``ValueError`` listing the known ones otherwise."""
    try:
        return ACTUATORS[name]
    except (KeyError, TypeError):
        raise ConfigurationError(
            f"unknown actuator {name!r} (known: {', '.join(ACTUATORS)}; declare another one "
            "with --actuator-file FILE)"
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
        layout.DEAD_BAND: act.dead_band,
    }
