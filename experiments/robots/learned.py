"""Learned actuators on a robot, trained on its own recordings (``robot identify --model net
hybrid``), as the bench's (:mod:`frictionsim.experiments.identification.learned`) are on
bench logs.

The labels are the robot's inverse dynamics (:mod:`frictionsim.solvers.robot_labels`): per
bus cycle and servo, the torque beyond the physical model (a hybrid's M6; for a pure network
the bare joints) that takes the recorded state to the next recorded position, the network's
input read off the recording at the control periods it looks back to. The servos of one
actuator type share one network, as they share one parameter set. A hybrid's weights are
then searched in closed loop on the same windows of the training recordings the physical
models were fitted on (:class:`~frictionsim.solvers.robot_windows.RobotWindows`). Joint
offsets, when the fit has them, are the physical model's: a learned file carries them as its
robot parameter file's ``joint_offsets``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from frictionsim.actuator_net import N_INPUTS
from frictionsim.experiments.identification.learned import (
    NetSettings,
    torque_errors,
    train_network,
)
from frictionsim.experiments.robots.recorded import hold_counts, recorded_arrays
from frictionsim.experiments.robots.search_space import RobotPoint
from frictionsim.layout import KP
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.learned_rollout import bare_theta
from frictionsim.solvers.robot import Robot
from frictionsim.solvers.robot_labels import recorded_features, residual_labels
from frictionsim.solvers.robot_servos import joint_servos, robot_spec
from frictionsim.solvers.robot_windows import RobotWindows

#: The robot's position update (as its physical fits).
SCHEME = "semi_implicit"


def robot_training_set(robot: RobotDescription, mjcf: Path, recordings: list[Recording],
                       physics: ParameterSet | None, offsets: dict[str, float],
                       armature: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The network's inputs (samples × N_INPUTS) and torque labels (N·m) of every servo at
    every bus cycle of ``recordings`` but the last, over ``physics`` (None: the bare joints
    of a pure network, with the rotor inertia ``armature``, kg·m²), the joints calibrated by
    ``offsets`` (rad)."""
    actuator = next(iter(robot.actuators))
    params = physics if physics is not None else ParameterSet.defaults("m1", actuator)
    applied = RobotParameters(robot.name, {actuator: params}, dict(offsets)).apply(robot)
    servos = joint_servos(applied, {actuator: params.with_scheme(SCHEME)})
    sim = Robot(robot_spec(applied, mjcf), servos,
                control_period=applied.control_period, scheme=SCHEME)
    if physics is None:
        sim.thetas[:] = bare_theta(actuator, armature)
    kp = sim.benches[:, KP]
    rows, labels = [], []
    for rec in recordings:
        goal, q, v = recorded_arrays(applied, rec)
        counts = hold_counts(rec, applied.control_period)
        labels.append(residual_labels(sim, goal, counts, q, v).reshape(-1))
        rows.append(recorded_features(rec.t, goal, q, v, applied.control_period, kp)
                    .reshape(-1, N_INPUTS))
    return np.concatenate(rows), np.concatenate(labels)


def train_robot_learned(kind: str, robot: RobotDescription, mjcf: Path,
                        recordings: list[Recording], point: RobotPoint,
                        evaluator: RobotWindows, settings: NetSettings = NetSettings(),
                        progress: bool = False) -> LearnedActuator:
    """A ``net`` or a ``hybrid`` over ``point``'s servo parameters, trained on the robot's
    ``recordings``; a hybrid's closed-loop search rolls out ``evaluator``'s windows with
    ``point``'s parameters and offsets and the candidate network on every servo."""
    physics = point.params.with_scheme(SCHEME) if kind == "hybrid" else None
    armature = 0.0 if physics is not None else float(point.params.values["armature"])
    x, y = robot_training_set(robot, mjcf, recordings, physics, point.offsets, armature)
    row = point.theta()[None, :].copy()
    if kind == "net":
        bare = bare_theta(point.params.actuator, armature)
        row[0, :bare.size] = bare

    def closed_loop_loss(net: np.ndarray) -> float:
        losses = evaluator.errors(row, net[None, :])[0]
        return float(losses.mean()) if np.all(np.isfinite(losses)) else np.inf

    info = {"recordings": [r.name for r in recordings], "robot": robot.name,
            "horizon": "one bus cycle"}
    return train_network(kind, x, y, point.params.actuator, physics, settings,
                         closed_loop_loss, info, progress, armature)


def robot_open_loop_torque(robot: RobotDescription, mjcf: Path, model: LearnedActuator,
                           offsets: dict[str, float], recordings: list[Recording]
                           ) -> dict[str, float]:
    """A robot's learned actuator's open-loop error on ``recordings``: its network's torque
    against the labels of :func:`robot_training_set` through its own physics (a hybrid's M6, a
    net's bare joints with its rotor inertia), the joints calibrated by ``offsets``:
    {"torque_mae", "torque_spread"} (N·m, :func:`~frictionsim.experiments.identification.
    learned.torque_errors`)."""
    x, y = robot_training_set(robot, mjcf, recordings, model.physics, offsets, model.armature)
    return torque_errors(model.net, x, y)
