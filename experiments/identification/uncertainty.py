"""How far another fit of the same servo may land: parameter ranges by a bootstrap over logs
(``identify --uncertainty``).

A user with a second servo of the same type asks how far it may differ from the one
identified, and a fit on other logs of the same servo is the closest thing the data can
answer. The bootstrap answers that question directly: the training logs are drawn with
replacement (as many as there are), the whole identification is run again on the draw (the
same chain of models, the same budget, its own seed), and each parameter's spread is read
off the replicates. Two fits on two sets of logs differ by the difference of two such
draws, so a parameter's range is the fit's value plus the central :data:`LEVEL` quantiles of
the differences between pairs of replicates, clipped to the search bounds: it should hold
another identification's value about :data:`LEVEL` of the time.

Why not the curvature of the loss at the optimum (a Laplace approximation, as
``mujoco.sysid`` reports)? It assumes one smooth, quadratic basin and residuals that are
independent noise. Here the loss is rugged (friction sticks and releases), several basins of
near-equal loss exist on small campaigns (README: the leave-one-gain-out folds), k_t and R
lie along a ridge the logs do not determine, and the residuals of a 6-second log are one
smooth, strongly correlated error, not noise: the curvature gives intervals far too narrow
for another fit, and none at all where the loss is flat. The bootstrap sees the basins and
the ridge as they are; it costs a refit per replicate (seconds on a dozen logs).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.identification.identifiability import combinations
from frictionsim.limits import MAX_SEED
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs

#: The share of other fits a range is meant to hold.
LEVEL = 0.9
#: Bootstrap replicates by default.
REPLICATES = 20


@dataclass
class Uncertainty:
    """Per model: each replicate's parameter values and the ranges (:data:`LEVEL`)."""

    level: float
    replicates: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    ranges: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    combinations: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    """Per model, the same ranges of the identifiable combinations (k_t/R, k_t²/R, …), far
    narrower than k_t's and R's under the voltage law."""
    seconds: float = 0.0
    interrupted: bool = False

    def summary(self) -> dict:
        return {"method": "bootstrap over logs", "level": self.level,
                "replicates": len(next(iter(self.replicates.values()), [])),
                "seconds": self.seconds, "interrupted": self.interrupted,
                "ranges": {m: {k: list(v) for k, v in r.items()} for m, r in self.ranges.items()},
                "combinations": {m: {k: list(v) for k, v in r.items()}
                                 for m, r in self.combinations.items()}}


def another_fit_range(estimate: float, samples: np.ndarray, level: float, lower: float,
                      upper: float) -> tuple[float, float]:
    """``estimate`` plus the central ``level`` quantiles of the differences between pairs of
    ``samples`` (module docstring), clipped to [lower, upper]."""
    samples = np.asarray(samples, dtype=float)
    diffs = (samples[:, None] - samples[None, :])[~np.eye(len(samples), dtype=bool)]
    if diffs.size == 0:
        return estimate, estimate
    low, high = np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2])
    return (float(min(max(estimate + low, lower), estimate)),
            float(max(min(estimate + high, upper), estimate)))


def bootstrap(train: list[Log], settings, fitted: dict[str, ParameterSet],
              replicates: int = REPLICATES, level: float = LEVEL,
              progress: bool = True) -> Uncertainty:
    """The ranges of every model in ``fitted`` (its fit on all of ``train``), by ``replicates``
    identifications on logs drawn with replacement (``settings``: the run's
    :class:`~frictionsim.experiments.identification.pipeline.IdentifySettings`; replicate b
    uses seed ``settings.fit.seed + 1 + b``). Ctrl-C ends it early with the replicates so far
    (``interrupted``)."""
    from frictionsim.experiments.identification.starts import fit_model, start_for

    if not 2 <= replicates <= 10_000:
        raise ConfigurationError(f"--uncertainty {replicates}: 2 to 10,000 replicates")

    def replicate(draw: list[Log], seed: int, tmp: Path) -> dict[str, ParameterSet]:
        packed = PackedLogs.from_logs(draw, settings.actuator)
        done: dict[str, ParameterSet] = {}
        fit = dataclasses.replace(settings.fit, seed=seed)  # its --fits too
        for model in settings.models:
            start = start_for(model, done if settings.chain else {}, settings.init)
            res, _ = fit_model(model, settings.actuator, settings.fixed, packed, fit, tmp, start,
                               progress=False, scheme=settings.scheme,
                               extensions=settings.extensions, coordinates=settings.coordinates)
            if res.interrupted:
                raise KeyboardInterrupt
            done[model] = res.params
        return done

    return run_bootstrap(train, fitted, settings.fixed, settings.fit.seed, replicates, level,
                         progress, replicate)


def run_bootstrap(data: list, fitted: dict[str, ParameterSet], fixed: dict[str, float],
                  seed: int, replicates: int, level: float, progress: bool,
                  replicate) -> Uncertainty:
    """The bootstrap loop the bench and the robots share: ``replicates`` draws of ``data``
    with replacement (as many items as it has), each identified by ``replicate(draw, seed_b,
    folder)`` (seed ``seed + 1 + b`` modulo 2³², a temporary folder of its own) into fitted parameter
    sets by model, then the ranges (:func:`read_ranges`). Ctrl-C ends it early with the
    replicates so far (``interrupted``)."""
    from frictionsim.experiments.common.progress import progress as bar

    result = Uncertainty(level, {m: [] for m in fitted})
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    show = bar(total=replicates, desc="bootstrap", unit="fit", enabled=progress)
    try:
        with tempfile.TemporaryDirectory(prefix="frictionsim-bootstrap-") as tmp:
            for b in range(replicates):
                draw = [data[i] for i in rng.integers(0, len(data), len(data))]
                folder = Path(tmp) / str(b)
                folder.mkdir()
                # past the largest seed numpy takes, the replicates' seeds wrap round to 0
                done = replicate(draw, (seed + 1 + b) % (MAX_SEED + 1), folder)
                for model in fitted:
                    result.replicates[model].append(dict(done[model].values))
                show.update(1)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        show.close()
    result.seconds = time.perf_counter() - t0
    read_ranges(result, fitted, fixed)
    return result


def interrupted_bootstrap(result: Uncertainty, models) -> str:
    """What a bootstrap cut short by Ctrl-C left, for the interrupt's line: each of
    ``models``' ranges from the replicates done, or none where fewer than two were
    (:func:`read_ranges`)."""
    done = {m: len(result.replicates.get(m, ())) for m in models}
    if all(n < 2 for n in done.values()):
        n = max(done.values(), default=0)
        return (f"the bootstrap stopped after {counted(n, 'replicate')}: ranges need two at "
                "least, so none were written (the fit itself is saved)")
    return ("the bootstrap stopped early: the ranges come from the replicates done ("
            + ", ".join(f"{m} {n}" if n >= 2 else f"{m} {counted(n, 'replicate')}: none"
                        for m, n in done.items()) + ")")


def read_ranges(result: Uncertainty, fitted: dict[str, ParameterSet],
                fixed: dict[str, float]) -> None:
    """Each model's ranges (and its combinations') from the replicates in ``result``, about
    its fit on all the data (``fitted``); the parameters held ``fixed`` and the discrete ones
    get none. A model with fewer than two replicates gets none."""
    for model, params in fitted.items():
        rows = result.replicates[model]
        if len(rows) < 2:
            continue
        spec = schema.parameters(model, params.actuator, params.extensions)
        free = [k for k in spec if k not in fixed and k not in schema.DISCRETE]
        result.ranges[model] = {
            k: another_fit_range(params.values[k], np.array([r[k] for r in rows]),
                                 result.level, spec[k].lower, spec[k].upper) for k in free}
        mine = combinations(params)
        theirs = [combinations(params.with_values(**r)) for r in rows]
        result.combinations[model] = {
            k: another_fit_range(v, np.array([c[k] for c in theirs]), result.level, 0.0, np.inf)
            for k, v in mine.items()}
