"""One joint for the event-driven engine (:mod:`frictionsim.solvers.event_driven`): the
pendulum bench with its servo, and the Coulomb oscillator of docs/model.md §8.

A :class:`Joint` gives the engine two things: its slip acceleration (the sign of the motion
held for the segment) and, at rest, the torque friction must hold and the static budget
that can hold it. One joint breaks away exactly when that torque exceeds the budget. The
bench's right-hand sides are compiled, from the same torques as the fixed step
(:func:`frictionsim.plant.bench_torques`); its servo is a bank of one
(:mod:`frictionsim.servo_bank`), its period run at each control period with a zero-order
hold (:func:`simulate_log_events`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from frictionsim.layout import SERVO_EXTRA, SERVO_REPORTED
from frictionsim.plant import bench_torques
from frictionsim.servo_bank import WORK_SIZE, held_torque, learned_period
from frictionsim.servo_unit import NO_LOG, servo_state
from frictionsim.solvers.event_driven import (
    STICK,
    EventResult,
    EventSolver,
    Mechanism,
    Tolerances,
)


@njit(cache=True)
def bench_slip_acceleration(q: float, v: float, sign: float, servo: np.ndarray,
                            theta: np.ndarray, bench: np.ndarray) -> float:
    """v̇ (rad/s²) of the bench slipping in direction ``sign`` with the control the servo
    record ``servo`` holds: (τ_m + extra + τ_e − sign·τ_fm)/I."""
    t = bench_torques(q, v, held_torque(servo, theta, v), theta, bench)
    return (t.motor + t.external + servo[SERVO_EXTRA]
            - sign * (t.static + t.viscous * abs(v))) / t.inertia


@njit(cache=True)
def bench_rest_torques(q: float, servo: np.ndarray, theta: np.ndarray,
                       bench: np.ndarray) -> tuple:
    """(τ_m + extra + τ_e, τ_fm(0)) at rest (N·m): the torque friction must hold, and the
    static budget."""
    t = bench_torques(q, 0.0, held_torque(servo, theta, 0.0), theta, bench)
    return t.motor + t.external + servo[SERVO_EXTRA], t.static


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
    """The servo on its pendulum bench, its control held (zero-order hold) in its servo
    record ``servo`` (:mod:`frictionsim.servo_bank`)."""

    theta: np.ndarray
    bench: np.ndarray
    servo: np.ndarray

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        return bench_slip_acceleration(q, v, sign, self.servo, self.theta, self.bench)

    def rest_torques(self, q: float) -> tuple[float, float]:
        return bench_rest_torques(q, self.servo, self.theta, self.bench)


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
                        supply: np.ndarray | None = None,
                        net: np.ndarray | None = None) -> EventResult:
    """Event-driven rollout of a log: the firmware's zero-order hold updated every ``period``.

    A physics driver around a bank of one servo: at each update k (t_k = k·period) the
    bank's period runs on the simulated state (:func:`frictionsim.servo_bank.learned_period`:
    the report, ``latency``, ``supply`` — the logged input_volts —, a learned network ``net``
    when given, the firmware), drawing the supply current then
    (``draw_at_period``: this engine has no physics steps), and the joint is integrated
    exactly to t_{k+1} with the held control. Returns the states at the update times
    (before each update's control), the positions as the servo reports them
    (``observation_delay``).
    """
    solver = EventSolver(tolerances or Tolerances())
    n = goal.shape[0]
    q_out = np.empty(n)
    v_out = np.empty(n)
    physical = np.empty(n)
    q, v = float(q0), float(v0)
    servo = servo_state(q, v)
    joint = BenchJoint(theta, bench, servo)
    net = NO_NETWORK if net is None else np.ascontiguousarray(net, dtype=np.float64)
    work = np.zeros(WORK_SIZE)
    volts = np.full(n, NO_LOG) if supply is None else supply
    phase, armed = solver.begin(joint, 0.0, q, v)
    for k in range(n):
        learned_period(servo, theta, bench, net, work, float(goal[k]), q, v, float(enable[k]),
                       float(volts[k]), period, True)
        q_out[k] = servo[SERVO_REPORTED]
        v_out[k] = v
        physical[k] = q
        q, v, phase, armed = solver.advance(joint, k * period, (k + 1) * period, q, v, phase, armed)
    t = np.arange(n) * period
    return EventResult(t, q_out, v_out, solver.events, solver, solver.nfev, len(solver.segments),
                       physical)


#: The network row of a servo without one.
NO_NETWORK = np.zeros(1)
