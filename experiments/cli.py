"""The ``frictionsim`` command line: subcommands and ``run NAME`` for every experiment.

Everything after the interpreter's start-up runs inside :func:`main`'s error
handling, including the imports of the experiments, so Ctrl-C at any moment,
bad input or a failed simulation ends with one line on stderr and an exit
code, never a traceback (set ``FRICTIONSIM_DEBUG=1`` to see the traceback of
an unexpected error).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

DESCRIPTION = """\
frictionsim: servo actuators with extended friction models (M1-M6).

Simulate bench logs with a parameter file, compare parameter files, process raw
logs, identify friction models, cross-check against the event-driven solver,
measure the compiled simulator's speed, run the demo on built-in data, record
bench logs from a servo, or serve a virtual servo on a pseudo-terminal.
Every command takes --help."""

EXPERIMENT_MODULES = ("bench", "compare", "crosscheck", "demo", "identify", "oscillator",
                      "process_logs", "record", "serve_virtual", "simulate")


def _registry():
    import importlib

    for name in EXPERIMENT_MODULES:
        importlib.import_module(f"experiments.{name}")  # each module registers its experiment
    from experiments.registry import EXPERIMENTS

    return EXPERIMENTS


def _add_experiment(sub, exp) -> None:
    p = sub.add_parser(exp.name, help=exp.help, description=exp.description)
    exp.add_arguments(p)
    p.set_defaults(experiment=exp)


def build_parser() -> argparse.ArgumentParser:
    experiments = _registry()
    parser = argparse.ArgumentParser(
        prog="frictionsim", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for exp in experiments.values():
        if exp.subcommand:
            _add_experiment(sub, exp)
    run = sub.add_parser("run", help="list the experiments, or run one: run NAME [ARGS]",
                         description="Without NAME, list the experiments; with it, run one.")
    run_sub = run.add_subparsers(dest="experiment_name", metavar="NAME")
    for exp in experiments.values():
        _add_experiment(run_sub, exp)
    return parser


def list_experiments() -> None:
    experiments = _registry()
    width = max(len(n) for n in experiments)
    print("experiments (frictionsim run NAME --help):")
    for exp in experiments.values():
        print(f"  {exp.name:<{width}}  {exp.help}")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from frictionsim.plausibility import PlausibilityWarning

    if issubclass(category, PlausibilityWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning


def _expected_errors() -> tuple[type[BaseException], ...]:
    from frictionsim.logs import LogError
    from frictionsim.params import ParameterFileError
    from hw.servo import ServoError
    from solvers.errors import SimulationError

    return (LogError, ParameterFileError, ServoError, SimulationError, ValueError, OSError)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files, never a window
    command = "frictionsim"
    try:
        warnings.showwarning = _show_warning
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        command = f"frictionsim {args.command}"
        if args.command == "run" and getattr(args, "experiment", None) is None:
            list_experiments()
            return 0
        from experiments.output import check_outputs

        check_outputs(args)
        return args.experiment.run(args)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (| head): say nothing more, and let no flush at exit complain.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 141
    except MemoryError:
        print(f"{command}: error: out of memory", file=sys.stderr)
        return 1
    except Exception as e:
        if isinstance(e, _expected_errors()):
            print(f"{command}: error: {e}", file=sys.stderr)
            return 1
        if os.environ.get("FRICTIONSIM_DEBUG"):
            raise
        print(f"{command}: internal error: {type(e).__name__}: {e}\n(this is a bug: please "
              "report it with the command line; FRICTIONSIM_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = _default_show


if __name__ == "__main__":
    sys.exit(main())
