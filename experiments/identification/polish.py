"""A local polish after the global search: Levenberg–Marquardt-style steps on the residuals.

CMA-ES finds the basin; near its optimum it creeps (on the SO-101, 800 evaluations reach a
window loss 3 % above what 3000 reach). A Gauss–Newton model of the loss, fitted to the
residuals' differences, gets there in a few dozen evaluations, as ``mujoco.sysid`` polishes
its native models.

The loss is the mean of m mean absolute errors e_i ≥ 0 (a robot's: one per window and servo
joint). With the residuals r_i = √e_i, the least-squares objective ½·Σ r_i² = ½·Σ e_i is
the loss times m/2: the polish minimises the same loss, not a squared error. Each step
solves the trust-region problem of scipy's ``least_squares`` (``trf``) with the Jacobian
J_ij = (r_i(x + h·u_j) − r_i(x))/h, forward differences of step ``h`` in the search
coordinates (:mod:`~frictionsim.experiments.identification.search_space`, where a
coordinate spans its bounds over a unit), the n shifted candidates of a Jacobian evaluated in
one batched call (trf has just had r(x)). A step of 3e-3
of a parameter's span is wide enough that the stick–slip clipping's kinks average out over
the windows' thousands of samples.

A candidate whose run failed has non-finite residuals: the trust region shrinks away from
it, and in a Jacobian its column is zero (no direction learnt from it). The best candidate
evaluated is kept whatever the solver ends on, and Ctrl-C returns it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

#: Forward-difference step of the Jacobian, in search coordinates (a unit spans a bound).
STEP = 3e-3
#: Most residual evaluations the solver may ask for (Jacobians count n each on top).
MAX_STEPS = 40


@dataclass
class Polished:
    """The polish's best candidate (search coordinates), its mean error as evaluated, the
    candidates evaluated and the time taken; ``interrupted`` when Ctrl-C ended it."""

    x: np.ndarray
    loss: float
    evaluations: int
    seconds: float
    interrupted: bool = False


def polish(x0: np.ndarray, errors_of: Callable[[np.ndarray], np.ndarray], step: float = STEP,
           max_steps: int = MAX_STEPS) -> Polished:
    """Polish ``x0`` (search coordinates). ``errors_of(X)``: candidates (rows) → (candidates,
    m) mean absolute errors, non-finite where a run failed; the loss is their mean. Returns
    the best candidate evaluated (``x0`` itself when nothing beat it)."""
    x0 = np.asarray(x0, dtype=float)
    start = time.perf_counter()
    best = {"x": x0.copy(), "loss": math.inf, "n": 0}

    def evaluate(xs: np.ndarray) -> np.ndarray:
        errors = np.asarray(errors_of(xs), dtype=float).reshape(len(xs), -1)
        best["n"] += len(xs)
        losses = errors.mean(axis=1)
        losses = np.where(np.isfinite(losses), losses, math.inf)
        i = int(np.argmin(losses))
        if losses[i] < best["loss"]:
            best["x"], best["loss"] = xs[i].copy(), float(losses[i])
        return np.sqrt(np.where(np.isfinite(errors), errors, math.inf))

    last: dict = {}

    def residuals(x: np.ndarray) -> np.ndarray:
        if "x" not in last or not np.array_equal(last["x"], x):  # the start is asked twice
            last["x"], last["r"] = x.copy(), evaluate(x[None])[0]
        return last["r"]

    def jacobian(x: np.ndarray) -> np.ndarray:
        # trf asks for the Jacobian at the point whose residuals it just had: not run again
        columns = (evaluate(x[None] + step * np.eye(len(x))) - residuals(x)) / step
        return np.where(np.isfinite(columns), columns, 0.0).T

    interrupted = False
    try:
        if np.all(np.isfinite(residuals(x0))) and len(x0):
            least_squares(residuals, x0, jac=jacobian, method="trf", max_nfev=max_steps)
    except KeyboardInterrupt:
        interrupted = True
    return Polished(best["x"], best["loss"], best["n"], time.perf_counter() - start,
                    interrupted)
