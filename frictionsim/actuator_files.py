"""Actuator declaration files (docs/model.md §11): the one way to define an actuator.

The built-in actuators are TOML files shipped in ``frictionsim/actuators/``; a
user's file (``--actuator-file FILE``) is read by the same :func:`load_actuator_file`
and added to the registry (:data:`frictionsim.schema.ACTUATORS`) under its
``name``. A file declares the firmware law and its constants, the default and
search bounds of the motor parameters, overrides of the friction bounds, the
electrical extensions cross-validation recommends, and the servo's hardware
facts (bus family, model numbers, protocols, ids, encoder and velocity units)::

    name = "sts3215_12v"
    law = "voltage"                 # or "current"
    vin = 12.0                      # voltage law: default supply (V)
    kp = 32                         # default firmware gain when a log has none
    error_gain = 0.16489            # duty per (kp · rad)
    max_pwm = 0.97
    target_speed_limit = true       # the sts3215-style limiter (max_velocity, error_gain_ratio)
    derivative = true               # the Feetech D term (parameter derivative_time)
    kd = 32                         # with it: default D coefficient when a log has none
    dead_band = 0.0015339808        # rad: |error| at or below it drives nothing (Feetech dead zone)
    recommended = ["supply"]        # docs/model.md §9 extensions: a hint, never switched on silently
    rotor_inertia = 1.2e-7          # optional, kg·m² at the motor shaft, with gear_ratio N:
    gear_ratio = 270.0              # armature's default becomes J_rotor·N² (reflected inertia)
    # current law instead: max_current, max_voltage, damping
    [parameters]                    # default and search bounds of the actuator's own parameters
    # (max_velocity and error_gain_ratio, if the limiter is on, and derivative_time, with the
    # D term: docs/model.md §3 and §12's when omitted)
    kt = { default = 1.0, min = 0.05, max = 5.0 }
    R = { default = 5.0, min = 0.1, max = 20.0 }
    armature = { default = 0.005, min = 1e-5, max = 0.1 }
    [bounds]                        # Fmax, Lmax, Vmax and per-parameter bounds
    Fmax = 0.5
    q_offset = { min = -0.2, max = 0.2 }
    [hardware]                      # optional: what the drivers and the virtual servo need
    family = "feetech"              # "dynamixel", "feetech", "ethercat"
    model_numbers = [777]
    baudrate = 1000000
    ids = [0, 252]
    counts_per_turn = 4096
    velocity_unit_rpm = 0.0146484375

Every field is checked: an unknown key, a wrong type, a value out of range or
``min > max`` is an :class:`ActuatorFileError` naming the file and the key.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from pathlib import Path

from frictionsim import schema
from frictionsim.errors import FrictionsimError
from frictionsim.jsonfile import as_path, check_regular_file
from frictionsim.schema import Actuator, Hardware, Parameter

#: Where the built-in declarations live.
BUILTIN_DIR = Path(__file__).with_name("actuators")

LAWS = ("voltage", "current")
FAMILIES = ("dynamixel", "feetech", "ethercat")
#: docs/model.md §9 extensions an actuator may recommend.
EXTENSIONS = tuple(schema.EXTENSIONS)
MOTOR_PARAMETERS = ("kt", "R", "armature")
LIMITER_PARAMETERS = ("max_velocity", "error_gain_ratio")
DERIVATIVE_PARAMETERS = ("derivative_time",)
_OMEGA_MAX = 3400 * 2 * math.pi / 4096
#: docs/model.md §3: (default, min, max) of the target-speed limiter's parameters when a declaration
#: with ``target_speed_limit = true`` does not give them.
LIMITER_DEFAULTS = {
    "max_velocity": (_OMEGA_MAX, 0.1 * _OMEGA_MAX, 10.0 * _OMEGA_MAX),
    "error_gain_ratio": (1.0, 0.1, 10.0),
    # docs/model.md §12: seconds of error rate per unit of the D coefficient; 1 ms (the D
    # term as a difference per firmware cycle of about 1 ms, in the P term's units) to start
    "derivative_time": (1e-3, 0.0, 0.02),
}
_UNITS = {"kt": "N·m/A", "R": "Ω", "armature": "kg·m²", "max_velocity": "rad/s",
          "error_gain_ratio": "", "derivative_time": "s"}

_TOP = {"name", "title", "law", "vin", "kp", "error_gain", "max_pwm", "target_speed_limit",
        "recommended", "max_current", "max_voltage", "damping", "parameters", "bounds",
        "hardware", "current_limit", "rotor_inertia", "gear_ratio", "derivative", "dead_band", "kd"}
_VOLTAGE_ONLY = ("vin", "error_gain", "max_pwm", "target_speed_limit", "current_limit",
                 "derivative", "dead_band", "kd")
_OPTIONAL = ("target_speed_limit", "current_limit", "derivative", "dead_band", "kd")
#: The widest firmware dead band a declaration may give (rad): 0.1 rad is about 65 counts.
MAX_DEAD_BAND = 0.1
_CURRENT_ONLY = ("max_current", "max_voltage", "damping")
_HARDWARE = {"family", "model_numbers", "protocols", "baudrate", "ids", "counts_per_turn",
             "encoder_span_deg", "velocity_unit_rpm"}


#: The largest magnitude of any number in a declaration: beyond it a square (k_t², the
#: reflected inertia J·N²) overflows, and no servo's constant comes near it.
LARGEST = 1e9
#: The smallest duty-cycle limit that still moves a servo.
MIN_PWM = 0.01


class ActuatorFileError(FrictionsimError, ValueError):
    """An actuator file that cannot be used; the message names the file and the key."""


class TomlReader:
    """Typed access to a parsed TOML table, every error (``error``, a ValueError class) naming
    the file and the dotted key."""

    def __init__(self, source: str, error: type[ValueError] = ActuatorFileError) -> None:
        self.source = source
        self.error = error

    def fail(self, key: str, why: str) -> ValueError:
        return self.error(f"{self.source}: {key}: {why}")

    def number(self, table: dict, key: str, where: str, *, positive: bool = False,
               non_negative: bool = False, at_most: float | None = None,
               at_least: float | None = None) -> float:
        """A finite number of plausible size (|x| ≤ :data:`LARGEST`; no servo constant is
        larger, and larger ones overflow the kernels' arithmetic), with the limits asked."""
        value = table[key]
        name = f"{where}{key}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(name, f"{value!r} is not a number")
        try:
            value = float(value)
        except OverflowError:
            raise self.fail(name, "the number is too large to be a servo constant") from None
        if not math.isfinite(value):
            raise self.fail(name, f"{value!r} is not finite")
        if abs(value) > LARGEST:
            raise self.fail(name, f"{value:g} is implausibly large (|value| ≤ {LARGEST:g})")
        if at_least is not None and value < at_least:
            raise self.fail(name, f"{value!r} must be ≥ {at_least:g}")
        if positive and value <= 0:
            raise self.fail(name, f"{value!r} must be > 0")
        if non_negative and value < 0:
            raise self.fail(name, f"{value!r} must be ≥ 0")
        if at_most is not None and value > at_most:
            raise self.fail(name, f"{value!r} must be ≤ {at_most:g}")
        return value

    def integer(self, value, name: str, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, f"{value!r} is not an integer")
        if not lo <= value <= hi:
            raise self.fail(name, f"{value} is outside {lo} … {hi}")
        return value

    def table(self, data: dict, key: str) -> dict:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table ([{key}]), got {type(value).__name__}")
        return value

    def keys(self, table: dict, allowed: set[str] | tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(f"{where}{key}", "unknown key (allowed: "
                                + ", ".join(sorted(allowed)) + ")")

    def bounds(self, spec, name: str, need_default: bool) -> tuple[float | None, float, float]:
        """(default, min, max) of an inline table ``{ default, min, max }`` (or, for bounds
        alone, of ``[min, max]``)."""
        if isinstance(spec, list) and not need_default:
            if len(spec) != 2:
                raise self.fail(name, f"{spec!r} must be [min, max]")
            spec = {"min": spec[0], "max": spec[1]}
        if not isinstance(spec, dict):
            raise self.fail(name, "must be an inline table { default = …, min = …, max = … }")
        self.keys(spec, ("default", "min", "max"), f"{name}.")
        for key in (("default", "min", "max") if need_default else ("min", "max")):
            if key not in spec:
                raise self.fail(f"{name}.{key}", "missing")
        lo = self.number(spec, "min", f"{name}.")
        hi = self.number(spec, "max", f"{name}.")
        if lo > hi:
            raise self.fail(name, f"min {lo:g} > max {hi:g}")
        default = self.number(spec, "default", f"{name}.") if "default" in spec else None
        if default is not None and not lo <= default <= hi:
            raise self.fail(f"{name}.default", f"{default:g} is outside [min, max] = "
                                                f"[{lo:g}, {hi:g}]")
        return default, lo, hi


def parse_actuator(data: dict, source: str) -> Actuator:
    """The :class:`~frictionsim.schema.Actuator` a parsed declaration describes."""
    r = TomlReader(source)
    if not isinstance(data, dict):
        raise ActuatorFileError(f"{source}: expected a TOML document")
    r.keys(data, _TOP, "")
    for key in ("name", "law", "parameters"):
        if key not in data:
            raise r.fail(key, "missing")
    name = data["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise r.fail("name", f"{name!r} must be lower-case letters, digits and _ (it names files "
                             "and appears in parameter files)")
    if name in schema.MODELS:
        raise r.fail("name", f"{name!r} is a friction model's name")
    title = data.get("title", name)
    if not isinstance(title, str):
        raise r.fail("title", f"{title!r} is not a string")
    law = data["law"]
    if law not in LAWS:
        raise r.fail("law", f"{law!r} must be one of {', '.join(LAWS)}")
    own, other = (_VOLTAGE_ONLY, _CURRENT_ONLY) if law == "voltage" else (_CURRENT_ONLY,
                                                                           _VOLTAGE_ONLY)
    for key in other:
        if key in data:
            raise r.fail(key, f"belongs to the {'current' if law == 'voltage' else 'voltage'} "
                              f"law; this actuator's law is {law!r}")
    for key in own:
        if key not in data and key not in _OPTIONAL:
            raise r.fail(key, f"missing (required by the {law} law)")
    limiter = data.get("target_speed_limit", False)
    if not isinstance(limiter, bool):
        raise r.fail("target_speed_limit", f"{limiter!r} must be true or false")
    derivative = data.get("derivative", False)
    if not isinstance(derivative, bool):
        raise r.fail("derivative", f"{derivative!r} must be true or false")
    if "kp" in data:
        # a voltage-law servo with no P gain never moves: as a default it would be exported
        # and simulated as a limp joint; a current-law drive takes its gains from each log
        kp = r.number(data, "kp", "", non_negative=law != "voltage",
                      positive=law == "voltage", at_most=1e6)
    else:
        kp = 32.0 if law == "voltage" else 0.0
    if law == "voltage":
        constants = dict(vin=r.number(data, "vin", "", positive=True, at_most=1e3),
                         error_gain=r.number(data, "error_gain", "", positive=True, at_most=100.0),
                         max_pwm=r.number(data, "max_pwm", "", positive=True, at_most=1.0,
                                          at_least=MIN_PWM))
        if "current_limit" in data:
            constants["current_limit"] = r.number(data, "current_limit", "", positive=True)
        if "kd" in data:
            if not derivative:
                raise r.fail("kd", "a D coefficient needs derivative = true")
            constants["kd"] = r.number(data, "kd", "", non_negative=True, at_most=1e6)
        if "dead_band" in data:
            constants["dead_band"] = r.number(data, "dead_band", "", non_negative=True,
                                              at_most=MAX_DEAD_BAND)
    else:
        constants = dict(vin=0.0, error_gain=0.0, max_pwm=0.0,
                         max_current=r.number(data, "max_current", "", positive=True, at_most=1e4),
                         max_voltage=r.number(data, "max_voltage", "", positive=True, at_most=1e4),
                         damping=r.number(data, "damping", "", non_negative=True))
    recommended = data.get("recommended", [])
    if not isinstance(recommended, list) or any(x not in EXTENSIONS for x in recommended):
        raise r.fail("recommended", f"{recommended!r} must be a list of "
                                    f"{', '.join(EXTENSIONS)}")

    rotor = _rotor(r, data)
    params = r.table(data, "parameters")
    expected = (MOTOR_PARAMETERS + (LIMITER_PARAMETERS if limiter else ())
                + (DERIVATIVE_PARAMETERS if derivative else ()))
    r.keys(params, expected, "parameters.")
    motor = []
    for key in expected:
        if key not in params and key in LIMITER_DEFAULTS:
            motor.append(Parameter(key, *LIMITER_DEFAULTS[key], unit=_UNITS[key]))
            continue
        if key not in params:
            raise r.fail(f"parameters.{key}", "missing")
        reflected = key == "armature" and rotor is not None
        default, lo, hi = r.bounds(params[key], f"parameters.{key}", need_default=not reflected)
        if reflected:
            if default is not None:
                raise r.fail("parameters.armature.default", "give either this default or "
                             "rotor_inertia and gear_ratio (whose J_rotor·N² is the default)")
            default = rotor[0] * rotor[1] ** 2
            if not lo <= default <= hi:
                raise r.fail("rotor_inertia", f"the reflected inertia J_rotor·N² = {default:g} "
                             f"kg·m² is outside parameters.armature [{lo:g}, {hi:g}]")
        if key == "R" and lo <= 0:
            raise r.fail("parameters.R.min", f"{lo:g} must be > 0 (the law divides by R)")
        if key == "error_gain_ratio" and lo <= 0:
            raise r.fail(f"parameters.{key}.min", f"{lo:g} must be > 0 (a ratio of two gains; "
                         "at or below 0 the limiter pushes away from the goal)")
        if lo < 0:
            raise r.fail(f"parameters.{key}.min", f"{lo:g} must be ≥ 0")
        motor.append(Parameter(key, default, lo, hi, unit=_UNITS[key]))

    bounds = r.table(data, "bounds")
    overridable = {"q_offset", *schema.FRICTION_DEFAULTS}
    r.keys(bounds, {"Fmax", "Lmax", "Vmax", *overridable}, "bounds.")
    limits = {k: r.number(bounds, k, "bounds.", positive=True, at_most=1e4)
              for k in ("Fmax", "Lmax", "Vmax") if k in bounds}
    overrides = []
    for key in sorted(set(bounds) & overridable):
        default, lo, hi = r.bounds(bounds[key], f"bounds.{key}", need_default=False)
        if key != "q_offset" and lo < 0:  # friction that pushes: the fit would leave the box
            raise r.fail(f"bounds.{key}.min", f"{lo:g} must be ≥ 0 (a friction coefficient)")
        overrides.append((key, default, lo, hi))

    return Actuator(
        name=name, law=law, kp=kp, motor=tuple(motor),
        fmax=limits.get("Fmax", 0.2), lmax=limits.get("Lmax", 0.5), vmax=limits.get("Vmax", 1.0),
        bound_overrides=tuple(overrides), target_speed_limit=limiter, derivative=derivative,
        recommended=tuple(recommended), hardware=_hardware(r, r.table(data, "hardware")),
        title=title, source=source, rotor_inertia=rotor[0] if rotor else 0.0,
        gear_ratio=rotor[1] if rotor else 0.0, **constants,
    )


def _rotor(r: TomlReader, data: dict) -> tuple[float, float] | None:
    """(J_rotor in kg·m², N) when the declaration gives both, None when neither."""
    given = [k for k in ("rotor_inertia", "gear_ratio") if k in data]
    if len(given) == 1:
        other = "gear_ratio" if given[0] == "rotor_inertia" else "rotor_inertia"
        raise r.fail(other, f"missing: {given[0]} is given, and the reflected inertia "
                            "J_rotor·N² needs both")
    if not given:
        return None
    return (r.number(data, "rotor_inertia", "", positive=True, at_most=1.0),
            r.number(data, "gear_ratio", "", positive=True, at_most=1e4))


def _hardware(r: TomlReader, hw: dict) -> Hardware:
    r.keys(hw, _HARDWARE, "hardware.")
    family = hw.get("family", "")
    if family not in FAMILIES + ("",):
        raise r.fail("hardware.family", f"{family!r} must be one of {', '.join(FAMILIES)}")
    numbers = hw.get("model_numbers", [])
    if not isinstance(numbers, list):
        raise r.fail("hardware.model_numbers", "must be a list of integers")
    numbers = [r.integer(n, "hardware.model_numbers", 0, 0xFFFF) for n in numbers]
    protocols = hw.get("protocols", [])
    # isinstance first: true == 1 in Python, and a TOML boolean is no protocol version
    if not isinstance(protocols, list) or any(isinstance(p, bool) or p not in (1, 2)
                                              for p in protocols):
        raise r.fail("hardware.protocols", f"{protocols!r} must be a list of 1 and/or 2")
    ids = hw.get("ids", [0, 252])
    if not (isinstance(ids, list) and len(ids) == 2):
        raise r.fail("hardware.ids", f"{ids!r} must be [lowest, highest]")
    lo, hi = (r.integer(i, "hardware.ids", 0, 65535) for i in ids)
    if lo > hi:
        raise r.fail("hardware.ids", f"lowest {lo} > highest {hi}")
    baudrate = r.integer(hw.get("baudrate", 0), "hardware.baudrate", 0, 100_000_000)
    counts = _counts_per_turn(r, hw) if "counts_per_turn" in hw else 4096.0
    velocity = r.number(hw, "velocity_unit_rpm", "hardware.", positive=True) \
        if "velocity_unit_rpm" in hw else 0.229
    return Hardware(family=family, model_numbers=tuple(numbers), protocols=tuple(protocols),
                    baudrate=baudrate, ids=(lo, hi), counts_per_turn=counts,
                    velocity_unit_rpm=velocity)


def _counts_per_turn(r: TomlReader, hw: dict) -> float:
    """``counts_per_turn``, checked to be a whole number of encoder counts over the angle they
    span (``encoder_span_deg``, default a full turn): the XL320's 1024 counts over 300° make
    1228.8 per turn; 4096.5 counts over a turn would scale every logged position wrongly."""
    counts = r.number(hw, "counts_per_turn", "hardware.", positive=True, at_most=2.0**32)
    span = r.number(hw, "encoder_span_deg", "hardware.", positive=True, at_most=360.0) \
        if "encoder_span_deg" in hw else 360.0
    whole = counts * span / 360.0
    if whole < 2 or abs(whole - round(whole)) > 1e-9 * whole:
        raise r.fail("hardware.counts_per_turn", f"{counts:g} per turn is {whole:g} counts over "
                     f"{span:g}°, not a whole number of encoder counts (an encoder that spans "
                     "less than a turn declares encoder_span_deg: the XL320's 1024 counts over "
                     "300° are counts_per_turn = 1228.8 with encoder_span_deg = 300)")
    return counts


def read_toml(path: str | os.PathLike, error: type[ValueError], what: str) -> dict:
    """The parsed TOML document at ``path``; ``error`` naming the file when it is missing, not
    a regular file, unreadable or not TOML (``what``: "actuator file", "robot file"…)."""
    path = as_path(path, error, what)
    check_regular_file(path, error, what)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not content
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{path}: cannot read the {what} ({e})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise error(f"{path}: not valid TOML (nested too deeply)") from None


def load_actuator_file(path: str | os.PathLike) -> Actuator:
    """Read and check one declaration file; :class:`ActuatorFileError` naming file and key."""
    return parse_actuator(read_toml(path, ActuatorFileError, "actuator file"), str(path))


def builtin_actuators() -> list[Actuator]:
    """The declarations shipped with frictionsim, in name order."""
    return [load_actuator_file(p) for p in sorted(BUILTIN_DIR.glob("*.toml"))]
