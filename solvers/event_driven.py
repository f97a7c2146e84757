"""Event-driven (variable-step) simulation of one joint with exact stick–slip (SPEC §8).

In continuous time ``I·v̇ = τ + τ_f`` (τ: every torque but friction) with the
friction torque set-valued at rest:

- slip (v ≠ 0):  τ_f = −s·τ_fm(v),  s = sign of the motion;
- stick (v = 0, |τ| ≤ τ_fm(0)):  τ_f = −τ, so v̇ = 0;
- break-away (v = 0, |τ| > τ_fm(0)): slip starts in the direction of τ.

Each phase is a smooth ODE integrated by ``scipy.integrate.solve_ivp``; the
switches are located as terminal events:

- zero velocity during slip (``s·v`` falling through 0) → stick or reversal;
- the velocity margin ``s·v = Δ`` after a break-away or reversal, which arms
  the zero-velocity event (the segment starts at v = 0, which must not be
  detected again); until then only a fall back through zero is watched;
- break-away during stick, ``|τ| − τ_fm(0)`` rising through 0.

The sign variable ``s`` is fixed per segment, so the integrator may step
across v = 0 before the event is located, and rejected trial steps cannot flip
a phase: the right-hand sides are pure functions of (t, y) and the segment's
constants.

The work is bounded: a segment whose right-hand side turns non-finite, or that
needs more than ``Tolerances.max_nfev`` evaluations (a step size collapsing on
a singular right-hand side), and a control period with more than
``Tolerances.max_events`` switches (Zeno chattering) raise
:class:`~solvers.errors.SimulationError` saying which bound was hit and where,
instead of running for ever. A joint is described by a :class:`Joint`: its slip acceleration and
the torque and static budget at rest; the pendulum bench
(:class:`BenchJoint`, torques from :mod:`frictionsim.plant`) and the Coulomb
oscillator of SPEC §8 (:class:`CoulombOscillator`) are two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numba import njit
from scipy.integrate import solve_ivp

from frictionsim.actuator_laws import firmware_control
from frictionsim.plant import bench_torques
from solvers import METHODS
from solvers.errors import SimulationError

STICK = 0
SLIP_POSITIVE = 1
SLIP_NEGATIVE = -1


class EventKind(StrEnum):
    """What a located switch is (a ``str``, so it compares and serialises as its value)."""

    START = "start"  # the run begins
    BREAK_AWAY = "break_away"  # stick → slip: the torque exceeded the static budget
    STICK = "stick"  # slip → stick: zero velocity with the torque inside the budget
    REVERSAL = "reversal"  # zero velocity, and slip resumes the other way
    TOUCH = "touch"  # zero velocity, and slip resumes the same way
    MARGIN = "margin"  # |v| = Δ after a break-away: zero-velocity detection re-armed
    ZERO_VELOCITY = "zero_velocity"  # a joint of several reached v = 0 (n-joint solver)


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


class Joint:
    """One joint with set-valued friction at rest: the interface the solver integrates."""

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        raise NotImplementedError

    def rest_torques(self, q: float) -> tuple[float, float]:
        """(torque to hold, static friction budget) at rest at q."""
        raise NotImplementedError


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
    """ẍ + k·x = F_f with |F_f| ≤ friction (unit mass): the benchmark of SPEC §8."""

    stiffness: float = 1.0
    friction: float = 1.0

    def slip_acceleration(self, q: float, v: float, sign: float) -> float:
        return -self.stiffness * q - sign * self.friction

    def rest_torques(self, q: float) -> tuple[float, float]:
        return -self.stiffness * q, self.friction


@dataclass(frozen=True)
class Event:
    """A located switch: time (s), kind, state after it and the phase entered."""

    t: float
    kind: EventKind
    q: float
    v: float
    phase: int


@dataclass
class Segment:
    """A piece of the dense solution on [t0, t1]: an OdeSolution, or a constant state (stick)."""

    t0: float
    t1: float
    solution: object | None
    state: tuple[float, float]

    def __call__(self, t: np.ndarray) -> np.ndarray:
        if self.solution is None:
            return np.tile(np.array(self.state)[:, None], (1, np.size(t)))
        return self.solution(t)


@dataclass
class Tolerances:
    """Integrator settings; Δ (rad/s) must stay well above the absolute tolerance.

    ``max_nfev``: right-hand-side evaluations allowed in one segment;
    ``max_events``: switches allowed in one call of ``advance`` (one control period).
    """

    method: str = "DOP853"
    rtol: float = 1e-10
    atol: float = 1e-12
    delta: float | None = None
    max_nfev: int = 200_000
    max_events: int = 10_000

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: expected one of {', '.join(METHODS)}")
        if not (0 < self.rtol < 1 and 0 < self.atol < 1):
            raise ValueError(f"tolerances must be positive and below 1 (rtol={self.rtol}, "
                             f"atol={self.atol})")
        if self.max_nfev < 1 or self.max_events < 1:
            raise ValueError(f"max_nfev ({self.max_nfev}) and max_events ({self.max_events}) "
                             "must be at least 1")
        if self.delta is None:
            self.delta = max(1e4 * self.atol, 1e-8)
        if self.delta <= 10 * self.atol:
            raise ValueError(
                f"velocity margin delta={self.delta:g} must exceed 10·atol = {10 * self.atol:g}: "
                "below it, the zero-velocity event could re-detect the rest it starts from"
            )


class BoundedRhs:
    """A right-hand side that refuses to run on: non-finite derivatives, or more than
    ``limit`` evaluations, raise :class:`~solvers.errors.SimulationError`."""

    def __init__(self, rhs, limit: int, what: str):
        self.rhs = rhs
        self.limit = limit
        self.what = what
        self.n = 0

    def __call__(self, t, y):
        self.n += 1
        if self.n > self.limit:
            raise SimulationError(
                f"event-driven solver: {self.what} needed more than {self.limit} right-hand-side "
                f"evaluations by t = {t:.9g} s (the step size collapsed); gave up"
            )
        out = self.rhs(t, y)
        if not np.all(np.isfinite(out)):
            raise SimulationError(
                f"event-driven solver: {self.what} has a non-finite derivative at t = {t:.9g} s "
                f"(state {np.asarray(y).tolist()}); the dynamics overflowed"
            )
        return out


@dataclass
class EventSolver:
    """Integrates a :class:`Joint` through stick, slip and their switches."""

    tolerances: Tolerances = field(default_factory=Tolerances)
    events: list[Event] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    nfev: int = 0

    def begin(self, joint: Joint, t: float, q: float, v: float) -> tuple[int, bool]:
        """Phase and arming at the start of a run, recorded as a ``start`` event.

        At rest the run starts in stick and the first :meth:`advance` decides
        the break-away; moving, it slips with the zero-velocity event armed.
        """
        phase = STICK if v == 0.0 else (SLIP_POSITIVE if v > 0 else SLIP_NEGATIVE)
        self.events.append(Event(t, EventKind.START, q, v, phase))
        return phase, v != 0.0

    def start_phase(self, joint: Joint, q: float, v: float) -> int:
        """The phase of a state: slip by the sign of v; at rest, stick unless it breaks away."""
        if v != 0.0:
            return SLIP_POSITIVE if v > 0 else SLIP_NEGATIVE
        torque, budget = joint.rest_torques(q)
        return STICK if abs(torque) <= budget else (SLIP_POSITIVE if torque > 0 else SLIP_NEGATIVE)

    def advance(self, joint: Joint, t0: float, t1: float, q: float, v: float, phase: int,
                armed: bool) -> tuple[float, float, int, bool]:
        """Integrate from t0 to t1 with the joint's inputs held; returns (q, v, phase, armed)."""
        t = t0
        tol = self.tolerances
        events_before = len(self.events)
        if not (math.isfinite(q) and math.isfinite(v)):
            raise SimulationError(f"event-driven solver: non-finite state q = {q}, v = {v} at "
                                  f"t = {t0:.9g} s")
        while t < t1:
            if len(self.events) - events_before > tol.max_events:
                raise SimulationError(
                    f"event-driven solver: more than {tol.max_events} stick/slip switches between "
                    f"t = {t0:.9g} s and {t1:.9g} s (chattering); gave up at t = {t:.9g} s"
                )
            if phase == STICK:
                torque, budget = joint.rest_torques(q)
                if abs(torque) > budget:
                    phase = SLIP_POSITIVE if torque > 0 else SLIP_NEGATIVE
                    armed = False
                    self.events.append(Event(t, EventKind.BREAK_AWAY, q, 0.0, phase))
                    continue
                t_end = self._stick(joint, t, t1, q)
                if t_end is None:
                    self.segments.append(Segment(t, t1, None, (q, 0.0)))
                    return q, 0.0, STICK, armed
                self.segments.append(Segment(t, t_end, None, (q, 0.0)))
                t = t_end
                continue
            sign = float(phase)
            q, v, t, phase, armed = self._slip(joint, t, t1, q, v, sign, armed, tol)
        return q, v, phase, armed

    def _stick(self, joint: Joint, t0: float, t1: float, q: float) -> float | None:
        """Stick at q from t0: the time the break-away event fires before t1, else None.

        With the joint's inputs held and q frozen, the break-away function is
        constant over the segment; it is still integrated as an event so that a
        joint with time-varying inputs is handled the same way.
        """

        def break_away(t, y):
            torque, budget = joint.rest_torques(y[0])
            return abs(torque) - budget

        break_away.terminal = True
        break_away.direction = 1
        if break_away(t0, (q, 0.0)) < 0 and break_away(t1, (q, 0.0)) < 0:
            return None
        rest = BoundedRhs(lambda t, y: (0.0, 0.0), self.tolerances.max_nfev, "a stick segment")
        sol = solve_ivp(rest, (t0, t1), (q, 0.0), method=self.tolerances.method,
                        rtol=self.tolerances.rtol, atol=self.tolerances.atol, events=break_away)
        self.nfev += sol.nfev
        return float(sol.t_events[0][0]) if sol.status == 1 else None

    def _slip(self, joint: Joint, t0: float, t1: float, q: float, v: float, sign: float,
              armed: bool, tol: Tolerances):
        def slip(t, y):
            return (y[1], joint.slip_acceleration(y[0], y[1], sign))

        rhs = BoundedRhs(slip, tol.max_nfev, f"a slip segment from t = {t0:.9g} s")

        def zero_velocity(t, y):
            return sign * y[1]

        zero_velocity.terminal = True
        zero_velocity.direction = -1

        def margin(t, y):
            return sign * y[1] - tol.delta

        margin.terminal = True
        margin.direction = 1
        events = [zero_velocity] if armed else [zero_velocity, margin]
        # solve_ivp's step-size heuristics may overflow on huge (finite) derivatives; the
        # right-hand side itself refuses non-finite values, so its warnings are noise.
        with np.errstate(over="ignore", invalid="ignore"):
            sol = solve_ivp(rhs, (t0, t1), (q, v), method=tol.method, rtol=tol.rtol,
                            atol=tol.atol, events=events, dense_output=True)
        self.nfev += sol.nfev
        if sol.status != 1:
            self.segments.append(Segment(t0, t1, sol.sol, (sol.y[0, -1], sol.y[1, -1])))
            return float(sol.y[0, -1]), float(sol.y[1, -1]), t1, int(sign), armed
        if len(sol.t_events[0]):
            t_e = float(sol.t_events[0][0])
            q_e = float(sol.y_events[0][0][0])
            self.segments.append(Segment(t0, t_e, sol.sol, (q_e, 0.0)))
            phase = self.start_phase(joint, q_e, 0.0)
            kind = (EventKind.STICK if phase == STICK else
                    EventKind.REVERSAL if phase != sign else EventKind.TOUCH)
            self.events.append(Event(t_e, kind, q_e, 0.0, phase))
            return q_e, 0.0, t_e, phase, False
        t_e = float(sol.t_events[1][0])
        q_e, v_e = (float(x) for x in sol.y_events[1][0])
        self.segments.append(Segment(t0, t_e, sol.sol, (q_e, v_e)))
        self.events.append(Event(t_e, EventKind.MARGIN, q_e, v_e, int(sign)))
        return q_e, v_e, t_e, int(sign), True

    def dense(self, t: np.ndarray) -> np.ndarray:
        """The state (2, len(t)) at any times covered by the segments."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        out = np.empty((2, t.size))
        starts = np.array([s.t0 for s in self.segments])
        idx = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(self.segments) - 1)
        for i in np.unique(idx):
            mask = idx == i
            out[:, mask] = self.segments[i](t[mask])
        return out


@dataclass
class EventResult:
    """An event-driven rollout: states at the sample times, events, dense solution, costs."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    events: list[Event]
    solver: EventSolver
    nfev: int
    n_segments: int

    def dense(self, t: np.ndarray) -> np.ndarray:
        """The continuous solution (q, v) at any times of the run: shape (2, len(t))."""
        return self.solver.dense(t)

    def stick_intervals(self) -> list[tuple[float, float]]:
        """(entry, exit) times of every stick phase (exit = end of run if it never left)."""
        intervals, entry = [], None
        for e in self.events:
            if e.phase == STICK and entry is None:
                entry = e.t
            elif e.phase != STICK and entry is not None:
                intervals.append((entry, e.t))
                entry = None
        if entry is not None:
            intervals.append((entry, float(self.t[-1])))
        return intervals


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
                        tolerances: Tolerances | None = None) -> EventResult:
    """Event-driven rollout of a log: the firmware's zero-order hold updated every ``period``.

    At each update k (t_k = k·period) the control is computed from the simulated
    state, as in SPEC §5, and the joint is integrated exactly to t_{k+1}.
    Returns the states at the update times (before each update's control).
    """
    solver = EventSolver(tolerances or Tolerances())
    n = goal.shape[0]
    q_out = np.empty(n)
    v_out = np.empty(n)
    joint = BenchJoint(theta, bench)
    q, v, q_smooth = float(q0), float(v0), float(q0)
    phase, armed = solver.begin(joint, 0.0, q, v)
    for k in range(n):
        q_out[k] = q
        v_out[k] = v
        joint.u, q_smooth = firmware_control(goal[k], q, v, q_smooth, theta, bench)
        joint.enable = float(enable[k])
        q, v, phase, armed = solver.advance(joint, k * period, (k + 1) * period, q, v, phase, armed)
    t = np.arange(n) * period
    return EventResult(t, q_out, v_out, solver.events, solver, solver.nfev, len(solver.segments))


def stick_time_and_position(result: EventResult) -> tuple[float, float]:
    """Time and position of the last stick event (NaN if the joint never sticks)."""
    sticks = [e for e in result.events if e.kind is EventKind.STICK]
    if not sticks:
        return math.nan, math.nan
    return sticks[-1].t, sticks[-1].q
