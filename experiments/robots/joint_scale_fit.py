"""The joint scales of a robot fit (``robot identify --joint-scales``): with a physical
model's shared parameters and offsets fixed at its optimum, each servo joint's friction and
armature scales (:mod:`frictionsim.joint_scales`) fitted on the same training windows, in
log coordinates (z = ln s, |z| ≤ :data:`LOG_BOUND`), from z = 0 (the shared set), by the
fit's local polish (:mod:`~frictionsim.experiments.identification.polish`: Gauss–Newton
steps on each window's and joint's error, which a joint's own scales move most). On the
SO-101's 25/10 split it reached a window loss of 3.965 mrad in 247 evaluations where CMA-ES
(σ 0.3 in ln s, population 10) reached 3.977 in 400, and 3.34 mrad held out against 3.40
(docs/results.md)."""

from __future__ import annotations

import numpy as np

from frictionsim.experiments.identification.polish import MAX_STEPS
from frictionsim.experiments.robots.reference_polish import polish_on_reference
from frictionsim.joint_scales import SCALES
from frictionsim.solvers.robot_windows import RobotWindows

#: Largest |ln s|: each scale between ×0.22 and ×4.5.
LOG_BOUND = 1.5
#: The polish's residual evaluations at most (its Jacobians come on top).
STEPS = MAX_STEPS


def fit_joint_scales(evaluator: RobotWindows, row: np.ndarray, max_steps: int | None = None
                     ) -> tuple[np.ndarray, float, float, float | None, int]:
    """The scales (servos × 2, friction then armature) that minimise the windows' mean error
    of the candidate ``row`` ([theta | offsets]), the exact loss with them and without (rad),
    the largest difference the reused dynamics made to a window's error of the best (rad;
    None where nothing was reused, 0 where the polish's last round ran on MuJoCo's terms),
    and the evaluations spent. The search's candidates
    reuse the terms along a reference at ``row``'s run (they stay close to it); the two
    losses returned are the exact fixed step's, and the result is never worse than the
    shared set: the polish's best is kept only if its exact loss beats it. Ctrl-C raises
    KeyboardInterrupt (the caller keeps the shared set)."""
    ns = len(evaluator.robot.servos)
    row = np.atleast_2d(row)

    def scales_of(z: np.ndarray) -> np.ndarray:
        z = np.clip(np.atleast_2d(z), -LOG_BOUND, LOG_BOUND)
        return np.exp(z).reshape(len(z), len(SCALES), ns).transpose(0, 2, 1)

    def candidates_of(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.repeat(row, len(z), axis=0), scales_of(z)

    shared = float(evaluator.exact_errors(row)[0].mean())
    done, exact, reuse_error = polish_on_reference(
        evaluator, np.zeros(len(SCALES) * ns), candidates_of,
        STEPS if max_steps is None else max_steps)
    if done.interrupted:
        raise KeyboardInterrupt
    if not done.loss < shared:
        return np.ones((ns, len(SCALES))), shared, shared, reuse_error, done.evaluations
    return scales_of(done.x)[0], done.loss, shared, reuse_error, done.evaluations
