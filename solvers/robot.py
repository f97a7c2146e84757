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
  ``a = M⁻¹(τ + τ_f)``, ``v ← clip(v + a·dt, ±100)`` and ``q ← q + v·dt (+ ½·a·dt²)``
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

from frictionsim import layout, schema
from frictionsim.actuator_net import MAX_WIDTH, N_INPUTS, net_features, net_torque
from frictionsim.friction import friction_budget
from frictionsim.layout import ARMATURE, KP, SERVO_STATE_SIZE
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import (
    NO_LOG,
    delay_too_long,
    servo_control,
    servo_draw,
    servo_observe,
    servo_reset,
    servo_torque,
    share_supply,
)
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.event_driven import EventSolver, Mechanism, Tolerances
from frictionsim.solvers.fixed_step import MAX_SPEED
from frictionsim.solvers.joint_friction import MAX_JOINTS, WORK_SIZE, clip_friction_into, spd_solve_into
from frictionsim.solvers.learned_rollout import physics_theta
from frictionsim.solvers.mujoco_dynamics import (
    check_hinges,
    dynamics_terms,
    integrate_positions,
    mujoco,
)


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

    def firmware(self, period: float) -> np.ndarray:
        """The ``bench`` vector of the firmware settings (:mod:`frictionsim.layout`) at the
        control period ``period``; the pendulum entries are unused on a robot. A D coefficient
        counts only on an actuator that declares the D term."""
        act = schema.get_actuator(self.params.actuator)
        kd = (act.kd if self.kd is None else self.kd) if act.derivative else 0.0
        return layout.bench_vector(kp=self.kp, vin=act.vin if self.vin is None else self.vin,
                                   damping=act.damping if self.damping is None else self.damping,
                                   dt=period, kd=kd, torque_limit=self.torque_limit,
                                   acceleration=self.acceleration)

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


def draw_servos(servos: list[JointServo], n: int, seed: int = 0) -> list[list[JointServo]]:
    """``n`` randomised copies of ``servos`` for domain randomisation: in each, every servo
    whose parameter set has ``ranges`` (``identify --uncertainty``) drawn on its own within
    them (:meth:`~frictionsim.params.ParameterSet.variants`; two servos of one type are two
    units), the others unchanged; seeded by ``seed``. For the standalone simulators
    (``Robot(model, servos)``) and MuJoCo (``ServoModel(mjcf, servos)``) alike. ValueError
    when no servo has ranges."""
    if not any(isinstance(s.params, ParameterSet) and s.params.ranges for s in servos):
        raise ValueError("no servo's parameters have ranges to draw within (identify "
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


@njit(nogil=True)
def robot_forces(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, dofs: np.ndarray,
                 thetas: np.ndarray, servos: np.ndarray, enable: np.ndarray, extra: np.ndarray,
                 q: np.ndarray, v: np.ndarray, mass: np.ndarray, tau: np.ndarray,
                 budget: np.ndarray, bias: np.ndarray) -> None:
    """M (with each servo's armature), τ = τ_m + extra − bias and the budgets b at (q, v), in
    place; ``servos``: the servo records (:mod:`frictionsim.servo_unit`), their controls held;
    ``extra``: a torque per servo beside its motor's (N·m, a learned actuator's, held over the
    control period), which friction clips like any other; the budget is the servo's own
    (its load-dependent terms see τ_m and the bias, as on the bench)."""
    dynamics_terms(model, data, qpos, qvel, q, v, mass, bias)
    for i in range(v.shape[0]):
        tau[i] = -bias[i]
        budget[i] = 0.0
    for j in range(dofs.shape[0]):
        d = dofs[j]
        theta = thetas[j]
        mass[d, d] += theta[ARMATURE]
        tau_m = servo_torque(servos[j], enable[j], v[d], theta)
        b = friction_budget(v[d], tau_m, tau[d], theta)
        budget[d] = b.static + b.viscous * abs(v[d])
        tau[d] += tau_m + extra[j]


@njit(nogil=True)
def fixed_step_run(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, qadr: np.ndarray,
                   dofs: np.ndarray, thetas: np.ndarray, benches: np.ndarray, nets: np.ndarray,
                   goals: np.ndarray, enable: np.ndarray, q0: np.ndarray, v0: np.ndarray,
                   substeps: int, dt: float, semi_implicit: bool, out_q: np.ndarray,
                   out_v: np.ndarray) -> int:
    """The standalone fixed-step loop: the state before each control update into out_q (nq
    positions; a servo's joint as the servo reports it, through ``observation_delay``), out_v
    (nv velocities); ``qadr``, ``dofs``: each servo joint's position and
    dof address. Positions are integrated by ``mj_integratePos`` when the model has free or
    ball joints (nq ≠ nv). ``nets``: a learned actuator's network per servo (rows of
    :func:`servo_nets`; a row of zeros: none), whose torque is computed once per control
    period from the servo's error and velocity history, as on the bench
    (:func:`frictionsim.solvers.learned_rollout.learned_run`), and held. Returns −1, or the
    control period whose friction solve did not converge (it stops there)."""
    nv = v0.shape[0]
    ns = dofs.shape[0]
    n = goals.shape[0]
    learned = False
    for j in range(ns):
        learned = learned or nets[j, 0] > 0.0
    history = n if learned else 1
    error = np.zeros((ns, history))
    velocity = np.zeros((ns, history))
    x = np.empty(N_INPUTS)
    net_work = np.empty(2 * MAX_WIDTH)
    extra = np.zeros(ns)
    q = q0.copy()
    v = v0.copy()
    scratch = physics_scratch(nv)
    on = np.zeros(ns)
    servos = np.empty((ns, SERVO_STATE_SIZE))
    for j in range(ns):
        servo_reset(servos[j], q[qadr[j]], v[dofs[j]])
    period = dt * substeps
    for k in range(goals.shape[0]):
        out_q[k] = q
        out_v[k] = v
        share_supply(servos)  # one supply for every servo
        for j in range(ns):
            d = dofs[j]
            out_q[k, qadr[j]] = servo_observe(servos[j], q[qadr[j]], period, thetas[j])
            on[j] = enable[k, j]
            if nets[j, 0] > 0.0:
                error[j, k] = goals[k, j] - q[qadr[j]]
                velocity[j, k] = v[d]
                net_features(error[j], velocity[j], k, benches[j, KP], on[j], x)
                extra[j] = net_torque(nets[j], x, net_work)
            servo_control(servos[j], goals[k, j], q[qadr[j]], v[d], NO_LOG, thetas[j],
                          benches[j])
        if not physics_steps(model, data, qpos, qvel, dofs, thetas, servos, on, extra, q, v,
                             substeps, dt, semi_implicit, scratch):
            return k  # the friction solve did not converge: the caller names the step
    return -1


@njit(nogil=True)
def physics_scratch(nv: int) -> tuple:
    """The memory :func:`physics_steps` works in for nv dofs: M (nv × nv; after a call, the
    last step's, armatures included), τ, budgets, bias, τ_f, a, the position drift, and the
    friction solve's WORK_SIZE doubles."""
    return (np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv),
            np.empty(nv), np.empty(nv), np.empty(WORK_SIZE))


@njit(nogil=True)
def physics_steps(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, dofs: np.ndarray,
                  thetas: np.ndarray, servos: np.ndarray, on: np.ndarray, extra: np.ndarray,
                  q: np.ndarray, v: np.ndarray, substeps: int, dt: float, semi_implicit: bool,
                  scratch: tuple) -> bool:
    """``substeps`` physics steps of ``dt`` (the module docstring's fixed step) with the servos'
    controls, enable flags ``on`` and ``extra`` torques held, (q, v) advanced in place, in the
    memory of :func:`physics_scratch`. False when the friction solve did not converge."""
    mass, tau, budget, bias, tau_f, acc, drift, work = scratch
    nv = v.shape[0]
    hinges_only = q.shape[0] == nv
    for _ in range(substeps):
        robot_forces(model, data, qpos, qvel, dofs, thetas, servos, on, extra, q, v, mass,
                     tau, budget, bias)
        if clip_friction_into(mass, tau, v, budget, dt, tau_f, work) < 0:
            return False
        for i in range(nv):
            tau_f[i] += tau[i]
        spd_solve_into(mass, tau_f, acc, work)
        for j in range(dofs.shape[0]):
            servo_draw(servos[j], on[j], v[dofs[j]], thetas[j])
        for i in range(nv):
            v[i] = min(max(v[i] + acc[i] * dt, -MAX_SPEED), MAX_SPEED)
            if not hinges_only:
                drift[i] = v[i] if semi_implicit else v[i] + 0.5 * acc[i] * dt
            elif semi_implicit:
                q[i] += v[i] * dt
            else:
                q[i] += v[i] * dt + 0.5 * acc[i] * dt**2
        if not hinges_only:
            integrate_positions(model, q, drift, dt)
    return True


def check_delay_reach(servos: list[JointServo], period: float) -> None:
    """ValueError naming a servo whose ``observation_delay`` reaches back more than
    ``layout.MAX_OBSERVATION_PERIODS`` control periods of ``period`` s."""
    for s in servos:
        if delay_too_long(s.theta(), period):
            raise ValueError(f"servo on {s.joint}: observation_delay "
                             f"{s.params.values['observation_delay']:g} s reaches back more than "
                             f"{layout.MAX_OBSERVATION_PERIODS} control periods "
                             f"({layout.MAX_OBSERVATION_PERIODS * period:g} s)")


@dataclass
class RobotRun:
    """A simulated robot run: time (s) of each control update, every dof's position and
    velocity before it (a servo's joint as the servo reports it: ``observation_delay``), and
    what it cost."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    seconds: float = 0.0
    events: list | None = None


class Robot:
    """Servos on the named hinge joints of an MJCF model (path, XML text or ``MjModel``).

    ``control_period``: the firmware's period (s), a multiple of the model's timestep
    (the physics step); ``scheme``: the fixed step's position update, by default the
    servos' parameter files' (they must agree).
    """

    def __init__(self, model, servos: list[JointServo], control_period: float = 0.005,
                 scheme: str | None = None) -> None:
        self.model = load_model(model)
        if not 1 <= self.model.nv <= MAX_JOINTS:
            raise ValueError(f"the model has {self.model.nv} dofs; frictionsim's simulators take "
                             f"1 to {MAX_JOINTS}")
        self.data = mujoco.MjData(self.model)
        self.servos = list(servos)
        self.qadr, self.dofs = check_hinges(self.model, [s.joint for s in self.servos])
        self.dt = float(self.model.opt.timestep)
        substeps = control_period / self.dt
        if not (control_period > 0 and abs(substeps - round(substeps)) < 1e-9 and substeps >= 1):
            raise ValueError(f"control period {control_period:g} s must be a multiple of the "
                             f"model's timestep {self.dt:g} s")
        self.substeps = int(round(substeps))
        self.period = control_period
        schemes = {s.params.scheme for s in self.servos}
        if scheme is None and len(schemes) > 1:
            raise ValueError("the servos' parameter files were identified with different schemes "
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
            raise ValueError(f"q0 needs {self.nq} values (the model's positions, qpos) and v0 "
                             f"{self.nv} (its dofs)")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ValueError("q0 and v0 must be finite")
        return q, v

    def _inputs(self, goals, enable) -> tuple[np.ndarray, np.ndarray]:
        goals = np.ascontiguousarray(goals, dtype=float)
        if goals.ndim != 2 or goals.shape[1] != len(self.servos):
            raise ValueError(f"goals must be (steps, {len(self.servos)}): one column per servo")
        enable = np.ones_like(goals) if enable is None else np.ascontiguousarray(enable, float)
        if enable.shape != goals.shape:
            raise ValueError("enable must have the shape of goals")
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
        start = time.perf_counter()
        failed = fixed_step_run(self.model._address, self.data._address, self.data.qpos,
                                self.data.qvel, self.qadr, self.dofs, self.thetas, self.benches,
                                self.nets, goals, enable, q, v, self.substeps, self.dt,
                                self.scheme == "semi_implicit", out_q, out_v)
        seconds = time.perf_counter() - start
        if failed >= 0:
            raise SimulationError(f"the friction solve of the coupled joints did not converge "
                                  f"in control period {failed} (t = {failed * self.period:g} s)")
        return RobotRun(np.arange(goals.shape[0]) * self.period, out_q, out_v, seconds)

    def event_driven(self, goals, enable=None, q0=None, v0=None,
                     tolerances: Tolerances | None = None) -> RobotRun:
        """The exact event-driven solution, with the firmware's zero-order hold (models whose
        positions are their dofs: no free or ball joint)."""
        import time

        if self.nq != self.nv:
            raise ValueError("the event-driven engine takes models whose positions are their "
                             "dofs; this one has free or ball joints (nq ≠ nv): use fixed_step")
        goals, enable = self._inputs(goals, enable)
        q, v = self._initial(q0, v0)
        mech = RobotMechanism(self)
        solver = EventSolver(tolerances or Tolerances())
        phase, armed = solver.begin(mech, 0.0, q, v)
        servos = mech.servos
        for j, d in enumerate(self.dofs):
            servo_reset(servos[j], q[d], v[d])
        out_q = np.empty((goals.shape[0], self.nv))
        out_v = np.empty_like(out_q)
        error = np.zeros((len(self.servos), goals.shape[0]))
        velocity = np.zeros_like(error)
        x, work = np.empty(N_INPUTS), np.empty(2 * MAX_WIDTH)
        start = time.perf_counter()
        for k in range(goals.shape[0]):
            out_q[k], out_v[k] = q, v
            share_supply(servos)  # the supply sags with the current at the last update
            mech.enable[:] = enable[k]
            for j, d in enumerate(self.dofs):
                out_q[k, d] = servo_observe(servos[j], q[d], self.period, self.thetas[j])
                if self.nets[j, 0] > 0.0:  # the learned torque, held like the control
                    error[j, k], velocity[j, k] = goals[k, j] - q[d], v[d]
                    net_features(error[j], velocity[j], k, self.benches[j, KP], enable[k, j], x)
                    mech.extra[j] = net_torque(self.nets[j], x, work)
                servo_control(servos[j], goals[k, j], q[d], v[d], NO_LOG, self.thetas[j],
                              self.benches[j])
                servo_draw(servos[j], mech.enable[j], v[d], self.thetas[j])
            try:
                q, v, phase, armed = solver.advance(mech, k * self.period, (k + 1) * self.period,
                                                    q, v, phase, armed)
            except SimulationError as e:
                raise SimulationError(f"control period {k} (t = {k * self.period:g} s): {e}"
                                      ) from None
        seconds = time.perf_counter() - start
        return RobotRun(np.arange(goals.shape[0]) * self.period, out_q, out_v, seconds,
                        solver.events)


class RobotMechanism(Mechanism):
    """The robot for the event-driven engine: its forces with the controls u, enable held."""

    def __init__(self, robot: Robot) -> None:
        self.robot = robot
        self.n = robot.nv
        self.servos = np.zeros((len(robot.servos), SERVO_STATE_SIZE))  # controls held
        self.enable = np.ones(len(robot.servos))
        self.extra = np.zeros(len(robot.servos))  # learned torques held
        self._data = mujoco.MjData(robot.model)

    def forces(self, q, v):
        r, n = self.robot, self.n
        mass, tau, budget, bias = np.empty((n, n)), np.empty(n), np.empty(n), np.empty(n)
        robot_forces(r.model._address, self._data._address, self._data.qpos, self._data.qvel,
                     r.dofs, r.thetas, self.servos, self.enable, self.extra,
                     np.ascontiguousarray(q, float),
                     np.ascontiguousarray(v, float), mass, tau, budget, bias)
        return mass, tau, budget


def load_model(model):
    """An ``MjModel`` from a path, an MJCF text, or an ``MjModel`` (returned as is)."""
    if isinstance(model, mujoco.MjModel):
        return model
    text = str(model)
    if text.lstrip().startswith("<"):
        return mujoco.MjModel.from_xml_string(text)
    try:
        return mujoco.MjModel.from_xml_path(text)
    except (ValueError, OSError) as e:
        raise ValueError(f"{text}: not a usable MJCF model ({e})") from None
