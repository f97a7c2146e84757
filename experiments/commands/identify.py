"""``frictionsim identify``: fit friction models to bench logs, validate, report."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.interrupts import kept_on_interrupt
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import (
    JSON,
    actuator_name,
    add_actuator_arguments,
    add_extensions_argument,
    add_fits_argument,
    add_learning_arguments,
    add_other_motor_argument,
    add_output_argument,
    add_progress_argument,
    add_scheme_argument,
    add_workers_argument,
    check_fits,
    check_learning_use,
    check_physical_options,
    net_settings,
    physical_budget,
    recorded,
    seed,
)
from frictionsim.limits import check_count

DESCRIPTION = (
    "Identify the parameters of friction models M1-M6 (and of the motor) from processed "
    "bench logs: CMA-ES through nevergrad's ask/tell, each generation evaluated in one "
    "batched compiled call on all cores, parameters searched inside their bounds, restarts "
    "with a growing population. Richer models start from the simpler model they contain. "
    "The best parameters of each model are saved to OUT/<model>.json whenever they improve "
    "(Ctrl-C loses nothing); OUT/report.md, report.json and figures summarise training and "
    "validation errors. A non-empty OUT is refused unless --resume or --overwrite."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_actuator_arguments(p, actuator=True)
    add_other_motor_argument(p)
    p.add_argument("--model", nargs="+", required=True, metavar="MODEL",
                   help="friction models to fit: m1 … m6, or all; and learned actuators "
                        "trained after them: net (an MLP on the error and velocity history, "
                        "the gain and the enable flag) and hybrid (m6 plus a learned residual "
                        "torque of bounded authority; needs m6 in the run); they need "
                        "scikit-learn (frictionsim[learn])")
    p.add_argument("--logs", nargs="+", required=True, type=Path,
                   help="processed training logs, or directories of them")
    val = p.add_mutually_exclusive_group()
    val.add_argument("--validation", nargs="+", type=Path,
                     help="held-out processed logs (or directories) to validate on")
    val.add_argument("--validation-kp", type=float,
                     help="hold out the --logs recorded with this firmware gain")
    val.add_argument("--split", type=float, metavar="FRACTION",
                     help="hold out a random fraction of --logs (seeded by --seed)")
    val.add_argument("--cross-validate", choices=("kp",), dest="cross_validate",
                     help="kp: leave-one-gain-out cross-validation: fit once per firmware gain "
                          "on the other gains' logs, validate on that gain's (folds in "
                          "OUT/cross_validation/), report per model and gain and the mean; then "
                          "fit on every log")
    p.add_argument("--budget", type=int, default=None,
                   help="loss evaluations per model (default 3000)")
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    add_fits_argument(p)
    p.add_argument("--coordinates", choices=("parameters", "identifiable"), default="parameters",
                   help="how the voltage law's k_t and R are searched: as themselves "
                        "(default), or as the torque per volt k_t/R and the back-EMF damping "
                        "k_t²/R, the combinations the logs determine")
    add_learning_arguments(p, "2000")
    p.add_argument("--uncertainty", type=int, nargs="?", const=20, default=None,
                   metavar="N",
                   help="after the fit, N bootstrap identifications (default 20) on the "
                        "training logs drawn with replacement: per parameter, the range another "
                        "fit of the servo lands in 90 %% of the time, in the report and the "
                        "parameter files ('ranges', which robot simulate --variants draws from)")
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
    add_scheme_argument(p, default="reference")
    add_extensions_argument(p)
    add_progress_argument(p)
    add_workers_argument(p)


def parse_fixed(items: list[str]) -> dict[str, float]:
    """``NAME=VALUE`` items as a dict; ``ValueError`` naming a malformed one."""
    fixed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigurationError(f"--fix {item!r}: expected NAME=VALUE")
        try:
            fixed[name.strip()] = float(value)
        except ValueError:
            raise ConfigurationError(f"--fix {item!r}: {value!r} is not a number") from None
        if not math.isfinite(fixed[name.strip()]):
            raise ConfigurationError(f"--fix {item!r}: the value must be finite")
    return fixed


def check_coordinates(identifiable: bool, actuator: str, fixed: dict[str, float]) -> None:
    """``--coordinates identifiable`` searches the voltage law's k_t and R as k_t/R and
    k_t²/R: refused where there is no such pair to search (a current-law servo, or k_t or R
    held by ``--fix``), since it would do nothing."""
    from frictionsim import schema

    if not identifiable:
        return
    if schema.get_actuator(actuator).law != "voltage":
        raise ConfigurationError(f"--coordinates identifiable: {actuator} follows the current law, "
                                 "which has no k_t and R to search as k_t/R and k_t²/R; it "
                                 "would do nothing")
    held = [name for name in ("kt", "R") if name in fixed]
    if held:
        raise ConfigurationError(f"--coordinates identifiable with --fix {held[0]}: k_t and R are "
                                 "searched as k_t/R and k_t²/R only when both are free; it "
                                 "would do nothing")


def parse_models(names: list[str]) -> tuple[list[str], list[str]]:
    """The physical models named (``all``: every one), in chain order, and the learned ones
    (``net``, ``hybrid``); ValueError for an unknown name or a hybrid without m6,
    ConfigurationError for a name given twice (``all`` beside a physical model included)."""
    from frictionsim import MODELS, schema
    from frictionsim.learned_files import LEARNED_MODELS

    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:  # a second mention fits nothing more
        raise ConfigurationError(f"--model names {twice} twice")
    learned = [m for m in LEARNED_MODELS if m in names]
    physical = [n for n in names if n not in LEARNED_MODELS]
    if "all" in physical:
        if len(physical) > 1:
            raise ConfigurationError(f"--model all names every physical model already: drop "
                                     f"{' '.join(n for n in physical if n != 'all')}")
        physical = list(MODELS)
    for n in physical:
        schema.get_model(n)
    if "hybrid" in learned and "m6" not in physical:
        raise ConfigurationError("--model hybrid is m6 plus a learned residual: add m6 to --model")
    if learned:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise ConfigurationError("--model net/hybrid need scikit-learn: pip install "
                                     "'frictionsim[learn]'") from None
    return [m for m in MODELS if m in physical], learned


def _uncertainty(args: argparse.Namespace, train, settings, fits):
    """The bootstrap's ranges (:mod:`~frictionsim.experiments.identification.uncertainty`),
    written into each fitted model's parameter file."""
    from frictionsim.experiments.identification.uncertainty import bootstrap, interrupted_bootstrap
    from frictionsim.params import save_params

    fitted = {m: f.result.params for m, f in fits.items() if not f.kept}
    print(f"uncertainty: {args.uncertainty} bootstrap identifications of "
          f"{' '.join(fitted)} on {counted(len(train), 'log')} drawn with replacement", flush=True)
    result = bootstrap(train, settings, fitted, args.uncertainty, progress=not args.no_progress)
    for model, ranges in result.ranges.items():
        params = fits[model].result.params.with_ranges(ranges)
        fits[model].result.params = params
        save_params(fits[model].params_file, params)
    if result.interrupted:
        kept_on_interrupt(interrupted_bootstrap(result, fitted))
    return result


def run(args: argparse.Namespace) -> int:
    from frictionsim import schema
    from frictionsim.experiments.common.loading import check_motor_match, load_logs
    from frictionsim.experiments.common.output import write_json
    from frictionsim.experiments.common.staging import StagedFolder
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.pipeline import (
        OUTPUT_FILES,
        IdentifySettings,
        not_ours,
        note_kept_fits,
        prepare_out,
        split_logs,
    )
    from frictionsim.experiments.identification.starts import check_fixed, start_file

    actuator = actuator_name(args)
    if args.dask is not None and not args.dask.strip():
        raise ConfigurationError("--dask: empty address; give the scheduler's, e.g. tcp://host:8786")
    models, learned = parse_models(args.model)
    check_learning_use(args, learned)
    identifiable = args.coordinates == "identifiable"
    check_physical_options(models, (("--init", args.init is not None),
                                    ("--independent", args.independent),
                                    ("--uncertainty", args.uncertainty is not None),
                                    ("--coordinates identifiable", identifiable)))
    fixed = parse_fixed(args.fix)
    check_fixed(fixed, models, actuator, args.extensions)
    check_coordinates(identifiable, actuator, fixed)
    learning = net_settings(args, 2000)
    args.budget = physical_budget(args.budget, models, 3000)
    check_fits(args.fits, models)
    if args.independent and len(models) == 1:
        raise ConfigurationError(f"--independent: --model names one physical model ({models[0]}), "
                                 "which starts from its defaults (or --init) anyway; it would "
                                 "do nothing")
    if args.uncertainty is not None:
        check_count("--uncertainty", args.uncertainty, 2, 10_000, "bootstrap identifications")
    init = None if args.init is None else \
        start_file(args.init, actuator, models, args.extensions, "--init")
    show = not args.no_progress
    logs = load_logs(args.logs, processed=True, show_progress=show)
    held = load_logs(args.validation, processed=True, show_progress=show) if args.validation \
        else None
    train, validation = split_logs(logs, held, args.validation_kp, args.split, args.seed)
    if learned and not any((log.column("torque_enable") > 0.5).any() for log in train):
        raise ConfigurationError(f"--model {' '.join(learned)}: the torque is off throughout "
                                 f"the {len(train)} training logs; a learned actuator learns "
                                 "the servo's torque and these logs hold none")
    if args.uncertainty is not None and len(train) < 2:
        raise ConfigurationError(f"--uncertainty resamples the training logs; {len(train)} "
                                 "training log gives every bootstrap replicate the same data "
                                 "(give two logs or more)")
    check_motor_match(train + validation, actuator, f"--actuator {actuator}",
                      args.other_motor)
    if args.overwrite and args.out.is_dir():
        from frictionsim.experiments.runner.arguments import check_not_an_input, input_paths

        inputs = input_paths(args)
        for path in sorted(args.out.iterdir()):
            if OUTPUT_FILES.match(path.name):
                check_not_an_input(path, "--out", inputs)
    earlier = prepare_out(args.out, actuator, args.resume, args.overwrite, args.scheme,
                          schema.check_extensions(args.extensions))
    if args.resume:
        note_kept_fits(args.out, OUTPUT_FILES, models + learned)
    print(f"{actuator}: {counted(len(train), 'training log')}, "
          f"{counted(len(validation), 'validation log')}; "
          f"models {' '.join(models + learned)}"
          + (f"; budget {args.budget} evaluations each" if models else "")
          + (f"; with {' '.join(args.extensions)}" if args.extensions else ""))
    hint = [x for x in schema.get_actuator(actuator).recommended if x not in args.extensions]
    if hint:
        print(f"hint: cross-validation by gain favours --with {' '.join(hint)} for {actuator} "
              "(not switched on: the published figures use none)")
    settings = IdentifySettings(tuple(models), actuator, FitSettings(args.budget, args.seed, args.fits),
                                fixed, init, chain=not args.independent, dask=args.dask,
                                progress=show, scheme=args.scheme,
                                extensions=tuple(args.extensions), learned=tuple(learned),
                                net=learning, coordinates=args.coordinates)
    # written beside --out and swapped in when done: the earlier result is intact until then
    staged = StagedFolder(args.out, overwrite=True, carry=args.resume, keep=not_ours)
    with staged as out:
        summary, interrupted, stage = _identify_into(out, args, train, validation, settings,
                                                     earlier, learned, learning, actuator, show)
        staged.interrupted = interrupted
    if stage == "cross-validation":
        return kept_on_interrupt("each fold's best parameters so far are saved in "
                                 f"{staged.result / 'cross_validation'}")
    if args.json and summary is not None:
        write_json(args.json, summary)
    if interrupted:
        return kept_on_interrupt(f"the best parameters so far are saved in {staged.result}")
    return 0


def _identify_into(out, args, train, validation, settings, earlier, learned, learning,
                   actuator, show):
    """The identification written into ``out`` (the staged folder): (the summary, whether
    Ctrl-C ended it, "cross-validation" when it ended there)."""
    from frictionsim.experiments.identification.pipeline import identify
    from frictionsim.experiments.identification.report import write_report

    section = None
    if args.cross_validate:
        from frictionsim.experiments.identification.cross_validation import cross_validate_by_gain

        section, interrupted = cross_validate_by_gain(train, settings, out, args.resume,
                                                      args.overwrite)
        if interrupted:
            return None, True, "cross-validation"
        print(f"cross-validation done; fitting on all {counted(len(train), 'log')}")
    fits, interrupted = identify(train, validation, settings, out, earlier) \
        if settings.models else ({}, False)
    learned_fits = {}
    if learned and not interrupted:
        from frictionsim.experiments.identification.learned import fit_learned

        try:
            learned_fits, interrupted = fit_learned(
                tuple(learned), train, validation, {m: f.result.params for m, f in fits.items()},
                actuator, out, learning, show)
        except KeyboardInterrupt:  # outside the training (its data), nothing of it saved
            interrupted = True  # the report says so; the runner still exits as signalled
    uncertainty = None
    if args.uncertainty and fits and not interrupted:
        uncertainty = _uncertainty(args, train, settings, fits)
        interrupted = uncertainty.interrupted
    from frictionsim.experiments.identification.identifiability import analyse

    summary = write_report(out, fits, train, validation, recorded(args), interrupted,
                           cross_validation=section, learned=learned_fits,
                           identifiability=analyse(fits, train, settings),
                           uncertainty=uncertainty.summary() if uncertainty else None)
    return summary, interrupted, "fit"
