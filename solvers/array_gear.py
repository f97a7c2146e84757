"""Backlash in the batched engines: the servos' gear gaps as array code (torch or JAX).

A port of :func:`frictionsim.solvers.robot_gear.adapter_gear_step` (the MuJoCo adapter's step
with the gears, which it follows and is tested against: ``tests/test_array_gear.py`` holds
MJX in float64 to it) for the engines built on :mod:`frictionsim.solvers.array_bank`: MJX
(one world, ``vmap`` it) and MuJoCo Warp / mjlab (E worlds at once). The model is
docs/model.md §14's (:mod:`frictionsim.gear_gap`): each servo's record carries its motor
side, δ = p − q, w and the contact c (``BankState.gap``, ``motor_speed``, ``contact``).

Per physics step, between MuJoCo's velocity stage (M with every rotor in it, the bias and
passive forces fresh) and its semi-implicit Euler step (:func:`gear_step`):

1. the load's last move, dt·v, comes off each open δ; a gap it closed is an inelastic impact:
   the overshoot shared along the joint by inertia (``qpos``), the generalised momentum
   kept, v⁺ = v + M⁻¹·Σ J_m·(w − v_d)·e_d (``qvel``, M with the impacting rotors);
2. a record not yet settled (after a reset) rests its load on the end of the gap its
   external torque leans it on;
3. the friction solve of docs/model.md §10 with the engaged servos as without backlash and
   the open ones' joints bare. An engaged gear that would pull its load is tried open, and
   parts if its motor side, stepped on its own, ends inside the gap; each world iterates
   under masks until its set of engaged gears is settled (a ``lax.while_loop`` under JAX);
4. each open motor side takes its own clipped step on its budget τ_fm(w, τ_m, 0);
5. the force each servo applies: an engaged one τ_m + network + τ_f, an open one J_m·a,
   which takes the rotor MuJoCo's M carries off the bare load.

Shapes: any leading batch shape (``...``): per servo (..., J), per dof (..., nv), per
position (..., nq), M (..., nv, nv). Every call returns new arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from frictionsim.layout import ARMATURE, BACKLASH
from frictionsim.solvers import array_bank as ab
from frictionsim.solvers.fixed_step import MAX_SPEED


class GearLayout(NamedTuple):
    """Where the servos sit in the model's vectors: their qpos and dof addresses (J,), for
    each dof the servo on it (nv,, 0 where none) and whether there is one, likewise for each
    qpos entry, and the identity (nv, nv)."""

    qadr: object
    dofs: object
    servo_of_dof: object
    on_dof: object
    servo_of_qpos: object
    on_qpos: object
    eye: object


def gear_layout(qadr, dofs, nq: int, nv: int, xp, dtype, device=None) -> GearLayout:
    """:class:`GearLayout` of servos at qpos addresses ``qadr`` and dofs ``dofs`` (numpy
    integer sequences) in a model of nq positions and nv dofs, as ``xp`` arrays."""
    qadr, dofs = np.asarray(qadr, dtype=np.int64), np.asarray(dofs, dtype=np.int64)
    servo_of_dof = np.zeros(nv, dtype=np.int64)
    servo_of_dof[dofs] = np.arange(len(dofs))
    on_dof = np.zeros(nv, dtype=bool)
    on_dof[dofs] = True
    servo_of_qpos = np.zeros(nq, dtype=np.int64)
    servo_of_qpos[qadr] = np.arange(len(qadr))
    on_qpos = np.zeros(nq, dtype=bool)
    on_qpos[qadr] = True

    def arr(a, kind=None):
        if device is None:
            return xp.asarray(a, dtype=kind)
        return xp.asarray(a, dtype=kind, device=device)

    return GearLayout(arr(qadr), arr(dofs), arr(servo_of_dof), arr(on_dof), arr(servo_of_qpos),
                      arr(on_qpos), arr(np.eye(nv), dtype))


def _take(xp, x, index):
    return xp.take(x, index, axis=-1)


def _on_dofs(xp, per_servo, layout: GearLayout):
    """A per-dof vector with each servo's entry on its dof, 0 on the others."""
    spread = _take(xp, per_servo, layout.servo_of_dof)
    return xp.where(layout.on_dof, spread, xp.zeros_like(spread))


def _on_diagonal(xp, mass, per_servo, layout: GearLayout):
    """M + diag(each servo's entry on its dof)."""
    return mass + layout.eye * _on_dofs(xp, per_servo, layout)[..., None, :]


def _diagonal(xp, mass, layout: GearLayout):
    return xp.sum(mass * layout.eye, axis=-1)


def _clip_speed(xp, v):
    return xp.minimum(xp.maximum(v, -MAX_SPEED), MAX_SPEED)


def stepped_velocities(xp, mass, tau, tau_f, v, dt):
    """v⁺ = v + dt·M⁻¹·(τ + τ_f) (rad/s) of the friction solve's step, as the Numba solver
    has it: one joint v + (τ_f + τ)/M·dt, several dt·M⁻¹·r with r = (M/dt)·v + τ + τ_f."""
    if v.shape[-1] == 1:
        return v + (tau_f + tau) / mass[..., 0] * dt
    r = xp.matmul(mass, v[..., None])[..., 0] / dt + tau + tau_f
    return dt * xp.linalg.solve(mass, r[..., None])[..., 0]


def motor_side_step(xp, w, tau, budget, armature, dt):
    """(its move, its new velocity) of an open gap's motor side from velocity w, one clipped
    semi-implicit step (:func:`frictionsim.solvers.fixed_step.motor_side_step`)."""
    tau_f = ab.stop_friction(armature, tau, w, budget, dt)
    w_next = _clip_speed(xp, w + (tau + tau_f) / armature * dt)
    return w_next * dt, w_next


def close_gaps(xp, state: ab.BankState, servos: ab.ArrayServos, layout: GearLayout, qpos,
               qvel, mass, dt):
    """Step 1 of the module docstring: (state, qpos, qvel) with the load's last move taken
    off each open δ and the gaps it closed shut by inelastic impacts; ``mass`` MuJoCo's M."""
    theta = servos.theta
    armature, half = ab._col(theta, ARMATURE), 0.5 * ab._col(theta, BACKLASH)
    zero = xp.zeros_like(armature)
    apart = state.contact == 0.0
    v_d = _take(xp, qvel, layout.dofs)
    gap = xp.where(apart, state.gap - dt * v_d, state.gap)
    base_mass = _on_diagonal(xp, mass, xp.where(apart, -armature, zero), layout)
    hit = apart & (xp.abs(gap) >= half)
    side = xp.where(gap > 0.0, xp.ones_like(gap), -xp.ones_like(gap))
    load_mass = _take(xp, _diagonal(xp, base_mass, layout), layout.dofs)
    overshoot = xp.where(hit, armature / (armature + load_mass) * (gap - side * half), zero)
    moved = _take(xp, overshoot, layout.servo_of_qpos)
    qpos = qpos + xp.where(layout.on_qpos, moved, xp.zeros_like(moved))
    impulse = _on_dofs(xp, xp.where(hit, armature * (state.motor_speed - v_d), zero), layout)
    hit_mass = _on_diagonal(xp, base_mass, xp.where(hit, armature, zero), layout)
    gap = xp.where(hit, side * half, gap)
    contact = xp.where(hit, side, state.contact)
    struck = xp.any(hit, axis=-1)
    change = xp.linalg.solve(hit_mass, impulse[..., None])[..., 0]
    qvel = xp.where(struck[..., None], _clip_speed(xp, qvel + change), qvel)
    motor_speed = xp.where(struck[..., None] & (contact != 0.0), _take(xp, qvel, layout.dofs),
                           state.motor_speed)
    return state._replace(gap=gap, contact=contact, motor_speed=motor_speed), qpos, qvel


def settle(xp, state: ab.BankState, servos: ab.ArrayServos, external, v):
    """Step 2: each unsettled record (contact NaN) rests its load on the end of the gap its
    external torque (N·m, per servo) leans it on, the motor side at the load's velocity v; a
    servo without backlash engaged for good (:func:`frictionsim.gear_gap.settle_gear`)."""
    width = ab._col(servos.theta, BACKLASH)
    one = xp.ones_like(external)
    rest = xp.where(external > 0.0, -one, xp.where(external < 0.0, one, 0.0 * one))
    contact = xp.where(width > 0.0, rest, one)
    unsettled = state.contact != state.contact
    return state._replace(contact=xp.where(unsettled, contact, state.contact),
                          gap=xp.where(unsettled, 0.5 * width * contact, state.gap),
                          motor_speed=xp.where(unsettled, v, state.motor_speed))


class _Solve(NamedTuple):
    tau_f: object   # the friction solve's τ_f (..., nv)
    v_next: object  # its v⁺ (..., nv)


def gear_step(state: ab.BankState, servos: ab.ArrayServos, layout: GearLayout, qpos, qvel,
              mass, external, dt):
    """One physics step of the servos with their gear gaps (module docstring): (state, the
    force of every dof (..., nv), qpos, qvel with the impacts written). ``mass`` is MuJoCo's
    M with every rotor in it, ``external`` its passive forces minus the bias (..., nv), ``dt``
    the physics step (s). Replaces :func:`~frictionsim.solvers.array_bank.step` and the
    friction of the plain servo step."""
    xp = ab.namespace(qvel)
    theta = servos.theta
    armature, width = ab._col(theta, ARMATURE), ab._col(theta, BACKLASH)
    state, qpos, qvel = close_gaps(xp, state, servos, layout, qpos, qvel, mass, dt)
    v_d = _take(xp, qvel, layout.dofs)
    external_d = _take(xp, external, layout.dofs)
    state = settle(xp, state, servos, external_d, v_d)
    contact = state.contact
    engaged = contact != 0.0
    state, motor, extra = ab.step(state, servos, xp.where(engaged, v_d, state.motor_speed))
    drive = motor + extra
    zero = xp.zeros_like(drive)
    angle = _take(xp, qpos, layout.qadr)
    budget = ab.servo_budget(v_d, motor, external_d, angle, servos)
    base_mass = _on_diagonal(xp, mass, -armature, layout)
    lone = xp.where(armature > 0.0, armature, xp.ones_like(armature))  # J_m of a gear's rotor
    # a gear tried open parts when its motor side, let go at v_d, would end inside the gap
    let_go, _ = motor_side_step(xp, v_d, drive, motor_side_budget(xp, v_d, motor, servos),
                                lone, dt)

    def solve(engaged) -> _Solve:
        m = _on_diagonal(xp, base_mass, xp.where(engaged, armature, zero), layout)
        tau = external + _on_dofs(xp, xp.where(engaged, drive, zero), layout)
        b = _on_dofs(xp, xp.where(engaged, budget, zero), layout)
        tau_f = ab.clip_friction(m, tau, qvel, b, dt)
        return _Solve(tau_f, stepped_velocities(xp, m, tau, tau_f, qvel, dt))

    def iteration(carry):
        engaged, held, tried, trial, done, _ = carry
        solved = solve(engaged)
        v_next = _take(xp, solved.v_next, layout.dofs)
        stays = trial[..., None] & tried & (contact * (let_go - v_next * dt) >= 0.0)
        engaged, held = engaged | stays, held | stays
        tried = tried & ~trial[..., None]
        check = ~done & ~xp.any(stays, axis=-1)
        passed = drive + _take(xp, solved.tau_f, layout.dofs) - armature * (v_next - v_d) / dt
        opens = (check[..., None] & engaged & ~held & (width > 0.0) & (contact * passed < 0.0))
        trial = xp.any(opens, axis=-1)
        return (engaged & ~opens, held, tried | opens, trial, done | (check & ~trial), solved)

    none = xp.zeros_like(engaged)
    unsolved = _Solve(xp.zeros_like(external), qvel)  # the carry's shapes
    carry = (engaged, none, none, xp.any(none, axis=-1), xp.any(none, axis=-1), unsolved)
    carry = _iterate(xp, iteration, carry, 2 * engaged.shape[-1] + 2)
    engaged, solved = carry[0], carry[5]
    parted = ~engaged & (contact != 0.0)
    contact = xp.where(parted, zero, contact)
    motor_speed = xp.where(parted, v_d, state.motor_speed)
    # the open motor sides on their own budgets τ_fm(w, τ_m, 0)
    move, w_next = motor_side_step(xp, motor_speed, drive,
                                   motor_side_budget(xp, motor_speed, motor, servos), lone, dt)
    gap = xp.where(engaged, state.gap, state.gap + move)
    v_next = _take(xp, solved.v_next, layout.dofs)
    motor_speed = xp.where(engaged, v_next, w_next)
    force = xp.where(engaged, drive + _take(xp, solved.tau_f, layout.dofs),
                     armature * (v_next - v_d) / dt)
    state = state._replace(gap=gap, motor_speed=motor_speed, contact=contact)
    return state, _on_dofs(xp, force, layout), qpos, qvel


def motor_side_budget(xp, w, tau_m, servos: ab.ArrayServos):
    """τ_fm(w, τ_m, 0) = F + K_v·|w| (N·m): an open gap's motor side's budget, no load through
    the mesh and no ripple (:func:`frictionsim.gear_gap.motor_side_budget`)."""
    static, viscous = ab.friction_budget(w, tau_m, xp.zeros_like(w), servos)
    return static + viscous * xp.abs(w)


def _iterate(xp, iteration, carry, limit: int):
    """``iteration`` until every world is done (carry[4]) or ``limit`` times; a
    ``lax.while_loop`` under JAX."""
    if ab._is_jax(xp):
        import jax

        def cond(c):
            return (c[1] < limit) & ~xp.all(c[0][4])

        return jax.lax.while_loop(cond, lambda c: (iteration(c[0]), c[1] + 1), (carry, 0))[0]
    for _ in range(limit):
        carry = iteration(carry)
        if bool(xp.all(carry[4])):
            break
    return carry
