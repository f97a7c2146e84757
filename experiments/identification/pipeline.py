"""The identification pipeline: fit friction models to bench logs, validate, keep every result.

Each model is fitted by :func:`frictionsim.experiments.identification.fitter.fit` on the
training logs, starting where :mod:`~frictionsim.experiments.identification.starts` says (a
richer model from the simpler model it contains, so it can only do better). The
best parameters of each model are written to ``OUT/<model>.json`` every time they
improve, so an interrupt loses nothing. An earlier identification in ``OUT`` is
never replaced unasked (:func:`prepare_out`). Everything is configured by a plain
:class:`IdentifySettings`; the command line (:mod:`frictionsim.experiments.commands.identify`)
only builds one.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import MODELS, schema
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification.fitter import FitResult, FitSettings
from frictionsim.experiments.identification.starts import fit_chain, fit_model, start_for
from frictionsim.logs import Log
from frictionsim.params import ParameterFileError, ParameterSet, load_params, save_params
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.errors import non_finite


@dataclass(frozen=True)
class IdentifySettings:
    """What to identify and how: the models (in chain order), the actuator, the fitter's
    settings, parameters held fixed, a start file, whether richer models start from
    simpler ones, a Dask scheduler address, whether to draw progress bars, and the
    fixed step's scheme (docs/model.md §4) the models are simulated with."""

    models: tuple[str, ...]
    actuator: str
    fit: FitSettings = FitSettings()
    fixed: dict[str, float] = field(default_factory=dict)
    init: ParameterSet | None = None
    chain: bool = True
    dask: str | None = None
    progress: bool = True
    scheme: str = "reference"
    extensions: tuple[str, ...] = ()
    """The electrical extensions of docs/model.md §9 the models are fitted with (``--with``)."""
    learned: tuple[str, ...] = ()
    """Learned actuators trained after the physical models (``net``, ``hybrid`` over M6)."""
    net: object = None
    """How learned actuators are trained (a
    :class:`~frictionsim.experiments.identification.learned.NetSettings`; None: its
    defaults)."""
    coordinates: str = "parameters"
    """How k_t and R are searched: as themselves, or as k_t/R and k_t²/R (``identifiable``)."""


class PerLogScores:
    """The mean of a model's per-log MAE (rad) on its training and validation logs (the
    ``train`` and ``validation`` dicts of the dataclass that has it)."""

    train: dict[str, float]
    validation: dict[str, float]

    @property
    def train_mae(self) -> float:
        return float(np.mean(list(self.train.values())))

    @property
    def validation_mae(self) -> float | None:
        return float(np.mean(list(self.validation.values()))) if self.validation else None


@dataclass
class ModelFit(PerLogScores):
    """A fitted model: the optimizer's result and its errors on training and validation logs."""

    model: str
    result: FitResult
    params_file: Path
    train: dict[str, float]
    validation: dict[str, float]
    kept: bool = False
    """True for a model kept from an earlier run in OUT (``--resume``), not refitted now."""


def content_digest(log: Log) -> str:
    """A digest of a log's recording (its entries and header, not its file name)."""
    payload = json.dumps([log.header, log.entries], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def split_logs(logs: list[Log], held_out: list[Log] | None = None,
               validation_kp: float | None = None, fraction: float | None = None,
               seed: int = 0) -> tuple[list[Log], list[Log]]:
    """Training and validation logs: ``held_out`` logs given apart (never one of ``logs``), the
    logs of firmware gain ``validation_kp``, a random ``fraction`` (seeded), or none."""
    if held_out:
        # by content: a copy or a hard link of a training log is that log
        trained = {content_digest(log): log for log in logs}
        twins = [(log, trained.get(content_digest(log))) for log in held_out]
        shared = [(log, twin) for log, twin in twins if twin is not None]
        if shared:
            first, twin = shared[0]
            raise ConfigurationError(f"--validation: {first.path} is the training log {twin.path} "
                                     f"(same recording); {len(shared)} of {len(held_out)} validation "
                                     "logs are training logs, and a validation error must come from "
                                     "logs the fit has not seen")
        return logs, held_out
    if validation_kp is not None:
        held = [log for log in logs if log.kp == validation_kp]
        train = [log for log in logs if log.kp != validation_kp]
        gains = sorted({log.kp for log in logs})
        if not held or not train:
            raise ConfigurationError(
                f"--validation-kp {validation_kp:g} leaves "
                f"{len(train)} training and {len(held)} validation logs (gains in the logs: "
                f"{', '.join(f'{g:g}' for g in gains)})"
            )
        return train, held
    if fraction is not None:
        if not 0 < fraction < 1:
            raise ConfigurationError(f"--split must be between 0 and 1, got {fraction}")
        n_val = max(1, round(fraction * len(logs)))
        if n_val >= len(logs):
            raise ConfigurationError(f"--split {fraction} leaves no training log out of {len(logs)}")
        order = np.random.default_rng(seed).permutation(len(logs))
        held = sorted(order[:n_val])
        return ([log for i, log in enumerate(logs) if i not in held],
                [logs[i] for i in held])
    return logs, []


def evaluate(params: ParameterSet, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of a parameter set; :class:`~frictionsim.solvers.errors.SimulationError`
    naming the log when one is not finite."""
    if not logs:
        return {}
    packed = PackedLogs.from_logs(logs, params.actuator)
    errors = packed.errors(params.theta())[0]
    non_finite(errors, packed.names, params.source or f"{params.model} parameters")
    return dict(zip(packed.names, errors.tolist()))


#: Files an identification writes in OUT (parameter files, report, figures).
OUTPUT_FILES = re.compile(r"^((m[1-6]|net|hybrid)\.json|report\.(md|json)|mae_per_model\.png|convergence\.png"
                          r"|best_worst\.png|cross_validation\.png)$")
#: The folder of the cross-validation folds (``--cross-validate``), one identification each.
FOLDS_DIR = "cross_validation"


def check_resumable(path: Path, params: ParameterSet, scheme: str | None,
                    extensions: tuple[str, ...] | None) -> None:
    """ValueError unless a saved fit can be continued by this run: its file is named after its
    model, and it was fitted with the same scheme and electrical extensions (a fit kept or
    compared under other settings would be misreported, or replaced by a fit it beats)."""
    if path.stem != params.model:
        raise ConfigurationError(f"--resume: {path} holds a {params.model} fit, not {path.stem}; the "
                                 "folder is not an identification's output (use another --out)")
    if scheme is not None and params.scheme != scheme:
        raise ConfigurationError(f"--resume: {path} was fitted with --scheme {params.scheme}, this run "
                                 f"asks for {scheme}; resume with the same settings or use another --out")
    if extensions is not None and tuple(params.extensions) != tuple(extensions):
        saved = " ".join(params.extensions) or "none"
        asked = " ".join(extensions) or "none"
        raise ConfigurationError(f"--resume: {path} was fitted with --with {saved}, this run asks for "
                                 f"--with {asked}; resume with the same settings or use another --out")


def not_ours(entry: Path) -> bool:
    """Whether an entry of an identification's folder is not one the identification writes
    (a user's file beside the fit): it is kept when the folder is replaced."""
    return not (OUTPUT_FILES.match(entry.name) or entry.name == FOLDS_DIR)


def existing_outputs(out: Path, ours: re.Pattern) -> tuple[list[Path], list[Path]]:
    """What an output folder already holds (hidden files aside), and which of it a run writes
    (names matching ``ours``); ValueError when ``out`` is a file."""
    if out.exists() and not out.is_dir():
        raise ConfigurationError(f"--out {out} is a file; it must be a directory")
    present = sorted(p for p in out.iterdir() if not p.name.startswith(".")) if out.exists() else []
    return present, [p for p in present if ours.match(p.name)]


def note_kept_fits(out: Path, ours: re.Pattern, fitted: list[str]) -> None:
    """Say which fits a resumed run keeps in ``out`` without fitting them again (the saved
    ``<model>.json`` matching ``ours`` of models not in ``fitted``): its report covers only
    ``fitted``."""
    kept = [p.name for p in sorted(out.glob("*.json")) if ours.match(p.name)
            and p.stem not in fitted and not p.name.startswith("report")]
    if kept:
        print(f"note: {out} keeps {', '.join(kept)} of the earlier run as "
              f"{'it is' if len(kept) == 1 else 'they are'} (not fitted again; this run's "
              f"report covers {' '.join(fitted)})")


def prepare_out(out: Path, actuator: str, resume: bool = False, overwrite: bool = False,
                scheme: str | None = None, extensions: tuple[str, ...] | None = None
                ) -> dict[str, ParameterSet]:
    """Make ``out`` ready; returns the saved parameters to resume from (model → set).

    A missing or empty ``out`` is used as is. Otherwise: ``resume`` loads its
    ``m*.json`` (they must be for ``actuator``); ``overwrite`` checks that what an
    identification writes there is an identification's (the run replaces the folder when it
    is done, :class:`~frictionsim.experiments.common.staging.StagedFolder`, keeping the
    files that are not its own); neither is refused, with a message saying which to pass.
    Never replaces anything unasked.
    """
    present, ours = existing_outputs(out, OUTPUT_FILES)
    if not present:
        return {}
    folds = out / FOLDS_DIR
    if resume:
        earlier = {}
        for p in ours:
            if p.suffix == ".json" and p.name.startswith("m"):
                try:
                    params = load_params(p)
                except ParameterFileError as e:
                    raise ConfigurationError(f"--resume: {e}") from None
                if params.actuator != actuator:
                    raise ConfigurationError(f"--resume: {p} is for actuator {params.actuator}, not "
                                             f"{actuator}; use another --out")
                check_resumable(p, params, scheme, extensions)
                earlier[params.model] = params
        print(f"resuming from {out}: saved " + (", ".join(sorted(earlier)) or "no model")
              + "; each model keeps the better of its saved and its new parameters")
        return earlier
    if overwrite:
        for p in ours:
            if p.suffix == ".json" and p.name.startswith("m"):
                try:
                    load_params(p)
                except ParameterFileError:
                    raise ConfigurationError(f"--overwrite: {p} is not a parameter file; it is not "
                                             "replaced (choose another --out)") from None
        fold_files = sorted(folds.rglob("*")) if folds.is_dir() else []
        foreign = [p for p in fold_files if p.is_file() and not OUTPUT_FILES.match(p.name)]
        if foreign:
            raise ConfigurationError(f"--overwrite: {foreign[0]} is not a file an identification "
                                     "writes; the cross-validation folder is not replaced (choose "
                                     "another --out)")
        if folds.is_dir():
            ours.append(folds)
        if ours:
            print(f"--overwrite: the earlier identification in {out} ("
                  + ", ".join(p.name for p in ours) + ") is replaced once this one is done")
        return {}
    shown = ", ".join(p.name for p in present[:6]) + (" …" if len(present) > 6 else "")
    raise ConfigurationError(
        f"--out {out} is not empty ({shown}): refusing to replace what it holds. Pass --resume "
        "to continue from the parameter files there (each model keeps the better of its saved "
        "and its new fit), --overwrite to replace the earlier identification, or another --out"
    )


def identify(train: list[Log], validation: list[Log], settings: IdentifySettings, out: Path,
             earlier: dict[str, ParameterSet] | None = None
             ) -> tuple[dict[str, ModelFit], bool]:
    """Fit ``settings.models`` on ``train``, evaluate on ``validation``; parameter files go to
    ``out``.

    ``earlier``: saved parameters (:func:`prepare_out` with resume): each fitted
    model also starts from its own, and the ones not fitted now are evaluated and
    reported as kept. Before any fit, every log is simulated with the first
    model's start: a log that gives a non-finite result stops the run with an
    error naming it. Returns the fits and whether the run was interrupted
    (Ctrl-C): the models finished or interrupted so far are in the fits, each
    with its best so far.
    """
    s = settings
    earlier = {m: p.with_extensions(s.extensions) for m, p in (earlier or {}).items()}
    first = s.models[0]
    probe = start_for(first, {}, s.init)
    probe_params = ParameterSet(first, s.actuator, {
        **(probe.point or {}),
        **{k: v for k, v in s.fixed.items()
           if k in schema.parameters(first, s.actuator, s.extensions)}},
        source=f"the start parameters of {first}", scheme=s.scheme, extensions=s.extensions)
    evaluate(probe_params, train + validation)
    packed = PackedLogs.from_logs(train, s.actuator)
    out.mkdir(parents=True, exist_ok=True)
    interrupted = False
    if s.dask:
        from frictionsim.experiments.identification.distributed import fit_on_dask

        if s.coordinates != "parameters":
            raise ConfigurationError("--coordinates identifiable runs locally; --dask searches k_t and "
                                     "R as themselves")
        results, interrupted = fit_on_dask(s.dask, list(s.models), s.actuator, s.fixed, packed,
                                           s.fit, out, s.init, s.chain, earlier,
                                           scheme=s.scheme, extensions=s.extensions)
    else:
        paths: dict[str, Path] = {}

        def one(model: str, fitted: dict[str, ParameterSet]) -> FitResult:
            start = start_for(model, fitted if s.chain else {}, s.init, earlier.get(model))
            result, paths[model] = fit_model(model, s.actuator, s.fixed, packed, s.fit, out,
                                             start, progress=s.progress, scheme=s.scheme,
                                             extensions=s.extensions,
                                             coordinates=s.coordinates)
            return result

        chain, interrupted = fit_chain(s.models, one)
        results = {model: (result, paths[model]) for model, result in chain.items()}
    fits = {}
    for model, (result, path) in results.items():
        save_params(path, result.params)
        fits[model] = ModelFit(model, result, path, evaluate(result.params, train),
                               evaluate(result.params, validation))
    for model in [m for m in MODELS if m in earlier and m not in fits]:
        params = earlier[model]
        train_errors = evaluate(params, train)
        loss = float(np.mean(list(train_errors.values())))
        kept = FitResult(params, loss, 0, 0.0, 0.0, 0, [(0, loss)])
        fits[model] = ModelFit(model, kept, out / f"{model}.json", train_errors,
                               evaluate(params, validation), kept=True)
    return fits, interrupted
