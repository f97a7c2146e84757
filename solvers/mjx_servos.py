"""Servos in MJX (MuJoCo XLA) and MuJoCo Playground: a JAX servo step for ``jit``, ``vmap`` and
``scan`` (optional extra ``jax``).

The servo bank in array code (:mod:`frictionsim.solvers.array_bank`) on ``jax.numpy``, for one
world (``vmap`` it over many): the firmware, the motor, a learned network, the supply, each
world's control period when it is due, and friction by docs/model.md §10's problem solved
exactly on the world's mass matrix:

- :func:`servo_step` ``(state, goals, qpos, qvel, servos, mass, bias, passive) → (state,
  qfrc)``: the torque of every dof this physics step (the servos' dofs: τ_m + network +
  friction; the others 0), for a pipeline of your own; :func:`servo_forces` the same with the
  positions and velocities it goes on from (servos with ``backlash``: a gear's impact writes
  them, :mod:`frictionsim.solvers.array_gear`);
- :func:`mjx_step` ``(model, data, state, goals, servos) → (data, state)``: one MJX step with
  the servos where MuJoCo's C engine calls its control callback, between the velocity stage
  (M(q), bias and passive forces fresh) and the actuation: ``mjx.step``'s own stages
  (position, velocity, actuation, acceleration, constraints, the sensors, Euler) with the
  servos' torques written into ``qfrc_applied`` after the velocity stage.

The model must be prepared as every frictionsim MuJoCo engine prepares it
(:func:`~frictionsim.solvers.mujoco_adapter.servo_spec`: the servos' armature, no joint damping
or friction of its own, zero-force goal actuators, Euler); :func:`build` does it. In float64
(``jax.config.update("jax_enable_x64", True)`` before anything else), a joint the friction
budget holds stays where it is to round-off (docs/results.md).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.limits import control_substeps
from frictionsim.solvers import array_bank as ab
from frictionsim.solvers.array_gear import gear_layout, gear_step
from frictionsim.solvers.robot_gear import has_backlash


def import_jax():
    try:
        import jax
        import jax.numpy as jnp
        from mujoco import mjx
    except ImportError:
        raise MissingExtra("MJX needs JAX: pip install 'frictionsim[jax]'") from None
    return jax, jnp, mjx


class MjxServos(NamedTuple):
    """The constants of J servos on an MJX model: the bank's arrays
    (:class:`~frictionsim.solvers.array_bank.ArrayServos`, theta and firmware (J, ·): one
    world's; stack them over worlds to ``vmap`` per-world parameters), the joints' qpos and
    dof addresses, M's packed index, the physics step and its control period (s), the
    physics steps per period."""

    bank: ab.ArrayServos
    qadr: object
    dofs: object
    mass_index: object
    dt: float
    period: float
    substeps: int
    gear: object = None


class MjxServoState(NamedTuple):
    """What the servos of one world carry from step to step: the bank's records and the
    physics steps since the world's reset (its control-period phase)."""

    bank: ab.BankState
    steps: object


def build(mjcf, servos: list, control_period: float, dtype=None):
    """(mujoco.MjModel prepared for the servos, :class:`MjxServos`) for MJX: put the model
    with ``mjx.put_model``."""
    import warnings

    from frictionsim.solvers.mujoco_adapter import SchemeWarning, semi_implicit_theta, servo_spec
    from frictionsim.solvers.mujoco_dynamics import check_hinges, mujoco
    from frictionsim.solvers.robot import check_delay_reach, servo_nets
    from frictionsim.solvers.warp_servos import mass_index

    jax, jnp, _ = import_jax()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        spec, _ = servo_spec(mjcf, servos)
    if spec.option.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        # contacts off: the geoms' collision masks change nothing, and MJX sizes its collision
        # memory by them (the SO-101's meshes would ask for hundreds of GB)
        for geom in spec.geoms:
            geom.contype = geom.conaffinity = 0
    model = spec.compile()
    dt = float(model.opt.timestep)
    substeps = control_substeps(control_period, dt)
    check_delay_reach(servos, control_period)
    qadr, dofs = check_hinges(model, [s.joint for s in servos])
    dtype = dtype or (jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    nets = servo_nets(servos)
    bank = ab.servos(np.array([semi_implicit_theta(s) for s in servos]),
                     np.array([s.firmware(control_period) for s in servos]),
                     nets if (nets[:, 0] > 0).any() else None, xp=jnp, dtype=dtype)
    bank = bank._replace(theta=bank.theta[0], firmware=bank.firmware[0])  # one world's
    gear = None
    if has_backlash(np.asarray(bank.theta)):
        gear = gear_layout(qadr, dofs, model.nq, model.nv, jnp, dtype)
    return model, MjxServos(bank, jnp.asarray(qadr), jnp.asarray(dofs),
                            jnp.asarray(mass_index(model)), dt, control_period, substeps, gear)


def reset(qpos, qvel, servos: MjxServos) -> MjxServoState:
    """A world's servos reset at its state (qpos, qvel)."""
    _, jnp, _ = import_jax()
    q, v = qpos[servos.qadr], qvel[servos.dofs]
    return MjxServoState(ab.reset(q, v, jnp), jnp.zeros((), dtype=jnp.int32))


def full_mass(packed, index):
    """M (nv, nv) from MuJoCo's packed form."""
    _, jnp, _ = import_jax()
    return jnp.where(index >= 0, packed[jnp.maximum(index, 0)], 0.0)


def servo_step(state: MjxServoState, goals, qpos, qvel, servos: MjxServos, mass, bias,
               passive, period: bool | None = None):
    """One physics step of one world's servos: (state, qfrc (nv,)). ``goals`` (J,) in the
    joints' angles; ``mass`` the world's M (nv, nv) or its packed form; ``bias``, ``passive``
    its bias and passive forces (nv,) of this step (module docstring). ``period``: whether a
    control period starts at this step, if the caller knows it (a loop of whole periods:
    True at each period's first step, False at the others, which then skip the firmware);
    None: when the world's phase says so. Servos with ``backlash`` take :func:`servo_forces`,
    which also writes the state."""
    if servos.gear is not None:
        raise ConfigurationError("servos with backlash write the state (a gear's impact): call "
                                 "mjx_servos.servo_forces, which returns qpos and qvel too")
    state, qfrc, _, _ = servo_forces(state, goals, qpos, qvel, servos, mass, bias, passive,
                                     period)
    return state, qfrc


def servo_forces(state: MjxServoState, goals, qpos, qvel, servos: MjxServos, mass, bias,
                 passive, period: bool | None = None):
    """:func:`servo_step` returning (state, qfrc, qpos, qvel): with ``backlash`` the gaps a
    step closed are impacts, written into the positions and velocities the step goes on
    from (:func:`frictionsim.solvers.array_gear.gear_step`); without, qpos and qvel as given."""
    _, jnp, _ = import_jax()
    if mass.ndim == 1:
        mass = full_mass(mass, servos.mass_index)
    q, v = qpos[servos.qadr], qvel[servos.dofs]
    bank = state.bank
    if period is not False:
        due = None if period else (state.steps % servos.substeps) == 0
        bank = ab.period(bank, servos.bank, goals, q, v, jnp.ones_like(q), math.nan,
                         servos.period, shared_supply=True, where=due)
    tau = passive - bias
    if servos.gear is not None:
        bank, qfrc, qpos, qvel = gear_step(bank, servos.bank, servos.gear, qpos, qvel, mass, tau,
                                           servos.dt)
        return MjxServoState(bank, state.steps + 1), qfrc, qpos, qvel
    bank, tau_m, extra = ab.step(bank, servos.bank, v)
    budget = jnp.zeros_like(tau).at[servos.dofs].set(
        ab.servo_budget(v, tau_m, tau[servos.dofs], q, servos.bank))
    tau = tau.at[servos.dofs].add(tau_m + extra)
    tau_f = ab.clip_friction(mass, tau, qvel, budget, servos.dt)
    qfrc = jnp.zeros_like(tau).at[servos.dofs].set(tau_m + extra + tau_f[servos.dofs])
    return MjxServoState(bank, state.steps + 1), qfrc, qpos, qvel


def mjx_step(model, data, state: MjxServoState, goals, servos: MjxServos,
             period: bool | None = None):
    """One MJX step of a world with its servos (module docstring): (data, state);
    ``period`` as :func:`servo_step`'s."""
    _, _, mjx = import_jax()
    data = mjx.sensor_pos(model, mjx.fwd_position(model, data))
    data = mjx.sensor_vel(model, mjx.fwd_velocity(model, data))
    state, qfrc, qpos, qvel = servo_forces(state, goals, data.qpos, data.qvel, servos,
                                           mjx.full_m(model, data), data.qfrc_bias,
                                           data.qfrc_passive, period)
    data = data.replace(qfrc_applied=qfrc, qpos=qpos, qvel=qvel)
    data = mjx.fwd_acceleration(model, mjx.fwd_actuation(model, data))
    return mjx.euler(model, _constrained(model, data)), state


def _constrained(model, data):
    """The constraint solve and the acceleration sensors, as ``mjx.forward`` does them: a
    model without constraint rows keeps the smooth acceleration (MJX's solver loop would
    cost twice the rest of the step to find it)."""
    _, _, mjx = import_jax()
    rows = getattr(getattr(data, "_impl", data), "efc_J", None)
    if rows is not None and rows.size == 0:
        data = data.replace(qacc=data.qacc_smooth)
    else:
        data = mjx.solve(model, data)
    return mjx.sensor_acc(model, data)


class MjxRobot:
    """frictionsim's MJX engine: servos on an MJCF model, ``nworld`` worlds stepped by one
    ``jit``-compiled ``vmap`` of :func:`mjx_step` over a ``scan`` of control periods."""

    def __init__(self, mjcf, servos: list, control_period: float, nworld: int = 1) -> None:
        jax, jnp, mjx = import_jax()
        self.jax, self.jnp, self.mjx = jax, jnp, mjx
        self.model, self.servos = build(mjcf, servos, control_period)
        self.mx = mjx.put_model(self.model)
        self.nworld = nworld
        self.period = control_period
        self.qadr = np.asarray(self.servos.qadr)
        self.dofs = np.asarray(self.servos.dofs)
        self._run = jax.jit(jax.vmap(self._one, in_axes=(0, 0, 0)))

    def _one(self, goals, q0, v0):
        import mujoco

        jax, mjx = self.jax, self.mjx
        servos = self.servos
        data = mjx.put_data(self.model, mujoco.MjData(self.model)).replace(qpos=q0, qvel=v0)
        state = reset(data.qpos, data.qvel, servos)
        # a step may return other integer widths than put_data gives (contacts in float64
        # mode): the loop's carry takes the step's own
        stepped = jax.eval_shape(lambda d, s: mjx_step(self.mx, d, s, goals[0], servos,
                                                       period=True), data, state)
        data = jax.tree_util.tree_map(lambda x, o: x.astype(o.dtype), data, stepped[0])

        def period(carry, goal):
            data, state = carry
            before = (data.qpos, data.qvel)
            data, state = mjx_step(self.mx, data, state, goal, servos, period=True)

            def physics(c, _):
                return mjx_step(self.mx, c[0], c[1], goal, servos, period=False), None

            if servos.substeps > 1:
                (data, state), _ = jax.lax.scan(physics, (data, state), None,
                                                length=servos.substeps - 1)
            return (data, state), (before[0], before[1], state.bank.reported)

        _, out = jax.lax.scan(period, (data, state), goals)
        return out

    def run_batch(self, goals, enable=None, q0=None, v0=None):
        """:meth:`run` answering per world whatever their number: (reported, physical,
        velocity, seconds), numpy (worlds × periods × ·)."""
        return self.run(goals, enable, q0, v0, batch=True)

    def run(self, goals, enable=None, q0=None, v0=None, batch: bool = False):
        """Goals (periods × J, or worlds × periods × J) → for one world a
        :class:`~frictionsim.solvers.robot.RobotRun`, for several (reported, physical,
        velocity, seconds) as numpy (worlds × periods × ·). The servos are always enabled
        here."""
        import time

        if enable is not None and not np.all(np.asarray(enable) > 0.5):
            raise ConfigurationError("the MJX engine runs its servos enabled throughout")
        jnp = self.jnp
        goals = np.asarray(goals, dtype=float)
        if goals.ndim == 2:
            goals = np.broadcast_to(goals, (self.nworld, *goals.shape))
        q0 = np.broadcast_to(self.model.qpos0 if q0 is None else q0, (self.nworld, self.model.nq))
        v0 = np.broadcast_to(np.zeros(self.model.nv) if v0 is None else v0,
                             (self.nworld, self.model.nv))
        start = time.perf_counter()
        physical, velocity, reported = (np.asarray(a) for a in self._run(
            jnp.asarray(goals), jnp.asarray(np.array(q0)), jnp.asarray(np.array(v0))))
        seconds = time.perf_counter() - start
        if batch or self.nworld > 1:
            return reported, physical, velocity, seconds
        from frictionsim.solvers.robot import RobotRun

        q = physical[0].copy()
        q[:, self.qadr] = reported[0]
        n = goals.shape[1]
        return RobotRun(np.arange(n) * self.period, q, velocity[0], seconds,
                        physical=physical[0])
