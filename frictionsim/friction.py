"""Friction budget τ_fm of models M1–M6 (docs/model.md §2), one Numba kernel for all.

The budget is the largest resistive torque friction can supply:

    τ_fm = F + K_v·|v|

    s(v) = exp(−|v / v_s|^α)                                     (Stribeck factor)
    F    = K_c + K_l·|τ_e − τ_m| + |K_e·τ_e − K_m·τ_m|
           + s·K_cs + (K_ls·|τ_e − τ_m| + |K_es·τ_e − K_ms·τ_m|)·s + s·Q
    Q    = [sign τ_e ≠ sign τ_m]·([|τ_e| < |τ_m|]·K_eq·τ_e² + [|τ_e| > |τ_m|]·K_mq·τ_m²)

Terms a model does not have are exactly 0 in ``theta``, so every model reduces
bit-for-bit to its own formula in docs/model.md §2's table (adding an exact 0 changes no
bits). The additions run in the order of the reference simulator, which is what
makes published parameter files reproduce their published errors exactly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.layout import (
    ALPHA,
    K_C,
    K_CS,
    K_E,
    K_EQ,
    K_ES,
    K_L,
    K_LS,
    K_M,
    K_MQ,
    K_MS,
    K_V,
    MESHING_AMPLITUDE,
    MESHING_DECAY,
    MESHING_FREQUENCY,
    MESHING_PHASE,
    RIPPLE_AMPLITUDE,
    RIPPLE_FREQUENCY,
    RIPPLE_PHASE,
    V_S,
)


class FrictionBudget(NamedTuple):
    """τ_fm = static + viscous·|v|: the static part F (N·m) and K_v (N·m·s/rad)."""

    static: float
    viscous: float


@njit(cache=True, inline="always")
def stribeck_factor(v: float, v_s: float, alpha: float) -> float:
    """s(v) = exp(−|v/v_s|^α): 1 at rest, → 0 when moving; 0 when v_s ≤ 0 (no Stribeck term)."""
    if v_s <= 0.0:
        return 0.0
    if v == 0.0 and alpha > 0.0:
        return 1.0  # exp(−0^α), exactly; a stuck joint skips the transcendental calls
    return math.exp(-(abs(v / v_s) ** alpha))


@njit(cache=True, inline="always")
def quadratic_load(tau_m: float, tau_e: float, k_eq: float, k_mq: float) -> float:
    """M6's Q: the quadratic load friction when motor and load torques oppose (N·m)."""
    if np.sign(tau_e) == np.sign(tau_m):
        return 0.0
    a_e = abs(tau_e)
    a_m = abs(tau_m)
    if a_e < a_m:
        return k_eq * a_e**2
    if a_e > a_m:
        return k_mq * a_m**2
    return 0.0


@njit(cache=True, inline="always")
def quadratic_term(tau_m: float, tau_e: float, theta: np.ndarray) -> float:
    """:func:`quadratic_load` with the coefficients of ``theta``."""
    return quadratic_load(tau_m, tau_e, theta[K_EQ], theta[K_MQ])


@njit(cache=True, inline="always")
def static_friction(
    tau_m: float, tau_e: float, s: float, k_c: float, k_l: float, k_e: float, k_m: float,
    k_cs: float, k_ls: float, k_es: float, k_ms: float, k_eq: float, k_mq: float,
) -> float:
    """F (N·m) of the module docstring for the Stribeck factor ``s``, coefficients as scalars.

    The form the lock-step evaluator (:mod:`frictionsim.solvers.lockstep`) calls lane by lane; the
    branches are selects of whole additions, so a vectorised loop adds the same bits.
    """
    gearbox = abs(tau_e - tau_m)
    static = k_c + k_l * gearbox + abs(tau_e * k_e - tau_m * k_m)
    if s != 0.0:
        static += s * k_cs
        static += (k_ls * gearbox + abs(tau_e * k_es - tau_m * k_ms)) * s
        if k_eq != 0.0 or k_mq != 0.0:
            static += s * quadratic_load(tau_m, tau_e, k_eq, k_mq)
    return static


@njit(cache=True, inline="always")
def friction_budget(v: float, tau_m: float, tau_e: float, theta: np.ndarray) -> FrictionBudget:
    """Static part F (N·m) and viscous coefficient K_v (N·m·s/rad) of τ_fm = F + K_v·|v|.

    v: joint velocity (rad/s); tau_m: motor torque (N·m); tau_e: external torque (N·m);
    theta: servo vector (:mod:`frictionsim.layout`).
    """
    s = stribeck_factor(v, theta[V_S], theta[ALPHA])
    static = static_friction(tau_m, tau_e, s, theta[K_C], theta[K_L], theta[K_E], theta[K_M],
                             theta[K_CS], theta[K_LS], theta[K_ES], theta[K_MS], theta[K_EQ],
                             theta[K_MQ])
    return FrictionBudget(static, theta[K_V])


@njit(cache=True, inline="always")
def ripple_friction(angle: float, v: float, theta: np.ndarray) -> float:
    """The ``ripple`` extension's position-dependent friction (docs/model.md §15), seed 002's
    eq. 16 on the output angle (rad) and velocity (rad/s), θ_m = N·θ folded into Ω = ω·N and
    B = β·N:

        A1·sin(Ω1·θ + φ1) + A2·exp(−B·|θ̇|)·sin(Ω2·θ + φ2)     (N·m)

    Exactly 0 when both amplitudes are 0 (no transcendental call then)."""
    out = 0.0
    if theta[RIPPLE_AMPLITUDE] != 0.0:
        out += theta[RIPPLE_AMPLITUDE] * math.sin(theta[RIPPLE_FREQUENCY] * angle
                                                   + theta[RIPPLE_PHASE])
    if theta[MESHING_AMPLITUDE] != 0.0:
        out += (theta[MESHING_AMPLITUDE] * math.exp(-theta[MESHING_DECAY] * abs(v))
                * math.sin(theta[MESHING_FREQUENCY] * angle + theta[MESHING_PHASE]))
    return out


@njit(cache=True, inline="always")
def rippled_static(static: float, viscous: float, angle: float, v: float,
                   theta: np.ndarray) -> float:
    """F with the ``ripple`` added, kept so that τ_fm = F + K_v·|v| stays ≥ 0 (friction never
    pushes); F itself, bit for bit, when the ripple is off."""
    if theta[RIPPLE_AMPLITUDE] == 0.0 and theta[MESHING_AMPLITUDE] == 0.0:
        return static
    return max(static + ripple_friction(angle, v, theta), -viscous * abs(v))


#: The terms of :func:`budget_terms`, in its order.
BUDGET_TERMS = ("coulomb", "stribeck", "load", "directional", "quadratic", "viscous")


@njit(cache=True)
def budget_terms(v: float, tau_m: float, tau_e: float, theta: np.ndarray) -> tuple:
    """τ_fm split into the model's terms (N·m), in the order of :data:`BUDGET_TERMS`:

        coulomb      K_c
        stribeck     s·K_cs
        load         (K_l + s·K_ls)·|τ_e − τ_m|
        directional  |K_e·τ_e − K_m·τ_m| + s·|K_es·τ_e − K_ms·τ_m|
        quadratic    s·Q
        viscous      K_v·|v|

    Their sum is :func:`friction_budget`'s F + K_v·|v| up to rounding (the budget adds
    the same products in another order). Every term is ≥ 0 for non-negative coefficients.
    """
    s = stribeck_factor(v, theta[V_S], theta[ALPHA])
    gearbox = abs(tau_e - tau_m)
    coulomb = theta[K_C]
    stribeck = s * theta[K_CS]
    load = theta[K_L] * gearbox + theta[K_LS] * gearbox * s
    directional = (abs(tau_e * theta[K_E] - tau_m * theta[K_M])
                   + abs(tau_e * theta[K_ES] - tau_m * theta[K_MS]) * s)
    quadratic = s * quadratic_term(tau_m, tau_e, theta) if s != 0.0 else 0.0
    return coulomb, stribeck, load, directional, quadratic, theta[K_V] * abs(v)
