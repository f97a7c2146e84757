"""Several joints coupled by an inertia matrix, with stick–slip friction (SPEC §8).

Equation of motion, n joints::

    (M(q) + diag(armature))·a = τ_m + τ_b(q, v) + f,    |f_j| ≤ τ_fm,j

τ_b: the bias torques (gravity, Coriolis) of the mechanism; τ_m,j and
τ_fm,j = F_j + K_v,j·|v_j| from each joint's servo (``theta`` vector), with the
joint's bias torque as the external torque its gearbox sees.

Stick friction (:func:`stick_friction_solve`): the joints that stick have
a_j = 0 and an unknown friction f_j; the others have f_j = −s_j·τ_fm,j and an
unknown acceleration. With S the sticking set and R the rest, one linear
system gives both::

    Σ_{k∈R} M_{:,k}·a_k − Σ_{j∈S} e_j·f_j = τ + Σ_{k∈R} e_k·f_k

A sticking joint whose required |f_j| exceeds its budget is moved to slip with
f_j at the budget, opposing its tendency (f_j keeps the sign of the friction it
required), and the system is solved again until consistent. The joint moved
first is the one with the largest |f_j|/τ_fm,j: the most overloaded contact
fails first, and freeing it changes what the others must hold. This iteration
is SPEC §8's scheme, not a full linear-complementarity solve: with strong
coupling a freed joint can come out accelerating along its friction instead of
against it (seen on random 3–5-joint inertia matrices, not on the two-joint
arm); such a state is returned as is.

:class:`CoupledJoints` integrates the system event by event as
:mod:`solvers.event_driven` does one joint: phases fixed per segment, terminal
events at zero velocity (armed past the margin Δ), at the margin, and when a
sticking joint's required friction reaches its budget; the firmware control is
a zero-order hold updated every control period.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from frictionsim.actuator_laws import firmware_control, motor_torque
from frictionsim.friction import friction_budget
from frictionsim.layout import ARMATURE
from solvers.errors import SimulationError
from solvers.event_driven import STICK, BoundedRhs, EventKind, Tolerances


def solve_with_mask(M: np.ndarray, tau: np.ndarray, f_known: np.ndarray,
                    stuck: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accelerations and frictions with the sticking set fixed: (a, f); a_j = 0 on ``stuck``."""
    A = M.copy()
    A[:, stuck] = 0.0
    idx = np.nonzero(stuck)[0]
    A[idx, idx] = -1.0
    b = tau + np.where(stuck, 0.0, f_known)
    x = np.linalg.solve(A, b)
    a = np.where(stuck, 0.0, x)
    f = np.where(stuck, x, f_known)
    return a, f


def stick_friction_solve(M: np.ndarray, tau: np.ndarray, v: np.ndarray, budget: np.ndarray,
                         at_rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Accelerations a (rad/s²), frictions f (N·m) and the stick mask of SPEC §8.

    M: (n, n) inertia; tau: every torque but friction; v: velocities (moving
    joints slip against their motion); budget: τ_fm per joint; at_rest: joints
    at zero velocity, candidates for stick.
    """
    M = np.asarray(M, dtype=float)
    tau = np.asarray(tau, dtype=float)
    budget = np.asarray(budget, dtype=float)
    stuck = np.asarray(at_rest, dtype=bool).copy()
    f_known = -np.sign(v) * budget
    while True:
        a, f = solve_with_mask(M, tau, f_known, stuck)
        ratio = np.where(stuck, np.abs(f) / np.maximum(budget, 1e-300), 0.0)
        worst = int(np.argmax(ratio))
        if not stuck.any() or ratio[worst] <= 1.0:
            return a, f, stuck
        stuck[worst] = False
        f_known[worst] = np.sign(f[worst]) * budget[worst]


@dataclass(frozen=True)
class CoupledEvent:
    t: float
    joint: int
    kind: EventKind
    phase: int


@dataclass
class CoupledJoints:
    """n servo-driven joints of a mechanism with inertia ``inertia(q)`` and bias ``bias(q, v)``.

    ``thetas[j]``: joint j's servo vector (:mod:`frictionsim.layout`; its
    ``q_offset`` is a bench encoder offset and is not used here); ``benches[j]``:
    its firmware settings (KP, VIN, DAMPING, DT; the pendulum entries are unused).
    """

    inertia: Callable[[np.ndarray], np.ndarray]
    bias: Callable[[np.ndarray, np.ndarray], np.ndarray]
    thetas: list[np.ndarray]
    benches: list[np.ndarray]
    tolerances: Tolerances = field(default_factory=Tolerances)
    events: list[CoupledEvent] = field(default_factory=list)
    nfev: int = 0

    @property
    def n(self) -> int:
        return len(self.thetas)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) + diag(armature): the mechanism plus the rotors reflected through the gears."""
        return self.inertia(q) + np.diag([th[ARMATURE] for th in self.thetas])

    def torques(self, q, v, u, enable) -> tuple[np.ndarray, np.ndarray]:
        """(τ_m + τ_b, τ_fm) per joint (N·m)."""
        tau_b = self.bias(q, v)
        tau = np.empty(self.n)
        budget = np.empty(self.n)
        for j, theta in enumerate(self.thetas):
            tau_m = motor_torque(u[j], enable[j], v[j], theta)
            static, viscous = friction_budget(v[j], tau_m, tau_b[j], theta)
            tau[j] = tau_m + tau_b[j]
            budget[j] = static + viscous * abs(v[j])
        return tau, budget

    def accelerations(self, q, v, u, enable, at_rest=None):
        """(a, f, stick mask) at a state; ``at_rest`` defaults to v == 0."""
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

    def _phases(self, t, q, v, u, enable, phase) -> np.ndarray:
        """New phases at rest: stick where the solve keeps the joint, else slip its way."""
        rest = phase == STICK
        a, f, stuck = self.accelerations(q, np.where(rest, 0.0, v), u, enable, rest)
        new = phase.copy()
        for j in np.nonzero(rest)[0]:
            new[j] = STICK if stuck[j] else (1 if a[j] > 0 else -1)
            if new[j] != phase[j]:
                self.events.append(CoupledEvent(t, j, EventKind.BREAK_AWAY, int(new[j])))
        return new

    def _segment(self, t0, t1, q, v, u, enable, phase, armed):
        n, tol = self.n, self.tolerances
        stuck = phase == STICK
        sign = phase.astype(float)

        def solve(y):
            qq, vv = y[:n], y[n:]
            tau, budget = self.torques(qq, vv, u, enable)
            return solve_with_mask(self.mass_matrix(qq), tau, -sign * budget, stuck), budget

        def rhs(t, y):
            (a, _), _ = solve(y)
            return np.concatenate([np.where(stuck, 0.0, y[n:]), a])

        events, meaning = [], []
        for j in range(n):
            if stuck[j]:
                def slips(t, y, j=j):
                    (_, f), budget = solve(y)
                    return abs(f[j]) - budget[j]
                slips.terminal, slips.direction = True, 1
                events.append(slips)
                meaning.append((j, EventKind.BREAK_AWAY))
                continue

            def zero(t, y, j=j):
                return sign[j] * y[n + j]
            zero.terminal, zero.direction = True, -1
            events.append(zero)
            meaning.append((j, EventKind.ZERO_VELOCITY))
            if not armed[j]:
                def margin(t, y, j=j):
                    return sign[j] * y[n + j] - tol.delta
                margin.terminal, margin.direction = True, 1
                events.append(margin)
                meaning.append((j, EventKind.MARGIN))
        bounded = BoundedRhs(rhs, tol.max_nfev, f"a segment of {n} joints from t = {t0:.9g} s")
        sol = solve_ivp(bounded, (t0, t1), np.concatenate([q, v]), method=tol.method, rtol=tol.rtol,
                        atol=tol.atol, events=events)
        self.nfev += sol.nfev
        y = sol.y[:, -1].copy()
        if sol.status != 1:
            return t1, y[:n], y[n:], None
        k = next(i for i, te in enumerate(sol.t_events) if len(te))
        return float(sol.t_events[k][0]), sol.y_events[k][0][:n], sol.y_events[k][0][n:], meaning[k]

    def simulate(self, q0, v0, goals: np.ndarray, enable: np.ndarray, period: float):
        """Event-driven rollout with the firmware's zero-order hold; states at the update times.

        goals, enable: (n_steps, n). Returns (t, q, v) with q, v of shape (n_steps, n).
        """
        steps = goals.shape[0]
        q, v = np.array(q0, dtype=float), np.array(v0, dtype=float)
        phase = np.where(v > 0, 1, np.where(v < 0, -1, STICK))
        armed = v != 0
        q_smooth = q.copy()
        q_out, v_out = np.empty((steps, self.n)), np.empty((steps, self.n))
        for k in range(steps):
            q_out[k], v_out[k] = q, v
            u, q_smooth = self.control(goals[k], q, v, q_smooth)
            t, t1 = k * period, (k + 1) * period
            phase = self._phases(t, q, v, u, enable[k], phase)
            armed &= phase != STICK
            events_before = len(self.events)
            while t < t1:
                if len(self.events) - events_before > self.tolerances.max_events:
                    raise SimulationError(
                        f"event-driven solver: more than {self.tolerances.max_events} switches "
                        f"in the control period from t = {k * period:.9g} s (chattering); gave up")
                t, q, v, what = self._segment(t, t1, q, v, u, enable[k], phase, armed)
                if what is None:
                    break
                j, kind = what
                if kind is EventKind.MARGIN:
                    armed[j] = True
                    continue
                if kind is EventKind.ZERO_VELOCITY:
                    v[j] = 0.0
                    phase[j] = STICK
                    self.events.append(CoupledEvent(t, j, EventKind.ZERO_VELOCITY, STICK))
                else:
                    # Located where |f_j| reaches the budget: the joint leaves stick in the
                    # direction of its tendency, opposite to the friction it required.
                    tau, budget = self.torques(q, v, u, enable[k])
                    _, f = solve_with_mask(self.mass_matrix(q), tau, -phase * budget,
                                           phase == STICK)
                    phase[j] = -1 if f[j] > 0 else 1
                    armed[j] = False
                    self.events.append(CoupledEvent(t, j, EventKind.BREAK_AWAY, int(phase[j])))
                phase = self._phases(t, q, v, u, enable[k], phase)
                armed &= phase != STICK
                v = np.where(phase == STICK, 0.0, v)
        return np.arange(steps) * period, q_out, v_out
