"""Robots: identified servos on the hinge joints of any MJCF model, simulated by frictionsim.

MuJoCo provides the kinematics and dynamics terms only (:mod:`frictionsim.solvers.mujoco_dynamics`:
M(q) and the bias forces; no ``mj_step``); the servos, their friction and the
integration are frictionsim's. Each servo's firmware runs at its control period
with a zero-order hold (docs/model.md §10: 200 Hz on the 2R arms), the physics at the model's
timestep. Goals are physical joint angles (rad, the MJCF joint's), so a servo's
``q_offset``, an encoder calibration, does not enter: the firmware acts on the
difference of goal and position, the same in either frame.

- :meth:`Robot.fixed_step`: the standalone n-joint fixed-step simulator, one compiled
  loop; per physics step, with τ = τ_m − bias and b_i = F_i + K_v,i·|v_i| of each servo
  (its own τ_m,i and τ_e,i = −bias_i), friction by docs/model.md §10's clipping
  (:func:`frictionsim.solvers.joint_friction.clip_friction_into`), then
  ``v⁺ = v + dt·M⁻¹(τ + τ_f)`` (read from the friction solve itself, so a joint that sticks
  ends the step at exactly 0), ``v ← clip(v⁺, ±100)``, ``a = (v⁺ − v)/dt`` and ``q ← q + v·dt (+ ½·a·dt²)``
  (the ``semi_implicit`` scheme, MuJoCo's Euler, or the reference one; with free or ball
  joints, a floating base, q ← q ⊕ (v (+ ½·a·dt))·dt by MuJoCo's ``mj_integratePos``).
  Joints without a servo are passive and frictionless; a joint's own ``armature`` stays in
  M and the servo's adds to it, as in the MuJoCo adapter.
- :meth:`Robot.event_driven`: the exact reference, :class:`frictionsim.solvers.event_driven.EventSolver`
  on :class:`RobotMechanism`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit

from frictionsim import layout
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings
from frictionsim.layout import SERVO_GAP, SERVO_REPORTED
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.schedule import ControlSchedule
from frictionsim.servo_bank import (
    ServoBank,
    bank_held_torques,
    bank_period,
    bank_reset,
    bank_step,
    new_bank,
)
from frictionsim.servo_unit import NO_LOG, delay_too_long
from frictionsim.solvers.borrowed import borrowed, hold
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.event_driven import EventSolver, Mechanism, Tolerances
from frictionsim.solvers.fixed_step import MAX_SPEED
from frictionsim.solvers.joint_friction import (
    MAX_JOINTS,
    WORK_SIZE,
    clip_friction_into,
    stepped_velocities,
)
from frictionsim.solvers.learned_rollout import physics_theta
from frictionsim.solvers.mjcf_files import dynamics_model, read_model
from frictionsim.solvers.mujoco_dynamics import (
    check_hinges,
    contact_pairs,
    integrate_positions,
    mujoco,
)
from frictionsim.solvers.reused_dynamics import NO_PATH, step_terms
from frictionsim.solvers.robot_gear import geared_physics_steps, has_backlash
from frictionsim.solvers.robot_terms import applied_forces, gather, robot_forces


@dataclass(frozen=True)
class JointServo:
    """An identified servo on joint ``joint``: its parameters and firmware settings (gain ``kp``;
    supply ``vin``, damping ``damping`` and D coefficient ``kd`` when not the actuator's
    defaults; the Feetech torque limit, a fraction of the full duty cycle, and the internal
    target's acceleration limit in rad/s², 0 for none).

    ``params`` is a parameter set (M1–M6) or a learned actuator (``net``: the network's torque
    on a bare joint; ``hybrid``: its physical model plus the network's residual), whose
    network runs once per control period in the compiled loop (docs/model.md §13)."""

    joint: str
    params: ParameterSet | LearnedActuator
    kp: float
    vin: float | None = None
    damping: float | None = None
    kd: float | None = None
    torque_limit: float = 0.0
    acceleration: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.joint, str):
            raise ConfigurationError(f"JointServo: joint = {self.joint!r}: the joint's name in "
                                     "the model")
        if not isinstance(self.params, (ParameterSet, LearnedActuator)):
            raise ConfigurationError(
                f"JointServo({self.joint!r}): params = {self.params!r}: a ParameterSet or "
                "LearnedActuator (frictionsim.load_params / load_servo_model read a file's)")

    def firmware(self, period: float) -> np.ndarray:
        """The ``bench`` vector of the firmware settings (:mod:`frictionsim.layout`) at the
        control period ``period``; the pendulum entries are unused on a robot. A D coefficient
        counts only on an actuator that declares the D term."""
        return firmware_settings(self.params.actuator, self.settings(), period)

    def settings(self) -> dict[str, float | None]:
        """The firmware set-up this joint gives (None: the actuator's default)."""
        return {"kp": self.kp, "vin": self.vin, "damping": self.damping, "kd": self.kd,
                "torque_limit": self.torque_limit, "acceleration": self.acceleration}

    def theta(self, scheme: str | None = None) -> np.ndarray:
        """The kernel vector of the servo's physics (a learned actuator's: its hybrid physics or
        the bare joint a net drives) with the position update ``scheme`` (None: its own)."""
        if isinstance(self.params, LearnedActuator):
            return physics_theta(self.params.with_scheme(scheme))
        return self.params.with_scheme(scheme).theta()

    @property
    def net(self) -> np.ndarray | None:
        """The flat network vector of a learned actuator (:mod:`frictionsim.actuator_net`), or
        None."""
        return self.params.net if isinstance(self.params, LearnedActuator) else None


def check_servos(servos) -> list[JointServo]:
    """``servos`` as a list, ConfigurationError unless it is a non-empty sequence of
    :class:`JointServo`."""
    if isinstance(servos, JointServo) or isinstance(servos, (str, bytes, dict)) \
            or not hasattr(servos, "__iter__"):
        raise ConfigurationError(f"servos: a list of JointServo, got a "
                                 f"{type(servos).__name__} (put one servo in a list)")
    servos = list(servos)
    if not servos or not all(isinstance(s, JointServo) for s in servos):
        raise ConfigurationError("servos: a non-empty list of JointServo (a joint's name and "
                                 "its parameters), got "
                                 f"{[type(s).__name__ for s in servos] or 'none'}")
    return servos


def draw_servos(servos: list[JointServo], n: int, seed: int = 0) -> list[list[JointServo]]:
    """``n`` randomised copies of ``servos`` for domain randomisation: in each, every servo
    whose parameter set has ``ranges`` (``identify --uncertainty``) drawn on its own within
    them (:meth:`~frictionsim.params.ParameterSet.variants`; two servos of one type are two
    units), the others unchanged; seeded by ``seed``. For the standalone simulators
    (``Robot(model, servos)``) and MuJoCo (``ServoModel(mjcf, servos)``) alike. ValueError
    when no servo has ranges."""
    if not any(isinstance(s.params, ParameterSet) and s.params.ranges for s in servos):
        raise ConfigurationError("no servo's parameters have ranges to draw within (identify "
                                 "--uncertainty writes them into the parameter file)")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        copies = []
        for s in servos:
            if isinstance(s.params, ParameterSet) and s.params.ranges:
                drawn = s.params.variants(1, int(rng.integers(2**63)))[0]
                s = dataclasses.replace(s, params=drawn)
            copies.append(s)
        out.append(copies)
    return out


def servo_nets(servos: list[JointServo]) -> np.ndarray:
    """The servos' network vectors as the rows of one array (servos × the longest; zero-padded),
    a row of zeros for a servo without one: what :func:`fixed_step_run` takes."""
    nets = [s.net for s in servos]
    width = max([1] + [len(n) for n in nets if n is not None])
    out = np.zeros((len(servos), width))
    for j, n in enumerate(nets):
        if n is not None:
            out[j, :len(n)] = n
    return out


@njit(nogil=True, cache=True)
def fixed_step_run(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray,
                   dofs: np.ndarray, bank: ServoBank, goals: np.ndarray, enable: np.ndarray,
                   q0: np.ndarray, v0: np.ndarray, substeps: int, dt: float,
                   semi_implicit: bool, out_q: np.ndarray, out_v: np.ndarray,
                   out_physical: np.ndarray, out_gap: np.ndarray, path: np.ndarray,
                   record: bool) -> int:
    """The standalone fixed-step loop, a physics driver around the servo ``bank`` (one servo
    per entry of ``qadr``/``dofs``, their joints' position and dof addresses; reset here at
    the initial state): the state before each control period into out_q (nq positions; a
    servo's joint as the servo reports it, ``observation_delay``), out_physical (the nq
    positions themselves), out_v (nv velocities), out_gap (per servo, the motor side's place δ
    in its gear's gap, ``backlash``; an array of no rows skips it).
    Each control period is the bank's (one supply for every servo), each physics step its
    :func:`~frictionsim.servo_bank.bank_step` then the physics (:func:`physics_steps`).
    Positions are integrated by ``mj_integratePos`` when the model has free or ball joints
    (nq ≠ nv). ``path`` (a row per physics step, :mod:`~frictionsim.solvers.reused_dynamics`):
    none, MuJoCo's terms every step; with rows, reused from it, or with ``record`` MuJoCo's
    written into it. Returns −1, or the control period whose friction solve did not converge
    (it stops there)."""
    ns = dofs.shape[0]
    own_q = q0.copy()
    own_v = v0.copy()
    own_scratch = physics_scratch(own_v.shape[0], ns)
    own_gq = np.empty(ns)
    own_gv = np.empty(ns)
    # every array through borrowed views: no reference counting per period (solvers.borrowed)
    q, v, gq, gv = borrowed(own_q), borrowed(own_v), borrowed(own_gq), borrowed(own_gv)
    scratch = borrowed(own_scratch)
    bank = borrowed(bank)
    qpos, qvel, qadr, dofs = borrowed(qpos), borrowed(qvel), borrowed(qadr), borrowed(dofs)
    goals, enable = borrowed(goals), borrowed(enable)
    out_q, out_v, out_physical = borrowed(out_q), borrowed(out_v), borrowed(out_physical)
    out_gap, path = borrowed(out_gap), borrowed(path)
    bank_reset(bank, gather(q, qadr, gq), gather(v, dofs, gv))
    period = dt * substeps
    failed = -1
    for k in range(goals.shape[0]):
        out_q[k] = q
        out_v[k] = v
        out_physical[k] = q
        bank_period(bank, goals[k], gather(q, qadr, gq), gather(v, dofs, gv), enable[k],
                    NO_LOG, period, True, False)
        for j in range(ns):
            out_q[k, qadr[j]] = bank.records[j, SERVO_REPORTED]
            if out_gap.shape[0] > k:
                out_gap[k, j] = bank.records[j, SERVO_GAP]
        if not physics_steps(model, data, qpos, qvel, qadr, dofs, bank, q, v, substeps, dt,
                             semi_implicit, scratch, path, record, k * substeps):
            failed = k  # the friction solve did not converge: the caller names the step
            break
    hold(own_q, own_v, own_gq, own_gv, own_scratch)
    return failed


@njit(nogil=True, cache=True)
def physics_scratch(nv: int, ns: int) -> tuple:
    """The memory :func:`physics_steps` works in for nv dofs and ns servos: M (nv × nv; after
    a call, the last step's, armatures included), τ, budgets, bias, τ_f, a, the position
    drift, the friction solve's WORK_SIZE doubles, then per servo its velocity, motor
    torque, network torque and whether its gear is engaged (``backlash``), then the geared
    step's own: M without the rotors, and two flags per servo."""
    return (np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv),
            np.empty(nv), np.empty(nv), np.empty(WORK_SIZE), np.empty(ns), np.empty(ns),
            np.empty(ns), np.ones(ns, dtype=np.bool_), np.empty((nv, nv)),
            np.zeros((2, ns), dtype=np.bool_))


@njit(nogil=True, cache=True)
def physics_steps(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray,
                  dofs: np.ndarray, bank: ServoBank, q: np.ndarray, v: np.ndarray, substeps: int,
                  dt: float, semi_implicit: bool, scratch: tuple, path: np.ndarray,
                  record: bool, step: int) -> bool:
    """``substeps`` physics steps of ``dt`` (the module docstring's fixed step), each with the
    bank's :func:`~frictionsim.servo_bank.bank_step` (the currents drawn, the held torques at
    the step's velocities), (q, v) advanced in place, in the memory of
    :func:`physics_scratch`. False when the friction solve did not converge. Servos with
    ``backlash`` take :func:`~frictionsim.solvers.robot_gear.geared_physics_steps` (MuJoCo's
    terms each step: the ``path`` of :func:`fixed_step_run`, whose first of these steps is
    row ``step``, is not theirs)."""
    if has_backlash(bank.thetas):
        return geared_physics_steps(model, data, qpos, qvel, qadr, dofs, bank, q, v, substeps,
                                    dt, semi_implicit, scratch)
    mass, tau, budget, bias, tau_f, acc, drift, work, gv, motor, extra, engaged = scratch[:12]
    for s in range(substeps):
        bank_step(bank, gather(v, dofs, gv), motor, extra)
        step_terms(model, data, qpos, qvel, q, v, mass, bias, path, record, step + s)
        applied_forces(qadr, dofs, bank.thetas, motor, extra, q, v, engaged, mass, tau, budget,
                       bias)
        if clip_friction_into(mass, tau, v, budget, dt, tau_f, work) < 0:
            return False
        advance_joints(model, mass, tau, tau_f, acc, drift, work, q, v, dt, semi_implicit)
    return True


@njit(nogil=True, cache=True, inline="always")
def advance_joints(model: int, mass: np.ndarray, tau: np.ndarray, tau_f: np.ndarray,
                   acc: np.ndarray, drift: np.ndarray, work: np.ndarray, q: np.ndarray,
                   v: np.ndarray, dt: float, semi_implicit: bool) -> None:
    """The end of a physics step once the friction solve on ``work`` converged with τ_f
    (``tau_f``): v⁺ (the solve's own, exactly 0 where a joint sticks; for one joint
    v + dt·(τ + τ_f)/M), clipped to ±MAX_SPEED, a = (v⁺ − v)/dt into ``acc``, and q advanced
    by the ``semi_implicit`` or the reference update (``mj_integratePos`` over ``drift`` with
    free or ball joints, nq ≠ nv). ``tau_f`` is overwritten."""
    nv = v.shape[0]
    hinges_only = q.shape[0] == nv
    if nv == 1:
        acc[0] = (tau_f[0] + tau[0]) / mass[0, 0]
        tau_f[0] = v[0] + acc[0] * dt
    else:
        # the solve's own v⁺ (exactly 0 where a joint sticks), not a second solve with M
        stepped_velocities(work, nv, dt, acc)
        for i in range(nv):
            # 0·(τ + τ_f) carries a NaN or infinity of the torques into v⁺, as a solve
            # with M would: a diverging candidate must not read as a stuck joint
            v_next = acc[i] + 0.0 * (tau[i] + tau_f[i])
            acc[i] = (v_next - v[i]) / dt
            tau_f[i] = v_next
    for i in range(nv):
        v[i] = min(max(tau_f[i], -MAX_SPEED), MAX_SPEED)
        if not hinges_only:
            drift[i] = v[i] if semi_implicit else v[i] + 0.5 * acc[i] * dt
        elif semi_implicit:
            q[i] += v[i] * dt
        else:
            q[i] += v[i] * dt + 0.5 * acc[i] * dt**2
    if not hinges_only:
        integrate_positions(model, q, drift, dt)


def check_delay_reach(servos: list[JointServo], period: float) -> None:
    """ValueError naming a servo whose ``observation_delay`` reaches back more than
    ``layout.MAX_OBSERVATION_PERIODS`` control periods of ``period`` s."""
    for s in servos:
        if delay_too_long(s.theta(), period):
            raise ConfigurationError(f"servo on {s.joint}: observation_delay "
                                     f"{s.params.values['observation_delay']:g} s reaches back more than "
                                     f"{layout.MAX_OBSERVATION_PERIODS} control periods "
                                     f"({layout.MAX_OBSERVATION_PERIODS * period:g} s)")


@dataclass
class RobotRun:
    """A simulated robot run, the one result of every robot engine: time (s) of each control
    update, every dof's position and velocity before it (a servo's joint as the servo reports
    it: ``observation_delay``, and in the batched engines its encoder's grid; ``physical``:
    the positions themselves), and what it cost. A batched engine's run of several worlds
    has the worlds first (``q``, ``v``, ``physical``: worlds × periods × ·); :meth:`world`
    gives one."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    seconds: float = 0.0
    events: list | None = None
    physical: np.ndarray | None = None
    #: per servo, the motor side's place δ = p − q in its gear's gap (rad; ``backlash``, the
    #: fixed step: 0 without backlash)
    gap: np.ndarray | None = None

    @property
    def worlds(self) -> int:
        """The worlds of a batched run (0: one world's run, no worlds dimension)."""
        return int(self.q.shape[0]) if self.q.ndim == 3 else 0

    def world(self, e: int) -> RobotRun:
        """World ``e`` of a batched run as a run of its own (the cost shared evenly)."""
        if not self.worlds:
            return self
        return RobotRun(self.t, self.q[e], self.v[e], self.seconds / self.worlds, None,
                        None if self.physical is None else self.physical[e],
                        None if self.gap is None else self.gap[e])


def refuse_contacts(model) -> None:
    """ConfigurationError naming the geoms when ``model`` may make contacts: frictionsim's own
    engines (the fixed step, the event-driven solver) integrate M(q)·a = τ with no contact
    solver, so a robot on a floor would fall through it."""
    pairs = contact_pairs(model)
    if pairs:
        shown = ", ".join(f"{a} with {b}" for a, b in pairs[:4])
        more = f" and {len(pairs) - 4} more pairs" if len(pairs) > 4 else ""
        raise ConfigurationError(
            f"the model has contacts ({shown}{more}): frictionsim's fixed-step and event-driven "
            "engines have no contact solver. Run a robot that touches anything in MuJoCo with "
            "the servo adapter (ServoModel, --engine mujoco); for motions that touch nothing, "
            "turn contacts off in the model (<flag contact=\"disable\"/>)")


class Robot:
    """Servos on the named hinge joints of an MJCF model (path, XML text, ``MjSpec`` or
    ``MjModel``). A model that may make contacts is refused (:func:`refuse_contacts`).

    ``control_period``: the firmware's period (s), a multiple of the model's timestep
    (the physics step); ``scheme``: the fixed step's position update, by default the
    servos' parameter files' (they must agree).
    """

    def __init__(self, model, servos: list[JointServo], control_period: float = 0.005,
                 scheme: str | None = None) -> None:
        self.model = load_model(model)
        servos = check_servos(servos)
        if not 1 <= self.model.nv <= MAX_JOINTS:
            raise ConfigurationError(f"the model has {self.model.nv} dofs; frictionsim's simulators take "
                                     f"1 to {MAX_JOINTS}")
        refuse_contacts(self.model)
        #: the model the compiled loops ask for M and the bias: ``model`` without geometry
        self.dynamics = dynamics_model(model, self.model)
        self.data = mujoco.MjData(self.dynamics)
        self.servos = servos
        self.qadr, self.dofs = check_hinges(self.model, [s.joint for s in self.servos])
        self.dt = float(self.model.opt.timestep)
        self.schedule = ControlSchedule.of(control_period, self.dt)
        self.substeps = self.schedule.substeps
        self.period = control_period
        schemes = {s.params.scheme for s in self.servos}
        if scheme is None and len(schemes) > 1:
            raise ConfigurationError("the servos' parameter files were identified with different schemes "
                                     f"({', '.join(sorted(schemes))}); choose one")
        self.scheme = scheme or schemes.pop()
        self.thetas = np.array([s.theta(self.scheme) for s in self.servos])
        self.benches = np.array([s.firmware(self.period) for s in self.servos])
        self.nets = servo_nets(self.servos)
        check_delay_reach(self.servos, self.period)

    @property
    def nv(self) -> int:
        return int(self.model.nv)

    @property
    def nq(self) -> int:
        return int(self.model.nq)

    def _initial(self, q0, v0) -> tuple[np.ndarray, np.ndarray]:
        q = self.model.qpos0.copy() if q0 is None else np.asarray(q0, dtype=float).copy()
        v = np.zeros(self.nv) if v0 is None else np.asarray(v0, dtype=float).copy()
        if q.shape != (self.nq,) or v.shape != (self.nv,):
            raise ConfigurationError(f"q0 needs {self.nq} values (the model's positions, qpos) and v0 "
                                     f"{self.nv} (its dofs)")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ConfigurationError("q0 and v0 must be finite")
        return q, v

    def _inputs(self, goals, enable) -> tuple[np.ndarray, np.ndarray]:
        try:
            goals = np.ascontiguousarray(goals, dtype=float)
            enable = np.ones_like(goals) if enable is None else np.ascontiguousarray(enable, float)
        except (TypeError, ValueError):
            raise ConfigurationError("goals and enable must be arrays of numbers") from None
        if goals.ndim != 2 or goals.shape[1] != len(self.servos):
            raise ConfigurationError(f"goals must be (steps, {len(self.servos)}): one column per servo")
        if enable.shape != goals.shape:
            raise ConfigurationError("enable must have the shape of goals")
        bad = np.argwhere(~np.isfinite(goals))
        if len(bad):
            raise ConfigurationError(f"goals[{bad[0][0]}, {bad[0][1]}] = {goals[tuple(bad[0])]}: "
                                     "goal positions must be finite (rad)")
        bad = np.argwhere((enable != 0.0) & (enable != 1.0))
        if len(bad):
            raise ConfigurationError(f"enable[{bad[0][0]}, {bad[0][1]}] = {enable[tuple(bad[0])]}: "
                                     "torque enable is 1 (on) or 0 (off)")
        return goals, enable

    def fixed_step(self, goals, enable=None, q0=None, v0=None) -> RobotRun:
        """The standalone fixed-step simulation; goals (physical joint angles, rad) and enable
        flags per control period, one column per servo; ``q0`` the model's positions (qpos,
        default its ``qpos0``), ``v0`` its velocities. ``RobotRun.q`` holds qpos rows: a servo
        joint's angle is at :attr:`qadr`."""
        import time

        goals, enable = self._inputs(goals, enable)
        q, v = self._initial(q0, v0)
        out_q = np.empty((goals.shape[0], self.nq))
        out_v = np.empty((goals.shape[0], self.nv))
        physical = np.empty_like(out_q)
        gap = np.zeros((goals.shape[0], len(self.servos)))
        start = time.perf_counter()
        failed = fixed_step_run(self.dynamics._address, self.data._address, self.data.qpos,
                                self.data.qvel, self.qadr, self.dofs, self.bank(), goals,
                                enable, q, v, self.substeps, self.dt,
                                self.scheme == "semi_implicit", out_q, out_v, physical, gap,
                                NO_PATH, False)
        seconds = time.perf_counter() - start
        if failed >= 0:
            raise SimulationError(f"the friction solve of the coupled joints did not converge "
                                  f"in control period {failed} (t = {failed * self.period:g} s)")
        diverged = np.flatnonzero(~np.isfinite(out_q).all(axis=1) | ~np.isfinite(out_v).all(axis=1))
        if len(diverged):
            raise SimulationError(f"the simulation diverged (a position or velocity not finite) "
                                  f"in control period {diverged[0]} (t = "
                                  f"{diverged[0] * self.period:g} s): check q0, v0 and the "
                                  "model's inertias")
        return RobotRun(np.arange(goals.shape[0]) * self.period, out_q, out_v, seconds,
                        physical=physical, gap=gap)

    def event_driven(self, goals, enable=None, q0=None, v0=None,
                     tolerances: Tolerances | None = None) -> RobotRun:
        """The exact event-driven solution, with the firmware's zero-order hold (models whose
        positions are their dofs: no free or ball joint)."""
        import time

        if self.nq != self.nv:
            raise ConfigurationError("the event-driven engine takes models whose positions are their "
                                     "dofs; this one has free or ball joints (nq ≠ nv): use fixed_step")
        goals, enable = self._inputs(goals, enable)
        q, v = self._initial(q0, v0)
        if has_backlash(self.thetas):
            return self._geared_events(goals, enable, q, v, tolerances)
        mech = RobotMechanism(self)
        solver = EventSolver(tolerances or Tolerances())
        phase, armed = solver.begin(mech, 0.0, q, v)
        bank = mech.bank
        bank_reset(bank, q[self.qadr], v[self.dofs])
        out_q = np.empty((goals.shape[0], self.nv))
        out_v = np.empty_like(out_q)
        physical = np.empty_like(out_q)
        start = time.perf_counter()
        for k in range(goals.shape[0]):
            out_q[k], out_v[k], physical[k] = q, v, q
            # this engine has no physics steps: the supply current is drawn at the period
            bank_period(bank, goals[k], q[self.qadr], v[self.dofs], enable[k], NO_LOG,
                        self.period, True, True)
            out_q[k, self.dofs] = bank.records[:, SERVO_REPORTED]
            try:
                q, v, phase, armed = solver.advance(mech, k * self.period, (k + 1) * self.period,
                                                    q, v, phase, armed)
            except SimulationError as e:
                raise SimulationError(f"control period {k} (t = {k * self.period:g} s): {e}"
                                      ) from None
        seconds = time.perf_counter() - start
        return RobotRun(np.arange(goals.shape[0]) * self.period, out_q, out_v, seconds,
                        solver.events, physical)

    def _geared_events(self, goals, enable, q, v, tolerances) -> RobotRun:
        """:meth:`event_driven` with backlash (:mod:`frictionsim.solvers.robot_gear_events`)."""
        import time

        from frictionsim.solvers.robot_gear_events import geared_event_run

        solver = EventSolver(tolerances or Tolerances())
        out_q = np.empty((goals.shape[0], self.nv))
        out_v, physical = np.empty_like(out_q), np.empty_like(out_q)
        start = time.perf_counter()
        try:
            geared_event_run(self, goals, enable, q, v, solver, out_q, out_v, physical)
        except SimulationError as e:
            raise SimulationError(f"the event-driven robot with backlash: {e}") from None
        return RobotRun(np.arange(goals.shape[0]) * self.period, out_q, out_v,
                        time.perf_counter() - start, solver.events, physical)

    def bank(self) -> ServoBank:
        """A new servo bank (:mod:`frictionsim.servo_bank`) of the robot's servos: their
        ``thetas``, firmware settings (``benches``) and networks (``nets``) as they are now."""
        return new_bank(self.thetas, self.benches, self.nets)


class RobotMechanism(Mechanism):
    """The robot for the event-driven engine: its forces with the servo bank's held controls
    (:func:`~frictionsim.servo_bank.bank_held_torques`)."""

    def __init__(self, robot: Robot) -> None:
        self.robot = robot
        self.n = robot.nv
        self.bank = robot.bank()
        ns = len(robot.servos)
        self._motor, self._extra = np.empty(ns), np.empty(ns)
        self._engaged = np.ones(ns, dtype=np.bool_)
        self._data = mujoco.MjData(robot.dynamics)

    def forces(self, q, v):
        r, n = self.robot, self.n
        q = np.ascontiguousarray(q, float)
        v = np.ascontiguousarray(v, float)
        bank_held_torques(self.bank, v[r.dofs], self._motor, self._extra)
        mass, tau, budget, bias = np.empty((n, n)), np.empty(n), np.empty(n), np.empty(n)
        robot_forces(r.dynamics._address, self._data._address, self._data.qpos, self._data.qvel,
                     r.qadr, r.dofs, self.bank.thetas, self._motor, self._extra, q, v, mass, tau,
                     budget, bias, self._engaged)
        return mass, tau, budget


def load_model(model):
    """An ``MjModel`` from a path, an MJCF text, an ``MjSpec`` (compiled from a copy) or an
    ``MjModel`` (returned as is)."""
    return read_model(model)
