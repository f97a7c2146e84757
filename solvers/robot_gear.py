"""Backlash on a robot's servos in the fixed step (docs/model.md §14, :mod:`frictionsim.gear_gap`).

Each servo with ``backlash`` has its motor side (δ = p − q, w, the contact state) in its servo
record. Per physics step:

1. a servo whose record is not yet settled rests its load on the end of the gap its
   external torque −bias leans it on;
2. the bank's step gives each servo's held torques, at the motor side's velocity w where
   the gap is open (back-EMF follows the rotor);
3. the robot's step (M(q) and the bias from MuJoCo, docs/model.md §10's coupled friction
   clipping) with the engaged servos as without backlash and the open ones' joints bare
   (no armature, motor torque or friction). An engaged servo whose gear would pull its load,
   c·τ_c < 0 with τ_c = τ_m + extra + τ_f − J_m·a the torque the gear passes on, is tried
   open: the step is solved again without it, and it parts if its motor side, stepped on
   its own, ends inside the gap (:func:`parted`); else it stays engaged for the step (the
   bench's rule, :func:`frictionsim.solvers.fixed_step.geared_step`);
4. each open motor side takes its own clipped step
   (:func:`frictionsim.solvers.fixed_step.motor_side_step`, its budget τ_fm(w, τ_m, 0));
   where δ reaches ±g/2 the gap closes by an inelastic impact of the motor side with the
   whole robot: v⁺ = v + M⁻¹·Σ J_m·(w − v_d)·e_d, M with the impacting rotors' inertia,
   which conserves the generalised momentum; the overshoot is shared along the joint by
   inertia, J_m/(J_m + M_dd) of it moving the load.

The MuJoCo adapter takes the same solve inside MuJoCo's step (:func:`adapter_gear_step`),
and :mod:`frictionsim.solvers.robot_gear_events` is the exact reference both are held to.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.gear_gap import settle_gear
from frictionsim.layout import (
    ARMATURE,
    BACKLASH,
    SERVO_CONTACT,
    SERVO_GAP,
    SERVO_MOTOR_SPEED,
)
from frictionsim.servo_bank import ServoBank, bank_step
from frictionsim.solvers.fixed_step import MAX_SPEED, motor_side_step
from frictionsim.solvers.joint_friction import clip_friction_into, stepped_velocities
from frictionsim.solvers.mujoco_dynamics import dynamics_terms, integrate_positions
from frictionsim.solvers.robot_terms import add_servos


@njit(nogil=True, cache=True)
def has_backlash(thetas: np.ndarray) -> bool:
    """Whether any servo of ``thetas`` (rows of :mod:`frictionsim.layout`) has a gear gap."""
    for j in range(thetas.shape[0]):
        if thetas[j, BACKLASH] > 0.0:
            return True
    return False


@njit(nogil=True, cache=True)
def settle_gears(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, dofs: np.ndarray,
                 bank: ServoBank, q: np.ndarray, v: np.ndarray, mass: np.ndarray,
                 bias: np.ndarray) -> None:
    """Rest every unsettled gear (contact NaN) on the end of its gap that −bias leans it on
    (:func:`frictionsim.gear_gap.settle_gear`); MuJoCo is asked only when one is."""
    for j in range(dofs.shape[0]):
        if bank.records[j, SERVO_CONTACT] != bank.records[j, SERVO_CONTACT]:
            dynamics_terms(model, data, qpos, qvel, q, v, mass, bias)
            for i in range(dofs.shape[0]):
                settle_gear(bank.records[i], bank.thetas[i], -bias[dofs[i]], v[dofs[i]])
            return


@njit(nogil=True, cache=True)
def geared_physics_steps(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray,
                         qadr: np.ndarray, dofs: np.ndarray, bank: ServoBank, q: np.ndarray,
                         v: np.ndarray, substeps: int, dt: float, semi_implicit: bool,
                         scratch: tuple) -> bool:
    """:func:`frictionsim.solvers.robot.physics_steps` with the servos' gear gaps (module
    docstring); same memory, same result when no gap is ever open. False when the friction
    solve did not converge."""
    (mass, tau, budget, bias, tau_f, acc, drift, work, gv, motor, extra, engaged, base_mass,
     flags) = scratch
    nv = v.shape[0]
    ns = dofs.shape[0]
    hinges_only = q.shape[0] == nv
    records = bank.records
    for _ in range(substeps):
        settle_gears(model, data, qpos, qvel, dofs, bank, q, v, mass, bias)
        dynamics_terms(model, data, qpos, qvel, q, v, base_mass, bias)
        for i in range(nv):
            bias[i] = -bias[i]
        if not gear_solve(base_mass, bias, q, v, qadr, dofs, bank, gv, motor, extra, engaged, flags,
                          mass, tau, budget, tau_f, acc, work, dt, semi_implicit):
            return False
        step_motor_sides(dofs, bank, engaged, motor, extra, dt, semi_implicit)
        for i in range(nv):
            # 0·(τ + τ_f) carries a NaN or infinity of the torques into v⁺ (robot.physics_steps)
            v_next = acc[i] + 0.0 * (tau[i] + tau_f[i])
            acc[i] = (v_next - v[i]) / dt
            v[i] = min(max(v_next, -MAX_SPEED), MAX_SPEED)
            drift[i] = v[i] if semi_implicit else v[i] + 0.5 * acc[i] * dt
        for j in range(ns):
            if engaged[j]:
                records[j, SERVO_MOTOR_SPEED] = v[dofs[j]]
            else:
                records[j, SERVO_GAP] -= drift[dofs[j]] * dt  # the load's own move
        if hinges_only:
            for i in range(nv):
                q[i] += drift[i] * dt
        else:
            integrate_positions(model, q, drift, dt)
        close_gaps(dofs, qadr, bank, q, v, mass, tau)
    return True


@njit(nogil=True, cache=True)
def gear_solve(base_mass: np.ndarray, base_tau: np.ndarray, q: np.ndarray, v: np.ndarray,
               qadr: np.ndarray, dofs: np.ndarray, bank: ServoBank, gv: np.ndarray,
               motor: np.ndarray, extra: np.ndarray,
               engaged: np.ndarray, flags: np.ndarray, mass: np.ndarray, tau: np.ndarray,
               budget: np.ndarray, tau_f: np.ndarray, v_next: np.ndarray, work: np.ndarray,
               dt: float, semi_implicit: bool) -> bool:
    """One step's friction solve with the gears (module docstring, steps 2–3): ``base_mass``
    the mass matrix without the servos' rotors, ``base_tau`` every torque but the servos'
    (−bias, and MuJoCo's passive forces in the adapter). Into ``v_next`` the solve's v⁺, into
    ``tau_f`` its friction, into mass/τ/budget the system it solved (the engaged rotors in
    M); ``engaged`` the gears engaged over the step (one that parts has its contact set to
    0, its motor side to v_d); the servos' held torques into motor and extra. ``flags``: 2 ×
    ns booleans of scratch. False when the friction solve did not converge."""
    nv = v.shape[0]
    ns = dofs.shape[0]
    records, thetas = bank.records, bank.thetas
    tried, held = flags[0], flags[1]
    for j in range(ns):
        engaged[j] = records[j, SERVO_CONTACT] != 0.0
        gv[j] = v[dofs[j]] if engaged[j] else records[j, SERVO_MOTOR_SPEED]
        held[j] = False
    bank_step(bank, gv, motor, extra)
    trial = False
    for _attempt in range(2 * ns + 2):
        for a in range(nv):
            for b in range(nv):
                mass[a, b] = base_mass[a, b]
            tau[a] = base_tau[a]
            budget[a] = 0.0
        add_servos(qadr, dofs, thetas, motor, extra, q, v, engaged, mass, tau, budget)
        if clip_friction_into(mass, tau, v, budget, dt, tau_f, work) < 0:
            return False
        if nv == 1:
            v_next[0] = v[0] + (tau_f[0] + tau[0]) / mass[0, 0] * dt
        else:
            stepped_velocities(work, nv, dt, v_next)
        if trial and not parted(dofs, thetas, records, engaged, tried, held, motor, extra,
                                v, v_next, dt, semi_implicit):
            trial = False
            continue  # a gear kept engaged: solve again with it
        trial = False
        for j in range(ns):
            d = dofs[j]
            if not engaged[j] or held[j] or thetas[j, BACKLASH] <= 0.0:
                continue
            accel = (v_next[d] - v[d]) / dt
            passed = motor[j] + extra[j] + tau_f[d] - thetas[j, ARMATURE] * accel
            if records[j, SERVO_CONTACT] * passed < 0.0:  # the gear would pull its load
                engaged[j] = False
                tried[j] = True
                trial = True
        if not trial:
            break
    for j in range(ns):
        if not engaged[j] and records[j, SERVO_CONTACT] != 0.0:  # parted this step
            records[j, SERVO_CONTACT] = 0.0
            records[j, SERVO_MOTOR_SPEED] = v[dofs[j]]
    return True


@njit(nogil=True, cache=True)
def step_motor_sides(dofs: np.ndarray, bank: ServoBank, engaged: np.ndarray,
                     motor: np.ndarray, extra: np.ndarray, dt: float,
                     semi_implicit: bool) -> None:
    """The open gears' motor sides, one clipped step each on their own budget τ_fm(w, τ_m, 0):
    their velocity and their move added to δ (the load's move is the caller's)."""
    records, thetas = bank.records, bank.thetas
    for j in range(dofs.shape[0]):
        if engaged[j]:
            continue
        side = motor_side_step(records[j, SERVO_MOTOR_SPEED], motor[j], extra[j], thetas[j], dt,
                               semi_implicit)
        records[j, SERVO_MOTOR_SPEED] = side.v
        records[j, SERVO_GAP] += side.q


@njit(nogil=True, cache=True)
def parted(dofs: np.ndarray, thetas: np.ndarray, records: np.ndarray, engaged: np.ndarray,
           tried: np.ndarray, held: np.ndarray, motor: np.ndarray, extra: np.ndarray,
           v: np.ndarray, v_next: np.ndarray, dt: float, semi_implicit: bool) -> bool:
    """Whether every gear ``tried`` open (its load pulled) parts: its motor side, stepped on
    its own from w = v_d, ends the step inside the gap with the load's step ``v_next`` solved
    without it. One that does not is engaged again and ``held`` for the step; False then."""
    ok = True
    for j in range(dofs.shape[0]):
        if not tried[j]:
            continue
        tried[j] = False
        d = dofs[j]
        side = motor_side_step(v[d], motor[j], extra[j], thetas[j], dt, semi_implicit)
        # the load's move as the step integrates it (robot.physics_steps)
        load = v_next[d] * dt if semi_implicit else (v_next[d] + 0.5 * (v_next[d] - v[d])) * dt
        if records[j, SERVO_CONTACT] * (side.q - load) >= 0.0:
            engaged[j] = True
            held[j] = True
            ok = False
    return ok


@njit(nogil=True, cache=True)
def close_gaps(dofs: np.ndarray, qadr: np.ndarray, bank: ServoBank, q: np.ndarray,
               v: np.ndarray, mass: np.ndarray, impulse: np.ndarray) -> None:
    """The inelastic impacts of the open gaps that reached ±g/2 this step (module docstring);
    ``mass`` is the step's M (the engaged rotors in it, the open ones not), ``impulse`` nv
    doubles of scratch."""
    records, thetas = bank.records, bank.thetas
    nv = v.shape[0]
    hits = 0
    for i in range(nv):
        impulse[i] = 0.0
    for j in range(dofs.shape[0]):
        half = 0.5 * thetas[j, BACKLASH]
        gap = records[j, SERVO_GAP]
        if records[j, SERVO_CONTACT] != 0.0 or abs(gap) < half:
            continue
        d = dofs[j]
        j_motor = thetas[j, ARMATURE]
        side = 1.0 if gap > 0.0 else -1.0
        q[qadr[j]] += j_motor / (j_motor + mass[d, d]) * (gap - side * half)
        impulse[d] += j_motor * (records[j, SERVO_MOTOR_SPEED] - v[d])
        mass[d, d] += j_motor
        records[j, SERVO_GAP] = side * half
        records[j, SERVO_CONTACT] = side
        hits += 1
    if hits == 0:
        return
    change = np.linalg.solve(mass, impulse)
    for i in range(nv):
        v[i] = min(max(v[i] + change[i], -MAX_SPEED), MAX_SPEED)
    for j in range(dofs.shape[0]):
        if records[j, SERVO_CONTACT] != 0.0:
            records[j, SERVO_MOTOR_SPEED] = v[dofs[j]]


@njit(nogil=True, cache=True)
def adapter_gear_scratch(nv: int, ns: int) -> int:
    """Doubles of scratch :func:`adapter_gear_step` takes per MjData, for nv dofs and ns
    servos, and 2·ns more for the servos' dof and qpos addresses (int64 over the doubles)."""
    return nv * nv + 3 * nv + 8 * ns


@njit(nogil=True, cache=True)
def adapter_gear_step(qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray, dofs: np.ndarray,
                      bank: ServoBank, mass: np.ndarray, external: np.ndarray,
                      applied: np.ndarray, fresh: bool, advanced: bool, dt: float,
                      tau: np.ndarray, budget: np.ndarray, tau_f: np.ndarray, gv: np.ndarray,
                      motor: np.ndarray, extra: np.ndarray, work: np.ndarray,
                      scratch: np.ndarray) -> bool:
    """The MuJoCo adapter's step with the servos' gear gaps (:mod:`frictionsim.solvers.mujoco_adapter`,
    the ``budget`` mode; MuJoCo's Euler is the ``semi_implicit`` scheme): ``mass`` is MuJoCo's
    M with every rotor in it (the model's armature), ``external`` its passive forces minus the
    bias. Writes each servo's force into ``applied`` so that MuJoCo's step lands where the
    robot's geared fixed step would: the engaged servos' torque and friction, and on an open
    gear's joint J_m·a, which takes the rotor MuJoCo's M carries off the load.

    Before the step, when time advanced by a step, the load's last move (dt·v) is taken off
    each open δ, and a gap it closed is an impact: the overshoot shared along the joint by
    inertia (``qpos``) and the generalised momentum kept (``qvel``). A callback repeated at one
    time (``mj_forward``) starts again from the gear state its first call saved. ``fresh``: a
    new run, its records just reset. False when the friction solve did not converge."""
    nv = qvel.shape[0]
    ns = dofs.shape[0]
    records, thetas = bank.records, bank.thetas
    base_mass = scratch[:nv * nv].reshape((nv, nv))
    at = nv * nv
    base_tau, v, v_next = scratch[at:at + nv], scratch[at + nv:at + 2 * nv], \
        scratch[at + 2 * nv:at + 3 * nv]
    at += 3 * nv
    engaged = scratch[at:at + ns]
    flags = scratch[at + ns:at + 3 * ns].reshape((2, ns))
    saved = scratch[at + 3 * ns:at + 6 * ns].reshape((ns, 3))
    if not fresh and not advanced:
        for j in range(ns):
            records[j, SERVO_GAP], records[j, SERVO_MOTOR_SPEED], records[j, SERVO_CONTACT] = \
                saved[j, 0], saved[j, 1], saved[j, 2]
    elif advanced:
        # the step's M as the robot's fixed step has it (the open rotors off the load), the
        # load's move in MuJoCo's Euler step off each open δ, then the gaps it closed
        for i in range(nv):
            for k in range(nv):
                base_mass[i, k] = mass[i, k]
        for j in range(ns):
            if records[j, SERVO_CONTACT] == 0.0:
                base_mass[dofs[j], dofs[j]] -= thetas[j, ARMATURE]
                records[j, SERVO_GAP] -= dt * qvel[dofs[j]]
        close_gaps(dofs, qadr, bank, qpos, qvel, base_mass, base_tau)
    for j in range(ns):
        settle_gear(records[j], thetas[j], external[dofs[j]], qvel[dofs[j]])
        saved[j, 0], saved[j, 1], saved[j, 2] = \
            records[j, SERVO_GAP], records[j, SERVO_MOTOR_SPEED], records[j, SERVO_CONTACT]
    for i in range(nv):
        for k in range(nv):
            base_mass[i, k] = mass[i, k]
        base_tau[i] = external[i]
        v[i] = qvel[i]
    for j in range(ns):
        base_mass[dofs[j], dofs[j]] -= thetas[j, ARMATURE]
    ok = gear_solve(base_mass, base_tau, qpos, v, qadr, dofs, bank, gv, motor, extra, engaged,
                    flags, mass, tau, budget, tau_f, v_next, work, dt, True)
    step_motor_sides(dofs, bank, engaged, motor, extra, dt, True)
    for j in range(ns):
        d = dofs[j]
        if engaged[j]:
            applied[d] = motor[j] + extra[j] + tau_f[d]
            records[j, SERVO_MOTOR_SPEED] = v_next[d]
        else:
            applied[d] = thetas[j, ARMATURE] * (v_next[d] - v[d]) / dt
    return ok
