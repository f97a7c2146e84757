"""One joint for the event-driven engine (:mod:`frictionsim.solvers.event_driven`): the
pendulum bench with its servo, and the Coulomb oscillator of docs/model.md §8.

A :class:`Joint` gives the engine two things: its slip acceleration (the sign of the motion
held for the segment) and, at rest, the torque friction must hold and the static budget
that can hold it. One joint breaks away exactly when that torque exceeds the budget. The
bench's right-hand sides are compiled, from the same torques as the fixed step
(:func:`frictionsim.plant.bench_torques`); its firmware is the servo unit, run at each
control period with a zero-order hold (:func:`simulate_log_events`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from frictionsim.plant import bench_torques
from frictionsim.servo_unit import NO_LOG, servo_control, servo_draw, servo_observe, servo_state
from frictionsim.solvers.event_driven import (
    STICK,
    EventResult,
    EventSolver,
    Mechanism,
    Tolerances,
)


@njit(cache=True)
def bench_slip_acceleration(q: float, v: float, sign: float, u: float, enable: float,
                            theta: np.ndarray, bench: np.ndarray) -> float:
    """v̇ (rad/s²) of the bench slipping in direction ``sign``: (τ_m + τ_e − sign·τ_fm)/I."""
    t = bench_torques(q, v, u, enable, theta, bench)
    return (t.motor + t.external - sign * (t.static + t.viscous * abs(v))) / t.inertia


@njit(cache=True)
def bench_rest_torques(q: float, u: float, enable: float, theta: np.ndarray,
                       bench: np.ndarray) -> tuple:
    """(τ_m + τ_e, τ_fm(0)) at rest (N·m): the torque friction must hold, and the static budget."""
    t = bench_torques(q, 0.0, u, enable, theta, bench)
    return t.motor + t.external, t.static


class Joint(Mechanism):
    """One joint: its slip acceleration, and the torque and static budget at rest."""

    n = 1

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        raise NotImplementedError

    def rest_torques(self, q: float) -> tuple[float, float]:
        """(torque to hold, static friction budget) at rest at q."""
        raise NotImplementedError

    def accelerations(self, q, v, signs, stuck) -> np.ndarray:
        if stuck[0]:
            return np.zeros(1)
        return np.array([self.slip_acceleration(q[0], v[0], signs[0])])

    def held_friction(self, q, v, signs, stuck) -> tuple[np.ndarray, np.ndarray]:
        torque, budget = self.rest_torques(q[0])
        return np.array([-torque]), np.array([budget])

    def held_excess(self, q, v, signs, stuck) -> np.ndarray:
        torque, budget = self.rest_torques(q[0])
        return np.array([abs(torque) - budget])

    def rest_accelerations(self, q, v, phase) -> tuple[np.ndarray, np.ndarray]:
        # One joint: it breaks away exactly when |τ| > F(0), in the direction of τ.
        torque, budget = self.rest_torques(q[0])
        breaking = phase[0] == STICK and abs(torque) > budget
        return np.array([torque if breaking else 0.0]), np.array([breaking])


@dataclass
class BenchJoint(Joint):
    """The servo on its pendulum bench, with control u and enable held (zero-order hold)."""

    theta: np.ndarray
    bench: np.ndarray
    u: float = 0.0
    enable: float = 1.0

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        return bench_slip_acceleration(q, v, sign, self.u, self.enable, self.theta, self.bench)

    def rest_torques(self, q: float) -> tuple[float, float]:
        return bench_rest_torques(q, self.u, self.enable, self.theta, self.bench)


@dataclass
class CoulombOscillator(Joint):
    """ẍ + k·x = F_f with |F_f| ≤ friction (unit mass): the benchmark of docs/model.md §8."""

    stiffness: float = 1.0
    friction: float = 1.0

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        return -self.stiffness * q - sign * self.friction

    def rest_torques(self, q: float) -> tuple[float, float]:
        return -self.stiffness * q, self.friction


def simulate_oscillator(x0: float, v0: float, t_end: float, tolerances: Tolerances | None = None,
                        stiffness: float = 1.0, friction: float = 1.0) -> EventResult:
    """The Coulomb oscillator ẍ + k·x = F_f, |F_f| ≤ friction, event-driven from (x0, v0)."""
    solver = EventSolver(tolerances or Tolerances())
    joint = CoulombOscillator(stiffness, friction)
    phase, armed = solver.begin(joint, 0.0, x0, v0)
    solver.advance(joint, 0.0, t_end, x0, v0, phase, armed)
    t = np.array([0.0, t_end])
    states = solver.dense(t)
    return EventResult(t, states[0], states[1], solver.events, solver, solver.nfev,
                       len(solver.segments))


def simulate_log_events(goal: np.ndarray, enable: np.ndarray, q0: float, v0: float,
                        theta: np.ndarray, bench: np.ndarray, period: float,
                        tolerances: Tolerances | None = None,
                        supply: np.ndarray | None = None) -> EventResult:
    """Event-driven rollout of a log: the firmware's zero-order hold updated every ``period``.

    At each update k (t_k = k·period) the control is computed from the simulated
    state, as in docs/model.md §5 (with docs/model.md §9's ``latency`` and ``supply`` when ``theta`` has
    them; ``supply``: the logged input_volts), and the joint is integrated exactly to
    t_{k+1}. Returns the states at the update times (before each update's control), the
    positions as the servo reports them (``observation_delay``).
    """
    solver = EventSolver(tolerances or Tolerances())
    n = goal.shape[0]
    q_out = np.empty(n)
    v_out = np.empty(n)
    joint = BenchJoint(theta, bench)
    q, v = float(q0), float(v0)
    servo = servo_state(q, v)
    volts = np.full(n, NO_LOG) if supply is None else supply
    phase, armed = solver.begin(joint, 0.0, q, v)
    for k in range(n):
        q_out[k] = servo_observe(servo, q, period, theta)
        v_out[k] = v
        joint.u = servo_control(servo, goal[k], q, v, volts[k], theta, bench)
        joint.enable = float(enable[k])
        servo_draw(servo, joint.enable, v, theta)
        q, v, phase, armed = solver.advance(joint, k * period, (k + 1) * period, q, v, phase, armed)
    t = np.arange(n) * period
    return EventResult(t, q_out, v_out, solver.events, solver, solver.nfev, len(solver.segments))
