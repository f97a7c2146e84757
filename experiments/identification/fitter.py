"""CMA-ES identification of one model: the best of its start points, then a schedule of CMA runs.

The loss of a candidate is the mean of its per-log position MAE (docs/model.md §5), every
generation evaluated in one batched compiled call (population × training logs on
all cores, :class:`frictionsim.solvers.batch.PackedLogs`). The start points are evaluated
exactly first, so the result is never worse than them; the budget is then spent by
:class:`~frictionsim.experiments.identification.schedule.SearchSchedule` on
:func:`~frictionsim.experiments.identification.cma_run.cma_run` runs. The strategy was tuned on
the 12 recorded XL330 logs (chain M1 → M4 → M6, 3000 evaluations each, seeds 0–9);
see the README for the figures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from frictionsim.experiments.common.progress import progress as progress_display
from frictionsim.experiments.identification.cma_run import cma_run
from frictionsim.experiments.identification.schedule import Exploration, FitSettings, SearchSchedule
from frictionsim.experiments.identification.search_space import SearchSpace
from frictionsim.limits import check_budget
from frictionsim.params import ParameterSet
from frictionsim.solvers.errors import SimulationError

__all__ = ["Evaluator", "FitResult", "FitSettings", "fit", "loss_of"]


class Evaluator(Protocol):
    """What :func:`fit` needs from its training data: the loss of many candidates at once.

    Implemented by the bench's logs packed once
    (:class:`frictionsim.solvers.batch.PackedLogs`: a candidate is a ``theta``, an item a
    log) and by a robot's recorded windows
    (:class:`frictionsim.solvers.robot_windows.RobotWindows`: a candidate is
    ``[theta | joint offsets]``, an item a window). The fitter takes the mean over the items
    as a candidate's loss and never looks inside."""

    @property
    def names(self) -> Sequence[str]:
        """The training items (logs, windows), for messages."""

    def errors(self, thetas: np.ndarray) -> np.ndarray:
        """Candidates (rows) → (candidates × items) mean absolute position errors (rad),
        non-finite where a candidate's simulation diverged."""


@dataclass
class FitResult:
    """The best parameters found and what it cost."""

    params: ParameterSet
    loss: float
    evaluations: int
    seconds: float
    rollout_seconds: float
    restarts: int
    history: list[tuple[int, float]] = field(default_factory=list)
    interrupted: bool = False
    exploration: Exploration = field(default_factory=Exploration)
    """The best loss of each independent exploration run, and of the exact start point."""
    at_start: bool = False
    """The result is one of the exact start points (e.g. the simpler model's optimum it was
    given), although the budget let the search try others: none of them did better."""
    fit_losses: tuple[float, ...] = ()
    """With ``FitSettings.fits`` > 1, the loss (rad) each independent fit ended at, in order;
    this result is the lowest of them."""

    @property
    def optimizer_seconds(self) -> float:
        """Wall time not spent in rollouts: nevergrad's ask/tell and the bookkeeping."""
        return self.seconds - self.rollout_seconds


def loss_of(evaluator: Evaluator, thetas: np.ndarray) -> np.ndarray:
    """Mean per-item MAE (rad) of each candidate; non-finite losses become +inf."""
    losses = evaluator.errors(thetas).mean(axis=1)
    return np.where(np.isfinite(losses), losses, np.inf)


def fit(
    space: SearchSpace,
    evaluator: Evaluator,
    settings: FitSettings = FitSettings(),
    start: dict[str, float] | None = None,
    centre: dict[str, float] | None = None,
    inherited: frozenset[str] = frozenset(),
    on_improve: Callable[[ParameterSet, float], None] | None = None,
    progress: bool = True,
    label: str = "",
    alternatives: tuple[dict[str, float], ...] = (),
) -> FitResult:
    """Minimise the mean per-item MAE of ``evaluator`` (:class:`Evaluator`: the bench's logs,
    a robot's windows) over ``space`` within ``settings.budget`` evaluations.

    ``start`` (named values, e.g. a simpler model's optimum embedded in this one)
    and the ``alternatives`` (e.g. this model's parameters from an earlier run)
    are evaluated first, exactly, and the best of them is the first best, so the
    result is never worse than any of them; the exploration runs are centred on
    ``centre`` (default: ``start``), with the ``inherited`` parameters searched at
    a smaller step. ``on_improve(params, loss)`` is called with the first best and
    after each generation that improved it (the caller saves it); it never sees a
    non-finite loss. Ctrl-C ends the search early with the best so far
    (``interrupted`` set). Raises :class:`~frictionsim.solvers.errors.SimulationError` when no
    candidate at all gives a finite loss.
    """
    check_budget(settings.budget, "budget")
    t_start = time.perf_counter()
    rollout_seconds = 0.0
    rng = np.random.RandomState(settings.seed)

    def evaluate(thetas: np.ndarray) -> np.ndarray:
        nonlocal rollout_seconds
        t0 = time.perf_counter()
        out = loss_of(evaluator, thetas)
        rollout_seconds += time.perf_counter() - t0
        return out

    firsts = [space.exact({**space.defaults(), **point}) for point in (start or {}, *alternatives)]
    losses = evaluate(np.array([p.theta() for p in firsts]))
    i = int(np.argmin(losses))
    best_params, best_loss = firsts[i], float(losses[i])
    centre_x = space.point({**space.defaults(), **(centre or start or {})})
    best_x = space.point(best_params.values)
    found = False  # whether a run found best_x, or it is an exact candidate
    evaluations = len(firsts)
    history = [(evaluations, best_loss)]
    if on_improve and math.isfinite(best_loss):
        on_improve(best_params, best_loss)
    # The start and the alternatives are earlier optima (a simpler model's, a saved fit): a
    # result an exploration run reaches again is confirmed. The defaults are no such result.
    given = float(np.min(losses)) if start or alternatives else math.inf
    schedule = SearchSchedule(settings, centre_x,
                              np.array([n in inherited for n in space.free], dtype=bool), given)
    bar = progress_display(total=max(settings.budget, evaluations), desc=label or space.model,
                           unit="eval", enabled=progress)
    bar.update(evaluations)
    bar.set_postfix_str(f"best {1e3 * best_loss:.2f} mrad")

    def on_generation(x: np.ndarray, losses: np.ndarray) -> None:
        nonlocal evaluations, best_loss, best_x, best_params, found
        evaluations += len(losses)
        bar.update(len(losses))
        i = int(np.argmin(losses))
        if losses[i] < best_loss:
            best_loss = float(losses[i])
            best_x = np.mod(x[i], 2.0)
            found = True
            best_params = space.parameter_set(x[i])
            history.append((evaluations, best_loss))
            bar.set_postfix_str(f"best {1e3 * best_loss:.2f} mrad")
            if on_improve:
                on_improve(best_params, best_loss)

    interrupted = False
    try:
        while evaluations < settings.budget and space.dimension > 0:
            spec = schedule.next_run(evaluations, best_x, found)
            _, run_best, run_x = cma_run(spec, lambda x: evaluate(space.thetas(x)),
                                  rng.randint(2**31 - 1), settings.tolerance, settings.patience,
                                  on_generation)
            schedule.finished(run_best, run_x)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    history.append((evaluations, best_loss))
    if not math.isfinite(best_loss):
        raise SimulationError(
            f"{label or space.model}: no candidate of {evaluations} gave a finite loss on the "
            f"training data ({', '.join(list(evaluator.names)[:5])}"
            f"{' …' if len(evaluator.names) > 5 else ''}); "
            "nothing was saved"
        )
    return FitResult(
        params=best_params,
        loss=best_loss,
        evaluations=evaluations,
        seconds=time.perf_counter() - t_start,
        rollout_seconds=rollout_seconds,
        restarts=schedule.restarts,
        history=history,
        interrupted=interrupted,
        exploration=schedule.exploration,
        at_start=not found and evaluations > len(firsts),
    )
