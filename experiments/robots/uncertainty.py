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
import tempfile
import time
from pathlib import Path

import numpy as np

from frictionsim.experiments.identification.fitter import FitSettings
from frictionsim.experiments.identification.uncertainty import LEVEL, Uncertainty, read_ranges
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
    from frictionsim.experiments.common.progress import progress as bar

    result = Uncertainty(level, {m: [] for m in fitted})
    rng = np.random.default_rng(settings.fit.seed)
    quiet = dataclasses.replace(settings, progress=False, learned=())
    actuator = actuator_of(robot)
    t0 = time.perf_counter()
    show = bar(total=replicates, desc="bootstrap", unit="fit", enabled=settings.progress)
    try:
        with tempfile.TemporaryDirectory(prefix="frictionsim-robot-bootstrap-") as tmp:
            for b in range(replicates):
                draw = [train[i] for i in rng.integers(0, len(train), len(train))]
                windows = training_windows(robot, draw, settings.window, settings.stride)
                evaluator = _evaluator(robot, mjcf, actuator, windows, settings.threads)
                (Path(tmp) / str(b)).mkdir()
                run = dataclasses.replace(
                    quiet, fit=FitSettings(settings.fit.budget, settings.fit.seed + 1 + b))
                chain, interrupted = fit_models(robot, evaluator, run, Path(tmp) / str(b))
                if interrupted:
                    raise KeyboardInterrupt
                for model in fitted:
                    result.replicates[model].append(dict(chain[model].params.params.values))
                show.update(1)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        show.close()
    result.seconds = time.perf_counter() - t0
    read_ranges(result, fitted, settings.fixed)
    return result
