"""The static region at rest: the motor torques for which a joint at rest stays at rest.

A joint at rest (or moving at ``v``, for the curves at speed) holds while friction can
balance every other torque (docs/model.md §2):

    |τ_m + τ_e| ≤ τ_fm(v, τ_m, τ_e) = F(v, τ_m, τ_e) + K_v·|v|

For an external torque τ_e the set of such τ_m contains the equilibrium τ_m = −τ_e (where
friction has nothing to do) and extends to two edges τ_low ≤ −τ_e ≤ τ_high: the
drive/backdrive diagram of seed 000 (section II-C). For M1 the edges are exactly
−τ_e ± K_c; with load-dependent models F depends on τ_m, and M6's quadratic term
switches on and off with the signs and magnitudes of τ_m and τ_e, so the holding margin
is piecewise (and can jump). Each edge is therefore found by walking out from the
equilibrium in small steps until the margin turns negative and bisecting that bracket
to the last bit: the first place where the joint breaks free as the motor torque is
ramped from equilibrium.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from frictionsim.friction import friction_budget

#: Steps of the outward walk over the search span, and bisections of the bracket found.
WALK_STEPS = 20000
BISECTIONS = 80


@njit(cache=True)
def holding_margin(tau_m: float, tau_e: float, v: float, theta: np.ndarray) -> float:
    """τ_fm − |τ_m + τ_e| (N·m): ≥ 0 where friction holds the joint."""
    budget = friction_budget(v, tau_m, tau_e, theta)
    return budget.static + budget.viscous * abs(v) - abs(tau_m + tau_e)


@njit(cache=True)
def static_edge(tau_e: float, v: float, theta: np.ndarray, direction: float,
                span: float) -> float:
    """The first τ_m (N·m) beyond the equilibrium −τ_e, walking in ``direction`` (+1 or −1)
    up to ``span`` from it, where the joint no longer holds; NaN if it holds all the way
    (self-locking within the span) or if it does not even hold at the equilibrium."""
    start = -tau_e
    if not holding_margin(start, tau_e, v, theta) >= 0.0:
        return math.nan
    h = span / WALK_STEPS
    inside = start
    for k in range(1, WALK_STEPS + 1):
        trial = start + direction * h * k
        if holding_margin(trial, tau_e, v, theta) < 0.0:
            outside = trial
            for _ in range(BISECTIONS):
                middle = 0.5 * (inside + outside)
                if middle == inside or middle == outside:
                    break
                if holding_margin(middle, tau_e, v, theta) >= 0.0:
                    inside = middle
                else:
                    outside = middle
            return inside
        inside = trial
    return math.nan


@njit(cache=True)
def static_intervals(tau_e: np.ndarray, v: float, theta: np.ndarray,
                     span: float) -> tuple:
    """(τ_low, τ_high) arrays (N·m) of the static region at each external torque τ_e."""
    low = np.empty(tau_e.shape[0])
    high = np.empty(tau_e.shape[0])
    for i in range(tau_e.shape[0]):
        low[i] = static_edge(tau_e[i], v, theta, -1.0, span)
        high[i] = static_edge(tau_e[i], v, theta, 1.0, span)
    return low, high


def drive_and_backdrive(tau_e: np.ndarray, low: np.ndarray,
                        high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The drive and backdrive torques from the static interval: the motor wins against the
    load beyond the edge on the side opposite to τ_e (τ_high when τ_e ≤ 0, τ_low when
    τ_e > 0: the motor lifts the load); the load wins beyond the other edge. At τ_e = 0
    there is no load to win against, and the convention of τ_e < 0 is kept."""
    lifting = tau_e <= 0.0
    return np.where(lifting, high, low), np.where(lifting, low, high)
