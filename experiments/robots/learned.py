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

from dataclasses import replace
from pathlib import Path

import numpy as np

from frictionsim.actuator_net import N_INPUTS
from frictionsim.experiments.identification.learned import (
    NetSettings,
    decide_rollout,
    torch_installed,
    torque_errors,
    train_network,
)
from frictionsim.experiments.robots.joint_loads import SCHEME, labelling_robot
from frictionsim.experiments.robots.recorded import hold_counts, recorded_arrays
from frictionsim.experiments.robots.search_space import RobotPoint
from frictionsim.layout import KP
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.learned_rollout import bare_theta
from frictionsim.solvers.robot_labels import recorded_features, residual_labels
from frictionsim.solvers.robot_windows import RobotWindows

#: A network's input noise on a robot (:attr:`NetSettings.noise` left to the default): the 5 %
#: of Hwangbo et al. On bench logs a network trained supervised only takes none, chosen by
#: held-back logs; on the SO-101 without noise the supervised network left the held-back
#: recordings by 6.2 rad (59 mrad with 5 %) and its training through the rollout never brought
#: it back (16–20 rad; docs/results.md).
ROBOT_NET_NOISE = 0.05
#: A network's epochs through the joint-at-a-time rollouts when the user leaves them to
#: :func:`robot_rollout_epochs`.
ROLLOUT_EPOCHS = 20


def robot_rollout_epochs(kind: str) -> tuple[int, str]:
    """(epochs through the rollout, why) of a robot's ``net`` or ``hybrid`` when the user
    leaves them to the default: :data:`ROLLOUT_EPOCHS` for a network when torch is installed
    (trained on the labels alone the SO-101's drifted, 62.6 mrad from its held-out motions;
    through 20 epochs 13.5), none for a hybrid (its closed-loop search lands as close, 5.00
    against 5.04 mrad, in a third of the time; docs/results.md)."""
    if kind != "net":
        return 0, "a hybrid's residual is searched in closed loop instead"
    if not torch_installed():
        return 0, "torch or Warp is not installed (pip install 'frictionsim[torch]')"
    return ROLLOUT_EPOCHS, "a network trained on the labels alone drifts in closed loop"


def robot_training_set(robot: RobotDescription, mjcf: Path, recordings: list[Recording],
                       physics: ParameterSet | None, offsets: dict[str, float],
                       armature: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The network's inputs (samples × N_INPUTS) and torque labels (N·m) of every servo at
    every bus cycle of ``recordings`` but the last, over ``physics`` (None: the bare joints
    of a pure network, with the rotor inertia ``armature``, kg·m²), the joints calibrated by
    ``offsets`` (rad)."""
    applied, sim = labelling_robot(robot, mjcf, physics, offsets, armature)
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
    ``recordings``, then through their closed-loop rollouts one joint at a time for
    ``settings.rollout_epochs`` epochs (None: :func:`robot_rollout_epochs`;
    :mod:`~frictionsim.experiments.robots.rollout_training`, torch). A hybrid not so trained
    has its weights searched in closed loop instead: ``evaluator``'s windows rolled out with
    ``point``'s parameters and offsets and the candidate network on every servo."""
    settings, auto = decide_rollout(settings, kind, lambda: robot_rollout_epochs(kind), progress)
    if settings.noise is None:
        settings = replace(settings, noise=ROBOT_NET_NOISE)
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
    if auto is not None:
        info["rollout_auto"] = auto
    model = train_network(kind, x, y, point.params.actuator, physics, settings,
                          closed_loop_loss, info, progress, armature)
    if settings.rollout_epochs > 0 and not model.training.get("interrupted"):
        from frictionsim.experiments.identification.rollout_training import RolloutTraining
        from frictionsim.experiments.robots.rollout_training import robot_fine_tune

        model = robot_fine_tune(model, robot, mjcf, recordings, point.offsets,
                                RolloutTraining(horizon=settings.rollout_horizon,
                                                epochs=settings.rollout_epochs),
                                settings.seed, progress)
    return model


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
