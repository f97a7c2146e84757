"""Cross-validation by motion: which per-joint terms does a robot's fit need?

The recordings are split into ``folds`` groups (a seeded permutation: each motion lands in
one group). For each choice of per-joint terms (:data:`~frictionsim.experiments.robots.
identify.PER_JOINT`) and each group, the models are fitted on the
other groups and the group is replayed whole; the choice with the lowest mean held-out
MAE of the richest model is the one the final fit uses. A term that lowers the training
error but not the held-out one is left out. Each fold is a whole robot identification in
``OUT/cross_validation/<choice>/fold_<k>/``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.robots.identify import (
    PER_JOINT,
    RobotFitSettings,
    fit_robot,
)
from frictionsim.experiments.robots.report import FOLDS_DIR, prepare_robot_out
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording


def motion_folds(recordings: list[Recording], folds: int, seed: int) -> list[list[int]]:
    """Indices of the recordings in each of ``folds`` groups (seeded, sizes within one)."""
    if not 2 <= folds <= len(recordings):
        raise ConfigurationError(f"--folds {folds}: needs 2 to {len(recordings)} (the recordings)")
    order = np.random.default_rng(seed).permutation(len(recordings))
    return [sorted(order[k::folds].tolist()) for k in range(folds)]


def cross_validate_motions(robot: RobotDescription, mjcf: Path, recordings: list[Recording],
                           settings: RobotFitSettings, out: Path, folds: int,
                           resume: bool = False, overwrite: bool = False) -> tuple[dict, bool]:
    """(the cross-validation section, whether Ctrl-C ended it)."""
    groups = motion_folds(recordings, folds, settings.fit.seed)
    richest = settings.models[-1]
    section = {"model": richest, "folds": [[recordings[i].name for i in g] for g in groups],
               "variants": {}}
    for variant in PER_JOINT:
        per_fold = []
        for k, group in enumerate(groups):
            held = [recordings[i] for i in group]
            train = [r for i, r in enumerate(recordings) if i not in group]
            where = out / FOLDS_DIR / variant / f"fold_{k + 1}"
            print(f"cross-validation: per joint {variant}, fold {k + 1}/{len(groups)}: fit on "
                  f"{counted(len(train), 'recording')}, replay {len(held)}")
            earlier = prepare_robot_out(where, robot.name, resume, overwrite)
            fits, interrupted, _ = fit_robot(robot, mjcf, train, held, dataclasses.replace(
                settings, per_joint=variant), where, earlier)
            if interrupted:
                return section, True
            per_fold.append(fits[richest].validation_mae)
        section["variants"][variant] = {"per_fold": per_fold, "mean": float(np.mean(per_fold))}
    section["chosen"] = min(section["variants"], key=lambda v: section["variants"][v]["mean"])
    return section, False
