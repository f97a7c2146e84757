"""Event-driven (variable-step) simulation with exact stick–slip, for one joint or n (docs/model.md §8, §10).

In continuous time ``M·v̇ = τ + τ_f`` (τ: every torque but friction) with each
joint's friction set-valued at rest:

- slip (v_j ≠ 0):  τ_f,j = −s_j·b_j,  s_j = sign of the motion, b_j its budget;
- stick (v_j = 0): τ_f,j holds the joint (v̇_j = 0) while |τ_f,j| ≤ b_j;
- break-away: a joint at rest whose holding friction would exceed its budget slips
  in the direction of its acceleration.

Which joints at rest stick is decided exactly (a segment's start, and each zero
velocity): the friction of the resting joints is docs/model.md §10's box-constrained
problem on accelerations, :func:`frictionsim.solvers.joint_friction.clip_friction` with v = 0
and the moving joints' friction fixed; a resting joint whose friction lands on its
budget with a non-zero acceleration breaks away. Within a segment the phases are
fixed: stuck joints held (their friction solved by equality), slipping joints at
their budget. Each segment is a smooth ODE integrated by
``scipy.integrate.solve_ivp``; the switches are located as terminal events:

- zero velocity of a slipping joint (``s·v`` falling through 0) → stick, reversal
  or touch, as the exact decision says;
- the velocity margin ``s·v = Δ`` after a break-away or reversal, which arms the
  zero-velocity event (the segment starts at v = 0, which must not be detected
  again); until then only a fall back through zero is watched, as ``s·v/(t − t0)``
  (positive at the start, where ``s·v`` is 0 and a root finder would stop);
- break-away of a stuck joint, ``|τ_f,j| − b_j`` rising through 0.

The sign variables ``s`` are fixed per segment, so the integrator may step across
v = 0 before the event is located, and rejected trial steps cannot flip a phase:
the right-hand sides are pure functions of (t, y) and the segment's constants.

This module is the engine: :class:`EventSolver` integrates any :class:`Mechanism`. The
mechanisms live with what they model: one joint (the pendulum bench, the Coulomb
oscillator of docs/model.md §8) in :mod:`frictionsim.solvers.one_joint`, a robot from an
MJCF model in :mod:`frictionsim.solvers.robot` (:class:`~frictionsim.solvers.robot.RobotMechanism`).

The work is bounded: a segment whose right-hand side turns non-finite, or that
needs more than ``Tolerances.max_nfev`` evaluations (a step size collapsing on a
singular right-hand side), and a control period with more than
``Tolerances.max_events`` switches (Zeno chattering) raise
:class:`~frictionsim.solvers.errors.SimulationError` saying which bound was hit and where,
instead of running for ever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from scipy.integrate import solve_ivp

from frictionsim.errors import ConfigurationError
from frictionsim.solvers import METHODS
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.joint_friction import clip_friction

#: The finest relative tolerance ``solve_ivp``'s Runge–Kutta methods honour (100 machine
#: epsilons; below it they raise rtol to it with a warning).
RTOL_FLOOR = 100 * np.finfo(float).eps
STICK = 0
SLIP_POSITIVE = 1
SLIP_NEGATIVE = -1


class EventKind(StrEnum):
    """What a located switch is (a ``str``, so it compares and serialises as its value)."""

    START = "start"  # the run begins
    BREAK_AWAY = "break_away"  # stick → slip: the holding friction reached the budget
    STICK = "stick"  # slip → stick: zero velocity, and the budget holds the joint
    REVERSAL = "reversal"  # zero velocity, and slip resumes the other way
    TOUCH = "touch"  # zero velocity, and slip resumes the same way
    MARGIN = "margin"  # |v| = Δ after a break-away: zero-velocity detection re-armed
    IMPACT = "impact"  # backlash: the gap closed, the two sides collide and engage
    SEPARATION = "separation"  # backlash: the gear stops pushing the load, the sides part


def solve_with_mask(M: np.ndarray, tau: np.ndarray, f_known: np.ndarray,
                    stuck: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accelerations and frictions with the stuck set fixed: (a, f); a_j = 0 and f_j solved on
    ``stuck``, f_j = ``f_known`` elsewhere (M·a = τ + f)."""
    A = M.copy()
    A[:, stuck] = 0.0
    idx = np.nonzero(stuck)[0]
    A[idx, idx] = -1.0
    b = tau + np.where(stuck, 0.0, f_known)
    x = np.linalg.solve(A, b)
    a = np.where(stuck, 0.0, x)
    f = np.where(stuck, x, f_known)
    return a, f


class Mechanism:
    """n joints with set-valued friction: what :class:`EventSolver` integrates.

    A subclass gives :meth:`forces` (the inputs held: control, enable); the rest follows.
    Joints with ``phase`` 0 (:data:`STICK`) are at rest, ±1 slip that way.
    """

    n = 0

    def guards(self) -> tuple:
        """Functions g(q, v, signs, stuck) of the mode a hybrid driver runs the mechanism in
        (backlash: whether the gear is engaged): the mode holds while every g ≤ 0, and
        :meth:`EventSolver.advance` stops where one rises through 0, or at the start of a
        segment where one is already above 0 (a stick or slip switch can make one jump).
        No guards by default."""
        return ()

    def forces(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, τ, b): mass matrix (with the rotors' armature), every torque but friction, and
        each joint's friction budget F + K_v·|v| (N·m) at the state (q, v)."""
        raise NotImplementedError

    def accelerations(self, q: np.ndarray, v: np.ndarray, signs: np.ndarray,
                      stuck: np.ndarray) -> np.ndarray:
        """v̇ with the stuck joints held and the others slipping in the direction ``signs``."""
        M, tau, b = self.forces(q, v)
        return solve_with_mask(M, tau, -signs * b, stuck)[0]

    def held_friction(self, q: np.ndarray, v: np.ndarray, signs: np.ndarray,
                      stuck: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(τ_f, b): the friction holding the stuck joints (the others' at their budget), and
        the budgets."""
        M, tau, b = self.forces(q, v)
        return solve_with_mask(M, tau, -signs * b, stuck)[1], b

    def held_excess(self, q: np.ndarray, v: np.ndarray, signs: np.ndarray,
                    stuck: np.ndarray) -> np.ndarray:
        """|τ_f,j| − b_j of each stuck joint's holding friction (−inf for the others)."""
        f, b = self.held_friction(q, v, signs, stuck)
        return np.where(stuck, np.abs(f) - b, -np.inf)

    def rest_accelerations(self, q: np.ndarray, v: np.ndarray, phase: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """(v̇, breaking) with the joints of phase :data:`STICK` at rest: their friction is docs/model.md
        §10's problem on accelerations (clip_friction with v = 0), the others slip at their
        budget in the direction of their phase (a joint that just broke away has v = 0 but
        slips); ``breaking`` marks the resting joints that break away."""
        rest = phase == STICK
        M, tau, b = self.forces(q, v)
        moving_friction = np.where(rest, 0.0, -phase * b)
        try:
            f = clip_friction(M, tau + moving_friction, np.zeros(self.n), np.where(rest, b, 0.0),
                              1.0)
        except ValueError as e:
            raise SimulationError(f"at q = {np.array2string(np.asarray(q), precision=6)}: "
                                  f"{e}") from None
        a = np.linalg.solve(M, tau + moving_friction + f)
        scale = float(np.max(np.abs(np.linalg.solve(M, np.abs(tau) + b)))) + 1e-300
        at_budget = np.abs(f) >= b * (1.0 - 1e-12)
        return a, rest & at_budget & (np.abs(a) > 1e-12 * scale)


@dataclass(frozen=True)
class Event:
    """A located switch of joint ``joint``: time (s), kind, that joint's state after it and
    the phase it entered."""

    t: float
    kind: EventKind
    q: float
    v: float
    phase: int
    joint: int = 0


@dataclass
class Segment:
    """A piece of the dense solution on [t0, t1]: an OdeSolution, or a constant state."""

    t0: float
    t1: float
    solution: object | None
    state: np.ndarray

    def __call__(self, t: np.ndarray) -> np.ndarray:
        if self.solution is None:
            return np.tile(np.asarray(self.state, dtype=float)[:, None], (1, np.size(t)))
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
            raise ConfigurationError(f"method {self.method!r}: expected one of {', '.join(METHODS)}")
        if not (0 < self.rtol < 1 and 0 < self.atol < 1):
            raise ConfigurationError(f"tolerances must be positive and below 1 (rtol={self.rtol}, "
                                     f"atol={self.atol})")
        if self.rtol < RTOL_FLOOR:
            raise ConfigurationError(f"rtol={self.rtol:g} is below {RTOL_FLOOR:.3g}, the finest "
                                     "relative tolerance solve_ivp honours (it would raise it "
                                     "to that silently)")
        if self.max_nfev < 1 or self.max_events < 1:
            raise ConfigurationError(f"max_nfev ({self.max_nfev}) and max_events ({self.max_events}) "
                                     "must be at least 1")
        if self.delta is None:
            self.delta = max(1e4 * self.atol, 1e-8)
        if self.delta <= 10 * self.atol:
            raise ConfigurationError(
                f"velocity margin delta={self.delta:g} must exceed 10·atol = {10 * self.atol:g}: "
                "below it, the zero-velocity event could re-detect the rest it starts from"
            )


class BoundedRhs:
    """A right-hand side that refuses to run on: non-finite derivatives, or more than
    ``limit`` evaluations, raise :class:`~frictionsim.solvers.errors.SimulationError`."""

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


def _event(fn, direction: float):
    fn.terminal = True
    fn.direction = direction
    return fn


@dataclass
class EventSolver:
    """Integrates a :class:`Mechanism` through stick, slip and their switches."""

    tolerances: Tolerances = field(default_factory=Tolerances)
    events: list[Event] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    nfev: int = 0
    #: The index of the mechanism's guard that stopped the last :meth:`advance`, and the time
    #: it stopped at (None, t1: it ran to the end).
    guard: int | None = None
    time: float = 0.0

    def begin(self, mech: Mechanism, t: float, q, v):
        """Phases and arming at the start of a run, recorded as ``start`` events.

        At rest a joint starts in stick and the first :meth:`advance` decides its
        break-away; moving, it slips with its zero-velocity event armed. Scalars in
        (one joint): scalars out.
        """
        q_a, v_a = np.atleast_1d(np.asarray(q, dtype=float)), np.atleast_1d(np.asarray(v, float))
        phase = np.where(v_a > 0, SLIP_POSITIVE, np.where(v_a < 0, SLIP_NEGATIVE, STICK))
        for j in range(mech.n):
            self.events.append(Event(t, EventKind.START, float(q_a[j]), float(v_a[j]),
                                     int(phase[j]), j))
        armed = v_a != 0.0
        if np.ndim(q) == 0:
            return int(phase[0]), bool(armed[0])
        return phase, armed

    def advance(self, mech: Mechanism, t0: float, t1: float, q, v, phase, armed):
        """Integrate from t0 to t1 with the mechanism's inputs held; returns (q, v, phase,
        armed). Scalars in (one joint): scalars out."""
        scalar = np.ndim(q) == 0
        q = np.atleast_1d(np.asarray(q, dtype=float)).copy()
        v = np.atleast_1d(np.asarray(v, dtype=float)).copy()
        phase = np.atleast_1d(np.asarray(phase, dtype=int)).copy()
        armed = np.atleast_1d(np.asarray(armed, dtype=bool)).copy()
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise SimulationError(f"event-driven solver: non-finite state q = {q}, v = {v} at "
                                  f"t = {t0:.9g} s")
        t = t0
        tol = self.tolerances
        events_before = len(self.events)
        self.guard = None
        guards = mech.guards()
        while t < t1:
            if len(self.events) - events_before > tol.max_events:
                raise SimulationError(
                    f"event-driven solver: more than {tol.max_events} stick/slip switches between "
                    f"t = {t0:.9g} s and {t1:.9g} s (chattering); gave up at t = {t:.9g} s"
                )
            self._settle(mech, t, q, v, phase, armed)
            signs, stuck = phase.astype(float), phase == STICK
            self.guard = next((i for i, g in enumerate(guards) if g(q, v, signs, stuck) > 0.0),
                              None)
            if self.guard is not None:
                break
            if np.all(phase == STICK):
                t_end = self._stick(mech, t, t1, q, v, phase)
                self.segments.append(Segment(t, t1 if t_end is None else t_end, None,
                                             np.concatenate([q, v])))
                if t_end is None:
                    break
                t = t_end
                continue
            t = self._slip(mech, t, t1, q, v, phase, armed, guards)
            if self.guard is not None:
                break
        self.time = min(t, t1)
        if scalar:
            return float(q[0]), float(v[0]), int(phase[0]), bool(armed[0])
        return q, v, phase, armed

    def _settle(self, mech: Mechanism, t: float, q, v, phase, armed, cause: int = -1,
                sign: int = 0) -> None:
        """Decide the joints at rest (in place): stay stuck, or break away. ``cause`` is the
        joint that just reached zero velocity (slipping in direction ``sign``): its event says
        stick, reversal or touch; any other joint that leaves the rest breaks away."""
        rest = phase == STICK
        if not rest.any():
            return
        a, breaking = mech.rest_accelerations(q, v, phase)
        for j in np.nonzero(rest)[0]:
            if breaking[j]:
                phase[j] = SLIP_POSITIVE if a[j] > 0 else SLIP_NEGATIVE
                armed[j] = False
                kind = (EventKind.BREAK_AWAY if j != cause else
                        EventKind.REVERSAL if phase[j] != sign else EventKind.TOUCH)
                self.events.append(Event(t, kind, float(q[j]), 0.0, int(phase[j]), int(j)))
            elif j == cause:
                self.events.append(Event(t, EventKind.STICK, float(q[j]), 0.0, STICK, int(j)))

    def _stick(self, mech: Mechanism, t0: float, t1: float, q, v, phase) -> float | None:
        """Every joint at rest from t0: the time a break-away event fires before t1, else None.

        With the inputs held and q frozen, the break-away functions are constant over
        the segment; they are still integrated as events so that time-varying inputs
        would be handled the same way.
        """
        n = mech.n
        stuck = phase == STICK
        signs = phase.astype(float)
        y0 = np.concatenate([q, v])

        def excess(t, y):
            return float(np.max(mech.held_excess(y[:n], y[n:], signs, stuck)))

        _event(excess, 1)
        # |τ| ≤ τ_fm holds (docs/model.md §8), the tie included: a margin of exactly 0 at
        # the start would otherwise be an event at t0, a segment of no length, for ever.
        if excess(t0, y0) <= 0 and excess(t1, y0) <= 0:
            return None
        rest = BoundedRhs(lambda t, y: np.zeros(2 * n), self.tolerances.max_nfev,
                          "a stick segment")
        sol = solve_ivp(rest, (t0, t1), y0, method=self.tolerances.method,
                        rtol=self.tolerances.rtol, atol=self.tolerances.atol, events=excess)
        self.nfev += sol.nfev
        return float(sol.t_events[0][0]) if sol.status == 1 else None

    def _slip(self, mech: Mechanism, t0: float, t1: float, q, v, phase, armed,
              guards: tuple = ()) -> float:
        """Integrate a segment with the phases fixed (in place); returns the time reached
        (``self.guard`` set when one of the mechanism's ``guards`` stopped it)."""
        n, tol = mech.n, self.tolerances
        stuck = phase == STICK
        signs = phase.astype(float)

        def slip(t, y):
            return np.concatenate([np.where(stuck, 0.0, y[n:]),
                                   mech.accelerations(y[:n], y[n:], signs, stuck)])

        events, meaning = [], []
        leaving = ~stuck & ~armed
        start_acceleration = slip(t0, np.concatenate([q, v]))[n:] if leaving.any() else v
        for j in range(n):
            if stuck[j]:
                events.append(_event(lambda t, y, j=j: mech.held_excess(
                    y[:n], y[n:], signs, stuck)[j], 1))
                meaning.append((j, EventKind.BREAK_AWAY))
                continue
            if armed[j]:
                events.append(_event(lambda t, y, j=j: signs[j] * y[n + j], -1))
            else:
                # Leaving the rest, s·v starts at 0: a root finder handed [t0, t] with
                # g(t0) = 0 returns t0, so a fall back through zero within the first step
                # would be placed at the start (endless touches at one instant). s·v/(t − t0)
                # has the same later roots and starts at s·v̇(t0) > 0.
                s_a0 = signs[j] * start_acceleration[j]
                events.append(_event(lambda t, y, j=j, s_a0=s_a0: signs[j] * y[n + j] / (t - t0)
                                     if t > t0 else s_a0, -1))
            meaning.append((j, EventKind.STICK))
            if not armed[j]:
                events.append(_event(lambda t, y, j=j: signs[j] * y[n + j] - tol.delta, 1))
                meaning.append((j, EventKind.MARGIN))
        for i, g in enumerate(guards):
            events.append(_event(lambda t, y, g=g: g(y[:n], y[n:], signs, stuck), 1))
            meaning.append((i, None))  # a guard: the driver names what happened
        rhs = BoundedRhs(slip, tol.max_nfev, f"a slip segment from t = {t0:.9g} s")
        # solve_ivp's step-size heuristics may overflow on huge (finite) derivatives; the
        # right-hand side itself refuses non-finite values, so its warnings are noise.
        with np.errstate(over="ignore", invalid="ignore"):
            sol = solve_ivp(rhs, (t0, t1), np.concatenate([q, v]), method=tol.method,
                            rtol=tol.rtol, atol=tol.atol, events=events, dense_output=True)
        self.nfev += sol.nfev
        if sol.status != 1:
            q[:], v[:] = sol.y[:n, -1], sol.y[n:, -1]
            self.segments.append(Segment(t0, t1, sol.sol, sol.y[:, -1].copy()))
            return t1
        k = next(i for i, te in enumerate(sol.t_events) if len(te))
        t_e = float(sol.t_events[k][0])
        y_e = sol.y_events[k][0]
        j, kind = meaning[k]
        q[:], v[:] = y_e[:n], y_e[n:]
        v[stuck] = 0.0
        if k >= len(events) - len(guards):
            # a guard: the mechanism's mode ends here, its driver decides what follows
            self.segments.append(Segment(t0, t_e, sol.sol, np.concatenate([q, v])))
            self.guard = j
            return t_e
        if kind is EventKind.MARGIN:
            self.segments.append(Segment(t0, t_e, sol.sol, y_e.copy()))
            armed[j] = True
            self.events.append(Event(t_e, EventKind.MARGIN, float(q[j]), float(v[j]),
                                     int(phase[j]), j))
            return t_e
        if kind is EventKind.BREAK_AWAY:
            # Located where the holding friction reaches the budget (to rounding): the joint
            # leaves the rest opposite to the friction it required.
            self.segments.append(Segment(t0, t_e, sol.sol, np.concatenate([q, v])))
            f, _ = mech.held_friction(q, v, signs, stuck)
            phase[j] = SLIP_NEGATIVE if f[j] > 0 else SLIP_POSITIVE
            armed[j] = False
            self.events.append(Event(t_e, EventKind.BREAK_AWAY, float(q[j]), 0.0,
                                     int(phase[j]), j))
            return t_e
        sign = int(phase[j])
        v[j] = 0.0
        self.segments.append(Segment(t0, t_e, sol.sol, np.concatenate([q, v])))
        phase[j] = STICK
        armed[j] = False
        self._settle(mech, t_e, q, v, phase, armed, cause=j, sign=sign)
        return t_e

    def dense(self, t: np.ndarray) -> np.ndarray:
        """The state (2n, len(t)) at any times covered by the segments."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        width = self.segments[0].state.shape[0] if self.segments else 2
        out = np.empty((width, t.size))
        starts = np.array([s.t0 for s in self.segments])
        idx = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(self.segments) - 1)
        for i in np.unique(idx):
            mask = idx == i
            out[:, mask] = self.segments[i](t[mask])
        return out


@dataclass
class EventResult:
    """An event-driven rollout: states at the sample times (``q`` as the servo reports it,
    ``physical`` the joint's true angle, which differ with ``observation_delay``), events,
    dense solution, costs."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    events: list[Event]
    solver: EventSolver
    nfev: int
    n_segments: int
    physical: np.ndarray | None = None

    def dense(self, t: np.ndarray) -> np.ndarray:
        """The continuous solution (q, v) at any times of the run: shape (2n, len(t))."""
        return self.solver.dense(t)

    def stick_intervals(self, joint: int = 0) -> list[tuple[float, float]]:
        """(entry, exit) times of every stick phase of ``joint`` (exit = end of run if it never
        left)."""
        intervals, entry = [], None
        for e in self.events:
            if e.joint != joint:
                continue
            if e.phase == STICK and entry is None:
                entry = e.t
            elif e.phase != STICK and entry is not None:
                intervals.append((entry, e.t))
                entry = None
        if entry is not None:
            intervals.append((entry, float(self.t[-1])))
        return intervals


def stick_time_and_position(result: EventResult) -> tuple[float, float]:
    """Time and position of the last stick event (NaN if the joint never sticks)."""
    sticks = [e for e in result.events if e.kind is EventKind.STICK]
    if not sticks:
        return math.nan, math.nan
    return sticks[-1].t, sticks[-1].q
