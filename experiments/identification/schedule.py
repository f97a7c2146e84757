"""How the fitter spends its budget: independent exploration runs until two agree, then refinement.

1. *exploration*: independent CMA runs of at most ``start_budget`` evaluations,
   each centred on the start point with step ``sigma`` and its own seed. The loss
   is rugged (stick–slip clipping) and has distinct basins (for instance a
   load-dependent model that keeps its Stribeck load term or loses it); short
   independent runs pick the better basin far more reliably than one long run.
   ``starts`` runs are made, and more while the best result is not *confirmed*, up
   to ``max_starts`` runs, all within ``exploration_share`` of the budget (at least
   one run).
   It is confirmed when a second run reached it within ``agreement`` (relative: the
   runs are short and stop before they converge, so runs in one basin differ by a
   few per cent, runs in different basins by tens), or when no run beat the exact
   start point (a simpler model's converged optimum, or a saved fit). A result one
   lucky or unlucky run alone reached is thus checked by spending budget on more
   restarts, and runs that agree leave the rest to refinement. Coordinates
   inherited from a simpler model's optimum are searched with a step
   ``inherited_scale`` times smaller than the new ones: they are already close,
   the new terms are not.
2. *refinement*: CMA from the best point with the smaller step ``restart_sigma``;
   whenever a run stalls it restarts from the best point with twice the population
   (IPOP), until the budget is spent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from frictionsim.experiments.identification.cma_run import RunSpec
from frictionsim.limits import MAX_SEED, check_count

#: Most independent fits of one model (``FitSettings.fits``, ``--fits``).
MAX_FITS = 64


@dataclass(frozen=True)
class FitSettings:
    """Budget (loss evaluations), seed and the search strategy's constants (module docstring).

    ``fits``: independent fits of each model, each with the whole budget, the first with
    ``seed`` and the others with seeds drawn from it (:func:`independent_seed`); the lowest
    training loss is kept (:func:`~frictionsim.experiments.identification.starts.fit_one_model`).
    """

    budget: int = 3000
    seed: int = 0
    fits: int = 1
    sigma: float = 0.25
    popsize: int | None = None
    patience: int = 25
    tolerance: float = 1e-4
    restart_sigma: float = 0.05
    starts: int = 3
    max_starts: int = 4
    agreement: float = 0.1
    exploration_share: float = 0.6
    start_budget: int = 400
    inherited_scale: float = 0.3

    def __post_init__(self) -> None:
        check_count("fits", self.fits, 1, MAX_FITS)
        check_count("seed", self.seed, 0, MAX_SEED)


def independent_seed(seed: int, fit: int) -> int:
    """The seed of independent fit ``fit`` (0, 1, …) of a model fitted with ``seed``: ``seed``
    itself for the first, so one fit is the fit of that seed; the others from numpy's
    ``SeedSequence([seed, fit])``, unrelated to any other seed a user would pass."""
    if fit == 0:
        return seed
    return int(np.random.SeedSequence([seed, fit]).generate_state(1)[0] & 0x7FFFFFFF)


@dataclass
class Exploration:
    """The best loss (rad) each exploration run reached, and the exact start point's."""

    runs: list[float] = field(default_factory=list)
    start: float = math.inf
    agreement: float = FitSettings.agreement
    """Relative loss difference within which two runs agree."""
    best_run_point: np.ndarray | None = field(default=None, repr=False)

    def agreeing(self) -> int:
        """How many runs lie within the agreement (relative) of the best run."""
        if not self.runs:
            return 0
        best = min(self.runs)
        return sum(r <= best * (1 + self.agreement) for r in self.runs)

    def summary(self) -> dict:
        """The report's account of the restarts (losses in rad; ``start_loss`` None when the
        search started from the defaults)."""
        return {"run_losses": list(self.runs),
                "start_loss": self.start if math.isfinite(self.start) else None,
                "agreeing": self.agreeing(), "agreement": self.agreement,
                "confirmed": self.confirmed()}

    def confirmed(self) -> bool:
        """Whether no run beat the start point, or two runs agree on the best (module
        docstring)."""
        if not self.runs:
            return False
        return self.start <= min(self.runs) or self.agreeing() >= 2


class SearchSchedule:
    """The sequence of CMA runs of one fit (module docstring).

    ``centre``: the search coordinates of the start; ``inherited``: per coordinate,
    whether its value was inherited from a simpler model; ``start_loss``: the loss of
    the exact start point when it is a simpler model's optimum (else inf).
    """

    def __init__(self, settings: FitSettings, centre: np.ndarray, inherited: np.ndarray,
                 start_loss: float = math.inf) -> None:
        self.settings = settings
        self.centre = centre
        self.exploration_step = np.where(inherited, settings.inherited_scale, 1.0)
        d = centre.shape[0]
        self.popsize = settings.popsize or max(8, 4 + int(3 * math.log(max(d, 1))))
        self.runs = 0
        self.refining = False
        self.exploration = Exploration(start=start_loss, agreement=settings.agreement)

    @property
    def restarts(self) -> int:
        """Runs after the first."""
        return max(self.runs - 1, 0)

    def explore_more(self, evaluations: int) -> bool:
        """Whether the next run is one more exploration run (module docstring)."""
        s = self.settings
        made = len(self.exploration.runs)
        if made == 0:
            return True
        if evaluations + s.start_budget > s.exploration_share * s.budget:
            return False  # small budgets: refinement keeps its share, even below ``starts``
        if made < s.starts:
            return True
        return made < s.max_starts and not self.exploration.confirmed()

    def next_run(self, evaluations: int, best: np.ndarray, found: bool = True) -> RunSpec:
        """The next run, given the evaluations spent so far and the best point so far;
        ``found``: whether a run found it (else it is the exact start point).

        When no exploration run beat the start, the first refinement run continues from
        the best exploration run's point (a richer model's new terms away from 0: the
        short runs stop before they converge, and the basin they found may well lie below
        the start), the later ones from the start itself, so that parameters it holds at a
        bound of 0 can leave it.
        """
        s = self.settings
        if not self.refining and self.explore_more(evaluations):
            origin, step, sigma = self.centre, self.exploration_step, s.sigma
            end = min(s.budget, evaluations + s.start_budget)
        else:
            origin, step, sigma = best, np.ones_like(self.centre), s.restart_sigma
            end = s.budget
            if self.refining:
                self.popsize *= 2
            elif not found and self.exploration.best_run_point is not None:
                origin = self.exploration.best_run_point
            self.refining = True
        self.runs += 1
        return RunSpec(origin, step, sigma, self.popsize, end - evaluations)

    def finished(self, run_best: float, run_point: np.ndarray) -> None:
        """Record the best loss of the run just made and its point."""
        if not self.refining:
            e = self.exploration
            if not e.runs or run_best < min(e.runs):
                e.best_run_point = np.mod(run_point, 2.0)
            e.runs.append(run_best)
