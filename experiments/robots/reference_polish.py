"""The local polish of a robot fit on reused dynamics, the reference kept close to it.

The polish (:mod:`~frictionsim.experiments.identification.polish`) evaluates its candidates
with the dynamics terms of a reference run (:class:`~frictionsim.solvers.robot_windows.RobotWindows`),
which it does not move while it steps. Where it ends farther from the reference than the
expansion is good for, the largest difference the reuse makes to a window's error of its
best exceeds :data:`REUSE_TOLERANCE`: the reference then moves to that best (one exact
run) and the polish goes on from there, at most :data:`ROUNDS` times. Where the last of
them still ends beyond the tolerance (a window whose stick or slip flips between two close
candidates), one more round runs on MuJoCo's own terms at every step, about twice the cost
of a reused one, so that the point returned owes nothing to the reuse. What it returns is
judged by the exact fixed step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from frictionsim.experiments.identification.polish import MAX_STEPS, Polished, polish
from frictionsim.solvers.robot_windows import RobotWindows

#: Largest difference reused dynamics may make to one window's error of the polish's best
#: (rad) before the reference moves there.
REUSE_TOLERANCE = 0.05e-3
#: Polish rounds at most, each from a reference at the last one's best.
ROUNDS = 3


def polish_on_reference(evaluator: RobotWindows, x0: np.ndarray,
                        candidates_of: Callable[[np.ndarray], tuple[np.ndarray,
                                                                   np.ndarray | None]],
                        max_steps: int = MAX_STEPS
                        ) -> tuple[Polished, np.ndarray, float | None]:
    """Polish ``x0`` (search coordinates; ``candidates_of(xs)`` gives the rows and joint
    scales, or None, of the points ``xs``) on ``evaluator``'s windows and joints. Returns the
    best point (its ``loss`` the exact one, the evaluations and seconds of every round), its
    exact errors per window, and the largest difference reuse made to one of them (rad;
    None where nothing was reused; 0 where the last round ran on MuJoCo's terms)."""
    x = np.asarray(x0, dtype=float)
    evaluations, seconds, interrupted = 0, 0.0, False
    exact, reuse_error = None, None
    for last in [False] * ROUNDS + [True]:  # the extra round on MuJoCo's terms
        rows, scales = candidates_of(x[None])
        if not last:
            evaluator.reference_at(rows, scales)
        done = polish(x, lambda xs, on_mujoco=last: evaluator.joint_errors(
            *candidates_of(xs), exact=on_mujoco).reshape(len(xs), -1), max_steps=max_steps)
        evaluations += done.evaluations
        seconds += done.seconds
        interrupted = done.interrupted
        moved = not np.array_equal(done.x, x)
        x = done.x
        rows, scales = candidates_of(x[None])
        if moved or exact is None:
            exact = evaluator.exact_errors(rows, scales=scales)[0]
        if last:
            reuse_error = 0.0
            break
        reuse_error = None
        if evaluator.reference is not None:
            reuse_error = float(np.abs(evaluator.reused_errors(rows, scales)[0] - exact).max())
        if interrupted or not moved or reuse_error is None or reuse_error <= REUSE_TOLERANCE:
            break
    return Polished(x, float(exact.mean()), evaluations, seconds, interrupted), exact, \
        reuse_error
