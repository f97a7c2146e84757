"""The servo on its pendulum bench as one plant: every torque of the equation of motion.

    I·v̇ = τ_m + τ_e + τ_f,   |τ_f| ≤ τ_fm = F + K_v·|v|

with I = I_load + armature, τ_e the gravity torque at the physical angle
q + q_offset, τ_m the motor torque and (F, K_v) the friction budget (F with the position
ripple of docs/model.md §15 at q + q_offset when ``ripple`` is on). Both the
fixed-step and the event-driven solvers take their torques from here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.friction import friction_budget, rippled_static
from frictionsim.layout import ARMATURE, Q_OFFSET
from frictionsim.pendulum import gravity_torque, load_inertia


class BenchTorques(NamedTuple):
    """Every term of the bench's equation of motion but the friction torque itself."""

    motor: float  # τ_m (N·m)
    external: float  # τ_e, gravity (N·m)
    static: float  # F, the static part of the friction budget (N·m)
    viscous: float  # K_v (N·m·s/rad)
    inertia: float  # I = I_load + armature (kg·m²)


@njit(cache=True, inline="always")
def bench_torques(
    q: float, v: float, tau_m: float, theta: np.ndarray, bench: np.ndarray
) -> BenchTorques:
    """The torques of the bench at encoder angle q (rad) and velocity v (rad/s) with the
    servo's motor torque τ_m (N·m; the servo bank's :func:`~frictionsim.servo_bank.step_servo`,
    or :func:`~frictionsim.actuator_laws.motor_torque` of a given control)."""
    tau_e = gravity_torque(q + theta[Q_OFFSET], bench)
    budget = friction_budget(v, tau_m, tau_e, theta)
    inertia = load_inertia(bench) + theta[ARMATURE]
    static = rippled_static(budget.static, budget.viscous, q + theta[Q_OFFSET], v, theta)
    return BenchTorques(tau_m, tau_e, static, budget.viscous, inertia)
