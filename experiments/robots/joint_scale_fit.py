"""The joint scales of a robot fit (``robot identify --joint-scales``): with a physical
model's shared parameters and offsets fixed at its optimum, each servo joint's friction and
armature scales (:mod:`frictionsim.joint_scales`) fitted by CMA-ES on the same training
windows, in log coordinates (z = ln s, |z| ≤ :data:`LOG_BOUND`), from z = 0 (the shared set)."""

from __future__ import annotations

import math

import numpy as np

from frictionsim.experiments.identification.cma_run import RunSpec, cma_run
from frictionsim.joint_scales import SCALES
from frictionsim.solvers.robot_windows import RobotWindows

#: Evaluations of the scales' search after each physical model.
BUDGET = 400
#: Largest |ln s|: each scale between ×0.22 and ×4.5.
LOG_BOUND = 1.5
#: CMA's initial step in ln s, and its population.
SIGMA = 0.3
POPULATION = 10


def fit_joint_scales(evaluator: RobotWindows, row: np.ndarray, seed: int = 0,
                     budget: int | None = None
                     ) -> tuple[np.ndarray, float, float, float | None]:
    """The scales (servos × 2, friction then armature) that minimise the windows' mean error
    of the candidate ``row`` ([theta | offsets]), the exact loss with them and without (rad),
    and the largest difference the reused dynamics made to a window's error of the best
    (rad; None where nothing was reused). The search's candidates reuse the evaluator's
    reference like the physical models' (they stay close to the shared set's run); the two
    losses returned are the exact fixed step's, and the result is never worse than the
    shared set: CMA's best is kept only if its exact loss beats it. ``budget``: evaluations
    (default :data:`BUDGET`)."""
    budget = BUDGET if budget is None else budget
    ns = len(evaluator.robot.servos)
    row = np.atleast_2d(row)

    def scales_of(z: np.ndarray) -> np.ndarray:
        z = np.clip(np.atleast_2d(z), -LOG_BOUND, LOG_BOUND)
        return np.exp(z).reshape(len(z), len(SCALES), ns).transpose(0, 2, 1)

    def losses_of(z: np.ndarray) -> np.ndarray:
        errors = evaluator.errors(np.repeat(row, len(z), axis=0), scales=scales_of(z))
        return errors.mean(axis=1)

    shared = float(evaluator.exact_errors(row)[0].mean())
    spec = RunSpec(np.zeros(len(SCALES) * ns), np.ones(len(SCALES) * ns), SIGMA, POPULATION,
                   budget)
    _, lowest, z = cma_run(spec, losses_of, seed, 1e-4, 25, lambda x, losses: None)
    if not math.isfinite(lowest):
        return np.ones((ns, len(SCALES))), shared, shared, None
    best = scales_of(z)
    exact = evaluator.exact_errors(row, scales=best)[0]
    reuse_error = None
    if evaluator.reference is not None:
        reuse_error = float(np.abs(evaluator.reused_errors(row, best)[0] - exact).max())
    if not exact.mean() < shared:
        return np.ones((ns, len(SCALES))), shared, shared, reuse_error
    return best[0], float(exact.mean()), shared, reuse_error
