"""A robot's recordings replayed in simulation: closed loop from the recorded goals.

Each recording is simulated from its first recorded state (positions and velocities,
mapped to the MJCF's joints), its goals written once per bus cycle and held by the
servos' firmware (zero-order hold at the bus period, each cycle lasting as long as the
recording says, rounded to whole control periods), the servos' position loop at the robot
file's control period, which is also the physics step. The prediction of recorded row k
is the simulated state just before goal k takes effect, the moment the bus read row k.

Engines: ``fixed_step`` (frictionsim's n-joint fixed step, :class:`~frictionsim.solvers.
robot.Robot`), ``mujoco`` (MuJoCo's own step with the servo adapter,
:class:`~frictionsim.solvers.mujoco_adapter.ServoModel`, ``mujoco.rollout``) and
``event_driven`` (the exact reference, slow); and, as the baseline without frictionsim,
``mjcf``: the MJCF as shipped in plain MuJoCo, its own actuators driven by the goals, its own
armature, damping and frictionloss (what users of the model simulate today).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.learned_files import LearnedActuator
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.engines import engine_names
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.mjcf_files import read_model

#: The engines that replay a recording at a time (:data:`frictionsim.solvers.engines.ENGINES`).
ENGINES = engine_names("robot", batched=False)
#: Those that replay many recordings at once, a world each (:func:`replay_batched`).
BATCHED_ENGINES = engine_names("robot", batched=True)


def stable_timestep(robot: RobotDescription, model, servos: list) -> float:
    """The physics step of a replay: the control period, or the largest whole fraction of it
    with dt·c_j/I_j ≤ 1 for every servo joint, c_j = kt²/R + K_v its motor's electrical and
    viscous damping (N·m·s/rad), I_j its inertia at the model's reference pose plus its
    armature. The step treats that damping explicitly and is unstable beyond dt·c/I = 2: a
    servo identified on a bench with a heavy pendulum can carry a rotor inertia far below
    what a light joint (the SO-101's wrist roll: 4e-5 kg·m²) needs at 2 ms. ``servos``: the
    :class:`~frictionsim.solvers.robot.JointServo` of each servo joint, in the robot file's
    order."""
    import math

    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    mass = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, mass)
    rate = 0.0
    for joint, servo in zip(robot.servo_joints, servos):
        physics = servo.params
        if isinstance(physics, LearnedActuator):  # a net's bare joint has no damping of its own
            if physics.physics is None:
                continue
            physics = physics.physics
        values = physics.values
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint.mjcf)
        dof = int(model.jnt_dofadr[jid])
        damping = values["kt"] ** 2 / values["R"] + values.get("friction_viscous", 0.0)
        rate = max(rate, damping / (mass[dof, dof] + values["armature"]))
    return robot.control_period / max(1, math.ceil(robot.control_period * rate))


def hold_counts(recording: Recording, period: float) -> np.ndarray:
    """Control periods each recorded goal is held: the time to the next row in whole
    periods (at least 1); the last row's goal is held for none (nothing is compared after
    it)."""
    steps = np.maximum(1, np.rint(np.diff(recording.t) / period)).astype(np.int64)
    return np.append(steps, 0)


@dataclass
class RecordedRun:
    """A simulated recording: the prediction of every recorded row (recorded convention,
    rad) per simulated joint, and the engine's cost."""

    name: str
    joints: tuple[str, ...]
    predicted: np.ndarray
    measured: np.ndarray
    goal: np.ndarray
    t: np.ndarray
    seconds: float
    timestep: float = 0.0
    """The physics step (s): the control period unless :func:`stable_timestep` shortened it."""
    motor_side: np.ndarray | None = None
    """With ``backlash`` (the fixed step): the motor side of each gear's gap, p = q + δ, in the
    recorded convention (rad); None otherwise."""
    velocity: np.ndarray | None = None
    """The simulated velocity at every recorded row (recorded convention, rad/s; the
    one-world engines), beside ``predicted``."""

    @property
    def joint_mae(self) -> dict[str, float]:
        err = np.abs(self.predicted - self.measured).mean(axis=0)
        return {j: float(e) for j, e in zip(self.joints, err)}

    @property
    def mean_mae(self) -> float:
        return float(np.mean(list(self.joint_mae.values())))


def recorded_arrays(robot: RobotDescription, recording: Recording):
    """Goals, positions and velocities of the simulated joints in the MJCF's convention, one
    column per servo joint (robot file order)."""
    cols = [recording.column(j.name) for j in robot.servo_joints]
    goal = np.column_stack([j.to_model(recording.goal[:, c])
                            for j, c in zip(robot.servo_joints, cols)])
    q = np.column_stack([j.to_model(recording.position[:, c])
                         for j, c in zip(robot.servo_joints, cols)])
    v = np.column_stack([j.sign * recording.velocity[:, c]
                         for j, c in zip(robot.servo_joints, cols)])
    return goal, q, v


def to_recorded(robot: RobotDescription, q_model: np.ndarray) -> np.ndarray:
    """Simulated MJCF angles (rows × servo joints) → the recorded convention."""
    return np.column_stack([j.from_model(q_model[:, i]) for i, j in enumerate(robot.servo_joints)])


class Replay:
    """The robot's servos ready to replay recordings on one engine: the model compiled, the
    physics step chosen (:func:`stable_timestep`) and the simulator built once per run, not
    once per recording (compiling the SO-101 costs about as much as replaying a motion).
    ``spec`` from :func:`robot_spec` (not edited); ``params``: actuator name → ParameterSet
    (unused by ``mjcf``); ``variant``: a seed to draw every servo within its parameter set's
    ``ranges`` (:func:`frictionsim.solvers.robot.draw_servos`), or None for the set itself."""

    def __init__(self, robot: RobotDescription, spec, params: dict, engine: str = "fixed_step",
                 scheme: str | None = None, variant: int | None = None) -> None:
        from frictionsim.solvers.engines import get_engine
        from frictionsim.solvers.robot_servos import joint_servos

        chosen = get_engine(engine)
        self.robot, self.engine = robot, engine
        if not chosen.servos:  # the model as shipped: no servo of frictionsim's
            self.timestep = robot.control_period
            self._sim = chosen.robot(spec.compile(), [j.mjcf for j in robot.servo_joints],
                                     robot.control_period)
            return
        servos = joint_servos(robot, params)
        if variant is not None:  # domain randomisation: every servo drawn within its ranges
            from frictionsim.solvers.robot import draw_servos

            servos = draw_servos(servos, 1, variant)[0]
        self.servos = servos
        # compile a copy: a compiled spec holds its processed meshes, and every copy of it
        # (the simulator makes two) would carry them (about 120 MB each on the SO-101)
        self.timestep = stable_timestep(robot, read_model(spec), servos)
        spec = spec.copy()
        spec.option.timestep = self.timestep
        self._sim = chosen.robot(spec, servos, robot.control_period, scheme)

    @property
    def model(self):
        """The compiled ``mujoco.MjModel`` the engine steps."""
        return self._sim.model

    def run(self, recording: Recording) -> RecordedRun:
        """Simulate ``recording`` in closed loop from its first recorded state."""
        import time

        robot, engine, sim = self.robot, self.engine, self._sim
        goal, q_rec, v_rec = recorded_arrays(robot, recording)
        counts = hold_counts(recording, robot.control_period)
        counts[-1] = 1  # one more period, so that the last row has its prediction
        q0, v0 = sim.model.qpos0.copy(), np.zeros(sim.model.nv)
        q0[sim.qadr], v0[sim.dofs] = q_rec[0], v_rec[0]
        goals = np.repeat(goal, counts, axis=0)
        start = time.perf_counter()
        run = sim.run(goals, q0=q0, v0=v0)
        seconds = time.perf_counter() - start
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        q_model = run.q[starts][:, sim.qadr]
        if not np.all(np.isfinite(q_model)):
            raise SimulationError(f"{recording.name}: the {engine} simulation diverged "
                                  "(non-finite position)")
        cols = [recording.column(j.name) for j in robot.servo_joints]
        gap = getattr(run, "gap", None)
        motor_side = to_recorded(robot, q_model + gap[starts]) \
            if gap is not None and np.any(gap) else None
        signs = np.array([j.sign for j in robot.servo_joints])
        return RecordedRun(recording.name, tuple(j.name for j in robot.servo_joints),
                           to_recorded(robot, q_model), recording.position[:, cols],
                           recording.goal[:, cols], recording.t, seconds, self.timestep,
                           motor_side, run.v[starts][:, sim.dofs] * signs)


def replay_batched(robot: RobotDescription, spec, params: dict, recordings: list[Recording],
                   engine: str = "mjlab", device: str = "cpu", envs: int | None = None,
                   scheme: str | None = None) -> list[RecordedRun]:
    """The recordings replayed on a batched engine (``mjlab``: MuJoCo Warp, ``mjx``), one
    world per recording, ``envs`` worlds at a time (default all): each from its first recorded
    state, its goals held for its bus cycles, the shorter ones holding their last goal to the
    end of the longest. The same :class:`RecordedRun` as :meth:`Replay.run`, each with its
    share of the batch's seconds."""
    import mujoco

    from frictionsim.solvers.engines import get_engine
    from frictionsim.solvers.robot_servos import joint_servos

    chosen = get_engine(engine)
    if not chosen.batched:
        raise ConfigurationError(f"engine {engine!r} runs one world: use Replay")
    servos = joint_servos(robot, params)
    compiled = spec.compile()
    contacts = not compiled.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    # with contacts off, MJX's build drops the collision masks that would size its memory
    if not chosen.mesh_contacts and contacts and \
            np.any((compiled.geom_contype | compiled.geom_conaffinity) != 0):
        raise ConfigurationError(f"{engine} runs out of memory on this model's collision meshes "
                                 "(2 worlds of the SO-101 ask for 435 GB in MJX): use --engine "
                                 "mjlab, or a model whose geoms do not collide")
    timestep = stable_timestep(robot, compiled, servos)
    spec = spec.copy()
    spec.option.timestep = timestep
    inputs = []
    for rec in recordings:
        goal, q_rec, v_rec = recorded_arrays(robot, rec)
        counts = hold_counts(rec, robot.control_period)
        counts[-1] = 1
        inputs.append((rec, np.repeat(goal, counts, axis=0), counts, q_rec[0], v_rec[0]))
    size = envs or len(inputs)
    out = []
    for first in range(0, len(inputs), size):
        chunk = inputs[first:first + size]
        sim = chosen.build(spec, servos, robot.control_period, scheme, nworld=len(chunk),
                           device=device)
        n = max(len(g) for _, g, _, _, _ in chunk)
        goals = np.stack([np.concatenate([g, np.repeat(g[-1:], n - len(g), axis=0)])
                          for _, g, _, _, _ in chunk])
        q0 = np.repeat(sim.model.qpos0[None], len(chunk), axis=0)
        v0 = np.zeros((len(chunk), sim.model.nv))
        for e, (_, _, _, q, v) in enumerate(chunk):
            q0[e, sim.qadr], v0[e, sim.dofs] = q, v
        run = sim.run_batch(goals, q0=q0, v0=v0)
        seconds = run.seconds
        for e, (rec, _, counts, _, _) in enumerate(chunk):
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            q_model = run.q[e][starts][:, sim.qadr]
            if not np.all(np.isfinite(q_model)):
                raise SimulationError(f"{rec.name}: the {engine} simulation diverged "
                                      "(non-finite position)")
            cols = [rec.column(j.name) for j in robot.servo_joints]
            out.append(RecordedRun(rec.name, tuple(j.name for j in robot.servo_joints),
                                   to_recorded(robot, q_model), rec.position[:, cols],
                                   rec.goal[:, cols], rec.t, seconds / len(chunk), timestep))
    return out


def simulate_recording(robot: RobotDescription, spec, params: dict, recording: Recording,
                       engine: str = "fixed_step", scheme: str | None = None) -> RecordedRun:
    """One recording replayed (:class:`Replay`; for several, build the Replay once)."""
    return Replay(robot, spec, params, engine, scheme).run(recording)


def replay(robot: RobotDescription, mjcf: Path, rp: RobotParameters,
           recordings: list[Recording], engine: str = "fixed_step", progress: bool = False,
           label: str = "") -> dict[str, dict[str, float]]:
    """Each recording replayed whole in closed loop with a robot parameter file's servos
    (``rp``): {name: {joint: MAE (rad)}}."""
    from frictionsim.experiments.common.progress import progress as bar
    from frictionsim.solvers.robot_servos import robot_spec

    applied, sets = rp.for_robot(robot)
    sim = Replay(applied, robot_spec(applied, mjcf), sets, engine)
    return {rec.name: sim.run(rec).joint_mae
            for rec in bar(recordings, desc=label or "replaying", enabled=progress)}


def mean_mae(errors: dict[str, dict[str, float]]) -> float | None:
    """Mean over recordings of the mean over joints."""
    if not errors:
        return None
    return float(np.mean([np.mean(list(e.values())) for e in errors.values()]))


def joint_means(errors: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each joint's MAE averaged over the recordings."""
    joints = next(iter(errors.values())).keys() if errors else ()
    return {j: float(np.mean([e[j] for e in errors.values()])) for j in joints}
