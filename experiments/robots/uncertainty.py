"""How far another fit of the same robot's servos may land: parameter ranges by a bootstrap
over recordings (``robot identify --uncertainty N``).

The bench's bootstrap (:mod:`frictionsim.experiments.identification.uncertainty`) on a
robot: the training recordings are drawn with replacement (as many as there are), the
robot's whole identification runs again on the draw (its windows, the same chain of models
and budget, its own seed), and each parameter's range is the fit's value plus the central
:data:`~frictionsim.experiments.identification.uncertainty.LEVEL` quantiles of the
differences between pairs of replicates, clipped to the search bounds. The ranges go into
the robot parameter file's servo sets, where every randomisation path reads them: ``robot
simulate --variants``, :func:`frictionsim.solvers.robot.draw_servos`,
``ParameterSet.variants`` and the batched engines' ``Randomisation``. Each replicate costs
one robot identification.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from frictionsim.experiments.identification.uncertainty import LEVEL, Uncertainty, run_bootstrap
from frictionsim.experiments.robots.identify import (
    RobotFitSettings,
    _evaluator,
    actuator_of,
    fit_models,
    training_windows,
)
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording


def robot_bootstrap(robot: RobotDescription, mjcf: Path, train: list[Recording],
                    settings: RobotFitSettings, fitted: dict[str, ParameterSet],
                    replicates: int, level: float = LEVEL) -> Uncertainty:
    """The ranges of every model in ``fitted`` (its servo set fitted on all of ``train``) by
    ``replicates`` robot identifications on recordings drawn with replacement (replicate b
    with seed ``settings.fit.seed + 1 + b``). Ctrl-C ends it early with the replicates so far
    (``interrupted``)."""
    settings = settings.resolved(robot, train)
    quiet = dataclasses.replace(settings, progress=False, learned=(), replicate=True)
    actuator = actuator_of(robot)

    def replicate(draw: list[Recording], seed: int, folder: Path) -> dict[str, ParameterSet]:
        windows = training_windows(robot, draw, settings.window, settings.stride,
                                   settings.start_velocity)
        evaluator = _evaluator(robot, mjcf, actuator, windows, settings.threads,
                               settings.reuse)
        run = dataclasses.replace(quiet, fit=dataclasses.replace(settings.fit, seed=seed))
        chain, interrupted = fit_models(robot, evaluator, run, folder)
        if interrupted:
            raise KeyboardInterrupt
        return {model: result.params.params for model, result in chain.items()}

    return run_bootstrap(train, fitted, settings.fixed, settings.fit.seed, replicates, level,
                         settings.progress, replicate)
