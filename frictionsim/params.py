"""Parameter sets and parameter files (docs/model.md §7).

A parameter file is a flat JSON object: each parameter name → value, plus
``"model"`` and ``"actuator"``, and ``"scheme"`` when the parameters were identified
with the ``semi_implicit`` position update (docs/model.md §4). The keys of the electrical
extensions a set uses (docs/model.md §9) sit beside the model's. Only the parameters of
that model and actuator belong in it; a missing one takes its default, an unknown key is an error
naming it, and values are never clipped to the search bounds.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import atomic, layout, plausibility, schema
from frictionsim.actuator_files import LARGEST
from frictionsim.errors import ConfigurationError, FrictionsimError
from frictionsim.jsonfile import json_files, read_json
from frictionsim.limits import is_number

#: Friction coefficients: a negative one makes the budget inject energy instead of dissipating it.
FRICTION_COEFFICIENTS = (
    "friction_base", "friction_stribeck", "load_friction_base", "load_friction_stribeck",
    "load_friction_motor", "load_friction_external", "load_friction_motor_stribeck",
    "load_friction_external_stribeck", "load_friction_motor_quad", "load_friction_external_quad",
    "friction_viscous",
)


class ParameterFileError(FrictionsimError, ValueError):
    """A parameter file (or dictionary) that cannot be used; the message names file, key and value."""


@dataclass
class ParameterSet:
    """A (model, actuator) pair with a value for each of its parameters.

    ``values`` maps every parameter name of :func:`frictionsim.schema.parameters`
    to a float. :meth:`theta` gives the flat kernel vector.
    """

    model: str
    actuator: str
    values: dict[str, float] = field(default_factory=dict)
    source: str | None = None
    scheme: str = "reference"
    """The fixed step's position update the parameters were identified with (docs/model.md §4)."""
    extensions: tuple[str, ...] = ()
    """The electrical extensions of docs/model.md §9 switched on (their parameters are in ``values``)."""
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    """How far another fit of the same servo may land, per parameter: (low, high) in its
    units (``identify --uncertainty``); servos drawn for domain randomisation stay inside."""

    def __post_init__(self) -> None:
        if not isinstance(self.scheme, str) or self.scheme not in layout.SCHEMES:
            raise ParameterFileError(f"{self._where()}: scheme {self.scheme!r} must be one of "
                                     f"{', '.join(layout.SCHEMES)}")
        try:
            self.extensions = schema.check_extensions(self.extensions)
            spec = schema.parameters(self.model, self.actuator, self.extensions)
        except ValueError as e:
            raise ParameterFileError(f"{self._where()}: {e}") from None
        if not isinstance(self.values, dict):
            raise ParameterFileError(f"{self._where()}: values must map parameter names to numbers, "
                                     f"got {type(self.values).__name__}")
        unknown = [k for k in self.values if k not in spec]
        extension = next((schema.extension_of(k) for k in unknown if schema.extension_of(k)), None)
        if extension:
            key = next(k for k in unknown if schema.extension_of(k) == extension)
            raise ParameterFileError(
                f"{self._where()}: {key} belongs to the {extension!r} extension (docs/model.md §9), which "
                f"this run does not enable: add --with {extension}, or remove the key")
        if unknown:
            raise ParameterFileError(
                f"{self._where()}: parameter {unknown[0]!r} does not belong to model "
                f"{self.model} on actuator {self.actuator} (allowed: {', '.join(spec)})"
            )
        for name, value in self.values.items():
            if not is_number(value):
                raise ParameterFileError(f"{self._where()}: {name} = {value!r} is not a number")
        self.values = {
            name: float(self.values.get(name, p.default)) for name, p in spec.items()
        }
        for name, value in self.values.items():
            if not math.isfinite(value):
                raise ParameterFileError(f"{self._where()}: {name} = {value} is not finite")
        self._check_ranges()
        self._check_physics()

    def _check_ranges(self) -> None:
        """Each range names a parameter of the set and is two finite numbers, low ≤ high."""
        checked = {}
        for name, pair in self.ranges.items():
            if name not in self.values:
                raise ParameterFileError(f"{self._where()}: ranges.{name}: not a parameter of "
                                         f"{self.model} on {self.actuator}")
            ok = isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in pair)
            if not ok or pair[0] > pair[1]:
                raise ParameterFileError(f"{self._where()}: ranges.{name} = {pair!r} must be "
                                         "[low, high], two finite numbers with low ≤ high")
            checked[name] = (float(pair[0]), float(pair[1]))
            value = self.values[name]
            if not pair[0] <= value <= pair[1]:
                # possible (a skewed bootstrap), but a hand-edited range far from the set
                # would draw every variant far from the fit without a word
                plausibility.warn(f"{self._where()}: ranges.{name} = [{pair[0]:g}, {pair[1]:g}] "
                                  f"does not contain the set's {name} = {value:g}: servos drawn "
                                  "within it are not variants of this fit")
        self.ranges = checked

    def _check_physics(self) -> None:
        """Errors for values the kernels cannot use, warnings for values no servo has.

        Published files stay loadable: nothing here rejects a value that merely
        lies outside the search bounds.
        """
        where, v = self._where(), self.values
        for name, value in v.items():
            # beyond this the kernels' arithmetic overflows (and an integer this large does
            # not even fit their 64-bit types): no servo constant is near it
            if abs(value) > LARGEST:
                raise ParameterFileError(f"{where}: {name} = {value!r} is implausibly large "
                                         f"(|value| ≤ {LARGEST:g} for any servo constant)")
        for name in ("dtheta_stribeck", "alpha"):
            if name in v and v[name] <= 0:
                raise ParameterFileError(f"{where}: {name} = {v[name]!r} must be > 0")
        if v["R"] <= 0:
            raise ParameterFileError(f"{where}: R = {v['R']!r} Ω must be > 0 (the motor law "
                                     "divides by the winding resistance)")
        for name in FRICTION_COEFFICIENTS:
            if v.get(name, 0.0) < 0:
                plausibility.warn(f"{where}: {name} = {v[name]!r} is negative: friction would "
                                  "push the joint instead of resisting it")
        if v["kt"] <= 0:
            plausibility.warn(f"{where}: kt = {v['kt']!r} N·m/A is not positive: the motor "
                              "produces no torque, or torque against its command")
        if v["armature"] <= 0:
            plausibility.warn(f"{where}: armature = {v['armature']!r} kg·m² is not positive: the "
                              "rotor's reflected inertia is ignored or subtracted")
        for name, spec in self.spec.items():
            if v[name] > plausibility.FAR_ABOVE_BOUNDS * spec.upper > 0:
                plausibility.warn(f"{where}: {name} = {v[name]!r} is more than "
                                  f"{plausibility.FAR_ABOVE_BOUNDS:g}× the top of its search "
                                  f"bounds [{spec.lower:g}, {spec.upper:g}]; no servo is like that")
        if "latency_steps" in v and (v["latency_steps"] not in range(layout.MAX_LATENCY + 1)):
            raise ParameterFileError(f"{where}: latency_steps = {v['latency_steps']!r} must be an "
                                     f"integer from 0 to {layout.MAX_LATENCY}")
        if not 0 <= v.get("observation_delay", 0.0) <= schema.MAX_OBSERVATION_DELAY:
            raise ParameterFileError(f"{where}: observation_delay = {v['observation_delay']!r} s "
                                     f"must be from 0 to {schema.MAX_OBSERVATION_DELAY:g} s")
        if v.get("max_current_limit", 1.0) <= 0:
            raise ParameterFileError(f"{where}: max_current_limit = {v['max_current_limit']!r} A "
                                     "must be > 0")
        if not 0 <= v.get("backlash", 0.0) <= 2 * schema.MAX_BACKLASH:
            raise ParameterFileError(f"{where}: backlash = {v['backlash']!r} rad must be from 0 "
                                     f"to {2 * schema.MAX_BACKLASH:g} rad (the full gear-train gap)")
        for name in ("ripple_amplitude", "meshing_amplitude"):
            if v.get(name, 0.0) < 0:  # a phase carries the sign; an amplitude is ≥ 0
                raise ParameterFileError(f"{where}: {name} = {v[name]!r} must be ≥ 0 "
                                         "(docs/model.md §15; its phase sets the sign)")
        if v.get("meshing_decay", 0.0) < 0:
            raise ParameterFileError(f"{where}: meshing_decay = {v['meshing_decay']!r} s/rad "
                                     "must be ≥ 0 (docs/model.md §15: the meshing friction "
                                     "fades with speed, it never grows)")
        for name in ("ripple_frequency", "meshing_frequency"):
            if name in v and not v[name] > 0:  # the phase carries the sign here too
                raise ParameterFileError(f"{where}: {name} = {v[name]!r} 1/rad must be > 0 "
                                         "(docs/model.md §15: a ripple of frequency 0 is a "
                                         "constant, a negative one its phase reversed)")
        self._warn_ripple_ranges(where)
        if v.get("backlash", 0.0) > 0 and v["armature"] <= 0:
            raise ParameterFileError(f"{where}: backlash needs armature > 0: the rotor's inertia "
                                     "is the motor side of the gap (docs/model.md §14)")
        if abs(v["q_offset"]) > math.pi:
            plausibility.warn(f"{where}: q_offset = {v['q_offset']!r} rad is more than half a turn")

    def _warn_ripple_ranges(self, where: str) -> None:
        """Warnings for the ripple's terms outside the ranges docs/model.md §15 gives them (the
        search bounds of ``--with ripple``): an amplitude above half the actuator's largest
        friction, a frequency outside [10, 5000] 1/rad, a decay above 100 s/rad. The values
        are used: a servo may be outside what the fit searches, but rarely this far."""
        if "ripple" not in self.extensions:
            return
        for name, spec in self.spec.items():
            if name not in schema.EXTENSIONS["ripple"] or name.endswith("_phase"):
                continue  # a phase is any angle
            value = self.values[name]
            far = value > plausibility.FAR_ABOVE_BOUNDS * spec.upper > 0  # warned already
            if not far and not spec.lower <= value <= spec.upper:
                plausibility.warn(f"{where}: {name} = {value:g} {spec.unit} is outside "
                                  f"[{spec.lower:g}, {spec.upper:g}], the range docs/model.md "
                                  "§15 gives it and --with ripple searches")

    def _where(self) -> str:
        return self.source or f"parameter set {self.model}/{self.actuator}"

    @classmethod
    def defaults(cls, model: str, actuator: str) -> ParameterSet:
        """Every parameter at its default."""
        return cls(model, actuator, {})

    @property
    def spec(self) -> dict[str, schema.Parameter]:
        return schema.parameters(self.model, self.actuator, self.extensions)

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def theta(self) -> np.ndarray:
        """The flat servo vector of :mod:`frictionsim.layout` (unused friction terms exactly 0)."""
        return theta_from_values(self.values, schema.get_actuator(self.actuator), self.scheme,
                                 self.extensions)

    def with_values(self, **updates: float) -> ParameterSet:
        """A copy with some parameters changed (the ranges kept)."""
        return ParameterSet(self.model, self.actuator, {**self.values, **updates}, self.source,
                            self.scheme, self.extensions, dict(self.ranges))

    def with_scheme(self, scheme: str | None) -> ParameterSet:
        """The same parameters simulated with ``scheme`` (None: unchanged)."""
        if scheme is None or scheme == self.scheme:
            return self
        return ParameterSet(self.model, self.actuator, dict(self.values), self.source, scheme,
                            self.extensions, dict(self.ranges))

    def with_ranges(self, ranges: dict[str, tuple[float, float]]) -> ParameterSet:
        """A copy with these ``ranges`` (see :attr:`ranges`)."""
        return ParameterSet(self.model, self.actuator, dict(self.values), self.source,
                            self.scheme, self.extensions, dict(ranges))

    def variants(self, n: int, seed: int = 0) -> list[ParameterSet]:
        """``n`` servos drawn for domain randomisation: each parameter with a range uniform
        inside it (independently, seeded by ``seed``), the others as they are. ValueError
        when the set has no ranges (``identify --uncertainty`` writes them)."""
        if not self.ranges:
            raise ConfigurationError(f"{self._where()}: no ranges to draw servos within (identify "
                                     "--uncertainty writes them into the parameter file)")
        if not 1 <= n <= 1_000_000:
            raise ConfigurationError(f"variants: n = {n} must be 1 to 1,000,000")
        rng = np.random.default_rng(seed)
        names = sorted(self.ranges)
        low = np.array([self.ranges[k][0] for k in names])
        high = np.array([self.ranges[k][1] for k in names])
        draws = rng.uniform(low, high, size=(n, len(names)))
        return [ParameterSet(self.model, self.actuator, {**self.values, **dict(zip(names, row))},
                             f"{self._where()} (variant {i + 1} of {n}, seed {seed})",
                             self.scheme, self.extensions) for i, row in enumerate(draws)]

    def with_extensions(self, extensions) -> ParameterSet:
        """The same parameters with the docs/model.md §9 ``extensions`` on (None: unchanged): the
        parameters of an extension not yet on take their defaults; those of an extension
        turned off are dropped."""
        if extensions is None:
            return self
        try:
            keep = schema.check_extensions(extensions)
        except ConfigurationError as e:
            raise ParameterFileError(f"{self._where()}: {e}") from None
        values = {k: x for k, x in self.values.items()
                  if schema.extension_of(k) is None or schema.extension_of(k) in keep}
        return ParameterSet(self.model, self.actuator, values, self.source, self.scheme, keep,
                            {k: r for k, r in self.ranges.items() if k in values})

    def to_dict(self) -> dict:
        """The parameter-file object: names → values, then model, actuator and (when it is not
        the reference) the scheme."""
        out = {**self.values, "model": self.model, "actuator": self.actuator}
        if self.scheme != "reference":
            out["scheme"] = self.scheme
        if self.ranges:
            out["ranges"] = {k: list(v) for k, v in self.ranges.items()}
        return out


def theta_from_values(values: dict[str, float], actuator: schema.Actuator,
                      scheme: str = "reference", extensions=()) -> np.ndarray:
    """Build ``theta`` from named values (missing friction terms, extensions off: 0)."""
    theta = np.zeros(layout.THETA_SIZE)
    for index, value in schema.actuator_constants(actuator).items():
        theta[index] = value
    for name, value in values.items():
        theta[layout.THETA_INDEX[name]] = value
    theta[layout.SCHEME] = layout.SCHEMES[scheme]
    theta[layout.SUPPLY] = 1.0 if "supply" in extensions else 0.0
    return theta


#: Keys other tools write beside the parameters that describe the fit, not the servo (the
#: reference fitter's ``score`` and ``trial_number``): read and set aside, never parameters.
METADATA_KEYS = ("score", "trial_number")


def from_dict(data: dict, source: str | None = None, extensions=None) -> ParameterSet:
    """Parse a parameter-file object; errors name ``source``, the key and the value.

    ``extensions``: the docs/model.md §9 extensions the run enables (``--with``); a key of another
    extension is an error naming it. None: the extensions whose keys the file has.
    """
    where = source or "parameter set"
    if not isinstance(data, dict):
        raise ParameterFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for key in ("model", "actuator"):
        if key not in data:
            raise ParameterFileError(f"{where}: missing {key!r}")
    for key in ("model", "actuator", "scheme"):
        if key in data and not isinstance(data[key], str):
            raise ParameterFileError(f"{where}: {key} = {data[key]!r} must be a name (a string)")
    try:
        schema.get_model(data["model"])
        schema.get_actuator(data["actuator"])
    except ValueError as e:
        raise ParameterFileError(f"{where}: {e}") from None
    scheme = data.get("scheme", "reference")
    if scheme not in layout.SCHEMES:
        raise ParameterFileError(f"{where}: scheme = {scheme!r} must be one of "
                                 f"{', '.join(layout.SCHEMES)}")
    ranges = data.get("ranges", {})
    if not isinstance(ranges, dict):
        raise ParameterFileError(f"{where}: ranges must map parameter names to [low, high]")
    values = {}
    for key, value in data.items():
        if key in ("model", "actuator", "scheme", "ranges") or key in METADATA_KEYS:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterFileError(f"{where}: {key} = {value!r} is not a number")
        values[key] = value
    asked = extensions is not None
    if extensions is None:
        extensions = {schema.extension_of(k) for k in values} - {None}
    params = ParameterSet(data["model"], data["actuator"], values, source, scheme,
                          tuple(extensions), ranges)
    if asked:
        _say_defaults(params, values, where)
    return params


def _say_defaults(params: ParameterSet, given: dict, where: str) -> None:
    """Warn, once per file, about the parameters of the extensions the run switches on that
    the file lacks: they take their defaults, which the file's fit never saw."""
    spec = params.spec
    missing = [k for k in spec if schema.extension_of(k) and k not in given]
    if missing:
        shown = ", ".join(f"{k} = {params.values[k]:g}" + (f" {spec[k].unit}" if spec[k].unit
                                                             else "") for k in missing)
        plausibility.warn(f"{where}: no {', '.join(missing)} in the file; --with "
                          f"{' '.join(dict.fromkeys(schema.extension_of(k) for k in missing))} "
                          f"uses the default ({shown})")


#: The published parameter files shipped with frictionsim (their sources: the folder's README).
PUBLISHED_DIR = Path(__file__).with_name("published")


def published_names() -> tuple[str, ...]:
    """The names of the shipped published parameter files (``sts3215_7v4_m1``…)."""
    return tuple(p.stem for p in sorted(PUBLISHED_DIR.glob("*.json")))


def published_path(name: str) -> Path:
    """The file of the published parameter set ``name`` (:func:`published_names`);
    ConfigurationError listing the names otherwise."""
    from frictionsim.errors import ConfigurationError

    if name not in published_names():
        raise ConfigurationError(f"no published parameter file {name!r} (shipped: "
                                 f"{', '.join(published_names())})")
    return PUBLISHED_DIR / f"{name}.json"


def load_published(name: str) -> ParameterSet:
    """A published parameter file shipped with frictionsim, by name (:func:`published_names`;
    each file's source and licence in ``frictionsim/published/README.md``), with its
    ``ranges`` for domain randomisation. ConfigurationError listing the names otherwise."""
    return load_params(published_path(name))


def load_params(path: str | os.PathLike, extensions=None) -> ParameterSet:
    """Read a parameter file (docs/model.md §7); ``extensions`` as in :func:`from_dict`."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigurationError(f"parameters: a ParameterSet or a parameter file's path, not "
                                 f"{type(path).__name__} ({path!r:.40})")
    path = Path(path)
    data = read_json(path, ParameterFileError, "parameter file")
    if isinstance(data, dict) and "servos" in data and "model" not in data:
        raise ParameterFileError(f"{path}: a robot parameter file (robot identify's: a set per "
                                 "actuator type); read it with "
                                 "frictionsim.robot_params.load_robot_params")
    return from_dict(data, str(path), extensions)


def save_params(path: str | os.PathLike, params: ParameterSet) -> Path:
    """Write a parameter file atomically."""
    if not isinstance(params, ParameterSet):
        raise ConfigurationError(f"save_params: a ParameterSet to write to {path}, not "
                                 f"{type(params).__name__}")
    return atomic.write_json(path, params.to_dict())


def parameter_files(paths: list[str | os.PathLike]) -> list[Path]:
    """The parameter files named: a file as given (it must be one when loaded), a folder for
    its ``*.json`` files that are parameter files (an object with ``model`` and ``actuator``),
    so an identification's output folder, with its report.json, stands for its fits.
    ParameterFileError for a missing path or a folder without one."""
    return json_files(paths, ParameterFileError, keep=_is_parameter_file,
                      what="parameter file (*.json with 'model' and 'actuator')")


def _is_parameter_file(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "model" in data and "actuator" in data
