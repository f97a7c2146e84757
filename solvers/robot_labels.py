"""Inverse dynamics of a robot's recordings through its servos' physics: the torque labels a
learned actuator is trained on (docs/model.md §13), the robot's counterpart of the bench's
:func:`frictionsim.solvers.learned_rollout.teacher_forced`.

Between two recorded rows k and k + 1 (a bus cycle, N physics steps of dt), the robot is
simulated from the recorded state of row k by the physical model (its servos' firmware,
motors and friction; for a pure network the bare joints: no motor, no friction, no rotor
inertia), a physics driver around the servo bank like the robot's fixed step, the servos'
records carried on from one row to the next. The constant extra torque
r (one per servo) that would close the gap to the recorded positions of row k + 1 is, with the
mass matrix M at row k's state (an extra acceleration α = M⁻¹·r moves the positions by
α·dt²·S after N steps, S = N(N + 1)/2 for the semi-implicit update, + N/2 for the
reference one; friction's clip of r is ignored there)::

    r = M · (q_recorded(k + 1) − q_simulated(k + 1)) / (S·dt²)

Every dof of the model must carry a servo (nv = servos): a passive dof's state is not
recorded. The network's inputs at row k (:func:`recorded_features`) are read off the
recording: the error and velocity at the control periods the network looks back to,
linear between rows, the goal held from the row that sent it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from frictionsim.actuator_net import HISTORY, N_INPUTS, STRIDE
from frictionsim.errors import ConfigurationError
from frictionsim.servo_bank import ServoBank, bank_period, bank_reset, new_bank
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers.robot import Robot, physics_scratch, physics_steps
from frictionsim.solvers.robot_terms import gather


def residual_labels(robot: Robot, goals: np.ndarray, counts: np.ndarray, q: np.ndarray,
                    v: np.ndarray) -> np.ndarray:
    """The residual torque (N·m) of every servo between consecutive recorded rows (module
    docstring): (rows − 1) × servos, NaN where a row's simulation failed. ``goals``, ``q``,
    ``v``: rows × servos in the model's convention; ``counts``: control periods each row's
    goal is held (:func:`frictionsim.experiments.robots.recorded.hold_counts`)."""
    check_servo_on_every_dof(robot, "torque labels")
    goals, q, v = (np.ascontiguousarray(a, dtype=float) for a in (goals, q, v))
    out = np.empty((len(goals) - 1, len(robot.servos)))
    # the physical model only: a network's torque is what the labels measure
    bank = new_bank(robot.thetas, robot.benches)
    _labels(robot.dynamics._address, robot.data._address, robot.data.qpos, robot.data.qvel,
            robot.qadr, robot.dofs, bank, goals, np.ascontiguousarray(counts, dtype=np.int64),
            q, v, robot.substeps, robot.dt, robot.scheme == "semi_implicit", out)
    return out


def check_servo_on_every_dof(robot: Robot, what: str) -> None:
    """ConfigurationError unless every dof of ``robot``'s model carries a servo (and every
    joint is a hinge): ``what`` is read off a recording, where a passive dof's state is not
    recorded."""
    if robot.nv != len(robot.servos) or robot.nq != robot.nv:
        raise ConfigurationError(f"{what} need every dof of the model to carry a servo (a passive "
                                 f"dof's state is not recorded): {robot.nv} dofs, "
                                 f"{len(robot.servos)} servos")


@njit(nogil=True, cache=True)
def _labels(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray,
            dofs: np.ndarray, bank: ServoBank, goals: np.ndarray, counts: np.ndarray,
            q_rec: np.ndarray, v_rec: np.ndarray, substeps: int, dt: float,
            semi_implicit: bool, out: np.ndarray) -> None:
    nv = dofs.shape[0]
    ns = nv
    q = np.empty(nv)
    v = np.empty(nv)
    scratch = physics_scratch(nv, ns)
    no_path = np.empty((0, 0))  # MuJoCo's terms every step (a global array would be read-only)
    mass0 = np.empty((nv, nv))
    on = np.ones(ns)
    gq = np.empty(ns)
    gv = np.empty(ns)
    bank_reset(bank, q_rec[0], v_rec[0])
    period = dt * substeps
    for k in range(goals.shape[0] - 1):
        for j in range(ns):
            q[qadr[j]] = q_rec[k, j]
            v[dofs[j]] = v_rec[k, j]
        steps = counts[k] * substeps
        ok = True
        for p in range(counts[k]):
            bank_period(bank, goals[k], gather(q, qadr, gq), gather(v, dofs, gv), on, NO_LOG,
                        period, True, False)
            if not physics_steps(model, data, qpos, qvel, qadr, dofs, bank, q, v, substeps, dt,
                                 semi_implicit, scratch, no_path, False, 0):
                ok = False
                break
            if p == 0:
                mass0[:, :] = scratch[0]  # M at (about) row k's state, with the armatures
        if not ok:
            out[k, :] = np.nan
            continue
        spread = steps * (steps + 1) / 2.0 + (0.0 if semi_implicit else steps / 2.0)
        for j in range(ns):
            gap = 0.0
            for i in range(ns):
                gap += mass0[dofs[j], dofs[i]] * (q_rec[k + 1, i] - q[qadr[i]])
            out[k, j] = gap / (spread * dt * dt)


def recorded_features(t: np.ndarray, goals: np.ndarray, q: np.ndarray, v: np.ndarray,
                      period: float, kp: np.ndarray) -> np.ndarray:
    """The network's input (:func:`frictionsim.actuator_net.net_features`) at every recorded
    row but the last, per servo: (rows − 1) × servos × N_INPUTS. The history reaches
    ``j·STRIDE`` control periods of ``period`` s back from each row (before the first row:
    the first), positions and velocities linear between rows, the goal the one last sent;
    ``kp``: each servo's firmware gain; the enable flag 1 (a recording's servos are on)."""
    rows, ns = goals.shape
    out = np.empty((rows - 1, ns, N_INPUTS))
    for h in range(HISTORY):
        when = np.maximum(t[:-1] - h * STRIDE * period, t[0])
        sent = np.clip(np.searchsorted(t, when + 1e-12, side="right") - 1, 0, rows - 1)
        for j in range(ns):
            out[:, j, h] = goals[sent, j] - np.interp(when, t, q[:, j])
            out[:, j, HISTORY + h] = np.interp(when, t, v[:, j])
    out[:, :, 2 * HISTORY] = kp
    out[:, :, 2 * HISTORY + 1] = 1.0
    return out
