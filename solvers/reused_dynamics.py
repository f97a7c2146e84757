"""MuJoCo's dynamics terms along a reference run, reused by runs that stay near it.

A fit evaluates thousands of candidate servos on the same windows of a robot's recordings,
and the candidates that matter all follow the recorded motion closely: the mass matrix and
the bias forces they meet step by step differ little from one candidate to the next. A
*reference path* holds, for every physics step of one exact run (the reference candidate),
the state (q_r, v_r), M(q_r) and the bias with its first derivatives; a run that reuses it
takes, at its own state (q, v) of the same step,

    M ≈ M(q_r),    bias ≈ bias(q_r, v_r) + ∂bias/∂q · (q − q_r) + ∂bias/∂v · (v − v_r),

which costs a few dozen multiply-adds instead of MuJoCo's kinematics, composite inertia and
recursive Newton–Euler (about 0.75 µs a step on the SO-101). The bias's error is second
order in the distance to the reference (its velocity part, quadratic in v, is exact up to
round-off), M's first order; how far that moves a window's error is measured by the caller
(:class:`~frictionsim.solvers.robot_windows.RobotWindows` reports it), never assumed.

The derivatives are differences of ``mj_rne``: forward by position (step :data:`Q_STEP`
rad, an error of order Q_STEP relative, far below the expansion's own), central by velocity
(step :data:`V_STEP` rad/s, exact for a bias quadratic in v) on the kinematics of q. Hinge
and slide joints only (nq = nv): a quaternion's difference is not q − q_r.

A path is one row per physics step, its fields read by name (:func:`fields`): ``q`` (nv),
``v`` (nv), ``mass`` (nv × nv, the model's own armature included, no servo's), ``bias``
(nv), ``bias_q`` and ``bias_v`` (nv × nv, row i the derivatives of bias_i).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.solvers.mujoco_dynamics import bias_at_velocity, bias_terms, dynamics_terms

#: Difference steps of the bias's derivatives: position (rad), velocity (rad/s).
Q_STEP = 1e-6
V_STEP = 1e-3

#: A path of no rows: every physics step asks MuJoCo (the exact run).
NO_PATH = np.empty((0, 0))


def width(nv: int) -> int:
    """Doubles in a path's row for ``nv`` dofs."""
    return 3 * nv + 3 * nv * nv


@njit(nogil=True, cache=True, inline="always")
def fields(nv: int) -> tuple:
    """Where each field of a row starts: q, v, mass, bias, bias_q, bias_v."""
    mass = 2 * nv
    bias = mass + nv * nv
    bias_q = bias + nv
    return 0, nv, mass, bias, bias_q, bias_q + nv * nv


@njit(nogil=True, cache=True)
def record_row(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, q: np.ndarray,
               v: np.ndarray, mass: np.ndarray, bias: np.ndarray, row: np.ndarray) -> None:
    """Write the reference row of state (q, v), whose M and bias MuJoCo just gave (``mass``,
    ``bias``), and the bias's derivatives (the module docstring's differences: nv more
    ``mj_rne`` with the kinematics, 2·nv with the velocity stages only)."""
    nv = v.shape[0]
    at_q, at_v, at_mass, at_bias, at_bias_q, at_bias_v = fields(nv)
    for i in range(nv):
        row[at_q + i] = q[i]
        row[at_v + i] = v[i]
        row[at_bias + i] = bias[i]
        for j in range(nv):
            row[at_mass + i * nv + j] = mass[i, j]
    shifted = q.copy()
    plus = np.empty(nv)
    minus = np.empty(nv)
    for j in range(nv):
        shifted[j] = q[j] + Q_STEP
        bias_terms(model, data, qpos, qvel, shifted, v, plus)
        shifted[j] = q[j]
        for i in range(nv):
            row[at_bias_q + i * nv + j] = (plus[i] - bias[i]) / Q_STEP
    bias_terms(model, data, qpos, qvel, q, v, plus)  # the kinematics of q again
    faster = v.copy()
    for j in range(nv):
        faster[j] = v[j] + V_STEP
        bias_at_velocity(model, data, qvel, faster, plus)
        faster[j] = v[j] - V_STEP
        bias_at_velocity(model, data, qvel, faster, minus)
        faster[j] = v[j]
        for i in range(nv):
            row[at_bias_v + i * nv + j] = (plus[i] - minus[i]) / (2.0 * V_STEP)


@njit(nogil=True, cache=True)
def reused_terms(row: np.ndarray, q: np.ndarray, v: np.ndarray, mass: np.ndarray,
                 bias: np.ndarray) -> None:
    """M and the bias at (q, v) from the reference ``row`` of the same physics step (the
    module docstring's expansion), into ``mass`` and ``bias``."""
    nv = v.shape[0]
    at_q, at_v, at_mass, at_bias, at_bias_q, at_bias_v = fields(nv)
    for i in range(nv):
        b = row[at_bias + i]
        for j in range(nv):
            mass[i, j] = row[at_mass + i * nv + j]
            b += row[at_bias_q + i * nv + j] * (q[j] - row[at_q + j]) \
                + row[at_bias_v + i * nv + j] * (v[j] - row[at_v + j])
        bias[i] = b


@njit(nogil=True, cache=True, inline="always")
def step_terms(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, q: np.ndarray,
               v: np.ndarray, mass: np.ndarray, bias: np.ndarray, path: np.ndarray,
               record: bool, step: int) -> None:
    """M and the bias of physics step ``step`` at (q, v): MuJoCo's (and, ``record``, the
    path's row of that step written), or reused from the path (a path of rows, not
    ``record``)."""
    if path.shape[0] > 0 and not record:
        reused_terms(path[step], q, v, mass, bias)
        return
    dynamics_terms(model, data, qpos, qvel, q, v, mass, bias)
    if path.shape[0] > 0:
        record_row(model, data, qpos, qvel, q, v, mass, bias, path[step])
