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

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from frictionsim.gear_gap import gear_torque, impact_velocity, motor_side_budget, rest_on_gear
from frictionsim.layout import ARMATURE, BACKLASH, Q_OFFSET, SERVO_EXTRA, SERVO_REPORTED
from frictionsim.pendulum import gravity_torque, load_inertia
from frictionsim.plant import bench_torques
from frictionsim.servo_bank import WORK_SIZE, held_torque, learned_period
from frictionsim.servo_unit import NO_LOG, servo_state
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.event_driven import (
    STICK,
    Event,
    EventKind,
    EventResult,
    EventSolver,
    Mechanism,
    Segment,
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


@njit(cache=True)
def bench_gear_torque(q: float, v: float, sign: float, stuck: bool, servo: np.ndarray,
                      theta: np.ndarray, bench: np.ndarray) -> float:
    """τ_c = J_l·a − τ_e (N·m, :func:`frictionsim.gear_gap.gear_torque`) of the engaged bench,
    stuck (a = 0) or slipping in direction ``sign``."""
    accel = 0.0 if stuck else bench_slip_acceleration(q, v, sign, servo, theta, bench)
    return gear_torque(load_inertia(bench), accel, gravity_torque(q + theta[Q_OFFSET], bench))


@njit(cache=True)
def bench_gap_torques(q: float, w: float, servo: np.ndarray, theta: np.ndarray,
                      bench: np.ndarray) -> tuple:
    """The two sides of the open gap (:mod:`frictionsim.gear_gap`) with the motor side at
    velocity w: (τ_e on the load, τ_m + extra on the motor side, the motor side's budget
    τ_fm(w, τ_m, 0), J_l, J_m)."""
    tau_m = held_torque(servo, theta, w)
    return (gravity_torque(q + theta[Q_OFFSET], bench), tau_m + servo[SERVO_EXTRA],
            motor_side_budget(w, tau_m, theta), load_inertia(bench), theta[ARMATURE])


@njit(cache=True)
def bench_parting(q: float, v: float, sign: float, stuck: bool, servo: np.ndarray,
                  theta: np.ndarray, bench: np.ndarray) -> float:
    """δ̈ = ẇ − v̇ (rad/s²) of the two sides of the engaged bench if the mesh let go at this
    state (w = v): the load free, the motor side slipping in direction ``sign`` at its own
    budget, or at rest (``stuck``) held by it while it can."""
    tau_e, tau_motor, budget, j_load, j_motor = bench_gap_torques(q, v, servo, theta, bench)
    if stuck:
        motor = 0.0 if abs(tau_motor) <= budget else \
            (tau_motor - math.copysign(budget, tau_motor)) / j_motor
    else:
        motor = (tau_motor - sign * budget) / j_motor
    return motor - tau_e / j_load


@dataclass
class EngagedBench(BenchJoint):
    """The bench with the gear engaged at the end ``contact`` (±1) of the gap: one body, the
    :class:`BenchJoint`, whose guard is the mesh opening: the gear would pull the load
    (c·τ_c < 0) and the sides, let go, would part (c·δ̈ < 0), as the fixed step decides
    (:func:`frictionsim.solvers.fixed_step.geared_step`)."""

    contact: float = 1.0

    def guards(self) -> tuple:
        return (self._opening,)

    def _opening(self, q, v, signs, stuck) -> float:
        c, st = self.contact, bool(stuck[0])
        return min(-c * bench_gear_torque(q[0], v[0], signs[0], st, self.servo, self.theta,
                                          self.bench),
                   -c * bench_parting(q[0], v[0], signs[0], st, self.servo, self.theta,
                                      self.bench))


@dataclass
class OpenGapBench(Mechanism):
    """The bench with the gap open: two joints, the load (0: frictionless, its own torque τ_e)
    and the motor side (1: the servo's torque and friction), decoupled; the guards are δ = p − q
    reaching +g/2 (guard 0) and −g/2 (guard 1)."""

    theta: np.ndarray
    bench: np.ndarray
    servo: np.ndarray
    n = 2

    def _torques(self, q, v) -> tuple:
        tau_e, tau_m, budget, j_load, j_motor = bench_gap_torques(q[0], v[1], self.servo,
                                                                  self.theta, self.bench)
        return np.array([tau_e, tau_m]), np.array([0.0, budget]), np.array([j_load, j_motor])

    def forces(self, q, v):
        tau, budget, inertia = self._torques(q, v)
        return np.diag(inertia), tau, budget

    def accelerations(self, q, v, signs, stuck) -> np.ndarray:
        tau, budget, inertia = self._torques(q, v)
        return np.where(stuck, 0.0, (tau - signs * budget) / inertia)

    def held_friction(self, q, v, signs, stuck) -> tuple[np.ndarray, np.ndarray]:
        tau, budget, _ = self._torques(q, v)
        return np.where(stuck, -tau, -signs * budget), budget

    def rest_accelerations(self, q, v, phase) -> tuple[np.ndarray, np.ndarray]:
        # decoupled sides: each breaks away on its own, as one joint does
        tau, budget, _ = self._torques(q, v)
        breaking = (phase == STICK) & (np.abs(tau) > budget)
        return np.where(breaking, tau, 0.0), breaking

    def guards(self) -> tuple:
        half = 0.5 * self.theta[BACKLASH]
        # the slack keeps a gap just closed at ±g/2 (to rounding) from reading as closing again
        return (lambda q, v, s, st: (q[1] - q[0]) - half - GAP_SLACK,
                lambda q, v, s, st: -(q[1] - q[0]) - half - GAP_SLACK)


#: How far past ±g/2 (rad) the open gap's guards fire: above the rounding of p − q.
GAP_SLACK = 1e-12


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
    if theta[BACKLASH] > 0.0:
        return geared_log_events(goal, enable, q0, v0, theta, bench, period, tolerances, supply,
                                 net)
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


def _phases(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Phases and arming of joints starting at velocities v, as :meth:`EventSolver.begin`."""
    return np.sign(v).astype(int), v != 0.0


def geared_log_events(goal: np.ndarray, enable: np.ndarray, q0: float, v0: float,
                      theta: np.ndarray, bench: np.ndarray, period: float,
                      tolerances: Tolerances | None = None, supply: np.ndarray | None = None,
                      net: np.ndarray | None = None) -> EventResult:
    """:func:`simulate_log_events` with ``backlash`` (:mod:`frictionsim.gear_gap`): a hybrid of
    two mechanisms, the engaged bench (:class:`EngagedBench`, one joint) and the open gap
    (:class:`OpenGapBench`, load and motor side), each integrated exactly until its guard
    fires: the mesh opening (a ``separation`` event: the sides part at the end of the gap
    with one velocity), or the gap closing (an ``impact``: inelastic, the momentum-conserving
    velocity, then engaged; the mesh may open again at once). The load starts resting on the
    end of the gap its external torque leans it on (at the centre when that is 0). The
    result's events and dense solution are the output's (the open gap's segments give its
    load rows)."""
    tol = tolerances or Tolerances()
    engaged, apart = EventSolver(tol), EventSolver(tol)
    n = goal.shape[0]
    q_out, v_out, physical = np.empty(n), np.empty(n), np.empty(n)
    half = 0.5 * theta[BACKLASH]
    j_load, j_motor = load_inertia(bench), theta[ARMATURE]
    q, v = float(q0), float(v0)
    servo = servo_state(q, v)
    gear = EngagedBench(theta, bench, servo)
    gap = OpenGapBench(theta, bench, servo)
    net = NO_NETWORK if net is None else np.ascontiguousarray(net, dtype=np.float64)
    work = np.zeros(WORK_SIZE)
    volts = np.full(n, NO_LOG) if supply is None else supply
    contact = rest_on_gear(gravity_torque(q + theta[Q_OFFSET], bench))
    p, w = q + contact * half, v  # the motor side, used while the gap is open
    phase, armed = engaged.begin(gear, 0.0, q, v)
    phases, arming = _phases(np.array([v, w]))
    for k in range(n):
        learned_period(servo, theta, bench, net, work, float(goal[k]), q, v, float(enable[k]),
                       float(volts[k]), period, True)
        q_out[k], v_out[k], physical[k] = servo[SERVO_REPORTED], v, q
        t, t1 = k * period, (k + 1) * period
        switches = 0
        while t < t1:
            switches += 1
            if switches > tol.max_events:
                raise SimulationError(f"event-driven solver: more than {tol.max_events} impacts "
                                      f"and separations in the period from t = {k * period:.9g} s "
                                      "(chattering in the gear's gap); gave up")
            if contact != 0.0:
                gear.contact = contact
                q, v, phase, armed = engaged.advance(gear, t, t1, q, v, phase, armed)
                if engaged.guard is None:
                    break
                t = engaged.time
                p, w = q + contact * half, v
                engaged.events.append(Event(t, EventKind.SEPARATION, q, v, int(np.sign(v))))
                contact = 0.0
                phases, arming = _phases(np.array([v, w]))
                continue
            before = len(apart.segments)
            y_q, y_v, phases, arming = apart.advance(gap, t, t1, np.array([q, p]),
                                                     np.array([v, w]), phases, arming)
            for segment in apart.segments[before:]:
                engaged.segments.append(Segment(segment.t0, segment.t1, _load_rows(segment),
                                                segment.state[[0, 2]]))
            q, p, v, w = float(y_q[0]), float(y_q[1]), float(y_v[0]), float(y_v[1])
            if apart.guard is None:
                break
            t = apart.time
            contact = 1.0 if apart.guard == 0 else -1.0
            # inelastic impact about the sides' inertia-weighted mean position
            q += j_motor / (j_motor + j_load) * ((p - q) - contact * half)
            v = impact_velocity(j_motor, w, j_load, v)
            engaged.events.append(Event(t, EventKind.IMPACT, q, v, int(np.sign(v))))
            phase, armed = int(np.sign(v)), v != 0.0
    times = np.arange(n) * period
    engaged.nfev += apart.nfev
    return EventResult(times, q_out, v_out, engaged.events, engaged, engaged.nfev,
                       len(engaged.segments), physical)


def _load_rows(segment: Segment):
    """The load's (q, v) rows of an open-gap segment's dense solution (rows q, p, v, w)."""
    if segment.solution is None:
        return None
    return lambda t: segment.solution(t)[[0, 2]]
