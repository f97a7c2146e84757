"""Lock-step robot windows: a block of candidate servo sets advances through one window
together, the servos' firmware, motor torques, friction budgets and the reused dynamics
terms computed for all of them at once (SIMD across candidates).

The scalar evaluator (:func:`frictionsim.solvers.robot.fixed_step_run`, one candidate per
run) spends most of a control period on work that is the same sequence of operations for
every candidate: five servos' firmware law, their motor torques and friction budgets, the
bias expanded about the reference path's row. Here a thread takes one window and up to
:data:`LANES` candidates. Their states are arrays over the lanes (structure of arrays:
``q[dof, lane]``), and each of those parts of a step is a branch-free loop over the lanes
that LLVM vectorises (the ``if`` of the formulas become selects), calling the same scalar
formulas as the bank (:func:`frictionsim.actuator_laws.feetech_lane_law`,
:func:`~frictionsim.actuator_laws.voltage_control`,
:func:`~frictionsim.actuator_laws.voltage_motor_torque`,
:func:`frictionsim.friction.static_friction`). The reference row of the step is read once
for the block. The friction solve, whose active set differs from lane to lane, and the end
of the step (:func:`frictionsim.solvers.robot.advance_joints`) run lane by lane on the
scalar code itself.

**What it takes** (:func:`lockstep_laws`): reused dynamics (a reference path), hinge and
slide joints whose positions are their dofs, the voltage law (plain or with the Feetech
terms, each servo the same for every candidate) without ``latency``,
``observation_delay``, ``current_limit``, ``supply``, ``backlash`` or ``ripple``, and no
network: what a robot fit of M1–M6 evaluates. Anything else takes the scalar evaluator.

**Bit for bit:** every formula is the scalar kernel's, in its order, libm and all (no
``fastmath``: no reassociation or fused multiply-add the scalar code does not have): a
window's errors are the scalar evaluator's to the last bit (the tests hold them equal). The
Stribeck factor calls libm's exp and pow, which do not vectorise; its loop still runs the
rest of the budget across the lanes, and a stuck joint (v = 0) skips the calls.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.actuator_laws import (
    feetech_lane_law,
    plain_voltage_law,
    voltage_control,
    voltage_motor_torque,
)
from frictionsim.friction import static_friction, stribeck_factor
from frictionsim.layout import (
    ACCELERATION,
    ALPHA,
    ARMATURE,
    BACKLASH,
    CURRENT_LIMIT,
    DEAD_BAND,
    DERIVATIVE_TIME,
    ERROR_GAIN,
    ERROR_GAIN_RATIO,
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
    KD,
    KP,
    KT,
    LATENCY,
    LAW,
    MAX_PWM,
    MAX_VELOCITY,
    MESHING_AMPLITUDE,
    OBSERVATION_DELAY,
    RESISTANCE,
    RIPPLE_AMPLITUDE,
    SUPPLY,
    THETA_SIZE,
    TORQUE_LIMIT,
    V_S,
    VIN,
    VOLTAGE_LAW,
)
from frictionsim.layout import DT as PERIOD
from frictionsim.solvers.borrowed import borrowed, hold
from frictionsim.solvers.joint_friction import WORK_SIZE, clip_friction_into
from frictionsim.solvers.reused_dynamics import fields
from frictionsim.solvers.robot import advance_joints

#: Candidates per block at most: CMA-ES's population (11–14 on a robot fit) and a polish's
#: Jacobian (one more than its coordinates, about 20) each fit in one block.
LANES = 32
#: Lanes are computed in whole multiples of this (one 256-bit vector of doubles, what LLVM
#: vectorises these loops with here), padded with copies of the last candidate: the cost is
#: per lane, and 12 candidates padded to 16 cost a third more than in 12 lanes. Fewer
#: candidates than this take as many lanes.
SIMD_WIDTH = 4
#: The theta entries that must be 0 (their terms off) for a lock-step block.
_OFF = (LATENCY, OBSERVATION_DELAY, CURRENT_LIMIT, SUPPLY, BACKLASH, RIPPLE_AMPLITUDE,
        MESHING_AMPLITUDE)


def lockstep_laws(thetas: np.ndarray, benches: np.ndarray) -> np.ndarray | None:
    """Per servo, whether it runs the plain voltage law (True) or the Feetech terms, when
    candidates' servo vectors ``thetas`` (candidates × servos × THETA_SIZE), with the servos'
    firmware settings ``benches`` (servos × BENCH_SIZE), run in lock-step (the module
    docstring): the voltage law, none of the terms it does not carry, and each servo's law
    the same for every candidate; None when they do not."""
    if thetas.ndim != 3 or thetas.shape[2] != THETA_SIZE or not len(thetas):
        return None
    if np.any(thetas[:, :, LAW] != VOLTAGE_LAW) or np.any(thetas[:, :, list(_OFF)] != 0.0):
        return None
    laws = []
    for j in range(thetas.shape[1]):
        plain = {bool(plain_voltage_law(theta, benches[j])) for theta in thetas[:, j]}
        if len(plain) > 1:
            return None
        laws.append(plain.pop())
    return np.array(laws)


def lockstep_ready(thetas: np.ndarray, benches: np.ndarray) -> bool:
    """Whether ``thetas`` with ``benches`` run in lock-step (:func:`lockstep_laws`)."""
    return lockstep_laws(thetas, benches) is not None


@njit(nogil=True, cache=True, error_model="numpy")
def lockstep_window(thetas: np.ndarray, plain: np.ndarray, benches: np.ndarray,
                    goals: np.ndarray, offsets: np.ndarray, qpos0: np.ndarray,
                    start_q: np.ndarray, start_v: np.ndarray, dofs: np.ndarray,
                    rows: np.ndarray, measured: np.ndarray, path: np.ndarray,
                    substeps: int, dt: float, semi_implicit: bool, out: np.ndarray) -> None:
    """One window for a block of candidates (the module docstring): ``thetas`` (lanes ×
    servos × THETA_SIZE) and their calibration ``offsets`` (lanes × servos, rad), each
    servo's law (``plain``) and firmware settings (``benches``), the window's ``goals``
    (steps × servos, recorded), its recorded start (``start_q``, ``start_v``: servos; the
    other dofs at ``qpos0`` and rest), the servos' ``dofs``, the recorded ``rows`` (the
    control period of each) and their positions ``measured`` (rows × servos), the
    reference ``path`` (a row per physics step). ``out`` (lanes × servos): each lane's mean
    absolute error per servo joint over the rows after the first (rad), +inf where its
    friction solve did not converge."""
    benches = borrowed(benches)
    n_used = thetas.shape[0]
    ns = dofs.shape[0]
    nv = qpos0.shape[0]
    # fewer candidates than a vector: as many lanes (a polish's single steps would pay for
    # three idle lanes)
    lanes = n_used if n_used < SIMD_WIDTH else \
        min(LANES, (n_used + SIMD_WIDTH - 1) // SIMD_WIDTH * SIMD_WIDTH)
    th = np.empty((THETA_SIZE, ns, lanes))
    off = np.empty((ns, lanes))
    for p in range(lanes):
        c = min(p, n_used - 1)  # the spare lanes repeat the last candidate
        for j in range(ns):
            off[j, p] = offsets[c, j]
            for k in range(THETA_SIZE):
                th[k, j, p] = thetas[c, j, k]
    q = np.empty((nv, lanes))
    v = np.zeros((nv, lanes))
    for i in range(nv):
        for p in range(lanes):
            q[i, p] = qpos0[i]
    u = np.zeros((ns, lanes))
    q_smooth = np.empty((ns, lanes))
    rate = np.zeros((ns, lanes))
    error = np.full((ns, lanes), np.nan)
    for j in range(ns):
        d = dofs[j]
        for p in range(lanes):
            q[d, p] = start_q[j] + off[j, p]
            v[d, p] = start_v[j]
            q_smooth[j, p] = q[d, p]  # the servo reset at rest at its start
    motor = np.empty((ns, lanes))
    tau = np.empty((nv, lanes))
    budget = np.empty((nv, lanes))
    total = np.zeros((ns, lanes))
    failed = np.zeros(lanes, dtype=np.bool_)
    # one lane's friction solve and step, in arrays of its own (borrowed: no reference
    # counting per lane and step)
    own = (np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv),
           np.empty(nv), np.empty(nv), np.empty(nv), np.empty(WORK_SIZE))
    mass_l, tau_l, v_l, q_l, budget_l, tau_f, acc, drift, work = borrowed(own)
    at_q, at_v, at_mass, at_bias, at_bias_q, at_bias_v = fields(nv)
    row = 1
    for k in range(goals.shape[0]):
        if row < rows.shape[0] and rows[row] == k:
            # the state before period k, as the servo reports it (no observation delay)
            for j in range(ns):
                d = dofs[j]
                m = measured[row, j]
                for p in range(lanes):
                    total[j, p] += abs((q[d, p] - off[j, p]) - m)
            row += 1
        for j in range(ns):
            d = dofs[j]
            be = benches[j]
            kp, vin, period = be[KP], be[VIN], be[PERIOD]
            if plain[j]:
                for p in range(lanes):
                    c = voltage_control(goals[k, j] + off[j, p], q[d, p], q_smooth[j, p], vin,
                                        kp, th[ERROR_GAIN, j, p], th[ERROR_GAIN_RATIO, j, p],
                                        th[MAX_PWM, j, p], th[MAX_VELOCITY, j, p], period)
                    u[j, p] = c.u
                    q_smooth[j, p] = c.q_smooth
            else:
                kd, limit, acceleration = be[KD], be[TORQUE_LIMIT], be[ACCELERATION]
                for p in range(lanes):
                    f = feetech_lane_law(goals[k, j] + off[j, p], q[d, p], q_smooth[j, p],
                                         rate[j, p], error[j, p], vin, th[MAX_VELOCITY, j, p],
                                         acceleration, period, th[DEAD_BAND, j, p],
                                         th[MAX_PWM, j, p], limit, th[ERROR_GAIN, j, p],
                                         th[ERROR_GAIN_RATIO, j, p], kp, kd,
                                         th[DERIVATIVE_TIME, j, p])
                    u[j, p] = f.u
                    q_smooth[j, p] = f.q_smooth
                    rate[j, p] = f.rate
                    error[j, p] = f.error
        for s in range(substeps):
            step = k * substeps + s
            for j in range(ns):
                d = dofs[j]
                for p in range(lanes):
                    motor[j, p] = voltage_motor_torque(u[j, p], 1.0, v[d, p], th[KT, j, p],
                                                       th[RESISTANCE, j, p], 0.0)
            # τ = −bias, the bias expanded about the reference's row in its own order
            # (reused_dynamics.reused_terms)
            for i in range(nv):
                for p in range(lanes):
                    tau[i, p] = path[step, at_bias + i]
                for jj in range(nv):
                    bq = path[step, at_bias_q + i * nv + jj]
                    bv = path[step, at_bias_v + i * nv + jj]
                    qr = path[step, at_q + jj]
                    vr = path[step, at_v + jj]
                    for p in range(lanes):
                        tau[i, p] += bq * (q[jj, p] - qr) + bv * (v[jj, p] - vr)
                for p in range(lanes):
                    tau[i, p] = -tau[i, p]
                    budget[i, p] = 0.0
            # the servos' budgets and torques (robot_terms.add_servos), every servo engaged
            for j in range(ns):
                d = dofs[j]
                for p in range(lanes):
                    speed = v[d, p]
                    stribeck = stribeck_factor(speed, th[V_S, j, p], th[ALPHA, j, p])
                    static = static_friction(
                        motor[j, p], tau[d, p], stribeck, th[K_C, j, p], th[K_L, j, p],
                        th[K_E, j, p], th[K_M, j, p], th[K_CS, j, p], th[K_LS, j, p],
                        th[K_ES, j, p], th[K_MS, j, p], th[K_EQ, j, p], th[K_MQ, j, p])
                    budget[d, p] = static + th[K_V, j, p] * abs(speed)
                    tau[d, p] += motor[j, p] + 0.0
            for p in range(lanes):
                if failed[p]:
                    continue
                for i in range(nv):
                    for jj in range(nv):
                        mass_l[i, jj] = path[step, at_mass + i * nv + jj]
                    tau_l[i] = tau[i, p]
                    v_l[i] = v[i, p]
                    q_l[i] = q[i, p]
                    budget_l[i] = budget[i, p]
                for j in range(ns):
                    mass_l[dofs[j], dofs[j]] += th[ARMATURE, j, p]
                if clip_friction_into(mass_l, tau_l, v_l, budget_l, dt, tau_f, work) < 0:
                    failed[p] = True
                    continue
                advance_joints(0, mass_l, tau_l, tau_f, acc, drift, work, q_l, v_l, dt,
                               semi_implicit)
                for i in range(nv):
                    v[i, p] = v_l[i]
                    q[i, p] = q_l[i]
    count = rows.shape[0] - 1
    for p in range(n_used):
        for j in range(ns):
            out[p, j] = np.inf if failed[p] else total[j, p] / count
    hold(*own)
