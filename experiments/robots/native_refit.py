"""The closest plain-MuJoCo expression of a robot fit richer than M1, refitted on the robot's
recordings (``robot export-mjcf --recordings``).

M2–M6 friction (Stribeck, load-dependent) has no MuJoCo attribute; M1 has one exactly
(:mod:`frictionsim.solvers.robot_export`: the exported M1 replays in plain MuJoCo within
0.01 mrad of frictionsim's fixed step on the SO-101). So the closest native model is an M1,
and the best M1 is not the richer model's M1 subset but an M1 fitted to the same
recordings: the robot identification of M1 alone (its fitter, on 10-s windows, one in 8),
started from the richer fit's values. Its loss is frictionsim's fixed step, which is what the export
replays to that precision, at a fraction of MuJoCo's cost.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification.fitter import FitSettings
from frictionsim.experiments.robots.identify import (
    STRIDE,
    WINDOW,
    RobotFitSettings,
    actuator_of,
    fit_robot,
)
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters
from frictionsim.robot_recordings import Recording


def native_refit(robot: RobotDescription, mjcf: Path, fit: RobotParameters,
                 recordings: list[Recording], budget: int = 400, seed: int = 0,
                 threads: int = 2, progress: bool = True) -> tuple[RobotParameters, float]:
    """An M1 robot fit of ``recordings`` started from ``fit``'s servo set (its M1 parameters
    taken from it, the rest at their defaults), and its window loss (rad)."""
    actuator = actuator_of(robot)
    richer = fit.servos[actuator]
    if isinstance(richer, LearnedActuator):  # a hybrid starts from its physics
        if richer.physics is None:
            raise ConfigurationError(f"{fit.source}: a learned network has no MuJoCo "
                                     "attribute; export a physical model (m1 … m6)")
        richer = richer.physics
    names = schema.parameters("m1", actuator, ())
    start = ParameterSet("m1", actuator, {k: v for k, v in richer.values.items() if k in names},
                         scheme=richer.scheme)
    earlier = {"m1": RobotParameters(robot.name, {actuator: start}, dict(fit.joint_offsets))}
    # M1 alone, once per export, on robot identify's windows (every recording cut the same
    # way, however few: the refit starts from a fit of those recordings)
    settings = RobotFitSettings(("m1",), FitSettings(budget, seed), window=WINDOW,
                                stride=STRIDE, threads=threads, progress=progress,
                                per_joint="offsets" if fit.joint_offsets else "none")
    with tempfile.TemporaryDirectory(prefix="frictionsim-native-refit-") as tmp:
        fits, interrupted, _ = fit_robot(robot, mjcf, recordings, [], settings, Path(tmp),
                                         earlier)
    if interrupted:
        raise KeyboardInterrupt
    point = fits["m1"].result.params
    refit = RobotParameters(robot.name, {actuator: point.params}, dict(point.offsets),
                            {"native_refit_of": fit.source, "recordings": [r.name for r in recordings],
                             "budget": budget})
    return refit, fits["m1"].result.loss
