"""Where each model's search starts; fitting one model (its best saved as it improves) and a
chain of models, the bench's and a robot's alike.

A richer model starts from the best of the nearest simpler model it contains
(M1 ⊂ M2, M1 ⊂ M3 ⊂ M4 ⊂ M5 ⊂ M6), embedded so that it reproduces it exactly, so it
can only do better; else from ``--init``, else from the defaults. With ``--resume``
the model's own saved parameters are one more exact candidate.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from frictionsim import layout, schema
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification.fitter import Evaluator, FitResult, FitSettings, fit
from frictionsim.experiments.identification.schedule import independent_seed
from frictionsim.experiments.identification.search_space import CONTAINS, SearchSpace, embed
from frictionsim.limits import is_number
from frictionsim.params import ParameterSet, from_dict, load_params, save_params
from frictionsim.plausibility import warn
from frictionsim.solvers.batch import PackedLogs


@dataclass(frozen=True)
class Start:
    """Where a model's search starts: an exact start point, a search centre, the
    parameters whose values were inherited from the simpler model or --init, and
    other exact candidates (the model's saved parameters, with --resume)."""

    point: dict | None = None
    centre: dict | None = None
    inherited: frozenset[str] = frozenset()
    alternatives: tuple[dict, ...] = ()


def start_for(model: str, fitted: dict[str, ParameterSet], init: ParameterSet | None,
              saved: ParameterSet | None = None) -> Start:
    """The start of a model: the nearest fitted simpler model, else --init, else the defaults;
    ``saved`` (the model's own parameters from an earlier run) is an extra exact candidate."""
    alternatives = (dict(saved.values),) if saved is not None else ()
    source = next((fitted[s] for s in CONTAINS[model] if s in fitted), None)
    if source is None and init is not None:
        if init.model == model or init.model in CONTAINS[model]:
            source = init
        else:
            names = schema.parameters(model, init.actuator)
            shared = {k: v for k, v in init.values.items() if k in names}
            return Start(shared, shared, frozenset(shared), alternatives)
    if source is None:
        return Start(alternatives=alternatives)
    # The electrical extensions (docs/model.md §9) are the same in every model: carried over as they are.
    electrical = {k: v for k, v in source.values.items() if schema.extension_of(k)}
    return Start({**embed(source, model), **electrical},
                 {**embed(source, model, exact=False), **electrical},
                 frozenset(source.values), alternatives)


def check_fixed(fixed: dict[str, float], models: list[str], actuator: str, extensions,
                option: str = "--fix") -> None:
    """ConfigurationError naming a held parameter (``option``: ``--fix``, or the Python
    ``fixed``) that is not a finite number, is no parameter of the models on the actuator, or
    lies outside its search bounds."""
    if not isinstance(fixed, dict):
        raise ConfigurationError(f"{option}: a dict of parameter names to values, not "
                                 f"{type(fixed).__name__}")
    if fixed and not models:
        raise ConfigurationError(f"{option} acts on the physical models (m1 … m6), and none "
                                 "is fitted")
    for name, value in fixed.items():
        if not is_number(value) \
                or not math.isfinite(value):
            raise ConfigurationError(f"{option} {name}={value!r}: the value must be a finite number")
        specs = [schema.parameters(m, actuator, extensions).get(name) for m in models]
        spec = next((s for s in specs if s is not None), None)
        if spec is None:
            extension = schema.extension_of(name)
            hint = f" without --with {extension}" if extension and extension not in \
                (extensions or ()) else ""
            raise ConfigurationError(f"{option} {name}: not a parameter of {', '.join(models)} on "
                                     f"{actuator}{hint}")
        if not spec.lower <= value <= spec.upper:
            raise ConfigurationError(f"{option} {name}={value:g}: outside its bounds [{spec.lower:g}, "
                                     f"{spec.upper:g}] on {actuator}; a fit holds parameters inside "
                                     "them (declare other bounds in an actuator file)")


def start_file(init: ParameterSet | str | os.PathLike, actuator: str, models: list[str],
               extensions, option: str = "--init") -> ParameterSet:
    """The parameters a search starts from (``option``: ``--init``, or the Python ``init``): a
    parameter file or a ParameterSet of ``actuator``, completed with the defaults of the
    extensions fitted; ConfigurationError for another actuator's, a warning for each value
    outside its search bounds (:func:`check_init_bounds`)."""
    where = str(init) if isinstance(init, (str, os.PathLike)) else \
        getattr(init, "source", None) or "(a ParameterSet)"
    # read as it is first: a file of another servo is refused before anything is said of the
    # defaults it would take with the extensions
    params = init if isinstance(init, ParameterSet) else load_params(init)
    if params.actuator != actuator:
        raise ConfigurationError(f"{option} {where}: actuator {params.actuator}, not {actuator}")
    params = from_dict(params.to_dict(), params.source or where, extensions)
    check_init_bounds(params, models, where)
    return params


def check_init_bounds(init: ParameterSet, models: list[str], where: str) -> None:
    """Warn about each --init value outside its search bounds: it is evaluated as given, but
    the search explores from the nearest bound."""
    bounds = {}
    for model in models:
        bounds.update(schema.parameters(model, init.actuator))
    for name, value in init.values.items():
        p = bounds.get(name)
        if p is not None and not p.lower <= value <= p.upper:
            edge = p.lower if value < p.lower else p.upper
            warn(f"--init {where}: {name} = {value:g} lies outside its search bounds "
                 f"[{p.lower:g}, {p.upper:g}]: the start is evaluated as given, the search "
                 f"explores from {edge:g}")


def better_of(best: FitResult | None, result: FitResult) -> FitResult:
    """The better of a model's fit so far and a new one (another latency tried, another
    independent fit): the evaluations and the time of both counted, interrupted if the new
    one was."""
    if best is None:
        return result
    kept = result if result.loss < best.loss else best
    kept.evaluations = best.evaluations + result.evaluations
    kept.seconds = best.seconds + result.seconds
    kept.rollout_seconds = best.rollout_seconds + result.rollout_seconds
    kept.interrupted = kept.interrupted or result.interrupted
    return kept


def latency_tries(extensions, fixed) -> list[dict[str, float]]:
    """The fits one model needs: one, or with ``latency`` (and ``latency_steps`` not fixed)
    one per latency 0 … MAX_LATENCY (CMA does not search an integer)."""
    if "latency" in extensions and "latency_steps" not in fixed:
        return [{"latency_steps": float(lag)} for lag in range(layout.MAX_LATENCY + 1)]
    return [{}]


def fit_one_model(model: str, tries: list[dict[str, float]], space_for: Callable,
                  start_in: Callable, evaluator: Evaluator, settings: FitSettings,
                  save: Callable, progress: bool = True) -> FitResult:
    """One model, the bench's or a robot's: one fit per entry of ``tries`` (the values it
    holds, :func:`latency_tries`) and per independent fit (``settings.fits``, each with its
    own seed, :func:`~frictionsim.experiments.identification.schedule.independent_seed`),
    each of the whole budget, the lowest training loss kept (with ``fits`` > 1 the loss of
    each in ``FitResult.fit_losses``).

    ``space_for(values)`` builds the search space with those values held; ``start_in(space)``
    gives the :class:`Start` (its values restricted to that space); ``evaluator`` is the
    training data (:class:`~frictionsim.experiments.identification.fitter.Evaluator`);
    ``save(params, loss)`` is called whenever the best so far improves, never with a later
    try's early candidates worse than an earlier try's best. Stops at an interrupt."""
    best: FitResult | None = None
    saved = [math.inf]

    def keep(params, loss: float) -> None:
        if loss < saved[0]:
            saved[0] = loss
            save(params, loss)

    n = settings.fits
    losses: list[float] = []
    for extra in tries:
        space = space_for(extra)
        start = start_in(space)
        for i in range(n):
            label = model + (f" L={int(extra['latency_steps'])}" if extra else "") \
                + (f" fit {i + 1}/{n}" if n > 1 else "")
            own = dataclasses.replace(settings, seed=independent_seed(settings.seed, i))
            result = fit(space, evaluator, own, start=start.point, centre=start.centre,
                         inherited=start.inherited, on_improve=keep, progress=progress,
                         label=label, alternatives=start.alternatives)
            losses.append(result.loss)
            best = better_of(best, result)
            if result.interrupted:
                break
        if best.interrupted:
            break
    if n > 1:
        best.fit_losses = tuple(losses)
        if progress:
            print(f"{model}: {len(losses)} independent fits, training loss "
                  f"{1e3 * min(losses):.2f}–{1e3 * max(losses):.2f} mrad, the lowest kept")
    return best


def fit_chain(models, fit_model: Callable[[str, dict], FitResult]
              ) -> tuple[dict[str, FitResult], bool]:
    """The models in chain order, the bench's or a robot's: ``fit_model(model, fitted)`` with
    the parameters fitted so far (a richer model starts from a simpler one's,
    :func:`start_for`). Returns the fits, and whether an interrupt ended the chain (the
    models fitted so far are in it, the interrupted one with its best so far)."""
    fits: dict[str, FitResult] = {}
    fitted: dict = {}
    for model in models:
        result = fit_model(model, fitted)
        fits[model] = result
        fitted[model] = result.params
        if result.interrupted:
            return fits, True
    return fits, False


def fit_model(model: str, actuator: str, fixed: dict[str, float], train: PackedLogs,
              settings: FitSettings, out: Path, start: Start, progress: bool = True,
              scheme: str = "reference", extensions: tuple[str, ...] = (),
              coordinates: str = "parameters") -> tuple[FitResult, Path]:
    """Fit one bench model (simulated with ``scheme``, with the docs/model.md §9
    ``extensions``; :func:`fit_one_model`), saving the best so far to ``out/<model>.json`` on
    every improvement. ``coordinates``: how k_t and R are searched
    (:attr:`SearchSpace.coordinates`)."""
    names = schema.parameters(model, actuator, extensions)
    own_fixed = {k: v for k, v in fixed.items() if k in names}
    path = out / f"{model}.json"

    def space_for(extra: dict) -> SearchSpace:
        return SearchSpace(model, actuator, {**own_fixed, **extra}, scheme, extensions,
                           coordinates)

    def start_in(space: SearchSpace) -> Start:
        def own(d: dict | None) -> dict | None:
            return {k: v for k, v in d.items() if k not in space.fixed} if d else d

        return Start(own(start.point), own(start.centre), start.inherited,
                     tuple(own(a) for a in start.alternatives))

    best = fit_one_model(model, latency_tries(extensions, own_fixed), space_for, start_in, train,
                         settings, lambda params, loss: save_params(path, params), progress)
    return best, path
