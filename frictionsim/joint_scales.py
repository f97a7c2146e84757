"""Per-joint scales of a robot's shared servo model (``robot identify --joint-scales``).

A robot fit shares one parameter set across the servos of an actuator; the joints still
differ in what the servo's gearbox sees (the SO-101's elbow carries the arm, its wrist roll
nothing). Each joint j may scale its servo's friction budget and armature:

    τ_fm,j = s_f,j · (F + K_v·|v|)      (every term of the budget: Coulomb, Stribeck, load,
                                          quadratic and viscous, docs/model.md §3)
    I_a,j  = s_a,j · I_a

with s_f,j, s_a,j > 0 (1: the shared set). The budget is linear in each of its coefficients,
so scaling them all scales τ_fm exactly.
"""

from __future__ import annotations

import math

import numpy as np

from frictionsim import layout

#: The scales of a joint, in their order in arrays of scales (joints × 2).
SCALES = ("friction", "armature")
#: The friction budget's coefficients in ``theta`` that the friction scale multiplies.
FRICTION_TERMS = (layout.K_C, layout.K_CS, layout.K_L, layout.K_LS, layout.K_M, layout.K_E,
                  layout.K_MS, layout.K_ES, layout.K_MQ, layout.K_EQ, layout.K_V)
#: The same coefficients by their parameter names.
FRICTION_NAMES = frozenset(name for name, i in layout.THETA_INDEX.items()
                           if i in FRICTION_TERMS)
#: The largest (and 1/ the smallest) scale a parameter file may hold.
MAX_SCALE = 20.0


def scale_thetas(thetas: np.ndarray, scales: np.ndarray) -> None:
    """Scale servo vectors (servos × THETA_SIZE) in place by ``scales`` (servos × 2)."""
    thetas[:, FRICTION_TERMS] *= scales[:, :1]
    thetas[:, layout.ARMATURE] *= scales[:, 1]


def scale_of(name: str, friction: float, armature: float) -> float:
    """The factor a joint's scales put on the parameter ``name``: s_f on the budget's
    coefficients, s_a on the armature, 1 on the rest."""
    return friction if name in FRICTION_NAMES else armature if name == "armature" else 1.0


def scaled_values(values: dict[str, float], friction: float, armature: float
                  ) -> dict[str, float]:
    """A parameter set's named values with the joint's scales applied."""
    return {name: v * scale_of(name, friction, armature) for name, v in values.items()}


def scaled_ranges(ranges: dict[str, tuple[float, float]], friction: float, armature: float
                  ) -> dict[str, tuple[float, float]]:
    """A parameter set's ``ranges`` (``identify --uncertainty``) with the joint's scales
    applied as to its values: the joint's variants spread about its own scaled set as the
    shared set's about the shared one (the scales are positive, so low stays ≤ high)."""
    out = {}
    for name, (lo, hi) in ranges.items():
        factor = scale_of(name, friction, armature)
        out[name] = (lo * factor, hi * factor)
    return out


def check_scales(entry, where: str, error: type[Exception]) -> dict[str, float]:
    """One joint's ``{"friction": s_f, "armature": s_a}``, each in [1/MAX_SCALE, MAX_SCALE]."""
    if not isinstance(entry, dict) or set(entry) != set(SCALES):
        raise error(f"{where}: must give exactly {', '.join(SCALES)} (scales of the shared set)")
    out = {}
    for name in SCALES:
        value = entry[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not 1 / MAX_SCALE <= value <= MAX_SCALE:
            raise error(f"{where}.{name} = {value!r} must be a number in "
                        f"[{1 / MAX_SCALE:g}, {MAX_SCALE:g}]")
        out[name] = float(value)
    return out
