"""Backlash: the gap of the gear train between the motor side and the output (docs/model.md §14).

With ``backlash`` on, the servo is two bodies on the output axis, joined through a gap of full
width g (rad):

- the motor side: the rotor's reflected inertia J_m (``armature``) at p = θ_m/N, velocity w;
- the output: the load, inertia J_l, at q, velocity v. The encoder reads q: the XL330's and
  the STS3215's magnetic encoders sit on the output shaft, beyond the gears.

δ = p − q stays within [−g/2, g/2]. The servo record keeps δ, w and the contact state
c (:data:`~frictionsim.layout.SERVO_GAP`, ``SERVO_MOTOR_SPEED``, ``SERVO_CONTACT``).

Engaged (δ = c·g/2, c = ±1): one body, exactly the servo without backlash,

    (J_l + J_m)·a = τ_m + τ_e + τ_f,   |τ_f| ≤ τ_fm(v, τ_m, τ_e).

At δ = +g/2 the motor side can only push the load forward, at −g/2 only backward. The mesh
opens where the gear would pull the load, c·τ_c < 0 with τ_c = J_l·a − τ_e the torque it
applies to the output, *and* the two sides, let go, part: c·δ̈ < 0 with the load free and
the motor side on its own budget (the engaged pair's budget sees the load and the motor
side's does not, so the first test alone would let a stuck pair open and close again at one
instant).

Apart (|δ| < g/2): the load moves on its own torques, J_l·v̇ = τ_e (the output bearing's
friction is neglected); the motor side on the servo's, J_m·ẇ = τ_m + τ_f with
|τ_f| ≤ τ_fm(w, τ_m, 0): all of the servo's friction is in its motor and gear train, and with
no load through the mesh its load-dependent terms see τ_e = 0. The motor's back-EMF, and the
current it draws, follow w.

Impact (δ reaches ±g/2 closing): inelastic, both sides leave at the velocity that conserves
their momentum, V = (J_m·w + J_l·v)/(J_m + J_l); the mesh then holds or opens again by
the rule above.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.errors import ConfigurationError
from frictionsim.friction import friction_budget
from frictionsim.layout import (
    BACKLASH,
    MESHING_AMPLITUDE,
    RIPPLE_AMPLITUDE,
    SERVO_CONTACT,
    SERVO_GAP,
    SERVO_MOTOR_SPEED,
)

#: What an engine without the ``ripple`` friction says of a servo that has it.
RIPPLE_ENGINES = ("{engine} do not model the position ripple of the friction yet (docs/model.md "
                  "§15): run these servos in frictionsim's own engines, the batched engines "
                  "(MJX, MuJoCo Warp, mjlab) or MuJoCo with the servo adapter's friction "
                  "budget, or drop the ripple keys (and --with ripple)")

#: What an engine without backlash says of a servo that has it.
BACKLASH_ENGINES = ("{engine} do not model backlash yet (docs/model.md §14): run these servos in "
                    "frictionsim's own engines (the bench's rollouts and event-driven engine, "
                    "Robot.fixed_step and Robot.event_driven, robot simulate --engine "
                    "fixed_step or event_driven) or MuJoCo with the servo adapter's friction "
                    "budget (ServoModel, --engine mujoco), the batched engines (MJX, MuJoCo "
                    "Warp, mjlab), or drop the backlash key (and --with backlash) for this "
                    "engine")


@njit(cache=True, inline="always")
def rest_on_gear(tau_e: float) -> float:
    """The end of the gap a load at rest leans on under its external torque τ_e (N·m): −1
    for τ_e > 0, +1 for τ_e < 0 (the gear holds it against τ_e), 0 (apart) for τ_e = 0."""
    if tau_e > 0.0:
        return -1.0
    if tau_e < 0.0:
        return 1.0
    return 0.0


@njit(cache=True, inline="always")
def gear_torque(j_load: float, accel: float, tau_e: float) -> float:
    """τ_c = J_l·a − τ_e (N·m): the torque the engaged gear applies to the output when the
    pair accelerates at ``accel`` (rad/s²)."""
    return j_load * accel - tau_e


@njit(cache=True, inline="always")
def impact_velocity(j_motor: float, w: float, j_load: float, v: float) -> float:
    """V = (J_m·w + J_l·v)/(J_m + J_l) (rad/s): both sides' velocity after an inelastic impact."""
    return (j_motor * w + j_load * v) / (j_motor + j_load)


@njit(cache=True, inline="always")
def motor_side_budget(w: float, tau_m: float, theta: np.ndarray) -> float:
    """τ_fm(w, τ_m, 0) = F + K_v·|w| (N·m): the open gap's motor side's friction budget, no
    load through the mesh."""
    b = friction_budget(w, tau_m, 0.0, theta)
    return b.static + b.viscous * abs(w)


@njit(cache=True, inline="always")
def settle_gear(record: np.ndarray, theta: np.ndarray, tau_e: float, v: float) -> None:
    """Rest a servo's unsettled gear (record's contact NaN, after a reset) on the end of its
    gap that the external torque τ_e (N·m) leans the load on, the motor side at the load's
    velocity v; a servo without backlash is engaged (1) for good. Nothing when settled."""
    if record[SERVO_CONTACT] == record[SERVO_CONTACT]:
        return
    contact = rest_on_gear(tau_e) if theta[BACKLASH] > 0.0 else 1.0
    record[SERVO_CONTACT] = contact
    record[SERVO_GAP] = 0.5 * theta[BACKLASH] * contact
    record[SERVO_MOTOR_SPEED] = v


def refuse_backlash(thetas: np.ndarray, engine: str) -> None:
    """ConfigurationError when a servo of ``thetas`` (rows of :mod:`frictionsim.layout`) has
    ``backlash``, which ``engine`` lacks."""
    if np.any(np.asarray(thetas)[..., BACKLASH] > 0.0):
        raise ConfigurationError(BACKLASH_ENGINES.format(engine=engine))


def refuse_ripple(thetas: np.ndarray, engine: str) -> None:
    """ConfigurationError when a servo of ``thetas`` has the ``ripple`` friction, which
    ``engine`` lacks."""
    thetas = np.asarray(thetas)
    if np.any(thetas[..., RIPPLE_AMPLITUDE] != 0.0) or np.any(thetas[..., MESHING_AMPLITUDE] != 0.0):
        raise ConfigurationError(RIPPLE_ENGINES.format(engine=engine))
