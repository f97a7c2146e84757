"""Training a robot's learned actuator through closed-loop rollouts of its recordings (torch):
the bench's training through the rollout
(:mod:`frictionsim.experiments.identification.rollout_training`) on a robot.

Trained on torque labels alone, a network drives a robot's joints into a drift the labels never
show it (docs/results.md: on the SO-101 its Rotation joint spun away). The bench cures that by
training on the position error of short closed-loop rollouts, differentiated through the batched
servos' kernels; a robot's rollout would need MuJoCo's physics differentiable. Here each servo is rolled
out on its own joint instead, the other joints following their recording
(:mod:`~frictionsim.experiments.robots.joint_loads`: the joint's inertia, the torque the robot
puts on it and the change of that torque with its angle, all at the recorded state), by the
same kernels and physics step as the bench's (``bench_rollout`` with that load in place of the
pendulum). A window of ``horizon`` control periods starts at a recorded row, from the
recorded state, the servo's records reset as at the start of a recording; its loss is the mean
|reported − recorded| position at the recorded rows after the first.

The epoch kept is chosen on recordings held back from the training recordings (one in
:attr:`~frictionsim.experiments.identification.rollout_training.RolloutTraining.validation_every`,
a seeded permutation by name) by the robot's own closed loop: each held-back recording replayed
whole on the fixed step (every joint at once, MuJoCo's M and bias at every physics step), as
the held-out motions are scored. So what the joint-at-a-time load leaves out can cost the
training, never the choice of its epoch.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification.rollout_training import (
    RolloutTraining,
    import_torch,
    split_for_validation,
    train_through,
    window_periods,
)
from frictionsim.experiments.robots.joint_loads import JointLoad, joint_loads, labelling_robot
from frictionsim.experiments.robots.recorded import mean_mae, replay
from frictionsim.layout import BACKLASH
from frictionsim.learned_files import LearnedActuator
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters
from frictionsim.robot_recordings import Recording
from frictionsim.solvers.learned_rollout import physics_theta

#: The per-period columns of :class:`JointWindows`, as :class:`JointLoad` names them.
COLUMNS = ("goal", "position", "inertia", "torque", "stiffness", "angle", "velocity")


@dataclass
class JointWindows:
    """Windows of ``horizon`` control periods of a robot's recordings, one servo each, over
    the recordings' joint loads laid end to end (:data:`COLUMNS`, each a float64 tensor
    periods × servos): window w starts at period ``starts[w]`` on servo ``servos[w]``, whose
    bench vector (its firmware) is ``benches[servos[w]]``."""

    columns: dict
    starts: object
    servos: object
    benches: object
    horizon: int

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def take(self, rows) -> dict:
        """Windows ``rows`` as {column: (len(rows) × horizon)}, with "bench" (len(rows) ×
        BENCH_SIZE)."""
        servos = self.servos[rows]
        periods = window_periods(self.starts[rows], self.horizon)
        batch = {name: values[periods, servos[:, None]] for name, values in self.columns.items()}
        batch["bench"] = self.benches[servos]
        return batch


def joint_windows(loads: list[JointLoad], benches: np.ndarray, horizon: int, stride: int
                  ) -> JointWindows:
    """Every window of ``horizon`` control periods that starts at a recorded row at least
    ``stride`` periods after the previous start and ends inside its recording, on each servo;
    ``benches``: the servos' bench vectors (servos × BENCH_SIZE). ConfigurationError when no
    recording is that long."""
    torch = import_torch()
    starts, offset = [], 0
    for load in loads:
        periods = load.goal.shape[0]
        last = -stride
        for row in load.rows:
            if row + horizon > periods:
                break
            if row - last >= stride:
                starts.append(offset + row)
                last = row
        offset += periods
    if not starts:
        longest = max(load.goal.shape[0] for load in loads)
        raise ConfigurationError(f"no recording is {horizon} control periods long (the longest: "
                                 f"{longest}): choose shorter windows (--rollout-horizon)")
    ns = benches.shape[0]
    columns = {name: torch.as_tensor(np.concatenate([getattr(load, name) for load in loads]),
                                     dtype=torch.float64) for name in COLUMNS}
    first = torch.as_tensor(np.repeat(starts, ns), dtype=torch.int64)
    servos = torch.as_tensor(np.tile(np.arange(ns), len(starts)), dtype=torch.int64)
    return JointWindows(columns, first, servos, torch.as_tensor(benches, dtype=torch.float64),
                        horizon)


def joint_rollout(theta, nets, batch: dict):
    """The reported positions (W × horizon) of the servos ``theta`` (THETA_SIZE, torch) with
    the network vector ``nets`` (1 × width), each on its joint's load
    (:mod:`~frictionsim.experiments.robots.joint_loads`), from the window's recorded state."""
    from frictionsim.solvers.batched.rollout import bench_rollout

    torch = import_torch()
    goal = batch["goal"]
    load = {name: batch[name] for name in ("inertia", "torque", "stiffness", "angle")}
    return bench_rollout(theta, batch["bench"], nets, goal, torch.ones_like(goal),
                         torch.full_like(goal, float("nan")), batch["angle"][:, 0],
                         batch["velocity"][:, 0], load=load)


def window_error(reported, recorded):
    """The mean |reported − recorded| (rad) over the recorded rows (finite entries of
    ``recorded``) after each window's first."""
    torch = import_torch()
    rows = torch.isfinite(recorded)
    rows[:, 0] = False
    gap = torch.where(rows, reported - torch.nan_to_num(recorded), torch.zeros_like(reported))
    return torch.abs(gap).sum() / rows.sum()


def robot_fine_tune(model: LearnedActuator, robot: RobotDescription, mjcf: Path,
                    recordings: list[Recording], offsets: dict[str, float],
                    settings: RolloutTraining, seed: int = 0, progress: bool = False
                    ) -> LearnedActuator:
    """``model`` (the learned actuator of every servo of ``robot``, the joints calibrated by
    ``offsets``, rad) with its network trained through the joint-at-a-time rollouts of
    ``recordings`` (module docstring), the epoch kept by the held-back recordings replayed on
    the robot (:func:`~frictionsim.experiments.identification.rollout_training.train_through`:
    a Ctrl-C keeps the best epoch so far)."""
    torch = import_torch()
    if physics_theta(model)[BACKLASH] > 0.0:
        raise ConfigurationError("training through the rollout does not carry backlash: train "
                                 "the hybrid over physics without it")
    start = time.perf_counter()
    fit, held = split_for_validation(recordings, settings.validation_every, seed)
    applied, sim = labelling_robot(robot, mjcf, model.physics, offsets, model.armature)
    loads = [joint_loads(sim, applied, rec) for rec in fit]
    data = joint_windows(loads, sim.benches, settings.horizon, settings.stride)
    theta = torch.as_tensor(physics_theta(model), dtype=torch.float64)

    def window_loss(rows, nets):
        batch = data.take(rows)
        return window_error(joint_rollout(theta, nets, batch), batch["position"])

    def validation(net: np.ndarray) -> float:
        candidate = RobotParameters(robot.name, {model.actuator: dataclasses.replace(model, net=net)},
                                    dict(offsets))
        error = mean_mae(replay(robot, mjcf, candidate, held))
        return float(error) if error is not None and np.isfinite(error) else np.inf

    return train_through(model, len(data), window_loss, validation, settings, seed, progress,
                         {"validation_recordings": [r.name for r in held],
                          "load": "one joint at a time"}, start)
