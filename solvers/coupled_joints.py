"""Several servo-driven joints coupled by an inertia matrix, event-driven (SPEC §8, §10).

Equation of motion, n joints::

    (M(q) + diag(armature))·a = τ_m + τ_b(q, v) + f,    |f_j| ≤ τ_fm,j

τ_b: the bias torques (gravity, Coriolis) of the mechanism; τ_m,j and
τ_fm,j = F_j + K_v,j·|v_j| from each joint's servo (``theta`` vector), with the
joint's bias torque as the external torque its gearbox sees.

Which joints at rest stick is SPEC §10's problem on accelerations, solved exactly
by :func:`solvers.joint_friction.clip_friction` (:func:`stick_friction_solve`); the
integration is :class:`solvers.event_driven.EventSolver`'s, of which this is an
n-joint :class:`~solvers.event_driven.Mechanism`, with the firmware's zero-order
hold updated every control period.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from frictionsim.actuator_laws import firmware_control, motor_torque
from frictionsim.friction import friction_budget
from frictionsim.layout import ARMATURE
from solvers.event_driven import EventSolver, Mechanism, Tolerances, solve_with_mask
from solvers.joint_friction import clip_friction

__all__ = ["CoupledJoints", "solve_with_mask", "stick_friction_solve"]


def stick_friction_solve(M: np.ndarray, tau: np.ndarray, v: np.ndarray, budget: np.ndarray,
                         at_rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Accelerations a (rad/s²), frictions f (N·m) and the stick mask, exactly.

    M: (n, n) inertia; tau: every torque but friction; v: velocities (moving joints
    slip against their motion); budget: τ_fm per joint; at_rest: joints at zero
    velocity, candidates for stick. The resting joints' friction is the maximal
    dissipation within their budgets (clip_friction on accelerations); a resting joint
    whose friction lands on its budget with a non-zero acceleration is freed, and then
    accelerates against its friction.
    """
    M = np.asarray(M, dtype=float)
    tau = np.asarray(tau, dtype=float)
    budget = np.asarray(budget, dtype=float)
    rest = np.asarray(at_rest, dtype=bool)
    moving = np.where(rest, 0.0, -np.sign(v) * budget)
    f_rest = clip_friction(M, tau + moving, np.zeros(len(tau)), np.where(rest, budget, 0.0), 1.0)
    f = np.where(rest, f_rest, moving)
    a = np.linalg.solve(M, tau + f)
    scale = float(np.max(np.abs(np.linalg.solve(M, np.abs(tau) + budget)))) + 1e-300
    freed = rest & (np.abs(f) >= budget * (1.0 - 1e-12)) & (np.abs(a) > 1e-12 * scale)
    stuck = rest & ~freed
    return np.where(stuck, 0.0, a), f, stuck


@dataclass
class CoupledJoints(Mechanism):
    """n servo-driven joints of a mechanism with inertia ``inertia(q)`` and bias ``bias(q, v)``.

    ``thetas[j]``: joint j's servo vector (:mod:`frictionsim.layout`; its
    ``q_offset`` is a bench encoder offset and is not used here); ``benches[j]``:
    its firmware settings (KP, VIN, DAMPING, DT; the pendulum entries are unused).
    ``u`` and ``enable`` are the controls held over the current period.
    """

    inertia: Callable[[np.ndarray], np.ndarray]
    bias: Callable[[np.ndarray, np.ndarray], np.ndarray]
    thetas: list[np.ndarray]
    benches: list[np.ndarray]
    tolerances: Tolerances = field(default_factory=Tolerances)
    u: np.ndarray | None = None
    enable: np.ndarray | None = None
    solver: EventSolver | None = None

    def __post_init__(self) -> None:
        self.n = len(self.thetas)
        self.u = np.zeros(self.n) if self.u is None else self.u
        self.enable = np.ones(self.n) if self.enable is None else self.enable

    @property
    def events(self) -> list:
        """The switches located by the last :meth:`simulate`."""
        return self.solver.events if self.solver else []

    @property
    def nfev(self) -> int:
        return self.solver.nfev if self.solver else 0

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) + diag(armature): the mechanism plus the rotors reflected through the gears."""
        return self.inertia(q) + np.diag([th[ARMATURE] for th in self.thetas])

    def torques(self, q, v, u, enable) -> tuple[np.ndarray, np.ndarray]:
        """(τ_m + τ_b, τ_fm) per joint (N·m) with controls u and flags enable."""
        tau_b = self.bias(q, v)
        tau = np.empty(self.n)
        budget = np.empty(self.n)
        for j, theta in enumerate(self.thetas):
            tau_m = motor_torque(u[j], enable[j], v[j], theta)
            b = friction_budget(v[j], tau_m, tau_b[j], theta)
            tau[j] = tau_m + tau_b[j]
            budget[j] = b.static + b.viscous * abs(v[j])
        return tau, budget

    def forces(self, q, v):
        tau, budget = self.torques(q, v, self.u, self.enable)
        return self.mass_matrix(q), tau, budget

    def solve(self, q, v, u, enable, at_rest=None):
        """(a, f, stick mask) at a state with controls u, enable; ``at_rest`` defaults to v == 0."""
        tau, budget = self.torques(q, v, u, enable)
        rest = (np.asarray(v) == 0.0) if at_rest is None else np.asarray(at_rest)
        return stick_friction_solve(self.mass_matrix(q), tau, v, budget, rest)

    def control(self, q_target, q, v, q_smooth) -> tuple[np.ndarray, np.ndarray]:
        """Each joint's firmware control and limiter state."""
        u = np.empty(self.n)
        smooth = np.empty(self.n)
        for j, (theta, bench) in enumerate(zip(self.thetas, self.benches)):
            u[j], smooth[j] = firmware_control(q_target[j], q[j], v[j], q_smooth[j], theta, bench)
        return u, smooth

    def simulate(self, q0, v0, goals: np.ndarray, enable: np.ndarray, period: float):
        """Event-driven rollout with the firmware's zero-order hold; states at the update times.

        goals, enable: (n_steps, n). Returns (t, q, v) with q, v of shape (n_steps, n).
        """
        steps = goals.shape[0]
        self.solver = EventSolver(self.tolerances)
        q, v = np.array(q0, dtype=float), np.array(v0, dtype=float)
        phase, armed = self.solver.begin(self, 0.0, q, v)
        q_smooth = q.copy()
        q_out, v_out = np.empty((steps, self.n)), np.empty((steps, self.n))
        for k in range(steps):
            q_out[k], v_out[k] = q, v
            self.u, q_smooth = self.control(goals[k], q, v, q_smooth)
            self.enable = np.asarray(enable[k], dtype=float)
            q, v, phase, armed = self.solver.advance(self, k * period, (k + 1) * period, q, v,
                                                     phase, armed)
        return np.arange(steps) * period, q_out, v_out
