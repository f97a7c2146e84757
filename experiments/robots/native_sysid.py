"""MuJoCo's own identification of a robot, the peer of ``robot identify`` (``frictionsim run
vs-mujoco --robot``).

The model is the robot's MJCF as it ships (its ``<position>`` actuators; MuJoCo's contacts
off where the robot file says its motions touch nothing: on the SO-101 the replays are the
same to the last bit, seven times faster), with what MuJoCo Playground's SO-101
identification frees: per servo joint the armature I_a (kg·m²), the ``frictionloss`` F_c
(N·m), the ``damping`` b (N·m·s/rad) and the position actuator's gain k_p (N·m/rad, its
bias −k_p·q with it), and one transport delay d (s)
of the goals: the actuator's control at time t is the goal held at t − d, interpolated
linearly between physics steps so that the residual is continuous in d (before a window's
first goal, that goal). The actuator's k_v and force range stay as shipped.

``mujoco.sysid`` (box-bounded Levenberg–Marquardt, finite-difference Jacobians) fits them on
the same windows of the training recordings that ``robot identify`` fits on, each restarted
from its recorded state and rolled out by ``mujoco.rollout`` on every core: the residual is
every recorded row's position error per servo joint over √rows, so its square is the mean
squared error. Held-out recordings are replayed whole, from their first recorded state, by
the same rollout: plain MuJoCo, no frictionsim code in the step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.robot_windows import RecordedWindow

#: The parameters freed per servo joint, and the shared delay.
PER_JOINT = ("armature", "frictionloss", "damping", "kp")
DELAY = "delay"
#: Search bounds of the per-joint values (SI units): wide, the shipped values inside them; a
#: frictionloss up to the STS3215's stall torque; the delay in [0, MAX_DELAY] s.
BOUNDS = {"armature": (1e-5, 0.5), "frictionloss": (0.0, 3.0), "damping": (0.0, 20.0),
          "kp": (1.0, 5000.0)}
MAX_DELAY = 0.1
#: A diverged rollout's residual (rad per row): large and finite, so that LM steps back.
DIVERGED = 10.0


@dataclass
class NativeModel:
    """A compiled plain model and where the freed parameters live in it."""

    model: object
    dofs: np.ndarray
    actuators: np.ndarray
    qadr: np.ndarray
    shipped: dict[str, np.ndarray]

    def space(self) -> list[tuple[str, float, float, float]]:
        """(name, start, lower, upper) of every freed parameter, the shipped values first."""
        out = []
        for name in PER_JOINT:
            low, high = BOUNDS[name]
            for j, value in enumerate(self.shipped[name]):
                out.append((f"{name}[{j}]", float(np.clip(value, low, high)), low, high))
        out.append((DELAY, 0.01, 0.0, MAX_DELAY))
        return out

    def apply(self, x: np.ndarray) -> float:
        """Write a candidate (the :meth:`space` order) into the model; returns its delay (s)."""
        n = len(self.dofs)
        m = self.model
        m.dof_armature[self.dofs] = x[:n]
        m.dof_frictionloss[self.dofs] = x[n:2 * n]
        m.dof_damping[self.dofs] = x[2 * n:3 * n]
        m.actuator_gainprm[self.actuators, 0] = x[3 * n:4 * n]
        m.actuator_biasprm[self.actuators, 1] = -x[3 * n:4 * n]
        return float(x[4 * n])


def native_model(robot: RobotDescription, mjcf) -> NativeModel:
    """The robot's MJCF as shipped, compiled at the control period."""
    import mujoco

    from frictionsim.solvers.engines import MjcfSimulator
    from frictionsim.solvers.robot_servos import robot_spec

    sim = MjcfSimulator(robot_spec(robot, mjcf, plain=True), [j.mjcf for j in robot.servo_joints],
                        robot.control_period)
    model = sim.model
    model.opt.timestep = robot.control_period
    if robot.contacts == "off":  # the recorded motions touch nothing (the robot file)
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    acts = np.array(sim.actuators)
    if not np.all(model.actuator_biastype[acts] == mujoco.mjtBias.mjBIAS_AFFINE):
        from frictionsim.errors import ConfigurationError

        raise ConfigurationError("the native identification frees a <position> actuator's gain: "
                                 "every servo joint's actuator must be a position actuator")
    shipped = {"armature": model.dof_armature[sim.dofs].copy(),
               "frictionloss": model.dof_frictionloss[sim.dofs].copy(),
               "damping": model.dof_damping[sim.dofs].copy(),
               "kp": model.actuator_gainprm[acts, 0].copy()}
    return NativeModel(model, np.asarray(sim.dofs), acts, np.asarray(sim.qadr), shipped)


def delayed(goals: np.ndarray, delay: float, dt: float) -> np.ndarray:
    """The control of each physics step: the held goals of ``goals`` (steps × servos) read
    ``delay`` seconds earlier, linear between steps, the first goal before the first step."""
    shift = delay / dt
    m, f = int(np.floor(shift)), shift - np.floor(shift)
    idx = np.arange(len(goals))
    a = goals[np.clip(idx - m, 0, None)]
    b = goals[np.clip(idx - m - 1, 0, None)]
    return (1.0 - f) * a + f * b


class NativeRollouts:
    """Windows (or whole recordings) of a robot rolled out on the plain model by
    ``mujoco.rollout``, ``threads`` at a time; :meth:`errors` gives each recorded row's
    position error of a candidate."""

    def __init__(self, native: NativeModel, windows: list[RecordedWindow], threads: int = 2
                 ) -> None:
        import mujoco

        self.native, self.windows = native, windows
        model = native.model
        self.datas = [mujoco.MjData(model) for _ in range(max(1, threads))]
        self.nstep = max(len(w.goals) for w in windows)
        size = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.initial = np.empty((len(windows), size))
        data = self.datas[0]
        for i, w in enumerate(windows):
            mujoco.mj_resetData(model, data)
            data.qpos[native.qadr], data.qvel[native.dofs] = w.q0, w.v0
            mujoco.mj_getState(model, data, self.initial[i], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.rows = sum(len(w.rows) for w in windows)

    def errors(self, x: np.ndarray) -> list[np.ndarray]:
        """Per window: the simulated minus the recorded position of every row (rows × servos,
        rad); the rows of a diverged window are :data:`DIVERGED`."""
        import mujoco
        from mujoco import rollout

        native = self.native
        delay = native.apply(x)
        dt = native.model.opt.timestep
        nu = native.model.nu
        control = np.zeros((len(self.windows), self.nstep, nu))
        for i, w in enumerate(self.windows):
            c = delayed(w.goals, delay, dt)
            control[i, :len(c)][:, native.actuators] = c
            control[i, len(c):][:, native.actuators] = c[-1]
        state, _ = rollout.rollout(native.model, self.datas, self.initial, control,
                                   control_spec=mujoco.mjtState.mjSTATE_CTRL)
        qpos = 1 + native.qadr  # the state vector starts with the time
        out = []
        for i, w in enumerate(self.windows):
            q = np.vstack([self.initial[i][None, qpos], state[i][w.rows[1:] - 1][:, qpos]])
            e = q - w.measured
            out.append(e if np.isfinite(e).all() else np.full_like(e, DIVERGED))
        return out


def whole_recordings(robot: RobotDescription, recordings: list[Recording]
                     ) -> list[RecordedWindow]:
    """Each recording as one window from its first row (the replay of a held-out motion)."""
    from frictionsim.experiments.robots.identify import recording_windows

    out = []
    for rec in recordings:
        out.extend(recording_windows(robot, rec, len(rec.t) * robot.bus_period, 1)[:1])
    return out


@dataclass
class NativeFit:
    """The fitted values (named as :meth:`NativeModel.space`), the fit's seconds, the final
    training loss (the windows' MAE, rad) and the iterations it was allowed."""

    values: dict[str, float]
    seconds: float
    window_mae: float
    max_iters: int


def fit_native(native: NativeModel, windows: list[RecordedWindow], threads: int = 2,
               max_iters: int = 30, progress: bool = False) -> NativeFit:
    """``mujoco.sysid``'s fit of the freed parameters on ``windows`` (module docstring)."""
    from frictionsim.experiments.common.sysid_run import sysid_fit

    rollouts = NativeRollouts(native, windows, threads)
    space = native.space()
    scale = 1.0 / np.sqrt(rollouts.rows * len(native.dofs))

    def residual_of(x: np.ndarray) -> np.ndarray:
        return scale * np.concatenate([e.ravel() for e in rollouts.errors(x)])

    x, seconds = sysid_fit(space, residual_of, max_iters, progress)
    mae = float(np.mean(np.concatenate([np.abs(e).ravel() for e in rollouts.errors(x)])))
    return NativeFit(dict(zip([n for n, *_ in space], x.tolist())), seconds, mae, max_iters)


def native_mae(native: NativeModel, values: dict[str, float], robot: RobotDescription,
               recordings: list[Recording], threads: int = 2) -> dict[str, float]:
    """Each recording's MAE (rad, the mean over servo joints) replayed whole on the fitted
    native model."""
    x = np.array([values[n] for n, *_ in native.space()])
    windows = whole_recordings(robot, recordings)
    errors = NativeRollouts(native, windows, threads).errors(x)
    return {rec.name: float(np.abs(e).mean()) for rec, e in zip(recordings, errors)}
