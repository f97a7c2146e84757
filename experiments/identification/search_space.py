"""The identification search space: free parameters, their bounds, and the map to ``theta``.

The optimizer works on an unbounded vector x (one coordinate per free
parameter). Each coordinate is folded into u ∈ [0, 1] by a triangle wave
(reflection at the bounds: continuous, reaches both bounds, no flat region)
and mapped onto the parameter's bounds [lo, hi] by a scale chosen from them::

    u     = tri(x) = y if y ≤ 1 else 2 − y,   y = x mod 2
    value = lo·(hi/lo)^u                            log:    lo > 0 and hi/lo ≥ 10
    value = lo + (hi − lo)·(e^(κu) − 1)/(e^κ − 1)   log0:   lo = 0 (κ = ln(1 + R0))
    value = lo + u·(hi − lo)                        linear: otherwise

Friction coefficients are bounded below by 0 and usually sit 1–3 decades below
their upper bound; the log0 scale gives them a resolution of about hi/R0 near
0 while keeping 0 reachable. Doing this ourselves on whole populations keeps
nevergrad's per-candidate overhead to its unbounded ``Array`` (bounded arrays
cost several times more).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frictionsim import layout, schema
from frictionsim.errors import ConfigurationError
from frictionsim.params import ParameterSet, theta_from_values

#: Dynamic range of the log0 scale (resolution near 0 ≈ upper bound / R0).
R0 = 100.0
_KAPPA = float(np.log1p(R0))
LINEAR, LOG, LOG0 = 0, 1, 2
#: How k_t and R are searched (:attr:`SearchSpace.coordinates`).
COORDINATES = ("parameters", "identifiable")


def scale_of(p: schema.Parameter) -> int:
    """The scale a parameter is searched on (see module docstring)."""
    if p.lower > 0 and p.upper / p.lower >= 10:
        return LOG
    if p.lower == 0 and p.upper > 0:
        return LOG0
    return LINEAR


@dataclass(frozen=True)
class SearchSpace:
    """Free parameters of a (model, actuator) pair, with any held fixed at given values."""

    model: str
    actuator: str
    fixed: dict[str, float]
    scheme: str = "reference"
    extensions: tuple[str, ...] = ()
    coordinates: str = "parameters"
    """``parameters``: k_t and R searched as themselves; ``identifiable``: under the voltage
    law, as the torque per volt g = k_t/R and the back-EMF damping b = k_t²/R (log scales on
    the hull of what the k_t and R bounds give), k_t = b/g and R = b/g²: the directions the
    logs determine (docs/model.md §3), so CMA's steps are not spent along a ridge."""

    def __post_init__(self) -> None:
        if self.coordinates not in COORDINATES:
            raise ConfigurationError(f"coordinates {self.coordinates!r}: expected one of "
                                     f"{', '.join(COORDINATES)}")
        spec = self.spec
        for name in self.fixed:
            if name not in spec:
                raise ConfigurationError(
                    f"--fix {name}: not a parameter of {self.model} on {self.actuator} "
                    f"(parameters: {', '.join(spec)})"
                )

    @property
    def spec(self) -> dict[str, schema.Parameter]:
        return schema.parameters(self.model, self.actuator, self.extensions)

    @property
    def free(self) -> list[str]:
        """The parameters CMA searches: all but the fixed ones and the discrete ones (docs/model.md §9's
        latency, tried value by value at their default unless fixed)."""
        return [n for n in self.spec if n not in self.fixed and n not in schema.DISCRETE]

    @property
    def dimension(self) -> int:
        return len(self.free)

    def _pair(self) -> tuple[int, int] | None:
        """The columns of k_t and R when they are searched as g = k_t/R and b = k_t²/R."""
        if self.coordinates != "identifiable" or "kt" not in self.free or "R" not in self.free \
                or schema.get_actuator(self.actuator).law != "voltage":
            return None
        return self.free.index("kt"), self.free.index("R")

    def _arrays(self):
        spec = self.spec
        lo = np.array([spec[n].lower for n in self.free])
        hi = np.array([spec[n].upper for n in self.free])
        scale = np.array([scale_of(spec[n]) for n in self.free])
        pair = self._pair()
        if pair is not None:
            i, j = pair
            kt, r = spec["kt"], spec["R"]
            lo[i], hi[i] = kt.lower / r.upper, kt.upper / r.lower
            lo[j], hi[j] = kt.lower**2 / r.upper, kt.upper**2 / r.lower
            scale[i] = scale[j] = LOG
        return lo, hi, scale

    def values(self, x: np.ndarray) -> np.ndarray:
        """Parameter values of unbounded points ``x`` (n, dimension) → (n, dimension)."""
        out = self._coordinate_values(x)
        pair = self._pair()
        if pair is not None:
            i, j = pair
            g, b = out[:, i].copy(), out[:, j].copy()
            out[:, i] = b / g
            out[:, j] = b / g**2
        return out

    def _coordinate_values(self, x: np.ndarray) -> np.ndarray:
        lo, hi, scale = self._arrays()
        y = np.mod(np.atleast_2d(x), 2.0)
        u = np.where(y <= 1.0, y, 2.0 - y)
        out = lo + u * (hi - lo)
        log = scale == LOG
        out[:, log] = lo[log] * (hi[log] / lo[log]) ** u[:, log]
        log0 = scale == LOG0
        out[:, log0] = lo[log0] + (hi[log0] - lo[log0]) * np.expm1(_KAPPA * u[:, log0]) / R0
        return out

    def point(self, values: dict[str, float]) -> np.ndarray:
        """The x of named values (clipped into the bounds): the inverse of :meth:`values`."""
        lo, hi, scale = self._arrays()
        v = np.array([values[n] for n in self.free], dtype=float)
        pair = self._pair()
        if pair is not None:
            i, j = pair
            v[i], v[j] = v[i] / v[j], v[i] ** 2 / v[j]
        v = np.clip(v, lo, hi)
        span = np.where(hi > lo, hi - lo, 1.0)
        u = (v - lo) / span
        log = scale == LOG
        u[log] = np.log(v[log] / lo[log]) / np.log(hi[log] / lo[log])
        log0 = scale == LOG0
        u[log0] = np.log1p(R0 * (v[log0] - lo[log0]) / span[log0]) / _KAPPA
        return u

    def thetas(self, x: np.ndarray) -> np.ndarray:
        """Kernel vectors (n, THETA_SIZE) of unbounded points ``x``."""
        base = self.theta_of(self.defaults())
        idx = [layout.THETA_INDEX[n] for n in self.free]
        thetas = np.repeat(base[None, :], np.atleast_2d(x).shape[0], axis=0)
        thetas[:, idx] = self.values(x)
        return thetas

    def defaults(self) -> dict[str, float]:
        """Every parameter at its default, fixed ones at their given value."""
        return {**{n: p.default for n, p in self.spec.items()}, **self.fixed}

    def theta_of(self, values: dict[str, float]) -> np.ndarray:
        return theta_from_values(values, schema.get_actuator(self.actuator), self.scheme,
                                 self.extensions)

    def exact(self, values: dict[str, float]) -> ParameterSet:
        """The parameter set of named values as given (not folded into the bounds)."""
        return ParameterSet(self.model, self.actuator, values, scheme=self.scheme,
                            extensions=self.extensions)

    def parameter_set(self, x: np.ndarray, source: str | None = None) -> ParameterSet:
        """The named parameter set of one point."""
        named = dict(zip(self.free, self.values(x)[0].tolist()))
        return ParameterSet(self.model, self.actuator, {**self.defaults(), **named}, source,
                            self.scheme, self.extensions)


def embed(simpler: ParameterSet, model: str, exact: bool = True) -> dict[str, float]:
    """Values of a richer ``model`` that reproduce a simpler model's budget (to rounding).

    M1 ⊂ M2 (K_cs = 0), M1 ⊂ M3 (K_l = 0), M3 ⊂ M4 (Stribeck terms 0), and
    M4 ⊂ M5 with K_m = K_e = K_l and K_ms = K_es = K_ls; M5 ⊂ M6 (quadratic
    terms 0). Parameters the simpler model lacks and that cannot encode it
    (v_s, α) keep their defaults. With ``exact=False`` the new friction terms
    keep their defaults instead of 0: a search centre that still carries the
    simpler model's motor and shared terms but is not stuck on its optimum.
    """
    spec = schema.parameters(model, simpler.actuator)
    out = {n: p.default for n, p in spec.items()}
    zero_if_new = ("friction_stribeck", "load_friction_base", "load_friction_stribeck",
                   "load_friction_motor", "load_friction_external",
                   "load_friction_motor_stribeck", "load_friction_external_stribeck",
                   "load_friction_motor_quad", "load_friction_external_quad")
    for n in zero_if_new:
        if n in out and exact:
            out[n] = 0.0
    v = simpler.values
    for n in out:
        if n in v:
            out[n] = v[n]
    if "load_friction_base" in v and "load_friction_motor" in out:
        out["load_friction_motor"] = out["load_friction_external"] = v["load_friction_base"]
    if "load_friction_stribeck" in v and "load_friction_motor_stribeck" in out:
        out["load_friction_motor_stribeck"] = v["load_friction_stribeck"]
        out["load_friction_external_stribeck"] = v["load_friction_stribeck"]
    return out


#: For each model, the simpler models it contains, nearest first.
CONTAINS: dict[str, tuple[str, ...]] = {
    "m1": (),
    "m2": ("m1",),
    "m3": ("m1",),
    "m4": ("m3", "m2", "m1"),
    "m5": ("m4", "m3", "m2", "m1"),
    "m6": ("m5", "m4", "m3", "m2", "m1"),
}
