"""``frictionsim identify``: fit friction models to bench logs, validate, report.

Each model is fitted by :func:`experiments.fitter.fit` on the training logs.
When several models are fitted, a richer one starts from the best of the
nearest simpler model it contains (M1 ⊂ M2, M1 ⊂ M3 ⊂ M4 ⊂ M5 ⊂ M6), so it can
only do better. The best parameters of each model are written to
``OUT/<model>.json`` every time they improve, so an interrupt loses nothing.

An earlier identification in ``OUT`` is never replaced unasked
(:func:`prepare_out`): a non-empty ``OUT`` is refused unless ``--resume`` (each
model starts from its saved parameters too and keeps the better; saved models
not refitted are kept and reported) or ``--overwrite`` (the earlier
identification's files are removed first).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from experiments.common import warn_motor_mismatch
from experiments.fitter import FitResult, FitSettings, fit
from experiments.identify_report import write_report
from experiments.output import JSON, add_output_argument, seed, write_json
from experiments.registry import register
from experiments.search_space import CONTAINS, SearchSpace, embed
from frictionsim import MODELS, schema
from frictionsim.logs import Log, load_logs
from frictionsim.params import ParameterFileError, ParameterSet, load_params, save_params
from solvers.batch import PackedLogs
from solvers.errors import non_finite


@dataclass
class ModelFit:
    """A fitted model: the optimizer's result and its errors on training and validation logs."""

    model: str
    result: FitResult
    params_file: Path
    train: dict[str, float]
    validation: dict[str, float]
    kept: bool = False
    """True for a model kept from an earlier run in OUT (``--resume``), not refitted now."""

    @property
    def train_mae(self) -> float:
        return float(np.mean(list(self.train.values())))

    @property
    def validation_mae(self) -> float | None:
        return float(np.mean(list(self.validation.values()))) if self.validation else None


def split_logs(logs: list[Log], args: argparse.Namespace) -> tuple[list[Log], list[Log]]:
    """Training and validation logs from --validation, --validation-kp or --split."""
    if args.validation:
        held = load_logs(args.validation, processed=True)
        trained = {log.path.resolve() for log in logs}
        shared = [log for log in held if log.path.resolve() in trained]
        if shared:
            raise ValueError(f"--validation: {shared[0].path} is also a training log (--logs); "
                             f"{len(shared)} of {len(held)} validation logs are, and a validation "
                             "error must come from logs the fit has not seen")
        return logs, held
    if args.validation_kp is not None:
        held = [log for log in logs if log.kp == args.validation_kp]
        train = [log for log in logs if log.kp != args.validation_kp]
        gains = sorted({log.kp for log in logs})
        if not held or not train:
            raise ValueError(
                f"--validation-kp {args.validation_kp:g} leaves "
                f"{len(train)} training and {len(held)} validation logs (gains in the logs: "
                f"{', '.join(f'{g:g}' for g in gains)})"
            )
        return train, held
    if args.split is not None:
        if not 0 < args.split < 1:
            raise ValueError(f"--split must be between 0 and 1, got {args.split}")
        n_val = max(1, round(args.split * len(logs)))
        if n_val >= len(logs):
            raise ValueError(f"--split {args.split} leaves no training log out of {len(logs)}")
        order = np.random.default_rng(args.seed).permutation(len(logs))
        held = sorted(order[:n_val])
        return ([log for i, log in enumerate(logs) if i not in held],
                [logs[i] for i in held])
    return logs, []


def parse_fixed(items: list[str]) -> dict[str, float]:
    fixed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--fix {item!r}: expected NAME=VALUE")
        try:
            fixed[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--fix {item!r}: {value!r} is not a number") from None
        if not math.isfinite(fixed[name.strip()]):
            raise ValueError(f"--fix {item!r}: the value must be finite")
    return fixed


def parse_models(names: list[str]) -> list[str]:
    if "all" in names:
        return list(MODELS)
    for n in names:
        schema.get_model(n)
    return [m for m in MODELS if m in names]


@dataclass(frozen=True)
class Start:
    """Where a model's search starts: an exact start point, a search centre, the
    parameters whose values were inherited from the simpler model or --init, and
    other exact candidates (the model's saved parameters, with --resume)."""

    point: dict | None = None
    centre: dict | None = None
    inherited: frozenset[str] = frozenset()
    alternatives: tuple[dict, ...] = field(default=())


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
    return Start(embed(source, model), embed(source, model, exact=False),
                 frozenset(source.values), alternatives)


def evaluate(params: ParameterSet, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of a parameter set; :class:`~solvers.errors.SimulationError`
    naming the log when one is not finite."""
    if not logs:
        return {}
    packed = PackedLogs.from_logs(logs, params.actuator)
    errors = packed.errors(params.theta())[0]
    non_finite(errors, packed.names, params.source or f"{params.model} parameters")
    return dict(zip(packed.names, errors.tolist()))


#: Files an identification writes in OUT (parameter files, report, figures).
OUTPUT_FILES = re.compile(r"^(m[1-6]\.json|report\.(md|json)|mae_per_model\.png|convergence\.png"
                          r"|best_worst\.png)$")


def prepare_out(out: Path, actuator: str, resume: bool = False, overwrite: bool = False
                ) -> dict[str, ParameterSet]:
    """Make ``out`` ready; returns the saved parameters to resume from (model → set).

    A missing or empty ``out`` is used as is. Otherwise: ``resume`` loads its
    ``m*.json`` (they must be for ``actuator``); ``overwrite`` removes the files an
    identification writes (nothing else) and says so; neither is refused, with a
    message saying which to pass. Never replaces anything unasked.
    """
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; it must be a directory")
    present = sorted(p for p in out.iterdir() if not p.name.startswith(".")) if out.exists() else []
    if not present:
        return {}
    ours = [p for p in present if OUTPUT_FILES.match(p.name)]
    if resume:
        earlier = {}
        for p in ours:
            if p.suffix == ".json" and p.name.startswith("m"):
                try:
                    params = load_params(p)
                except ParameterFileError as e:
                    raise ValueError(f"--resume: {e}") from None
                if params.actuator != actuator:
                    raise ValueError(f"--resume: {p} is for actuator {params.actuator}, not "
                                     f"{actuator}; use another --out")
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
                    raise ValueError(f"--overwrite: {p} is not a parameter file; it is not "
                                     "replaced (choose another --out)") from None
        for p in ours:
            p.unlink()
        if ours:
            print(f"--overwrite: removed the earlier identification in {out} ("
                  + ", ".join(p.name for p in ours) + ")")
        return {}
    shown = ", ".join(p.name for p in present[:6]) + (" …" if len(present) > 6 else "")
    raise ValueError(
        f"--out {out} is not empty ({shown}): refusing to replace what it holds. Pass --resume "
        "to continue from the parameter files there (each model keeps the better of its saved "
        "and its new fit), --overwrite to replace the earlier identification, or another --out"
    )


def check_init_bounds(init: ParameterSet, models: list[str], where: str) -> None:
    """Warn about each --init value outside its search bounds: it is evaluated as given, but
    the search explores from the nearest bound."""
    from frictionsim.plausibility import warn

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


def fit_one(
    model: str,
    actuator: str,
    fixed: dict[str, float],
    train: PackedLogs,
    settings: FitSettings,
    out: Path,
    start: Start,
    progress: bool = True,
) -> tuple[FitResult, Path]:
    """Fit one model, saving the best so far to ``out/<model>.json`` on every improvement."""
    space = SearchSpace(model, actuator, {k: v for k, v in fixed.items()
                                          if k in schema.parameters(model, actuator)})
    path = out / f"{model}.json"
    point, centre = ({k: v for k, v in d.items() if k not in space.fixed} if d else d
                     for d in (start.point, start.centre))

    def save(params: ParameterSet, loss: float) -> None:
        save_params(path, params)

    alternatives = tuple({k: v for k, v in a.items() if k not in space.fixed}
                         for a in start.alternatives)
    result = fit(space, train, settings, start=point, centre=centre, inherited=start.inherited,
                 on_improve=save, progress=progress, label=model, alternatives=alternatives)
    return result, path


def identify(
    models: list[str],
    actuator: str,
    train: list[Log],
    validation: list[Log],
    settings: FitSettings,
    out: Path,
    fixed: dict[str, float] | None = None,
    init: ParameterSet | None = None,
    chain: bool = True,
    dask: str | None = None,
    progress: bool = True,
    earlier: dict[str, ParameterSet] | None = None,
) -> tuple[dict[str, ModelFit], bool]:
    """Fit ``models`` on ``train``, evaluate on ``validation``; parameter files go to ``out``.

    ``earlier``: saved parameters (:func:`prepare_out` with resume): each fitted
    model also starts from its own, and the ones not fitted now are evaluated and
    reported as kept. Before any fit, every log is simulated with the first
    model's start: a log that gives a non-finite result stops the run with an
    error naming it. Returns the fits and whether the run was interrupted
    (Ctrl-C): the models finished or interrupted so far are in the fits, each
    with its best so far.
    """
    fixed = fixed or {}
    earlier = earlier or {}
    probe = start_for(models[0], {}, init)
    probe_params = ParameterSet(models[0], actuator, {
        **(probe.point or {}),
        **{k: v for k, v in fixed.items() if k in schema.parameters(models[0], actuator)}},
        source=f"the start parameters of {models[0]}")
    evaluate(probe_params, train + validation)
    packed = PackedLogs.from_logs(train, actuator)
    out.mkdir(parents=True, exist_ok=True)
    interrupted = False
    if dask:
        from experiments.distributed import fit_on_dask

        results, interrupted = fit_on_dask(dask, models, actuator, fixed, packed, settings, out,
                                           init, chain, earlier)
    else:
        results = {}
        fitted: dict[str, ParameterSet] = {}
        for model in models:
            start = start_for(model, fitted if chain else {}, init, earlier.get(model))
            result, path = fit_one(model, actuator, fixed, packed, settings, out, start,
                                   progress=progress)
            results[model] = (result, path)
            fitted[model] = result.params
            if result.interrupted:
                interrupted = True
                break
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--actuator", required=True, choices=list(schema.ACTUATORS),
                   help="the servo the logs were recorded with")
    p.add_argument("--model", nargs="+", required=True, metavar="MODEL",
                   help="friction models to fit: m1 … m6, or all")
    p.add_argument("--logs", nargs="+", required=True, type=Path,
                   help="processed training logs, or directories of them")
    val = p.add_mutually_exclusive_group()
    val.add_argument("--validation", nargs="+", type=Path,
                     help="held-out processed logs (or directories) to validate on")
    val.add_argument("--validation-kp", type=float,
                     help="hold out the --logs recorded with this firmware gain")
    val.add_argument("--split", type=float, metavar="FRACTION",
                     help="hold out a random fraction of --logs (seeded by --seed)")
    p.add_argument("--budget", type=int, default=3000,
                   help="loss evaluations per model (default 3000)")
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    p.add_argument("--fix", nargs="+", default=[], metavar="NAME=VALUE",
                   help="hold parameters at given values (e.g. --fix q_offset=0)")
    p.add_argument("--init", type=Path, help="parameter file to start the search from")
    p.add_argument("--independent", action="store_true",
                   help="fit each model from the defaults, not from the simpler model")
    p.add_argument("--out", type=Path, default=Path("identification"),
                   help="output directory (default ./identification); a non-empty one is "
                        "refused unless --resume or --overwrite")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue from the parameter files in --out: each model also starts "
                            "from its saved parameters and keeps the better; saved models not "
                            "refitted are kept and reported")
    again.add_argument("--overwrite", action="store_true", default=False,
                       help="replace the earlier identification in --out (and an existing --json)")
    add_output_argument(p, "--json", JSON, "write the summary of every model here")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run the models on a Dask distributed scheduler at ADDRESS")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    models = parse_models(args.model)
    fixed = parse_fixed(args.fix)
    for name in fixed:
        if not any(name in schema.parameters(m, args.actuator) for m in models):
            raise ValueError(f"--fix {name}: not a parameter of {', '.join(models)} on "
                             f"{args.actuator}")
    if args.budget < 1:
        raise ValueError(f"--budget must be at least 1, got {args.budget}")
    init = load_params(args.init) if args.init else None
    if init is not None and init.actuator != args.actuator:
        raise ValueError(f"--init {args.init}: actuator {init.actuator}, not {args.actuator}")
    if init is not None:
        check_init_bounds(init, models, str(args.init))
    logs = load_logs(args.logs, processed=True)
    train, validation = split_logs(logs, args)
    warn_motor_mismatch(train + validation, args.actuator)
    earlier = prepare_out(args.out, args.actuator, args.resume, args.overwrite)
    print(f"{args.actuator}: {len(train)} training logs, {len(validation)} validation logs; "
          f"models {' '.join(models)}; budget {args.budget} evaluations each")
    settings = FitSettings(budget=args.budget, seed=args.seed)
    fits, interrupted = identify(models, args.actuator, train, validation, settings, args.out,
                                 fixed, init, chain=not args.independent, dask=args.dask,
                                 progress=not args.no_progress, earlier=earlier)
    summary = write_report(args.out, fits, train, validation, args, interrupted)
    if args.json:
        write_json(args.json, summary)
    if interrupted:
        print("interrupted: the best parameters so far are saved in "
              f"{args.out}", file=sys.stderr)
        return 130
    return 0


register(
    "identify",
    "fit friction models to bench logs (nevergrad CMA), validate, report",
    "Identify the parameters of friction models M1-M6 (and of the motor) from processed "
    "bench logs: CMA-ES through nevergrad's ask/tell, each generation evaluated in one "
    "batched compiled call on all cores, parameters searched inside their bounds, restarts "
    "with a growing population. Richer models start from the simpler model they contain. "
    "The best parameters of each model are saved to OUT/<model>.json whenever they improve "
    "(Ctrl-C loses nothing); OUT/report.md, report.json and figures summarise training and "
    "validation errors.",
    add_arguments,
    run,
    subcommand=True,
)
