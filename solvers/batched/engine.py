"""The servos' physics step in a batched engine: one kernel, a thread per world.

MuJoCo Warp, mjlab and MJX (a custom call in its jitted step) run this one sequence per
physics step, between the engine's velocity stage (M(q), the bias and passive forces of the
step) and its actuation, exactly what the MuJoCo adapter's compiled control callback does in
MuJoCo's C step (:func:`frictionsim.solvers.mujoco_adapter.servo_callback`):

1. the goals as each world's servos receive them, its command delay late (a ring of the last
   goals; before the first, the first);
2. a world flagged ``fresh`` resets its servos at its joints' state, and its schedule (its
   control period then falls on its own phase);
3. the control period of the worlds it falls on (:func:`period_due`: the physics steps since
   the reset a whole number of periods), every servo of the world on one supply;
4. without backlash: each servo's physics step (current drawn, τ_m, the network torque), its
   friction budget, and the friction of the world's coupled joints by docs/model.md §10's
   exact solve on M(q), from the last step's active set; with backlash, the gear step
   (:mod:`~frictionsim.solvers.batched.gear`), whose impacts write qpos and qvel;
5. each servo's joint torque τ_m + network + τ_f into ``torque`` and, with ``write_qfrc``,
   at its dof into ``qfrc`` (the other dofs' entries are left, or zeroed with
   ``zero_others``); the reported position on the servo's encoder grid (``encoder``, rad a
   count; 0: none) into ``reported`` at each period.

No step asks the host anything and every buffer is allocated once, so the kernel captures into
a CUDA graph with the engine's own step. M comes in the engine's packed form, read through
``mass_index`` (nv × nv positions in a world's row, −1 for a structural zero): MuJoCo Warp's
CSR ``M``, or a dense matrix flattened (MJX).
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.layout import SERVO_Q_SMOOTH, SERVO_REPORTED
from frictionsim.solvers.batched.bank import reset_record, servo_step, world_period
from frictionsim.solvers.batched.friction import servo_budget
from frictionsim.solvers.batched.gear import gear_step
from frictionsim.solvers.batched.joint_friction import (
    NOT_CONVERGED,
    clip_friction,
    forget_active_set,
)
from frictionsim.solvers.batched.memory import (
    BUDGET,
    ENABLE,
    EXTERNAL,
    EXTRA,
    FULL,
    GOAL,
    MOTOR,
    POSITION,
    TAU,
    TAU_F,
    VEL,
    VELOCITY,
)


@wp.func
def period_due(steps: int, substeps: int):
    """Whether a control period starts at physics step ``steps`` since the reset, for a period
    of ``substeps`` physics steps (:func:`frictionsim.schedule.period_due`)."""
    return steps % substeps == 0


@wp.func
def on_grid(q: Any, step: Any):
    """q rounded to the encoder's grid of ``step`` rad (0: q itself)."""
    if step > type(q)(0.0):
        return wp.floor(q / step + type(q)(0.5)) * step
    return q


@wp.kernel
def servo_step_kernel(
    qadr: wp.array(dtype=int), dofs: wp.array(dtype=int), mass_index: wp.array2d(dtype=int),
    thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
    nets: wp.array2d(dtype=Any), encoder: wp.array(dtype=Any), substeps: int, dt: Any,
    period: Any, gear: bool, write_qfrc: bool, zero_others: bool,
    goals: wp.array2d(dtype=Any), enable: wp.array2d(dtype=Any), delay: wp.array(dtype=int),
    mass: wp.array2d(dtype=Any), bias: wp.array2d(dtype=Any), passive: wp.array2d(dtype=Any),
    qpos: wp.array2d(dtype=Any), qvel: wp.array2d(dtype=Any),
    records: wp.array3d(dtype=Any), steps: wp.array(dtype=int), fresh: wp.array(dtype=int),
    goal_ring: wp.array3d(dtype=Any), clip_work: wp.array2d(dtype=Any),
    failures: wp.array(dtype=int), reported: wp.array2d(dtype=Any),
    mats: wp.array4d(dtype=Any), vec: wp.array3d(dtype=Any), per_servo: wp.array3d(dtype=Any),
    net_work: wp.array3d(dtype=Any), torque: wp.array2d(dtype=Any),
    qfrc: wp.array2d(dtype=Any)):
    """One physics step of the servos of every world (module docstring). Arguments: the
    constants (the servos' joints, M's index, the bank's rows, the schedule, the switches),
    this step's inputs, the state it carries (read and written), the scratch and the
    outputs."""
    e = wp.tid()
    nv = qvel.shape[1]
    ns = dofs.shape[0]
    zero = dt * type(dt)(0.0)
    # 1. the goals through the command delay
    lags = goal_ring.shape[1]
    is_fresh = fresh[e] != 0
    for j in range(ns):
        goal = goals[e, j]
        if lags > 1:
            if is_fresh:
                for slot in range(lags):
                    goal_ring[e, slot, j] = goal
            goal_ring[e, steps[e] % lags, j] = goal
            goal = goal_ring[e, (steps[e] - delay[e] + lags) % lags, j]
        per_servo[e, GOAL, j] = goal
        per_servo[e, POSITION, j] = qpos[e, qadr[j]]
        per_servo[e, VELOCITY, j] = qvel[e, dofs[j]]
        per_servo[e, ENABLE, j] = enable[e, j]
    # 2. a reset
    if is_fresh:
        for j in range(ns):
            reset_record(records, e, j, per_servo[e, POSITION, j], per_servo[e, VELOCITY, j])
        forget_active_set(clip_work[e], nv)
        steps[e] = 0
        failures[e] = 0
        fresh[e] = 0
    # 3. the control period; a goal that is not finite holds the last target (the adapter's rule)
    if period_due(steps[e], substeps):
        for j in range(ns):
            if not wp.isfinite(per_servo[e, GOAL, j]):
                per_servo[e, GOAL, j] = records[e, j, SERVO_Q_SMOOTH]
        world_period(records, records, e, thetas, firmware, nets, net_work, per_servo,
                     type(dt)(wp.nan), period, True, False)
        for j in range(ns):
            reported[e, j] = on_grid(records[e, j, SERVO_REPORTED], encoder[j])
    # 4. the physics step and the friction
    for a in range(nv):
        for c in range(nv):
            at = mass_index[a, c]
            if at >= 0:
                mats[e, FULL, a, c] = mass[e, at]
            else:
                mats[e, FULL, a, c] = zero
        vec[e, EXTERNAL, a] = passive[e, a] - bias[e, a]
        if zero_others:
            qfrc[e, a] = zero
    if gear:
        if not gear_step(records, thetas, qadr, dofs, qpos, qvel, mats, vec, per_servo,
                         clip_work, torque, e, nv, dt, is_fresh):
            failures[e] = failures[e] + 1
    else:
        for a in range(nv):
            vec[e, TAU, a] = vec[e, EXTERNAL, a]
            vec[e, BUDGET, a] = zero
            vec[e, VEL, a] = qvel[e, a]
        for j in range(ns):
            d = dofs[j]
            v_d = vec[e, VEL, d]
            motor, extra = servo_step(records, records, e, j, thetas, v_d, False)
            per_servo[e, MOTOR, j] = motor
            per_servo[e, EXTRA, j] = extra
            vec[e, BUDGET, d] = servo_budget(v_d, motor, vec[e, TAU, d], qpos[e, qadr[j]],
                                             thetas, e, j)
            vec[e, TAU, d] = vec[e, TAU, d] + motor + extra
        if clip_friction(mats[e, FULL], vec[e, TAU], vec[e, VEL], vec[e, BUDGET], dt,
                         vec[e, TAU_F], clip_work[e], nv, True) == NOT_CONVERGED:
            failures[e] = failures[e] + 1
        for j in range(ns):
            torque[e, j] = per_servo[e, MOTOR, j] + per_servo[e, EXTRA, j] \
                + vec[e, TAU_F, dofs[j]]
    # 5. the forces
    if write_qfrc:
        for j in range(ns):
            qfrc[e, dofs[j]] = torque[e, j]
    steps[e] = steps[e] + 1
