"""CMA-ES identification through nevergrad's ask/tell interface, evaluated in batches.

Each generation is asked in full, evaluated in one batched compiled call
(population × training logs on all cores, :class:`solvers.batch.PackedLogs`)
and told back. The loss of a candidate is the mean of its per-log position MAE
(SPEC §5). The budget is spent in two phases:

1. *exploration*: ``starts`` independent CMA runs of at most ``start_budget``
   evaluations, all centred on the start point with step ``sigma``. The loss
   is rugged (stick–slip clipping) and has distinct basins (for instance a
   load-dependent model that keeps its Stribeck load term or loses it); short
   independent runs pick the better basin far more reliably than one long run.
   Coordinates inherited from a simpler model's optimum are searched with a
   step ``inherited_scale`` times smaller than the new ones: they are already
   close, the new terms are not.
2. *refinement*: CMA from the best point with the smaller step
   ``restart_sigma``; whenever a run stalls (no relative improvement of the
   best loss by ``tolerance`` for ``patience`` generations, or its step size
   collapses) it restarts from the best point with twice the population (IPOP),
   until the budget is spent.

The strategy was tuned on the 12 recorded XL330 logs (chain M1 → M4 → M6,
3000 evaluations each, seeds 0–5); see the README for the figures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import nevergrad as ng
import numpy as np
from tqdm import tqdm

from experiments.search_space import SearchSpace
from frictionsim.params import ParameterSet
from solvers.batch import PackedLogs
from solvers.errors import SimulationError


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

    @property
    def optimizer_seconds(self) -> float:
        """Wall time not spent in rollouts: nevergrad's ask/tell and the bookkeeping."""
        return self.seconds - self.rollout_seconds


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


def loss_of(packed: PackedLogs, thetas: np.ndarray) -> np.ndarray:
    """Mean per-log MAE (rad) of each candidate; non-finite losses become +inf."""
    losses = packed.errors(thetas).mean(axis=1)
    return np.where(np.isfinite(losses), losses, np.inf)


def fit(
    space: SearchSpace,
    packed: PackedLogs,
    settings: FitSettings = FitSettings(),
    start: dict[str, float] | None = None,
    centre: dict[str, float] | None = None,
    inherited: frozenset[str] = frozenset(),
    on_improve: Callable[[ParameterSet, float], None] | None = None,
    progress: bool = True,
    label: str = "",
    alternatives: tuple[dict[str, float], ...] = (),
) -> FitResult:
    """Minimise the mean per-log MAE over ``space`` within ``settings.budget`` evaluations.

    ``start`` (named values, e.g. a simpler model's optimum embedded in this one)
    and the ``alternatives`` (e.g. this model's parameters from an earlier run)
    are evaluated first, exactly, and the best of them is the first best, so the
    result is never worse than any of them; the exploration runs are centred on
    ``centre`` (default: ``start``), with the ``inherited`` parameters searched at
    a smaller step. ``on_improve(params, loss)`` is called with the first best and
    after each generation that improved it (the caller saves it); it never sees a
    non-finite loss. Ctrl-C ends the search early with the best so far
    (``interrupted`` set). Raises :class:`~solvers.errors.SimulationError` when no
    candidate at all gives a finite loss.
    """
    if settings.budget < 1:
        raise ValueError(f"budget must be at least 1, got {settings.budget}")
    t_start = time.perf_counter()
    rollout_seconds = 0.0
    rng = np.random.RandomState(settings.seed)

    def evaluate(thetas: np.ndarray) -> np.ndarray:
        nonlocal rollout_seconds
        t0 = time.perf_counter()
        out = loss_of(packed, thetas)
        rollout_seconds += time.perf_counter() - t0
        return out

    firsts = [ParameterSet(space.model, space.actuator, {**space.defaults(), **point})
              for point in (start or {}, *alternatives)]
    losses = evaluate(np.array([p.theta() for p in firsts]))
    i = int(np.argmin(losses))
    best_params, best_loss = firsts[i], float(losses[i])
    centre_x = space.point({**space.defaults(), **(centre or start or {})})
    best_x = centre_x if i == 0 else space.point(best_params.values)
    evaluations = len(firsts)
    history = [(evaluations, best_loss)]
    if on_improve and math.isfinite(best_loss):
        on_improve(best_params, best_loss)
    d = space.dimension
    base_popsize = settings.popsize or max(8, 4 + int(3 * math.log(max(d, 1))))
    popsize = base_popsize
    inherited_step = np.array([settings.inherited_scale if n in inherited else 1.0
                               for n in space.free])
    runs = 0
    interrupted = False
    bar = tqdm(total=settings.budget, desc=label or space.model, unit="eval", disable=not progress,
               leave=True, dynamic_ncols=True)
    bar.update(1)
    bar.set_postfix_str(f"best {1e3 * best_loss:.2f} mrad")
    try:
        while evaluations < settings.budget and d > 0:
            exploring = runs < settings.starts
            if exploring:
                origin, step, sigma = centre_x, inherited_step, settings.sigma
                run_budget = min(settings.budget, evaluations + settings.start_budget)
            else:
                origin, step, sigma = best_x, np.ones(d), settings.restart_sigma
                run_budget = settings.budget
                if runs > settings.starts:
                    popsize *= 2
            runs += 1
            # CMA searches z; the candidate is x = origin + step·z.
            param = ng.p.Array(init=np.zeros(d)).set_mutation(sigma=sigma)
            param.random_state = np.random.RandomState(rng.randint(2**31 - 1))
            optimizer = ng.optimizers.ParametrizedCMA(popsize=popsize, scale=1.0)(
                parametrization=param, budget=run_budget - evaluations, num_workers=popsize
            )
            run_best = math.inf
            stale = 0
            while evaluations < run_budget:
                n = min(popsize, run_budget - evaluations)
                candidates = [optimizer.ask() for _ in range(n)]
                x = origin + step * np.array([c.value for c in candidates])
                losses = evaluate(space.thetas(x))
                for c, loss in zip(candidates, losses):
                    optimizer.tell(c, float(loss))
                evaluations += n
                bar.update(n)
                i = int(np.argmin(losses))
                if losses[i] < best_loss:
                    best_loss = float(losses[i])
                    best_x = np.mod(x[i], 2.0)
                    best_params = space.parameter_set(x[i])
                    history.append((evaluations, best_loss))
                    bar.set_postfix_str(f"best {1e3 * best_loss:.2f} mrad")
                    if on_improve:
                        on_improve(best_params, best_loss)
                if losses[i] < run_best * (1 - settings.tolerance):
                    run_best = float(losses[i])
                    stale = 0
                else:
                    stale += 1
                if stale >= settings.patience or optimizer.es.sigma < 1e-7:
                    break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    history.append((evaluations, best_loss))
    if not math.isfinite(best_loss):
        raise SimulationError(
            f"{label or space.model}: no candidate of {evaluations} gave a finite loss on the "
            f"training logs ({', '.join(packed.names[:5])}{' …' if packed.n_logs > 5 else ''}); "
            "nothing was saved"
        )
    return FitResult(
        params=best_params,
        loss=best_loss,
        evaluations=evaluations,
        seconds=time.perf_counter() - t_start,
        rollout_seconds=rollout_seconds,
        restarts=max(runs - 1, 0),
        history=history,
        interrupted=interrupted,
    )
