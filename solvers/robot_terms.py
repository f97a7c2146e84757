"""The forces of a robot's fixed step and event-driven engine: MuJoCo's M(q) and bias with the
servos' armature, torques and friction budgets (docs/model.md §10)."""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.friction import friction_budget, rippled_static
from frictionsim.layout import ARMATURE
from frictionsim.solvers.mujoco_dynamics import dynamics_terms


@njit(nogil=True, cache=True)
def robot_forces(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray,
                 dofs: np.ndarray, thetas: np.ndarray, motor: np.ndarray, extra: np.ndarray,
                 q: np.ndarray, v: np.ndarray, mass: np.ndarray, tau: np.ndarray,
                 budget: np.ndarray, bias: np.ndarray, engaged: np.ndarray) -> None:
    """M (with each servo's armature), τ = τ_m + extra − bias and the budgets b at (q, v), in
    place; ``motor``, ``extra``: each servo's motor torque at this v and its held network
    torque (N·m: the servo bank's :func:`~frictionsim.servo_bank.bank_step` or
    :func:`~frictionsim.servo_bank.bank_held_torques`). Friction clips the network torque
    like any other; the budget is the servo's own (its load-dependent terms see τ_m and the
    bias, as on the bench). A servo whose ``engaged`` entry is False has its gear's gap open
    (``backlash``, :mod:`frictionsim.solvers.robot_gear`): its joint is the bare load, with no
    armature, motor torque or friction."""
    dynamics_terms(model, data, qpos, qvel, q, v, mass, bias)
    applied_forces(qadr, dofs, thetas, motor, extra, q, v, engaged, mass, tau, budget, bias)


@njit(nogil=True, inline="always", cache=True)
def applied_forces(qadr: np.ndarray, dofs: np.ndarray, thetas: np.ndarray, motor: np.ndarray,
                   extra: np.ndarray, q: np.ndarray, v: np.ndarray, engaged: np.ndarray,
                   mass: np.ndarray, tau: np.ndarray, budget: np.ndarray,
                   bias: np.ndarray) -> None:
    """:func:`robot_forces` once M and the bias are known (from MuJoCo, or reused along a
    reference: :mod:`frictionsim.solvers.reused_dynamics`): τ = −bias, then the servos."""
    for i in range(v.shape[0]):
        tau[i] = -bias[i]
        budget[i] = 0.0
    add_servos(qadr, dofs, thetas, motor, extra, q, v, engaged, mass, tau, budget)


@njit(nogil=True, inline="always", cache=True)
def add_servos(qadr: np.ndarray, dofs: np.ndarray, thetas: np.ndarray, motor: np.ndarray,
               extra: np.ndarray, q: np.ndarray, v: np.ndarray, engaged: np.ndarray,
               mass: np.ndarray, tau: np.ndarray, budget: np.ndarray) -> None:
    """The engaged servos into M (their armature), τ (τ_m + extra) and the budgets (each
    servo's own, its load-dependent terms seeing τ_m and the τ already there: −bias; its
    ``ripple`` at its joint's angle q[qadr])."""
    for j in range(dofs.shape[0]):
        if not engaged[j]:
            continue
        d = dofs[j]
        theta = thetas[j]
        mass[d, d] += theta[ARMATURE]
        b = friction_budget(v[d], motor[j], tau[d], theta)
        static = rippled_static(b.static, b.viscous, q[qadr[j]], v[d], theta)
        budget[d] = static + b.viscous * abs(v[d])
        tau[d] += motor[j] + extra[j]


@njit(nogil=True, inline="always", cache=True)
def gather(values: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[j] = values[index[j]]: the servos' joints' entries of a model vector."""
    for j in range(index.shape[0]):
        out[j] = values[index[j]]
    return out
