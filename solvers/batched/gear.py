"""Backlash in the batched engines, a world per thread: the MuJoCo adapter's step with the gears
(:func:`frictionsim.solvers.robot_gear.adapter_gear_step` and the functions it calls, with
:mod:`frictionsim.gear_gap`'s rules), step for step (docs/model.md §14).

Each servo's record carries its motor side: δ = p − q (``SERVO_GAP``), w (``SERVO_MOTOR_SPEED``)
and the contact c (``SERVO_CONTACT``: ±1 engaged, 0 apart, NaN not yet settled). Per physics
step, between MuJoCo's velocity stage (M with every rotor in it, the bias and passive forces
fresh) and its Euler step:

1. the load's last move, dt·v, comes off each open δ; a gap it closed is an inelastic impact:
   the overshoot shared along the joint by inertia (``qpos``), the generalised momentum kept,
   v⁺ = v + M⁻¹·Σ J_m·(w − v_d)·e_d (``qvel``, M with the impacting rotors);
2. an unsettled record rests its load on the end of the gap its external torque leans it on;
3. the friction solve of docs/model.md §10 with the engaged servos as without backlash and the
   open ones' joints bare; an engaged gear that would pull its load is tried open, and parts
   if its motor side, stepped on its own, ends inside the gap;
4. each open motor side takes its own clipped step on its budget τ_fm(w, τ_m, 0);
5. the force each servo applies: an engaged one τ_m + network + τ_f, an open one J_m·a.

Memory of world e (:mod:`~frictionsim.solvers.batched.memory`): the matrices
``mats[e, FULL | BASE | SOLVED]``, the vectors ``vec[e, row]``, the per-servo values
``per_servo[e, row]``, the friction solve's ``work``.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.layout import ARMATURE, BACKLASH, SERVO_CONTACT, SERVO_GAP, SERVO_MOTOR_SPEED
from frictionsim.solvers.batched.bank import servo_step
from frictionsim.solvers.batched.friction import motor_side_budget, servo_budget
from frictionsim.solvers.batched.joint_friction import (
    NOT_CONVERGED,
    clip_friction,
    stepped_velocity,
    stop_friction,
)
from frictionsim.solvers.batched.laws import clip
from frictionsim.solvers.batched.memory import (
    BASE,
    BUDGET,
    ENGAGED,
    EXTERNAL,
    EXTRA,
    FULL,
    HELD,
    IMPULSE,
    MOTOR,
    SOLVED,
    SPEED,
    TAU,
    TAU_F,
    TRIED,
    V_NEXT,
    VEL,
)
from frictionsim.solvers.fixed_step import MAX_SPEED  # the largest joint speed a step keeps


@wp.func
def clipped_step(q: Any, v: Any, tau: Any, inertia: Any, budget: Any, dt: Any, semi: bool):
    """One clipped step of a joint: (q, v) after it (:func:`frictionsim.solvers.fixed_step.clipped_step`)."""
    tau_f = stop_friction(inertia, tau, v, budget, dt)
    accel = (tau + tau_f) / inertia
    limit = type(dt)(MAX_SPEED)
    v_new = clip(v + accel * dt, -limit, limit)
    if semi:
        return q + v_new * dt, v_new
    return q + (v_new * dt + type(dt)(0.5) * accel * (dt * dt)), v_new


@wp.func
def motor_side_step(w: Any, tau_m: Any, extra: Any, thetas: wp.array3d(dtype=Any), e: int,
                    j: int, dt: Any, semi: bool):
    """An open gap's motor side, one clipped step from w on its own budget: (its move, its
    new velocity) (:func:`frictionsim.solvers.fixed_step.motor_side_step`)."""
    return clipped_step(w * type(w)(0.0), w, tau_m + extra, thetas[e, j, ARMATURE],
                        motor_side_budget(w, tau_m, thetas, e, j), dt, semi)


@wp.func
def settle_gear(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any), e: int, j: int,
                tau_e: Any, v: Any):
    """An unsettled record (contact NaN) rests its load on the end of the gap τ_e leans it
    on, the motor side at v; a servo without backlash engaged for good
    (:func:`frictionsim.gear_gap.settle_gear`)."""
    contact = records[e, j, SERVO_CONTACT]
    if contact == contact:
        return
    zero = type(v)(0.0)
    side = type(v)(1.0)
    if thetas[e, j, BACKLASH] > zero:
        side = zero
        if tau_e > zero:
            side = type(v)(-1.0)
        elif tau_e < zero:
            side = type(v)(1.0)
    records[e, j, SERVO_CONTACT] = side
    records[e, j, SERVO_GAP] = type(v)(0.5) * thetas[e, j, BACKLASH] * side
    records[e, j, SERVO_MOTOR_SPEED] = v


@wp.func
def spd_solve(mats: wp.array4d(dtype=Any), m: int, work: wp.array2d(dtype=Any),
              vec: wp.array3d(dtype=Any), row: int, e: int, nv: int):
    """vec[e, row] ← M⁻¹·vec[e, row], M = mats[e, m] symmetric positive definite (a Cholesky
    factor in work[e, :nv²])."""
    for a in range(nv):
        for c in range(a + 1):
            total = mats[e, m, a, c]
            for f in range(c):
                total = total - work[e, a * nv + f] * work[e, c * nv + f]
            if a == c:
                work[e, a * nv + a] = wp.sqrt(total)
            else:
                work[e, a * nv + c] = total / work[e, c * nv + c]
    for a in range(nv):
        total = vec[e, row, a]
        for f in range(a):
            total = total - work[e, a * nv + f] * vec[e, row, f]
        vec[e, row, a] = total / work[e, a * nv + a]
    for step in range(nv):
        a = nv - 1 - step
        total = vec[e, row, a]
        for f in range(a + 1, nv):
            total = total - work[e, f * nv + a] * vec[e, row, f]
        vec[e, row, a] = total / work[e, a * nv + a]


@wp.func
def close_gaps(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
               qadr: wp.array(dtype=int), dofs: wp.array(dtype=int),
               qpos: wp.array2d(dtype=Any), qvel: wp.array2d(dtype=Any),
               mats: wp.array4d(dtype=Any), vec: wp.array3d(dtype=Any),
               work: wp.array2d(dtype=Any), e: int, nv: int):
    """The inelastic impacts of the open gaps that reached ±g/2 (module docstring, step 1),
    with M = mats[e, BASE] (the engaged rotors in it), which takes the impacting rotors
    (:func:`frictionsim.solvers.robot_gear.close_gaps`)."""
    zero = type(qvel[e, 0])(0.0)
    hits = int(0)
    for i in range(nv):
        vec[e, IMPULSE, i] = zero
    for j in range(dofs.shape[0]):
        half = type(zero)(0.5) * thetas[e, j, BACKLASH]
        gap = records[e, j, SERVO_GAP]
        if records[e, j, SERVO_CONTACT] == zero and wp.abs(gap) >= half:
            d = dofs[j]
            j_motor = thetas[e, j, ARMATURE]
            side = type(zero)(-1.0)
            if gap > zero:
                side = type(zero)(1.0)
            qpos[e, qadr[j]] = qpos[e, qadr[j]] \
                + j_motor / (j_motor + mats[e, BASE, d, d]) * (gap - side * half)
            vec[e, IMPULSE, d] = vec[e, IMPULSE, d] \
                + j_motor * (records[e, j, SERVO_MOTOR_SPEED] - qvel[e, d])
            mats[e, BASE, d, d] = mats[e, BASE, d, d] + j_motor
            records[e, j, SERVO_GAP] = side * half
            records[e, j, SERVO_CONTACT] = side
            hits += 1
    if hits > 0:
        spd_solve(mats, BASE, work, vec, IMPULSE, e, nv)
        limit = type(zero)(MAX_SPEED)
        for i in range(nv):
            qvel[e, i] = clip(qvel[e, i] + vec[e, IMPULSE, i], -limit, limit)
        for j in range(dofs.shape[0]):
            if records[e, j, SERVO_CONTACT] != zero:
                records[e, j, SERVO_MOTOR_SPEED] = qvel[e, dofs[j]]


@wp.func
def add_servos(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
               qadr: wp.array(dtype=int), dofs: wp.array(dtype=int),
               qpos: wp.array2d(dtype=Any), per_servo: wp.array3d(dtype=Any),
               mats: wp.array4d(dtype=Any), vec: wp.array3d(dtype=Any), e: int):
    """The engaged servos into the solved system: their armature into M, τ_m + network into τ,
    their budgets (their load-dependent terms seeing τ_m and the τ already there)
    (:func:`frictionsim.solvers.robot_terms.add_servos`)."""
    zero = type(qpos[e, 0])(0.0)
    for j in range(dofs.shape[0]):
        if per_servo[e, ENGAGED, j] != zero:
            d = dofs[j]
            v_d = vec[e, VEL, d]
            mats[e, SOLVED, d, d] = mats[e, SOLVED, d, d] + thetas[e, j, ARMATURE]
            vec[e, BUDGET, d] = servo_budget(v_d, per_servo[e, MOTOR, j], vec[e, TAU, d],
                                             qpos[e, qadr[j]], thetas, e, j)
            vec[e, TAU, d] = vec[e, TAU, d] + per_servo[e, MOTOR, j] + per_servo[e, EXTRA, j]


@wp.func
def parted(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
           dofs: wp.array(dtype=int), per_servo: wp.array3d(dtype=Any),
           vec: wp.array3d(dtype=Any), e: int, dt: Any):
    """Whether every gear tried open parts: its motor side, stepped on its own from w = v_d,
    ends the step inside the gap with the load's step solved without it; one that does not is
    engaged again and held for the step (:func:`frictionsim.solvers.robot_gear.parted`)."""
    zero = dt * type(dt)(0.0)
    one = type(dt)(1.0)
    ok = bool(True)
    for j in range(dofs.shape[0]):
        if per_servo[e, TRIED, j] != zero:
            per_servo[e, TRIED, j] = zero
            d = dofs[j]
            move, w = motor_side_step(vec[e, VEL, d], per_servo[e, MOTOR, j],
                                      per_servo[e, EXTRA, j], thetas, e, j, dt, True)
            load = vec[e, V_NEXT, d] * dt
            if records[e, j, SERVO_CONTACT] * (move - load) >= zero:
                per_servo[e, ENGAGED, j] = one
                per_servo[e, HELD, j] = one
                ok = False
    return ok


@wp.func
def gear_solve(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
               qadr: wp.array(dtype=int), dofs: wp.array(dtype=int),
               qpos: wp.array2d(dtype=Any), mats: wp.array4d(dtype=Any),
               vec: wp.array3d(dtype=Any), per_servo: wp.array3d(dtype=Any),
               work: wp.array2d(dtype=Any), e: int, nv: int, dt: Any):
    """One step's friction solve with the gears (module docstring, step 3): M without the
    rotors in mats[e, BASE], every other torque in vec[e, EXTERNAL], the velocities in
    vec[e, VEL]; v⁺, τ_f and the solved system into the vectors, the servos' held torques into
    per_servo (:func:`frictionsim.solvers.robot_gear.gear_solve`). False when the friction
    solve did not converge."""
    zero = dt * type(dt)(0.0)
    one = type(dt)(1.0)
    ns = dofs.shape[0]
    for j in range(ns):
        engaged = records[e, j, SERVO_CONTACT] != zero
        speed = records[e, j, SERVO_MOTOR_SPEED]
        if engaged:
            per_servo[e, ENGAGED, j] = one
            speed = vec[e, VEL, dofs[j]]
        else:
            per_servo[e, ENGAGED, j] = zero
        per_servo[e, SPEED, j] = speed
        per_servo[e, HELD, j] = zero
        per_servo[e, TRIED, j] = zero
        motor, extra = servo_step(records, records, e, j, thetas, speed, False)
        per_servo[e, MOTOR, j] = motor
        per_servo[e, EXTRA, j] = extra
    trial = bool(False)
    for _attempt in range(2 * ns + 2):
        for a in range(nv):
            for c in range(nv):
                mats[e, SOLVED, a, c] = mats[e, BASE, a, c]
            vec[e, TAU, a] = vec[e, EXTERNAL, a]
            vec[e, BUDGET, a] = zero
        add_servos(records, thetas, qadr, dofs, qpos, per_servo, mats, vec, e)
        if solve_system(mats, vec, work, e, nv, dt) == NOT_CONVERGED:
            return False
        if trial:
            trial = False
            if not parted(records, thetas, dofs, per_servo, vec, e, dt):
                continue  # a gear kept engaged: solve again with it
        for j in range(ns):
            d = dofs[j]
            if per_servo[e, ENGAGED, j] != zero and per_servo[e, HELD, j] == zero \
                    and thetas[e, j, BACKLASH] > zero:
                accel = (vec[e, V_NEXT, d] - vec[e, VEL, d]) / dt
                passed = per_servo[e, MOTOR, j] + per_servo[e, EXTRA, j] + vec[e, TAU_F, d] \
                    - thetas[e, j, ARMATURE] * accel
                if records[e, j, SERVO_CONTACT] * passed < zero:  # the gear would pull its load
                    per_servo[e, ENGAGED, j] = zero
                    per_servo[e, TRIED, j] = one
                    trial = True
        if not trial:
            break
    for j in range(ns):
        if per_servo[e, ENGAGED, j] == zero and records[e, j, SERVO_CONTACT] != zero:
            records[e, j, SERVO_CONTACT] = zero  # parted this step
            records[e, j, SERVO_MOTOR_SPEED] = vec[e, VEL, dofs[j]]
    return True


@wp.func
def solve_system(mats: wp.array4d(dtype=Any), vec: wp.array3d(dtype=Any),
                 work: wp.array2d(dtype=Any), e: int, nv: int, dt: Any):
    """The friction of the system in mats[e, SOLVED], vec[e, TAU | VEL | BUDGET] (cold) into
    vec[e, TAU_F], and v⁺ into vec[e, V_NEXT]; the solve's result."""
    result = clip_friction_rows(mats, SOLVED, vec, TAU, VEL, BUDGET, TAU_F, work, e, nv, dt,
                                False)
    if nv == 1:
        vec[e, V_NEXT, 0] = vec[e, VEL, 0] + (vec[e, TAU_F, 0] + vec[e, TAU, 0]) \
            / mats[e, SOLVED, 0, 0] * dt
    else:
        for i in range(nv):
            vec[e, V_NEXT, i] = stepped_velocity(work[e], nv, i, dt)
    return result


@wp.func
def clip_friction_rows(mats: wp.array4d(dtype=Any), m: int, vec: wp.array3d(dtype=Any),
                       tau: int, vel: int, budget: int, out: int, work: wp.array2d(dtype=Any),
                       e: int, nv: int, dt: Any, warm: bool):
    """:func:`~frictionsim.solvers.batched.joint_friction.clip_friction` on the matrix
    mats[e, m] and the rows of vec[e]."""
    return clip_friction(mats[e, m], vec[e, tau], vec[e, vel], vec[e, budget], dt, vec[e, out],
                         work[e], nv, warm)


@wp.func
def step_motor_sides(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
                     per_servo: wp.array3d(dtype=Any), e: int, dt: Any):
    """The open gears' motor sides, one clipped step each: their velocity and their move
    added to δ (:func:`frictionsim.solvers.robot_gear.step_motor_sides`)."""
    zero = dt * type(dt)(0.0)
    for j in range(records.shape[1]):
        if per_servo[e, ENGAGED, j] == zero:
            move, w = motor_side_step(records[e, j, SERVO_MOTOR_SPEED], per_servo[e, MOTOR, j],
                                      per_servo[e, EXTRA, j], thetas, e, j, dt, True)
            records[e, j, SERVO_MOTOR_SPEED] = w
            records[e, j, SERVO_GAP] = records[e, j, SERVO_GAP] + move


@wp.func
def gear_step(records: wp.array3d(dtype=Any), thetas: wp.array3d(dtype=Any),
              qadr: wp.array(dtype=int), dofs: wp.array(dtype=int),
              qpos: wp.array2d(dtype=Any), qvel: wp.array2d(dtype=Any),
              mats: wp.array4d(dtype=Any), vec: wp.array3d(dtype=Any),
              per_servo: wp.array3d(dtype=Any), work: wp.array2d(dtype=Any),
              torque: wp.array2d(dtype=Any), e: int, nv: int, dt: Any, fresh: bool):
    """One physics step of world e's servos with their gear gaps (module docstring): M in
    mats[e, FULL], passive − bias in vec[e, EXTERNAL]; each servo's force into torque[e, j],
    the impacts into qpos and qvel (:func:`frictionsim.solvers.robot_gear.adapter_gear_step`,
    a step that follows the last: ``fresh`` the first after a reset). False when the friction
    solve did not converge."""
    zero = dt * type(dt)(0.0)
    ns = dofs.shape[0]
    if not fresh:
        # the load's last move off each open δ, then the gaps it closed
        for a in range(nv):
            for c in range(nv):
                mats[e, BASE, a, c] = mats[e, FULL, a, c]
        for j in range(ns):
            if records[e, j, SERVO_CONTACT] == zero:
                d = dofs[j]
                mats[e, BASE, d, d] = mats[e, BASE, d, d] - thetas[e, j, ARMATURE]
                records[e, j, SERVO_GAP] = records[e, j, SERVO_GAP] - dt * qvel[e, d]
        close_gaps(records, thetas, qadr, dofs, qpos, qvel, mats, vec, work, e, nv)
    for j in range(ns):
        d = dofs[j]
        settle_gear(records, thetas, e, j, vec[e, EXTERNAL, d], qvel[e, d])
    for a in range(nv):
        for c in range(nv):
            mats[e, BASE, a, c] = mats[e, FULL, a, c]
        vec[e, VEL, a] = qvel[e, a]
    for j in range(ns):
        d = dofs[j]
        mats[e, BASE, d, d] = mats[e, BASE, d, d] - thetas[e, j, ARMATURE]
    ok = gear_solve(records, thetas, qadr, dofs, qpos, mats, vec, per_servo, work, e, nv, dt)
    step_motor_sides(records, thetas, per_servo, e, dt)
    for j in range(ns):
        d = dofs[j]
        if per_servo[e, ENGAGED, j] != zero:
            torque[e, j] = per_servo[e, MOTOR, j] + per_servo[e, EXTRA, j] + vec[e, TAU_F, d]
            records[e, j, SERVO_MOTOR_SPEED] = vec[e, V_NEXT, d]
        else:
            torque[e, j] = thetas[e, j, ARMATURE] * (vec[e, V_NEXT, d] - vec[e, VEL, d]) / dt
    return ok
