"""A robot's joint seen from its servo, one joint at a time: the load a learned actuator is
trained through on a robot (``robot identify --rollout-epochs``, docs/model.md §13).

Training a network through its closed-loop rollout needs the rollout differentiable; MuJoCo's
is not here. So each servo is rolled out on its own joint, the other joints following their
recording: with M(q) the robot's mass matrix without the rotors, c(q, v) its bias (gravity,
Coriolis and centrifugal forces, MuJoCo's ``qfrc_bias``) and a the recorded accelerations,
joint j's equation of motion M·q̈ + c = τ reads, for joint j alone::

    (M_jj + J_rotor)·q̈_j = τ_servo + τ_e,
    τ_e = −c_j − Σ_{i≠j} M_ji·a_i − K_j·(q_j − q_j,rec),   K_j = ∂c_j/∂q_j,

each term taken at the recorded state, linear between recorded rows (the bus cycle), the last
one the gravity torque's change as the joint leaves its recorded angle. What it leaves out: the
other joints' own errors and the change of M and the velocity terms with q_j. It is a
training load, not a simulator: the network so trained is judged by the robot's own closed
loop (MuJoCo's M and bias at every physics step, every joint at once).

The robot these loads are read on is the one the learned actuator drives
(:func:`labelling_robot`: its physics on every servo, or the bare joints of a pure network),
on which its torque labels are computed too (:mod:`~frictionsim.experiments.robots.learned`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.experiments.robots.recorded import hold_counts, recorded_arrays
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.learned_rollout import bare_theta
from frictionsim.solvers.mujoco_dynamics import dynamics_terms, mujoco
from frictionsim.solvers.robot import Robot
from frictionsim.solvers.robot_labels import check_servo_on_every_dof
from frictionsim.solvers.robot_servos import joint_servos, robot_spec

#: The step of the finite difference of the bias in a joint's angle (rad).
ANGLE_STEP = 1e-5
#: The robot's position update (as its physical fits).
SCHEME = "semi_implicit"


@dataclass(frozen=True)
class JointLoad:
    """One recording's joints as loads, at every control period (periods × servos): the
    goal held, the recorded position (NaN between rows), the link inertia M_jj (kg·m²),
    the torque at the recorded state τ_e,rec (N·m), the stiffness K_j (N·m/rad), the
    recorded angle q_rec the stiffness is taken about (linear between rows, rad) and the
    recorded velocity (rad/s); ``rows``: the period of each recorded row."""

    name: str
    goal: np.ndarray
    position: np.ndarray
    inertia: np.ndarray
    torque: np.ndarray
    stiffness: np.ndarray
    angle: np.ndarray
    velocity: np.ndarray
    rows: np.ndarray


def joint_loads(robot: Robot, description: RobotDescription, recording: Recording) -> JointLoad:
    """``recording`` (in ``description``'s convention: its calibration offsets applied) as one
    load per servo of ``robot`` (:func:`loads_along`)."""
    goal, q, v = recorded_arrays(description, recording)
    return loads_along(robot, recording.name, recording.t, goal, q, v,
                       hold_counts(recording, robot.period))


def loads_along(robot: Robot, name: str, t: np.ndarray, goal: np.ndarray, q: np.ndarray,
                v: np.ndarray, counts: np.ndarray) -> JointLoad:
    """Each servo's load (module docstring) along recorded rows at times ``t`` (s): goals,
    positions and velocities rows × servos in the model's convention, each row's goal held
    ``counts`` control periods (the last row's: none). ConfigurationError unless every dof
    carries a servo (a passive dof's state is not recorded)."""
    check_servo_on_every_dof(robot, "joint loads")
    t = np.asarray(t, dtype=float)
    acc = np.gradient(v, t, axis=0) if len(t) > 1 else np.zeros_like(v)
    data = mujoco.MjData(robot.dynamics)
    ns = len(robot.servos)
    mass, bias = np.empty((robot.nv, robot.nv)), np.empty(robot.nv)
    q_model, v_model = np.empty(robot.nq), np.empty(robot.nv)
    inertia, torque, stiffness = (np.empty((len(t), ns)) for _ in range(3))

    def terms(angles: np.ndarray, velocities: np.ndarray) -> None:
        """M and the bias at a servo-ordered state, as the robot's step computes them."""
        q_model[robot.qadr], v_model[robot.dofs] = angles, velocities
        dynamics_terms(robot.dynamics._address, data._address, data.qpos, data.qvel, q_model,
                       v_model, mass, bias)

    for r in range(len(t)):
        terms(q[r], v[r])
        m = mass[np.ix_(robot.dofs, robot.dofs)]
        at_row = bias[robot.dofs]
        inertia[r] = np.diag(m)
        # the other joints' recorded accelerations, through M's off-diagonal terms
        torque[r] = -at_row - (m @ acc[r] - inertia[r] * acc[r])
        for j in range(ns):
            moved = q[r].copy()
            moved[j] += ANGLE_STEP
            terms(moved, v[r])
            stiffness[r, j] = (bias[robot.dofs[j]] - at_row[j]) / ANGLE_STEP
    rows = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.int64)
    periods = np.arange(rows[-1] + 1)
    held = np.repeat(np.arange(len(t)), np.maximum(counts, 1))[:len(periods)]
    position = np.full((len(periods), ns), np.nan)
    position[rows] = q

    def between_rows(values: np.ndarray) -> np.ndarray:
        return np.column_stack([np.interp(periods, rows, values[:, j]) for j in range(ns)])

    return JointLoad(name, np.asarray(goal, dtype=float)[held], position, between_rows(inertia),
                     between_rows(torque), between_rows(stiffness), between_rows(q),
                     between_rows(v), rows)


def labelling_robot(robot: RobotDescription, mjcf: Path, physics: ParameterSet | None,
                    offsets: dict[str, float], armature: float = 0.0
                    ) -> tuple[RobotDescription, Robot]:
    """(``robot`` calibrated by ``offsets``, its simulator) with every servo on ``physics``
    (None: the bare joints of a pure network, rotor inertia ``armature``, kg·m²): what a
    learned actuator's network drives on the robot, its torque labels
    (:func:`~frictionsim.experiments.robots.learned.robot_training_set`) and its joints'
    loads computed on it."""
    actuator = next(iter(robot.actuators))
    params = physics if physics is not None else ParameterSet.defaults("m1", actuator)
    applied = RobotParameters(robot.name, {actuator: params}, dict(offsets)).apply(robot)
    servos = joint_servos(applied, {actuator: params.with_scheme(SCHEME)})
    sim = Robot(robot_spec(applied, mjcf), servos,
                control_period=applied.control_period, scheme=SCHEME)
    if physics is None:
        sim.thetas[:] = bare_theta(actuator, armature)
    return applied, sim
