"""Physics against learning on a robot: M1, M6, a learned network and a hybrid fitted on some
of its recordings and replayed on motions they never saw (``frictionsim run
physics-vs-learned --robot``).

A robot's recordings have one gain and one load, so the held-out set is motions: the
first ``count`` of a seeded permutation of the recordings (sorted by name), or the ones the
user names. The physical models are fitted and the learned ones trained by ``robot
identify``'s pipeline (:func:`~frictionsim.experiments.robots.identify.fit_robot`); the
training MAE is the loss on the training windows restarted from the recorded state, the
held-out MAE that of the held-out recordings replayed whole in closed loop.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.robots.identify import RobotFitSettings, RobotLearnedFit, fit_robot
from frictionsim.experiments.robots.learned import robot_open_loop_torque
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import load_robot_params
from frictionsim.robot_recordings import Recording

#: The split's name in the table and the JSON.
SPLIT = "motions"


def held_out_motions(recordings: list[Recording], count: int, seed: int
                     ) -> tuple[list[Recording], list[Recording]]:
    """(training, held-out): the first ``count`` of a permutation seeded by ``seed`` of the
    recordings sorted by name are held out. ValueError unless 1 ≤ count < recordings."""
    if not 1 <= count < len(recordings):
        raise ConfigurationError(f"--held-out {count}: needs 1 to {len(recordings) - 1} of the "
                                 f"{counted(len(recordings), 'recording')} (one at least must train)")
    ordered = sorted(recordings, key=lambda r: r.name)
    held = set(np.random.default_rng(seed).permutation(len(ordered))[:count].tolist())
    return ([r for i, r in enumerate(ordered) if i not in held],
            [r for i, r in enumerate(ordered) if i in held])


def compare_motions(robot: RobotDescription, mjcf: Path, train: list[Recording],
                    held: list[Recording], settings: RobotFitSettings, out: Path
                    ) -> tuple[dict[str, dict[str, float]], bool]:
    """{model: {"train_mae", "validation_mae"} (rad), "fit_seconds"; for the learned models
    also their open-loop "validation_torque_mae" and "validation_torque_spread" (N·m,
    :func:`~frictionsim.experiments.robots.learned.robot_open_loop_torque`)} and whether
    Ctrl-C ended the fits; the fits, learned files and ``robot identify``'s report (per joint)
    go to ``out``."""
    from frictionsim.experiments.robots.report import write_robot_report

    fits, interrupted, cost = fit_robot(robot, mjcf, train, held, settings, out)
    write_robot_report(out, robot.name, fits, settings, train, held, cost,
                       tuple(j.name for j in robot.servo_joints), None, interrupted)
    result = {}
    for model, f in fits.items():
        learned = isinstance(f, RobotLearnedFit)
        train_mae = f.window_loss if learned else f.result.loss
        if f.validation_mae is None:
            continue
        result[model] = {"train_mae": float(train_mae),
                         "validation_mae": float(f.validation_mae),
                         "fit_seconds": float(f.seconds if learned else f.result.seconds)}
        if learned:  # the open-loop torque error beside the closed loop, as on the bench
            offsets = load_robot_params(f.path).joint_offsets
            torque = robot_open_loop_torque(robot, mjcf, f.learned, offsets, held)
            result[model].update(validation_torque_mae=torque["torque_mae"],
                                 validation_torque_spread=torque["torque_spread"])
    return result, interrupted
