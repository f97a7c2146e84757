"""Lock-step batched rollouts: many candidates advance through one log together.

The scalar evaluator (:func:`frictionsim.solvers.batch.batched_errors`) runs one (candidate, log)
pair per thread iteration, a single latency-bound chain of dependent operations. Here a
thread takes a *block*: one log and up to ``LANES`` candidates, whose states (q, v, …)
are arrays over the lanes, and every control period is one pass over the lanes. The
lanes share the log's goal, enable flag, logged position and bench vector, so a pass
reads them once and needs no masks (a block never mixes logs of different lengths;
torque-off spans are the log's own enable column).

Two kernels, both physics drivers around the servo bank (:mod:`frictionsim.servo_bank`: the
candidates of a block are a bank of servos on one log's bench) calling the same formulas as
the scalar step (the cores of :mod:`frictionsim.friction`, :mod:`frictionsim.actuator_laws`,
:mod:`frictionsim.pendulum` and :func:`frictionsim.solvers.fixed_step.clipped_step`, with scalar
arguments; no ``fastmath``: no reassociation, no fused multiply-add the scalar code does
not have):

- :func:`vector_errors`, for the voltage law without docs/model.md §9's ``current_limit``,
  ``latency`` and ``observation_delay``: each pass is a few branch-free loops over the
  lanes that LLVM vectorises (the ``if`` of the formulas become selects): the ``sin`` of
  the gravity torque and the Stribeck factor by the polynomials of
  :mod:`frictionsim.solvers.vector_math` (libm calls would not vectorise, and cost more
  than the rest of the step together), then the bank's period and motor torque of the plain
  voltage law on scalars (:func:`frictionsim.servo_bank.plain_lane_period`), friction
  budget, clipping and integration. **Where bits differ:** those
  polynomials are within about one ulp of libm, not equal to it, so the state differs
  from the scalar kernel's in its last bits and a log's MAE by about 1e-15 relative (the
  tests bound it at 1e-12). A lane whose angle leaves the polynomial's exact range
  (|q| > 1e6 rad, a diverged candidate) sends its block to libm's ``sin`` for that pass;
- :func:`interleaved_errors`, for every configuration: the bank's period and the scalar
  step per lane, libm and all, so its losses are the scalar kernel's **bit for bit**; the lanes' independent
  chains overlap in the core's pipeline (instruction-level parallelism), no SIMD.

:func:`lockstep_errors` picks the kernel; :meth:`frictionsim.solvers.batch.PackedLogs.errors` uses
it unless told to use the scalar kernel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from frictionsim.friction import static_friction
from frictionsim.layout import (
    ALPHA,
    ARMATURE,
    DT,
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
    KP,
    KT,
    MAX_PWM,
    MAX_VELOCITY,
    Q_OFFSET,
    RESISTANCE,
    SCHEME,
    SEMI_IMPLICIT,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
    SUPPLY,
    SUPPLY_EMF,
    SUPPLY_RESISTANCE,
    THETA_SIZE,
    V_S,
    VIN,
)
from frictionsim.pendulum import gravity_coefficient, load_inertia
from frictionsim.servo_bank import (
    period_servo,
    plain_lane_period,
    plain_lane_torque,
    reset_servo,
    step_servo,
)
from frictionsim.servo_unit import lockstep_compatible
from frictionsim.solvers.fixed_step import clipped_step, plant_step
from frictionsim.solvers.vector_math import SIN_EXACT_LIMIT, vector_sin, vector_stribeck_factor

#: Candidates per block: a multiple of the SIMD width (8 doubles with AVX-512), with room
#: for the pipeline to overlap passes; 16, 32 and 64 measure alike.
LANES = 32
#: Lanes per pass of LLVM's vectorised loop body (two 256-bit vectors of 4 doubles): a block
#: is computed in whole multiples of it, padded with copies of its last candidate, since
#: lanes left over run the loop's scalar remainder (11 candidates, M6: 18.7 ns per log·step
#: computed as 12 lanes, 10.1 as 16).
SIMD_WIDTH = 8


@njit(cache=True, inline="always")
def _block(block: int, n_candidates: int, n_blocks: int) -> tuple:
    """(log index, first candidate, lanes used) of a block."""
    j = block // n_blocks
    c0 = (block % n_blocks) * LANES
    return j, c0, min(LANES, n_candidates - c0)


@njit(cache=True)
def _libm_sin(q: np.ndarray, offset: np.ndarray, lanes: int, out: np.ndarray) -> None:
    """out[p] = sin(q[p] + offset[p]) by libm, where vector_sin's reduction would not be exact."""
    for p in range(lanes):
        out[p] = math.sin(q[p] + offset[p])


@njit(cache=True, parallel=True, error_model="numpy")
def vector_errors(thetas, goal, enable, supply, position, offsets, v0, bench, out) -> None:
    """out[i, j] = rollout MAE (rad) of ``thetas[i]`` on packed log j (see the module
    docstring; requires :func:`~frictionsim.servo_unit.lockstep_compatible` thetas)."""
    n_candidates = thetas.shape[0]
    n_blocks = (n_candidates + LANES - 1) // LANES
    for block in prange((offsets.shape[0] - 1) * n_blocks):
        j, c0, w = _block(block, n_candidates, n_blocks)
        a = offsets[j]
        n = offsets[j + 1] - a
        be = bench[j]
        dt = be[DT]
        kp = be[KP]
        vin = be[VIN]
        i_load = load_inertia(be)
        g_coef = gravity_coefficient(be)
        # Structure of arrays: one row per parameter, one column per lane. The lanes run in
        # whole SIMD widths; the last candidate fills the spare lanes (harmless values).
        lanes = min(LANES, (w + SIMD_WIDTH - 1) // SIMD_WIDTH * SIMD_WIDTH)
        th = np.empty((THETA_SIZE, LANES))
        for p in range(LANES):
            for k in range(THETA_SIZE):
                th[k, p] = thetas[c0 + min(p, w - 1), k]
        q = np.full(LANES, position[a])
        v = np.full(LANES, v0[j])
        q_smooth = np.full(LANES, position[a])
        total = np.zeros(LANES)
        sin_q = np.empty(LANES)
        stribeck = np.zeros(LANES)
        offset, v_s, alpha = th[Q_OFFSET], th[V_S], th[ALPHA]
        stribeck_terms = np.any(v_s > 0.0)  # M1 and M2 have none: s = 0 throughout
        for k in range(n):
            g = goal[a + k]
            en = enable[a + k]
            logged_q = position[a + k]
            logged_vin = supply[a + k]
            far = 0
            for p in range(lanes):
                sin_q[p] = vector_sin(q[p] + offset[p])
                far |= not abs(q[p] + offset[p]) <= SIN_EXACT_LIMIT
            if far:  # a diverged candidate (or NaN): libm's sin for the block
                _libm_sin(q, offset, lanes, sin_q)
            if stribeck_terms:
                for p in range(lanes):
                    stribeck[p] = vector_stribeck_factor(v[p], v_s[p], alpha[p])
            for p in range(lanes):
                total[p] += abs(q[p] - logged_q)
                # The bank's period and step for the plain voltage law (lockstep_compatible),
                # written on scalars so that this loop vectorises.
                u, q_smooth[p] = plain_lane_period(g, q[p], q_smooth[p], logged_vin,
                                                   th[SUPPLY, p], th[SUPPLY_EMF, p],
                                                   th[SUPPLY_RESISTANCE, p], vin, kp,
                                                   th[ERROR_GAIN, p], th[ERROR_GAIN_RATIO, p],
                                                   th[MAX_PWM, p], th[MAX_VELOCITY, p], dt)
                tau_m = plain_lane_torque(u, en, v[p], th[KT, p], th[RESISTANCE, p])
                tau_e = g_coef * sin_q[p]
                static = static_friction(
                    tau_m, tau_e, stribeck[p], th[K_C, p], th[K_L, p], th[K_E, p], th[K_M, p],
                    th[K_CS, p], th[K_LS, p], th[K_ES, p], th[K_MS, p], th[K_EQ, p],
                    th[K_MQ, p])
                q[p], v[p] = clipped_step(q[p], v[p], tau_m + tau_e, i_load + th[ARMATURE, p],
                                          static + th[K_V, p] * abs(v[p]), dt,
                                          th[SCHEME, p] == SEMI_IMPLICIT)
        for p in range(w):
            out[c0 + p, j] = total[p] / n


@njit(cache=True, parallel=True)
def interleaved_errors(thetas, goal, enable, supply, position, offsets, v0, bench, out) -> None:
    """out[i, j] = rollout MAE (rad) of ``thetas[i]`` on packed log j, any configuration
    (module docstring)."""
    n_candidates = thetas.shape[0]
    n_blocks = (n_candidates + LANES - 1) // LANES
    for block in prange((offsets.shape[0] - 1) * n_blocks):
        j, c0, w = _block(block, n_candidates, n_blocks)
        a = offsets[j]
        n = offsets[j + 1] - a
        be = bench[j]
        dt = be[DT]
        q = np.full(w, position[a])
        v = np.full(w, v0[j])
        total = np.zeros(w)
        servos = np.empty((w, SERVO_STATE_SIZE))
        for p in range(w):
            reset_servo(servos[p], q[p], v[p])
        for k in range(n):
            g = goal[a + k]
            en = enable[a + k]
            logged_q = position[a + k]
            logged_vin = supply[a + k]
            for p in range(w):
                theta = thetas[c0 + p]
                servo = servos[p]
                u = period_servo(servo, theta, be, g, q[p], v[p], en, logged_vin, dt, False)
                total[p] += abs(servo[SERVO_REPORTED] - logged_q)
                step_servo(servo, theta, v[p])
                q[p], v[p] = plant_step(servo, q[p], v[p], u, en, 0.0, dt, theta, be)
        for p in range(w):
            out[c0 + p, j] = total[p] / n


def lockstep_errors(thetas, goal, enable, supply, position, offsets, v0, bench, out) -> str:
    """Fill ``out`` with the rollout MAEs by the fastest kernel that suits ``thetas``; returns
    its name (``"vector"`` or ``"interleaved"``)."""
    # The vector kernel has no supply current: a supply it must model (none logged) is not its.
    logged = not (thetas[:, SUPPLY] > 0.0).any() or bool(np.isfinite(supply).all())
    if logged and lockstep_compatible(thetas, bench):
        vector_errors(thetas, goal, enable, supply, position, offsets, v0, bench, out)
        return "vector"
    interleaved_errors(thetas, goal, enable, supply, position, offsets, v0, bench, out)
    return "interleaved"
