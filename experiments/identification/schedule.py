"""How the fitter spends its budget: exploration runs, then refinement with growing populations.

1. *exploration*: ``starts`` independent CMA runs of at most ``start_budget``
   evaluations, all centred on the start point with step ``sigma``. The loss is
   rugged (stick–slip clipping) and has distinct basins (for instance a
   load-dependent model that keeps its Stribeck load term or loses it); short
   independent runs pick the better basin far more reliably than one long run.
   Coordinates inherited from a simpler model's optimum are searched with a step
   ``inherited_scale`` times smaller than the new ones: they are already close, the
   new terms are not.
2. *refinement*: CMA from the best point with the smaller step ``restart_sigma``;
   whenever a run stalls it restarts from the best point with twice the population
   (IPOP), until the budget is spent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from experiments.identification.cma_run import RunSpec


@dataclass(frozen=True)
class FitSettings:
    """Budget (loss evaluations), seed and the search strategy's constants (module docstring)."""

    budget: int = 3000
    seed: int = 0
    sigma: float = 0.25
    popsize: int | None = None
    patience: int = 25
    tolerance: float = 1e-4
    restart_sigma: float = 0.05
    starts: int = 2
    start_budget: int = 500
    inherited_scale: float = 0.3


class SearchSchedule:
    """The sequence of CMA runs of one fit (module docstring).

    ``centre``: the search coordinates of the start; ``inherited``: per coordinate,
    whether its value was inherited from a simpler model.
    """

    def __init__(self, settings: FitSettings, centre: np.ndarray, inherited: np.ndarray) -> None:
        self.settings = settings
        self.centre = centre
        self.exploration_step = np.where(inherited, settings.inherited_scale, 1.0)
        d = centre.shape[0]
        self.popsize = settings.popsize or max(8, 4 + int(3 * math.log(max(d, 1))))
        self.runs = 0

    @property
    def restarts(self) -> int:
        """Runs after the first."""
        return max(self.runs - 1, 0)

    def next_run(self, evaluations: int, best: np.ndarray) -> RunSpec:
        """The next run, given the evaluations spent so far and the best point so far."""
        s = self.settings
        if self.runs < s.starts:
            origin, step, sigma = self.centre, self.exploration_step, s.sigma
            end = min(s.budget, evaluations + s.start_budget)
        else:
            origin, step, sigma = best, np.ones_like(self.centre), s.restart_sigma
            end = s.budget
            if self.runs > s.starts:
                self.popsize *= 2
        self.runs += 1
        return RunSpec(origin, step, sigma, self.popsize, end - evaluations)
