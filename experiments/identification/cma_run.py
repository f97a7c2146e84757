"""One CMA-ES run through nevergrad's ask/tell interface, a whole generation at a time.

CMA searches a vector z around 0 with initial step ``sigma``; the candidate handed
to the loss is ``x = origin + step·z`` (``step`` scales coordinates individually).
Each generation is asked in full, evaluated in one call (the batched compiled
rollouts) and told back. The run ends when its evaluation budget is spent or when it
stalls: no relative improvement of its own best by ``tolerance`` for ``patience``
generations, or CMA's step size collapsed below 1e-7.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import nevergrad as ng
import numpy as np
from nevergrad.common.errors import LossTooLargeWarning

#: CMA's step size below which a run has converged.
SIGMA_COLLAPSE = 1e-7


@dataclass(frozen=True)
class RunSpec:
    """Where and how one CMA run searches, and how many evaluations it may use."""

    origin: np.ndarray
    step: np.ndarray
    sigma: float
    popsize: int
    budget: int


def cma_run(spec: RunSpec, losses_of: Callable[[np.ndarray], np.ndarray], seed: int,
            tolerance: float, patience: int,
            on_generation: Callable[[np.ndarray, np.ndarray], None]
            ) -> tuple[int, float, np.ndarray]:
    """Run CMA-ES as ``spec`` says; returns the evaluations used, the run's best loss and
    its candidate.

    ``losses_of(x)`` evaluates the candidates (rows of ``x``); ``on_generation(x,
    losses)`` is called after each generation is told (the caller keeps the overall
    best). ``seed`` seeds nevergrad's random state.
    """
    d = spec.origin.shape[0]
    param = ng.p.Array(init=np.zeros(d)).set_mutation(sigma=spec.sigma)
    param.random_state = np.random.RandomState(seed)
    optimizer = ng.optimizers.ParametrizedCMA(popsize=spec.popsize, scale=1.0)(
        parametrization=param, budget=spec.budget, num_workers=spec.popsize
    )
    used = 0
    run_best = lowest = math.inf
    lowest_x = spec.origin
    stale = 0
    while used < spec.budget:
        n = min(spec.popsize, spec.budget - used)
        candidates = [optimizer.ask() for _ in range(n)]
        x = spec.origin + spec.step * np.array([c.value for c in candidates])
        losses = losses_of(x)
        with warnings.catch_warnings():
            # a diverged candidate's loss is +inf on purpose: nevergrad clips it to its
            # largest loss, which ranks it last, as meant
            warnings.simplefilter("ignore", LossTooLargeWarning)
            for c, loss in zip(candidates, losses):
                optimizer.tell(c, float(loss))
        used += n
        on_generation(x, losses)
        best = float(np.min(losses))
        if best < lowest:
            lowest, lowest_x = best, x[int(np.argmin(losses))]
        if best < run_best * (1 - tolerance):
            run_best = best
            stale = 0
        else:
            stale += 1
        if stale >= patience or optimizer.es.sigma < SIGMA_COLLAPSE:
            break
    return used, lowest, lowest_x
