"""Backlash on a robot in the event-driven engine (docs/model.md §14): the exact reference the
robot's fixed step (:mod:`frictionsim.solvers.robot_gear`) is held to.

While a servo's gear is engaged its joint is the robot's (armature, motor torque, friction:
:class:`frictionsim.solvers.robot.RobotMechanism`); while its gap is open the joint is the bare
load and the motor side is one more joint of the mechanism, its own inertia J_m, torque and
budget τ_fm(w, τ_m, 0). :class:`GearedRobotMechanism` is the robot with a given set of open
gaps; its guards are the events that change that set:

- an open gap reaching ±g/2 (an impact: inelastic, the generalised momentum kept,
  v⁺ = v + M⁻¹·J_m·(w − v_d)·e_d with M the engaged robot's);
- an engaged gear whose load it would pull (c·τ_c < 0) and whose two sides, let go, part
  (c·δ̈ < 0, δ̈ from the robot solved with that gear open): a separation.

:func:`geared_event_run` integrates the mechanism of the moment exactly
(:class:`~frictionsim.solvers.event_driven.EventSolver`) from switch to switch.
"""

from __future__ import annotations

import numpy as np

from frictionsim.gear_gap import motor_side_budget, rest_on_gear
from frictionsim.layout import ARMATURE, BACKLASH, SERVO_REPORTED
from frictionsim.servo_bank import bank_held_torques, bank_period, bank_reset
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.event_driven import (
    Event,
    EventKind,
    EventSolver,
    Mechanism,
    solve_with_mask,
)
from frictionsim.solvers.mujoco_dynamics import mujoco
from frictionsim.solvers.robot_terms import robot_forces

#: How far past ±g/2 (rad) an open gap's guards fire: above the rounding of p − q.
GAP_SLACK = 1e-12


class GearedRobotMechanism(Mechanism):
    """The robot with the gears of ``contact`` (per servo: ±1 engaged at that end, 0 open):
    the nv dofs, then one motor side per open gear in servo order."""

    def __init__(self, robot, bank, data, contact: np.ndarray) -> None:
        self.robot, self.bank, self.data = robot, bank, data
        self.contact = np.asarray(contact, dtype=float).copy()
        self.open = [j for j in range(len(robot.servos)) if self.contact[j] == 0.0]
        self.nv = robot.nv
        self.n = self.nv + len(self.open)
        ns = len(robot.servos)
        self._motor, self._extra = np.empty(ns), np.empty(ns)
        self._engaged = self.contact != 0.0
        self.half = 0.5 * robot.thetas[:, BACKLASH]

    def _terms(self, q, v, engaged: np.ndarray) -> tuple:
        """(M, τ, b) of the outputs with the gears ``engaged``, and the servos' held torques."""
        r, nv = self.robot, self.nv
        q_out = np.ascontiguousarray(q[:nv], dtype=float)
        v_out = np.ascontiguousarray(v[:nv], dtype=float)
        speeds = v_out[r.dofs].copy()
        for k, j in enumerate(self.open):
            speeds[j] = v[nv + k]
        bank_held_torques(self.bank, speeds, self._motor, self._extra)
        mass, tau, budget, bias = np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(nv)
        robot_forces(r.dynamics._address, self.data._address, self.data.qpos, self.data.qvel,
                     r.qadr, r.dofs, r.thetas, self._motor, self._extra, q_out, v_out, mass, tau,
                     budget, bias, engaged)
        return mass, tau, budget

    def _extend(self, mass, tau, budget, sides: list[tuple[int, float]]) -> tuple:
        """(M, τ, b) with one motor side per (servo, velocity w) of ``sides`` appended."""
        nv, n = self.nv, self.nv + len(sides)
        M, T, B = np.zeros((n, n)), np.zeros(n), np.zeros(n)
        M[:nv, :nv], T[:nv], B[:nv] = mass, tau, budget
        for k, (j, w) in enumerate(sides):
            theta = self.robot.thetas[j]
            M[nv + k, nv + k] = theta[ARMATURE]
            T[nv + k] = self._motor[j] + self._extra[j]
            B[nv + k] = motor_side_budget(w, self._motor[j], theta)
        return M, T, B

    def forces(self, q, v):
        mass, tau, budget = self._terms(q, v, self._engaged)
        return self._extend(mass, tau, budget,
                            [(j, float(v[self.nv + k])) for k, j in enumerate(self.open)])

    def guards(self) -> tuple:
        out = []
        nv, dofs = self.nv, self.robot.dofs
        for k, j in enumerate(self.open):
            d, half = dofs[j], self.half[j]
            out.append(lambda q, v, s, st, k=k, d=d, h=half: (q[nv + k] - q[d]) - h - GAP_SLACK)
            out.append(lambda q, v, s, st, k=k, d=d, h=half: -(q[nv + k] - q[d]) - h - GAP_SLACK)
        for j in range(len(self.robot.servos)):
            if self.contact[j] != 0.0 and self.half[j] > 0.0:
                out.append(lambda q, v, s, st, j=j: self._opening(j, q, v, s, st))
        return tuple(out)

    def guard_meaning(self, index: int) -> tuple[str, int, float]:
        """What guard ``index`` of :meth:`guards` is: ("impact", servo, end) or
        ("separation", servo, 0)."""
        if index < 2 * len(self.open):
            return "impact", self.open[index // 2], 1.0 if index % 2 == 0 else -1.0
        engaged = [j for j in range(len(self.robot.servos))
                   if self.contact[j] != 0.0 and self.half[j] > 0.0]
        return "separation", engaged[index - 2 * len(self.open)], 0.0

    def _opening(self, j: int, q, v, signs, stuck) -> float:
        """min(−c·τ_c, −c·δ̈) of engaged servo j: > 0 where its mesh opens."""
        nv, d, c = self.nv, self.robot.dofs[j], self.contact[j]
        M, T, B = self.forces(q, v)
        a, f = solve_with_mask(M, T, -signs * B, stuck)
        j_motor = self.robot.thetas[j, ARMATURE]
        passed = self._motor[j] + self._extra[j] + f[d] - j_motor * a[d]
        # the same state with gear j let go: its motor side at w = v_d, its load bare
        engaged = self._engaged.copy()
        engaged[j] = False
        mass, tau, budget = self._terms(q, v, engaged)
        sides = [(i, float(v[nv + k])) for k, i in enumerate(self.open)] + [(j, float(v[d]))]
        M2, T2, B2 = self._extend(mass, tau, budget, sides)
        signs2 = np.concatenate([signs, [np.sign(v[d])]])
        stuck2 = np.concatenate([stuck, [v[d] == 0.0 and abs(T2[-1]) <= B2[-1]]])
        stuck2[d] = False  # the bare load has no friction to hold it
        if v[d] == 0.0 and not stuck2[-1]:
            signs2[-1] = np.sign(T2[-1])
        a2 = solve_with_mask(M2, T2, np.where(np.arange(M2.shape[0]) == d, 0.0, -signs2 * B2),
                             stuck2)[0]
        return min(-c * passed, -c * (a2[-1] - a2[d]))


def settle_contacts(robot, data, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Each servo's gear at the start: resting on the end of its gap that −bias leans it on
    (1 for a servo without backlash: always engaged)."""
    nv = robot.nv
    mass, tau, budget, bias = np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(nv)
    ns = len(robot.servos)
    robot_forces(robot.dynamics._address, data._address, data.qpos, data.qvel, robot.qadr,
                 robot.dofs,
                 robot.thetas, np.zeros(ns), np.zeros(ns), np.ascontiguousarray(q, float),
                 np.ascontiguousarray(v, float), mass, tau, budget, bias, np.ones(ns, bool))
    return np.array([rest_on_gear(-bias[d]) if robot.thetas[j, BACKLASH] > 0.0 else 1.0
                     for j, d in enumerate(robot.dofs)])


def geared_event_run(robot, goals: np.ndarray, enable: np.ndarray, q: np.ndarray,
                     v: np.ndarray, solver: EventSolver, out_q: np.ndarray, out_v: np.ndarray,
                     physical: np.ndarray) -> None:
    """The robot's event-driven run with backlash (module docstring), into out_q (reported),
    out_v and physical, one row per control period; events in ``solver.events``."""
    bank = robot.bank()
    data = mujoco.MjData(robot.dynamics)
    nv, dofs = robot.nv, robot.dofs
    bank_reset(bank, q[robot.qadr], v[dofs])
    contact = settle_contacts(robot, data, q, v)
    half = 0.5 * robot.thetas[:, BACKLASH]
    p = {j: q[dofs[j]] for j in range(len(robot.servos)) if contact[j] == 0.0}
    w = {j: v[dofs[j]] for j in p}
    phase = armed = None
    for k in range(goals.shape[0]):
        out_q[k], out_v[k], physical[k] = q, v, q
        bank_period(bank, goals[k], q[robot.qadr], v[dofs], enable[k], NO_LOG, robot.period,
                    True, True)
        out_q[k, dofs] = bank.records[:, SERVO_REPORTED]
        t, t1 = k * robot.period, (k + 1) * robot.period
        for _switch in range(solver.tolerances.max_events + 1):
            mech = GearedRobotMechanism(robot, bank, data, contact)
            y_q = np.concatenate([q, [p[j] for j in mech.open]])
            y_v = np.concatenate([v, [w[j] for j in mech.open]])
            if phase is None:
                phase, armed = np.sign(y_v).astype(int), y_v != 0.0
            y_q, y_v, phase, armed = solver.advance(mech, t, t1, y_q, y_v, phase, armed)
            q, v = y_q[:nv].copy(), y_v[:nv].copy()
            for i, j in enumerate(mech.open):
                p[j], w[j] = float(y_q[nv + i]), float(y_v[nv + i])
            if solver.guard is None:
                break
            t = solver.time
            kind, j, end = mech.guard_meaning(solver.guard)
            d = dofs[j]
            if kind == "separation":
                p[j], w[j] = q[d] + contact[j] * half[j], v[d]
                contact[j] = 0.0
                solver.events.append(Event(t, EventKind.SEPARATION, float(q[d]), float(v[d]),
                                           int(np.sign(v[d])), int(d)))
            else:
                contact[j] = end
                engaged = GearedRobotMechanism(robot, bank, data, contact)
                mass = engaged.forces(np.concatenate([q, [p[i] for i in engaged.open]]),
                                      np.concatenate([v, [w[i] for i in engaged.open]]))[0]
                impulse = np.zeros(mass.shape[0])
                impulse[d] = robot.thetas[j, ARMATURE] * (w[j] - v[d])
                v = v + np.linalg.solve(mass, impulse)[:nv]
                del p[j], w[j]
                solver.events.append(Event(t, EventKind.IMPACT, float(q[d]), float(v[d]),
                                           int(np.sign(v[d])), int(d)))
            phase = None  # a new mechanism: phases from the velocities
        else:
            raise SimulationError(f"event-driven solver: more than {solver.tolerances.max_events} "
                                  f"impacts and separations in control period {k} (chattering "
                                  "in a gear's gap); gave up")
