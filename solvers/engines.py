"""The engines that simulate servos, chosen by name from one registry (scipy's ``METHODS``).

Every engine is a physics driver around the servo bank (:mod:`frictionsim.servo_bank`); they
differ in how they integrate the joints:

============================  ======================================================  =====
name                          what integrates the joints                              bench
============================  ======================================================  =====
``fixed_step``                frictionsim's fixed step (friction-budget clipping)     yes
``event_driven``              the exact stick–slip reference (solve_ivp with events)  yes
``mujoco``                    MuJoCo's ``mj_step``, the servos in its control         yes
                              callback, friction by the budget (exact)
``mujoco_frictionloss``       the same, friction as MuJoCo's soft friction rows       yes
                              (the reference project's method, for comparison)
``mjcf``                      MuJoCo with the model's own actuators, no frictionsim   no
                              servo (what a robot ships with)
``mjlab``                     MuJoCo Warp (mjlab's simulator), many worlds, the       no
                              servos' Warp kernel (:mod:`frictionsim.solvers.warp_servos`)
``mjx``                       MJX, many worlds, the servos' Warp kernel through JAX's  no
                              FFI (:mod:`frictionsim.solvers.mjx_servos`)
============================  ======================================================  =====

:func:`get_engine` returns one; ``engine.bench(log, params)`` simulates a bench log (a
:class:`~frictionsim.solvers.rollouts.Rollout`), ``engine.build(model, servos,
control_period, scheme, nworld=…, device=…, randomisation=…)`` builds a simulator of servos
on an MJCF model (after :meth:`Engine.check` refused what the engine cannot do) whose
``run(goals, enable, q0, v0)`` gives the one result type of every robot engine, one world or
many, a :class:`~frictionsim.solvers.robot.RobotRun` (positions as the servos report them
before each control period, the physical positions, velocities, cost; worlds first when the
engine ran several). An engine's capabilities (batched, devices, backlash, ripple, learned
actuators, servos at all) are fields of its entry: no command chooses by name. MuJoCo is
imported only by the engines that need it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from frictionsim.errors import ConfigurationError

# numpy and MuJoCo are imported by the engines when they run: the command line lists the
# engines from this registry without loading either.


class RobotSimulator(Protocol):
    """What a robot engine builds: its compiled model, the servos' joints, and a run."""

    model: object          # the compiled mujoco.MjModel
    qadr: object           # each servo joint's qpos address (an integer array)
    dofs: object           # its dof address

    def run(self, goals, enable=None, q0=None, v0=None):
        """Goals (control periods × servos, rad) → a RobotRun."""


@dataclass(frozen=True)
class Engine:
    """An engine of the registry: its name, what it is, its entry points (None where it has
    none) and what it can run.

    ``batched``: its robot builder takes ``nworld`` worlds at once; ``devices``: where it runs
    (``"cpu"``, ``"cuda"``); ``backlash``, ``ripple``, ``learned``: whether it simulates servos
    with a gear gap, the position ripple, a learned actuator; ``servos``: False for the model
    as shipped (no frictionsim servo); ``mesh_contacts``: False where colliding meshes exhaust
    the memory (MJX sizes its collision buffers by them); ``bare``: the engine's own step
    without servos, for timings (:func:`bare_seconds`); ``device_check``: ConfigurationError
    for a device it cannot run on here; ``schemes``: the position updates it integrates
    (MuJoCo's engines: its Euler, ``semi_implicit``; none for one without a fixed step);
    ``bench_learned``: it runs a learned actuator on a bench log; ``logged_supply``: it takes a
    bench log's logged supply voltage."""

    name: str
    summary: str
    bench: Callable | None
    robot: Callable[..., RobotSimulator]
    exact_friction: bool = True
    batched: bool = False
    devices: tuple[str, ...] = ("cpu",)
    backlash: bool = True
    ripple: bool = True
    learned: bool = True
    servos: bool = True
    mesh_contacts: bool = True
    bare: Callable | None = None
    device_check: Callable | None = None
    schemes: tuple[str, ...] = ("reference", "semi_implicit")
    bench_learned: bool = False
    logged_supply: bool = True

    def build(self, model, servos, control_period: float, scheme: str | None = None, *,
              nworld: int = 1, device: str = "cpu", randomisation=None) -> RobotSimulator:
        """The engine's simulator of ``servos`` on ``model`` (:meth:`check` first)."""
        self.check(servos, nworld, device, randomisation)
        if self.batched:
            return self.robot(model, servos, control_period, scheme, nworld=nworld,
                              device=device, randomisation=randomisation)
        return self.robot(model, servos, control_period, scheme)

    def check(self, servos=(), nworld: int = 1, device: str = "cpu", randomisation=None) -> None:
        """ConfigurationError naming what this engine cannot do: many worlds, the device, a
        randomisation, the servos' backlash, ripple or learned actuator."""
        import numbers

        if isinstance(nworld, bool) or not isinstance(nworld, numbers.Integral) or nworld < 1:
            raise ConfigurationError(f"engine {self.name}: worlds must be a whole number ≥ 1, got "
                                     f"{nworld!r}")
        if not self.batched and (nworld != 1 or randomisation is not None):
            raise ConfigurationError(f"engine {self.name} runs one world (the batched engines: "
                                     f"{', '.join(engine_names('robot', batched=True))})")
        if self.device_check is not None:
            self.device_check(device)
        kind = device.split(":")[0] if isinstance(device, str) else device
        if kind not in self.devices:
            raise ConfigurationError(f"engine {self.name} runs on {' or '.join(self.devices)}, not "
                                     f"{device!r}")
        for servo in servos if self.servos else ():
            self._check_servo(servo)

    def check_scheme(self, scheme: str | None) -> None:
        """ConfigurationError when this engine cannot integrate with ``scheme`` (None: the
        parameter files' own, which a MuJoCo engine takes as its Euler, with a warning)."""
        if scheme is not None and not self.schemes:
            raise ConfigurationError(f"--scheme {scheme}: engine {self.name} has no fixed "
                                     "step's position update to choose (it would do nothing)")
        if scheme is not None and scheme not in self.schemes:
            raise ConfigurationError(f"--scheme {scheme}: engine {self.name} steps with "
                                     f"{' or '.join(self.schemes)} only (MuJoCo's Euler is the "
                                     "semi_implicit update)")

    def check_bench(self, params) -> None:
        """ConfigurationError for a bench simulation this engine cannot run: a learned actuator,
        or a logged supply (the ``supply`` extension) where it takes none."""
        from frictionsim.learned_files import LearnedActuator

        learned = isinstance(params, LearnedActuator)
        extensions = (params.physics.extensions if params.physics is not None else ()) \
            if learned else params.extensions
        if learned and not self.bench_learned:
            raise ConfigurationError(f"a learned {params.model} model: on a bench log it runs on "
                                     "the fixed step only (--engine fixed_step); in MuJoCo, put "
                                     "it on a robot's joints (robot simulate --engine mujoco, "
                                     "ServoModel)")
        if "supply" in extensions and not self.logged_supply:
            raise ConfigurationError("--with supply: inside MuJoCo the supply is a source with "
                                     "internal resistance (supply_emf, supply_resistance), not the "
                                     "log's input_volts; simulate the logged supply with --engine "
                                     "fixed_step")

    def _check_servo(self, servo) -> None:
        from frictionsim.learned_files import LearnedActuator

        params = getattr(servo, "params", None)
        if params is None:
            return
        if isinstance(params, LearnedActuator) and not self.learned:
            raise ConfigurationError(f"engine {self.name} does not run learned actuators "
                                     f"({servo.joint})")
        theta = servo.theta()
        from frictionsim.layout import BACKLASH, MESHING_AMPLITUDE, RIPPLE_AMPLITUDE

        if theta[BACKLASH] > 0 and not self.backlash:
            from frictionsim.gear_gap import BACKLASH_ENGINES

            raise ConfigurationError(BACKLASH_ENGINES.format(engine=f"engine {self.name}"))
        if (theta[RIPPLE_AMPLITUDE] != 0 or theta[MESHING_AMPLITUDE] != 0) and not self.ripple:
            from frictionsim.gear_gap import RIPPLE_ENGINES

            raise ConfigurationError(RIPPLE_ENGINES.format(engine=f"engine {self.name}"))


def _check_warp_device(device: str) -> None:
    from frictionsim.solvers.warp_servos import check_device

    check_device(device)


def _check_jax_device(device: str) -> None:
    """MJX runs on JAX's default device: ConfigurationError when another was asked for."""
    _check_warp_device(device)  # the servos' kernel runs on Warp's device of the same name
    try:
        import jax
    except ImportError:
        from frictionsim.errors import MissingExtra

        raise MissingExtra("MJX needs JAX: pip install 'frictionsim[jax]'") from None
    backend = jax.default_backend()
    wanted = "gpu" if device.startswith("cuda") else "cpu"
    if backend != wanted:
        raise ConfigurationError(f"--device {device}: MJX runs on JAX's default device, here "
                                 f"{backend} (JAX_PLATFORMS=cpu or cuda chooses it)")


def get_engine(name: str, where: str = "robot") -> Engine:
    """The engine ``name``; ConfigurationError listing the engines that run ``where``
    (``"robot"`` or ``"bench"``)."""
    names = engine_names(where)
    if name not in names:
        raise ConfigurationError(f"engine {name!r}: expected one of {', '.join(names)}")
    return ENGINES[name]


def engine_names(where: str = "robot", batched: bool | None = None) -> tuple[str, ...]:
    """The names of the engines with a ``where`` entry point, in the registry's order; only
    the batched ones (many worlds at once) or only the others if ``batched`` is given."""
    return tuple(n for n, e in ENGINES.items() if getattr(e, where) is not None
                 and (batched is None or e.batched == batched))


# ------------------------------------------------------------------------------- the bench

def _bench_fixed_step(log, params):
    from frictionsim.learned_files import LearnedActuator

    if isinstance(params, LearnedActuator):
        from frictionsim.solvers.learned_rollout import simulate_learned

        return simulate_learned(log, params)
    from frictionsim.solvers.rollouts import simulate

    return simulate(log, params)


def _bench_event_driven(log, params):
    from frictionsim.solvers.one_joint import simulate_log_events
    from frictionsim.solvers.rollouts import Rollout, check_finite, rollout_inputs

    x = rollout_inputs(log, params)
    result = simulate_log_events(x.goal, x.enable, x.position[0], x.v0, x.theta, x.bench,
                                 log.dt, supply=x.supply)
    check_finite(log, result.q, x.what)
    return Rollout(log, result.t, result.q, result.v, x.position)


def _bench_mujoco(friction: str):
    def run(log, params):
        from frictionsim.solvers.mujoco_adapter import simulate_bench

        return simulate_bench(log, params, friction)

    return run


# ------------------------------------------------------------------------------- robots

def _robot_class(method: str):
    from frictionsim.solvers.robot import Robot

    return type(f"{method}_robot", (Robot,), {"run": getattr(Robot, method)})


def _robot_fixed_step(model, servos, control_period: float, scheme: str | None = None):
    return _robot_class("fixed_step")(model, servos, control_period=control_period,
                                      scheme=scheme)


def _robot_event_driven(model, servos, control_period: float, scheme: str | None = None):
    return _robot_class("event_driven")(model, servos, control_period=control_period,
                                        scheme=scheme)


class MujocoSimulator:
    """Servos in MuJoCo's own step (:class:`~frictionsim.solvers.mujoco_adapter.ServoModel`),
    run one control period at a time."""

    def __init__(self, model, servos, control_period: float, friction: str = "budget") -> None:
        from frictionsim.solvers.mujoco_adapter import ServoModel

        self.servo_model = ServoModel(model, servos, friction=friction,
                                      control_period=control_period)
        self.model = self.servo_model.model
        self._source = (model, list(servos), friction)
        self.qadr, self.dofs = self.servo_model.qpos_adr, self.servo_model.dofs
        self.substeps = self.servo_model.schedule.substeps
        self.period = control_period

    def run(self, goals, enable=None, q0=None, v0=None):
        """Goals (control periods × servos, rad), enable flags, initial qpos and qvel → a
        RobotRun."""
        import time

        import mujoco
        import numpy as np

        from frictionsim.solvers.robot import RobotRun

        sm, n = self.servo_model, len(goals)
        data = sm.make_data()
        if q0 is not None:
            data.qpos[:] = q0
        if v0 is not None:
            data.qvel[:] = v0
        out_q = np.empty((n, self.model.nq))
        out_v = np.empty((n, self.model.nv))
        physical = np.empty_like(out_q)
        start = time.perf_counter()
        for k in range(n):
            physical[k], out_v[k] = data.qpos, data.qvel
            sm.set_goals(data, goals[k])
            if enable is not None:
                sm.set_enable(data, enable[k] > 0.5)
            mujoco.mj_step(self.model, data, nstep=self.substeps)
            out_q[k] = physical[k]
            out_q[k, self.qadr] = sm.reported_positions(data)
        seconds = time.perf_counter() - start
        sm.check(data)
        return RobotRun(np.arange(n) * self.period, out_q, out_v, seconds, physical=physical)


class MjcfSimulator:
    """The model as it ships: its own actuators (one per servo joint, found by the joint they
    drive) take the goals; no frictionsim servo. ``servos``: the joints' names (or servos,
    which only name them). A joint with a gear-gap hinge ``<joint>_backlash`` (``robot
    export-mjcf --backlash-hinge``) reports the sum of both angles, its output's."""

    def __init__(self, model, servos, control_period: float, scheme: str | None = None) -> None:
        import mujoco

        from frictionsim.solvers.robot import load_model

        self.model = load_model(model.compile() if hasattr(model, "compile") else model)
        names = [s if isinstance(s, str) else s.joint for s in servos]
        jids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        self.actuators = []
        for name, jid in zip(names, jids):
            found = [a for a in range(self.model.nu)
                     if self.model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
                     and self.model.actuator_trnid[a, 0] == jid]
            if jid < 0 or not found:
                raise ConfigurationError(f"the MJCF has no actuator on joint {name!r}: the mjcf "
                                         "engine drives the model's own actuators")
            self.actuators.append(found[0])
        self.qadr = self.model.jnt_qposadr[jids]
        self.dofs = self.model.jnt_dofadr[jids]
        # a gear-gap hinge of robot export-mjcf --backlash-hinge: the output is the sum
        from frictionsim.solvers.robot_export import BACKLASH_HINGE

        self.hinges = [(int(self.qadr[i]), int(self.model.jnt_qposadr[h]))
                       for i, h in enumerate(mujoco.mj_name2id(
                           self.model, mujoco.mjtObj.mjOBJ_JOINT, BACKLASH_HINGE.format(joint=n))
                           for n in names) if h >= 0]
        from frictionsim.schedule import ControlSchedule

        self.substeps = ControlSchedule.of(control_period, float(self.model.opt.timestep)).substeps
        self.period = control_period

    def run(self, goals, enable=None, q0=None, v0=None):
        """Goals (control periods × servos, rad), enable flags, initial qpos and qvel → a
        RobotRun."""
        import time

        import mujoco
        import numpy as np

        from frictionsim.solvers.robot import RobotRun

        data = mujoco.MjData(self.model)
        if q0 is not None:
            data.qpos[:] = q0
        if v0 is not None:
            data.qvel[:] = v0
        # an actuator with a state of its own (a dcmotor's slewed target) starts at its
        # joint, as the firmware's limiter does
        for a, joint_q in zip(self.actuators, data.qpos[self.qadr]):
            if self.model.actuator_actnum[a]:
                data.act[self.model.actuator_actadr[a]] = joint_q
        n = len(goals)
        out_q = np.empty((n, self.model.nq))
        out_v = np.empty((n, self.model.nv))
        start = time.perf_counter()
        for k in range(n):
            out_q[k], out_v[k] = data.qpos, data.qvel
            for joint, hinge in self.hinges:
                out_q[k, joint] += data.qpos[hinge]
            data.ctrl[self.actuators] = goals[k]
            mujoco.mj_step(self.model, data, nstep=self.substeps)
        seconds = time.perf_counter() - start
        return RobotRun(np.arange(n) * self.period, out_q, out_v, seconds, physical=out_q)


def _robot_mujoco(friction: str):
    def build(model, servos, control_period: float, scheme: str | None = None):
        return MujocoSimulator(model, servos, control_period, friction)

    return build


def _robot_mjlab(model, servos, control_period: float, scheme: str | None = None,
                 nworld: int = 1, device: str = "cpu", randomisation=None):
    from frictionsim.solvers.warp_servos import WarpRobot

    return WarpRobot(model, servos, control_period, nworld=nworld, device=device,
                     randomisation=randomisation)


def _robot_mjx(model, servos, control_period: float, scheme: str | None = None,
               nworld: int = 1, device: str = "cpu", randomisation=None):
    from frictionsim.solvers.mjx_servos import MjxRobot

    return MjxRobot(model, servos, control_period, nworld=nworld, randomisation=randomisation)


# ------------------------------------------------------------------- the engines' own step

def bare_seconds(engine: Engine, sim, steps: int, goals) -> float | None:
    """Seconds per physics step of every world of ``sim``'s model as shipped (its own
    actuators holding ``goals``, one per servo), stepped by the engine alone, without
    frictionsim's servos (its ``bare`` entry; None for an engine that has none)."""
    return None if engine.bare is None else engine.bare(sim, steps, goals)


def _bare_mujoco(sim, steps: int, goals) -> float:
    """MuJoCo's step of the model as shipped (its own actuators holding the goals, Euler as
    the adapter's model), with no servo."""
    import time
    import warnings

    import mujoco
    import numpy as np

    from frictionsim.solvers.batched.setup import ServoSetup

    source, servos, _ = sim._source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, ctrl = ServoSetup.build(source, servos, sim.period).shipped()
    data = mujoco.MjData(model)
    on = ctrl >= 0
    data.ctrl[ctrl[on]] = np.asarray(goals, dtype=float)[on]
    mujoco.mj_step(model, data, nstep=min(steps, 100))
    start = time.perf_counter()
    mujoco.mj_step(model, data, nstep=steps)
    return (time.perf_counter() - start) / steps


def _bare_warp(sim, steps: int, goals) -> float:
    return sim.bare_seconds(steps, goals)


def _bare_mjx(sim, steps: int, goals) -> float:
    return sim.bare_seconds(steps, goals)


#: The registry: name → engine, in the order commands list them.
ENGINES: dict[str, Engine] = {
    "fixed_step": Engine("fixed_step", "frictionsim's compiled fixed step",
                         _bench_fixed_step, _robot_fixed_step, bench_learned=True),
    # integrated exactly between events: no position update to choose
    "event_driven": Engine("event_driven", "the exact stick–slip reference",
                           _bench_event_driven, _robot_event_driven, schemes=()),
    "mujoco": Engine("mujoco", "MuJoCo's step with the servo adapter, friction by the budget",
                     _bench_mujoco("budget"), _robot_mujoco("budget"), bare=_bare_mujoco,
                     schemes=("semi_implicit",), logged_supply=False),
    "mujoco_frictionloss": Engine("mujoco_frictionloss", "MuJoCo's step with the servo "
                                  "adapter, friction as MuJoCo's soft friction rows",
                                  _bench_mujoco("frictionloss"), _robot_mujoco("frictionloss"),
                                  exact_friction=False, backlash=False, ripple=False,
                                  bare=_bare_mujoco, schemes=("semi_implicit",),
                                  logged_supply=False),
    "mjcf": Engine("mjcf", "MuJoCo with the model's own actuators (no frictionsim servo)",
                   None, MjcfSimulator, exact_friction=False, servos=False, backlash=False,
                   ripple=False, learned=False, schemes=()),
    "mjlab": Engine("mjlab", "MuJoCo Warp (mjlab's simulator), many worlds, the servos in "
                    "Warp kernels, friction by the budget", None, _robot_mjlab, batched=True,
                    devices=("cpu", "cuda"), bare=_bare_warp, device_check=_check_warp_device,
                    schemes=("semi_implicit",)),
    "mjx": Engine("mjx", "MJX (JAX), many worlds, the servos' Warp kernel through JAX's FFI, "
                  "friction by the budget", None, _robot_mjx, batched=True,
                  devices=("cpu", "cuda"), mesh_contacts=False, bare=_bare_mjx,
                  device_check=_check_jax_device, schemes=("semi_implicit",)),
}
