"""Arguments several commands share, and the checks the runner makes before any command runs.

- output files (``--json``, ``--plot``) declared with :func:`add_output_argument` are
  checked by :func:`prepare` before the command starts: an existing file is refused
  unless ``--overwrite``, a figure needs a suffix matplotlib writes, the folder must
  be writable; so no work is lost to a bad path at the end and nothing a user had is
  replaced without being asked;
- ``--actuator-file FILE`` (:func:`add_actuator_arguments`) declares actuators (docs/model.md §11)
  that :func:`prepare` registers before the command runs;
- ``--seed`` (:func:`seed`), ``--no-progress`` (:func:`add_progress_argument`) and
  ``--workers N`` (:func:`add_workers_argument`: the rollout threads, set before the
  command runs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.limits import MAX_SEED, check_budget, check_count

JSON, FIGURE, TEXT = "json", "figure", "text"
_OUTPUTS = "_output_files"


def add_overwrite_argument(p: argparse.ArgumentParser,
                           help: str = "replace output files that already exist (refused "
                                       "otherwise)") -> None:
    """``--overwrite``: allow the command to replace output files that exist (once per parser)."""
    if p.get_default("overwrite") is None:
        p.add_argument("--overwrite", action="store_true", default=False, help=help)


def add_output_argument(p: argparse.ArgumentParser, flag: str, kind: str, help: str,
                        **kwargs) -> None:
    """Add an output-file option (``kind`` :data:`JSON` or :data:`FIGURE`), checked by
    :func:`prepare` before the command runs; also adds ``--overwrite``."""
    action = p.add_argument(flag, type=Path, help=help, **kwargs)
    p.set_defaults(**{_OUTPUTS: [*(p.get_default(_OUTPUTS) or []), (action.dest, kind)]})
    add_overwrite_argument(p)


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bars (they are shown only on a terminal anyway)."""
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (they are drawn only on an interactive terminal)")


#: ``--rollout-epochs``' default on bench logs and on a robot, as the help text says it.
BENCH_ROLLOUT = ("60 when torch is installed and the training logs repeat a condition "
                 "(trajectory, gain, mass, arm length), else 0")
ROBOT_ROLLOUT = ("20 for a net when torch is installed, else 0, and 0 for a hybrid, whose "
                 "residual is searched in closed loop instead; on a robot each servo is rolled "
                 "out on its own joint, the other joints following their recording, and the "
                 "epoch is chosen by the robot's own closed loop on the recordings held back")


def add_learning_arguments(p: argparse.ArgumentParser, hybrid_budget: str,
                           rollout_default: str = BENCH_ROLLOUT) -> None:
    """``--hybrid-budget N`` (its default described by ``hybrid_budget``), ``--max-epochs N``,
    ``--rollout-epochs N`` (its default described by ``rollout_default``) and
    ``--rollout-horizon N``: how learned actuators are trained."""
    p.add_argument("--hybrid-budget", type=int, default=None, metavar="N",
                   help="closed-loop evaluations of the hybrid's residual search (default "
                        f"{hybrid_budget})")
    p.add_argument("--max-epochs", type=int, default=None, metavar="N",
                   help="epochs at most of a network's supervised training (default 200; it "
                        "stops earlier when its held-back tenth stops improving)")
    p.add_argument("--rollout-epochs", type=int, default=None, metavar="N",
                   help="then train the network (a hybrid: its supervised residual, in place "
                        "of its search) through closed-loop rollouts of the training data for "
                        "N epochs, keeping the epoch that does best on training data held back "
                        "for it; a Ctrl-C keeps the best so far (needs torch; 0: none; default "
                        f"{rollout_default})")
    p.add_argument("--rollout-horizon", type=int, default=None, metavar="N",
                   help="control periods per window of that training (default 200; the "
                        "compute grows with it)")


#: A network's supervised epochs at most, unless --max-epochs says otherwise.
MAX_EPOCHS = 200


def check_learning_use(args: argparse.Namespace, learned) -> None:
    """The learned actuators' options act on ``--model net`` and ``hybrid`` only: each given
    without the model it shapes is refused (it would do nothing)."""
    kinds = set(learned)
    given = [("--hybrid-budget", args.hybrid_budget is not None, {"hybrid"}),
             ("--max-epochs", args.max_epochs is not None, {"net", "hybrid"}),
             ("--rollout-epochs", getattr(args, "rollout_epochs", None) is not None,
              {"net", "hybrid"}),
             ("--rollout-horizon", getattr(args, "rollout_horizon", None) is not None,
              {"net", "hybrid"})]
    for option, used, models in given:
        if used and not kinds & models:
            raise ConfigurationError(f"{option} trains a learned actuator: add "
                                     f"{' or '.join(sorted(models))} to --model (it does "
                                     "nothing to the physical models)")
    if "hybrid" in kinds and "backlash" in (getattr(args, "extensions", None) or ()) \
            and getattr(args, "rollout_epochs", None) != 0:
        # said before the physical fits, not after them
        raise ConfigurationError("--model hybrid --with backlash: the training through the "
                                 "rollout does not carry backlash yet; give --rollout-epochs 0 "
                                 "(the hybrid's closed-loop search, which does)")


def net_settings(args: argparse.Namespace, hybrid_budget: int):
    """The :class:`~frictionsim.experiments.identification.learned.NetSettings` of
    :func:`add_learning_arguments`' options (``hybrid_budget``: the default) and ``--seed``;
    ValueError for a value out of range."""
    from frictionsim.experiments.identification.learned import NetSettings

    budget = hybrid_budget if args.hybrid_budget is None else args.hybrid_budget
    check_budget(budget, "--hybrid-budget")
    max_epochs = MAX_EPOCHS if args.max_epochs is None else args.max_epochs
    check_count("--max-epochs", max_epochs, 1, 100_000)
    epochs = getattr(args, "rollout_epochs", None)  # None: the training logs decide
    horizon = getattr(args, "rollout_horizon", None)  # None: NetSettings' default
    if epochs is not None:
        check_count("--rollout-epochs", epochs, 0, 10_000)
    if epochs and args.hybrid_budget is not None:
        raise ConfigurationError("--hybrid-budget sets the hybrid's closed-loop search, which "
                                 "its training through the rollout (--rollout-epochs "
                                 f"{epochs}) replaces: give one of them")
    if epochs:
        from frictionsim.experiments.identification.learned import torch_installed

        if not torch_installed():  # said now, not after the physical fits
            raise ConfigurationError("--rollout-epochs trains through the rollout (torch and "
                                     "Warp): pip install 'frictionsim[torch]'")
    if horizon is not None:
        check_count("--rollout-horizon", horizon, 2, 10_000)
        if epochs == 0:
            raise ConfigurationError("--rollout-horizon sets the windows of the training "
                                     "through the rollout, which --rollout-epochs 0 turns off: "
                                     "it would do nothing")
    chosen = {} if horizon is None else {"rollout_horizon": horizon}
    return NetSettings(closed_loop_budget=budget, max_epochs=max_epochs, seed=args.seed,
                       rollout_epochs=epochs, **chosen)


def add_actuator_arguments(p: argparse.ArgumentParser, actuator: bool = False) -> None:
    """``--actuator-file FILE`` (repeatable; and ``--actuator NAME`` when ``actuator``).

    One file per flag: a list option would swallow the positional logs that follow it."""
    if actuator:
        p.add_argument("--actuator", metavar="NAME",
                       help="the servo the logs were recorded with: a built-in actuator "
                            "(frictionsim/actuators/*.toml) or one declared by --actuator-file; "
                            "with one --actuator-file, its actuator by default")
    p.add_argument("--actuator-file", action="append", type=Path, default=[], metavar="FILE",
                   help="an actuator declaration file (TOML, docs/model.md §11) of a servo that "
                        "is not built in; parameter files name it by its 'name'; repeat the "
                        "option for several")


def add_other_motor_argument(p: argparse.ArgumentParser) -> None:
    """``--other-motor``: take logs recorded with another motor than the parameter file's
    (or ``--actuator``) on purpose; without it they are refused."""
    p.add_argument("--other-motor", action="store_true", dest="other_motor",
                   help="take logs whose 'motor' names another servo than the parameters' "
                        "(a deliberate cross-servo comparison; without it they are refused)")


SCHEMES = ("reference", "semi_implicit")  # frictionsim.layout.SCHEMES, without importing numpy


def add_scheme_argument(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--scheme``: the fixed step's position update (docs/model.md §4); default: the parameter file's."""
    p.add_argument("--scheme", choices=SCHEMES, default=default,
                   help="position update of the fixed step: reference (q += v·dt + ½·a·dt², the "
                        "published parameters') or semi_implicit (q += v·dt, MuJoCo's Euler); "
                        + (f"default {default}" if default else "default: the parameter file's"))


#: docs/model.md §9's extensions, §14's backlash and §15's ripple (kept here, not imported from
#: frictionsim.schema, so that building the parser imports nothing heavy; tests check the two
#: agree).
EXTENSIONS = ("supply", "current_limit", "latency", "observation_delay", "backlash", "ripple")


def add_extensions_argument(p: argparse.ArgumentParser) -> None:
    """``--with NAME …``: switch on docs/model.md §9's extensions (and §14's backlash, §15's
    ripple) for this run."""
    p.add_argument("--with", dest="extensions", nargs="+", choices=EXTENSIONS, default=(),
                   metavar="NAME",
                   help="extensions (docs/model.md §9, §14, §15), off by default: supply (the logged "
                        "input_volts instead of a constant vin), current_limit (motor current "
                        "clipped to max_current_limit), latency (control from the position "
                        "latency_steps periods old), observation_delay (the logged position "
                        "is the physical one observation_delay seconds ago), backlash (a gap of "
                        "backlash rad in the gear train, between the motor side and the "
                        "output the encoder reads), ripple (seed 002's position ripple and "
                        "meshing friction added to the friction budget); a parameter "
                        "file's extension keys need their extension here")


def seed(text: str) -> int:
    """argparse type of ``--seed``: an integer that numpy's generators accept."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is outside 0 … {MAX_SEED}")
    return value


def add_fits_argument(p: argparse.ArgumentParser) -> None:
    """``--fits N``: each physical model fitted N times with its own seed, the lowest training
    loss kept (:class:`~frictionsim.experiments.identification.fitter.FitSettings`)."""
    p.add_argument("--fits", type=int, default=1, metavar="N",
                   help="fit each physical model N times, each with the whole --budget and "
                        "its own seed (the first with --seed), and keep the lowest training "
                        "loss: N times the time for a result that depends less on the seed "
                        "(default 1; docs/results.md)")


def physical_budget(budget: int | None, models: list[str], default: int) -> int:
    """``--budget`` (None: ``default``), checked; given with no physical model in ``--model``
    it is refused (the learned actuators have budgets of their own: it would do nothing)."""
    if budget is not None and not models:
        raise ConfigurationError("--budget is the physical models' (m1 … m6) evaluations, and "
                                 "--model names none (a hybrid's search has --hybrid-budget)")
    budget = default if budget is None else budget
    check_budget(budget)
    return budget


def check_plot_span(span: list[float] | None, plot) -> None:
    """``--plot-span START END``: with ``--plot`` (the figure it shapes), START < END (s)."""
    if span is None:
        return
    if plot is None:
        raise ConfigurationError("--plot-span shapes the --plot figure, and no --plot is given")
    if not span[0] < span[1]:
        raise ConfigurationError(f"--plot-span {span[0]:g} {span[1]:g}: two times START < END "
                                 "(s)")


def check_physical_options(models: list[str], options) -> None:
    """Refuse the first of ``options`` (pairs of an option and whether it was given) that was
    given when ``--model`` names no physical model (m1 … m6): each acts on those alone, and
    would do nothing."""
    if models:
        return
    for option, given in options:
        if given:
            raise ConfigurationError(f"{option} acts on the physical models (m1 … m6), and "
                                     "--model names none")


def check_fits(fits: int, models: list[str]) -> int:
    """``--fits``: an integer in [1, MAX_FITS], and more than 1 only with a physical model."""
    from frictionsim.experiments.identification.schedule import MAX_FITS

    check_count("--fits", fits, 1, MAX_FITS, "fits of each model")
    check_physical_options(models, (("--fits", fits > 1),))
    return fits


#: Path arguments that name where a command writes (folders), not what it reads.
OUTPUT_FOLDERS = {"out", "out_dir", "logdir"}


def input_paths(args: argparse.Namespace) -> dict[Path, str]:
    """Every file the command reads, resolved, with the option that named it: the path-valued
    arguments that are not outputs, a folder standing for the files in it."""
    outputs = {dest for dest, _ in getattr(args, _OUTPUTS, None) or []} | OUTPUT_FOLDERS
    found: dict[Path, str] = {}
    for dest, value in vars(args).items():
        if dest.startswith("_") or dest in outputs:
            continue
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(path, Path):
                continue
            flag = "--" + dest.replace("_", "-")
            try:
                if path.is_dir():
                    for child in path.iterdir():
                        found.setdefault(child.resolve(), f"{flag} {path}")
                elif path.exists():
                    found.setdefault(path.resolve(), f"{flag} {path}")
            except (OSError, RuntimeError):
                # a symlink loop is a RuntimeError in Path.resolve before Python 3.13: the
                # command's own loading reports an unreadable input, naming it
                continue
    return found


def check_not_an_input(path: Path, flag: str, inputs: dict[Path, str]) -> None:
    """ValueError when the output ``path`` is one of the command's inputs (the same file, by
    any name): ``--overwrite`` never makes a command replace what it reads."""
    resolved = path.resolve()
    culprit = inputs.get(resolved)
    if culprit is None and path.exists():
        for known, named in inputs.items():
            try:
                if known.exists() and path.samefile(known):
                    culprit = named
                    break
            except OSError:
                continue
    if culprit is not None:
        raise ConfigurationError(f"{flag} {path} is one of the command's inputs ({culprit}); an output "
                                 "never replaces an input, even with --overwrite: choose another name")


def check_outputs(args: argparse.Namespace) -> None:
    """Check every output file the command declared (see :func:`add_output_argument`): a
    writable new file, or an existing regular one with ``--overwrite``, never one of the
    command's inputs, never the same file for two outputs."""
    from frictionsim.experiments.common.output import check_figure_path, check_writable

    overwrite = bool(getattr(args, "overwrite", False))
    declared = getattr(args, _OUTPUTS, None) or []
    inputs = input_paths(args) if declared else {}
    seen: dict[Path, str] = {}
    for dest, kind in declared:
        path = getattr(args, dest, None)
        if path is None:
            continue
        flag = "--" + dest.replace("_", "-")
        key = path.resolve()
        if key in seen:
            raise ConfigurationError(f"{flag} {path} is also the {seen[key]} output; give each its own file")
        seen[key] = flag
        if kind == FIGURE:
            check_figure_path(path)
        check_not_an_input(path, flag, inputs)
        check_writable(path, overwrite)


def load_actuator_files(args: argparse.Namespace) -> None:
    """Register the actuators of ``--actuator-file``; with exactly one file and no
    ``--actuator``, that file's actuator becomes ``args.actuator``."""
    files = getattr(args, "actuator_file", None) or []
    if not files:
        return
    from frictionsim import schema

    declared = [schema.ACTUATORS.load(f) for f in files]
    if hasattr(args, "actuator") and args.actuator is None and len(declared) == 1:
        args.actuator = declared[0].name


def actuator_name(args: argparse.Namespace) -> str:
    """``args.actuator``, checked to be known (built-in or from ``--actuator-file``)."""
    from frictionsim import schema

    if args.actuator is None:
        raise ConfigurationError("--actuator is required (or exactly one --actuator-file)")
    schema.get_actuator(args.actuator)
    return args.actuator


def add_workers_argument(p: argparse.ArgumentParser) -> None:
    """``--workers N``: threads of the batched rollouts (:func:`set_workers`)."""
    p.add_argument("--workers", type=int, metavar="N",
                   help="threads for the batched rollouts (default: every core)")


def set_workers(args: argparse.Namespace) -> None:
    """Apply ``--workers`` (when the command has it and it is given) to Numba's thread pool;
    ValueError outside 1 … the cores Numba was started with."""
    n = getattr(args, "workers", None)
    if n is None:
        return
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= most:
        raise ConfigurationError(f"--workers must be 1 … {most} (the threads Numba started with; set "
                                 f"NUMBA_NUM_THREADS for more), got {n}")
    numba.set_num_threads(n)


def prepare(args: argparse.Namespace) -> None:
    """What the runner does before a command runs: declared actuators, output checks, the
    rollout threads."""
    load_actuator_files(args)
    check_outputs(args)
    set_workers(args)


def recorded(args: argparse.Namespace) -> dict:
    """The command-line values worth recording in a report (no runner internals)."""
    return {k: v for k, v in vars(args).items()
            if not k.startswith("_") and k not in ("command_module", "command", "experiment_name")}
