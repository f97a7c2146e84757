"""The friction budget τ_fm of models M1–M6 and the ``ripple`` extension (docs/model.md §2, §15),
as Warp functions: :mod:`frictionsim.friction`, in its order of additions.

    τ_fm = F + K_v·|v|,   s(v) = exp(−|v/v_s|^α)
    F    = K_c + K_l·|τ_e − τ_m| + |K_e·τ_e − K_m·τ_m|
           + s·K_cs + (K_ls·|τ_e − τ_m| + |K_es·τ_e − K_ms·τ_m|)·s + s·Q
"""

from __future__ import annotations

from typing import Any

import warp as wp

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
from frictionsim.solvers.batched.laws import sign


@wp.func
def stribeck_factor(v: Any, v_s: Any, alpha: Any):
    """s(v) = exp(−|v/v_s|^α); 1 at rest, 0 when v_s ≤ 0 (no Stribeck term)."""
    zero = type(v)(0.0)
    if v_s <= zero:
        return zero
    if v == zero and alpha > zero:
        return type(v)(1.0)
    return wp.exp(-wp.pow(wp.abs(v / v_s), alpha))


@wp.func
def quadratic_load(tau_m: Any, tau_e: Any, k_eq: Any, k_mq: Any):
    """M6's Q: the quadratic load friction when motor and load torques oppose (N·m)."""
    zero = type(tau_m)(0.0)
    if sign(tau_e) == sign(tau_m):
        return zero
    a_e = wp.abs(tau_e)
    a_m = wp.abs(tau_m)
    if a_e < a_m:
        return k_eq * a_e * a_e
    if a_e > a_m:
        return k_mq * a_m * a_m
    return zero


@wp.func
def friction_budget(v: Any, tau_m: Any, tau_e: Any, thetas: wp.array3d(dtype=Any), e: int,
                    j: int):
    """(F, K_v): the static part (N·m) and the viscous coefficient of τ_fm = F + K_v·|v|, at
    velocity v (rad/s), motor torque τ_m and external torque τ_e (N·m)
    (:func:`frictionsim.friction.friction_budget`)."""
    s = stribeck_factor(v, thetas[e, j, V_S], thetas[e, j, ALPHA])
    gearbox = wp.abs(tau_e - tau_m)
    static = thetas[e, j, K_C] + thetas[e, j, K_L] * gearbox \
        + wp.abs(tau_e * thetas[e, j, K_E] - tau_m * thetas[e, j, K_M])
    zero = type(v)(0.0)
    if s != zero:
        static = static + s * thetas[e, j, K_CS]
        static = static + (thetas[e, j, K_LS] * gearbox
                           + wp.abs(tau_e * thetas[e, j, K_ES] - tau_m * thetas[e, j, K_MS])) * s
        if thetas[e, j, K_EQ] != zero or thetas[e, j, K_MQ] != zero:
            static = static + s * quadratic_load(tau_m, tau_e, thetas[e, j, K_EQ],
                                                 thetas[e, j, K_MQ])
    return static, thetas[e, j, K_V]


@wp.func
def ripple_friction(angle: Any, v: Any, thetas: wp.array3d(dtype=Any), e: int, j: int):
    """A1·sin(Ω1·θ + φ1) + A2·exp(−B·|θ̇|)·sin(Ω2·θ + φ2) (N·m) at the output angle (rad)
    and velocity (rad/s) (:func:`frictionsim.friction.ripple_friction`)."""
    zero = type(v)(0.0)
    out = zero
    if thetas[e, j, RIPPLE_AMPLITUDE] != zero:
        out = out + thetas[e, j, RIPPLE_AMPLITUDE] * wp.sin(
            thetas[e, j, RIPPLE_FREQUENCY] * angle + thetas[e, j, RIPPLE_PHASE])
    if thetas[e, j, MESHING_AMPLITUDE] != zero:
        out = out + (thetas[e, j, MESHING_AMPLITUDE]
                     * wp.exp(-thetas[e, j, MESHING_DECAY] * wp.abs(v))
                     * wp.sin(thetas[e, j, MESHING_FREQUENCY] * angle
                              + thetas[e, j, MESHING_PHASE]))
    return out


@wp.func
def rippled_static(static: Any, viscous: Any, angle: Any, v: Any,
                   thetas: wp.array3d(dtype=Any), e: int, j: int):
    """F with the ``ripple`` added, τ_fm kept ≥ 0; F itself when the ripple is off."""
    zero = type(v)(0.0)
    if thetas[e, j, RIPPLE_AMPLITUDE] == zero and thetas[e, j, MESHING_AMPLITUDE] == zero:
        return static
    return wp.max(static + ripple_friction(angle, v, thetas, e, j), -viscous * wp.abs(v))


@wp.func
def servo_budget(v: Any, tau_m: Any, tau_e: Any, angle: Any, thetas: wp.array3d(dtype=Any),
                 e: int, j: int):
    """τ_fm (N·m) of servo j at its joint's velocity v, motor torque τ_m, external torque τ_e
    and angle (its ``ripple``): F (rippled) + K_v·|v|."""
    static, viscous = friction_budget(v, tau_m, tau_e, thetas, e, j)
    return rippled_static(static, viscous, angle, v, thetas, e, j) + viscous * wp.abs(v)


@wp.func
def motor_side_budget(w: Any, tau_m: Any, thetas: wp.array3d(dtype=Any), e: int, j: int):
    """τ_fm(w, τ_m, 0) = F + K_v·|w| (N·m): an open gap's motor side's budget, no load through
    the mesh (:func:`frictionsim.gear_gap.motor_side_budget`)."""
    static, viscous = friction_budget(w, tau_m, type(w)(0.0), thetas, e, j)
    return static + viscous * wp.abs(w)
