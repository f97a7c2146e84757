"""The ``frictionsim`` command line: subcommands and ``run NAME`` for every experiment."""

from __future__ import annotations

import argparse
import sys

from experiments import (  # noqa: F401  (each module registers its experiment)
    bench,
    compare,
    crosscheck,
    demo,
    identify,
    oscillator,
    process_logs,
    record,
    serve_virtual,
    simulate,
)
from experiments.registry import EXPERIMENTS
from frictionsim.logs import LogError
from frictionsim.params import ParameterFileError
from hw.servo import ServoError

DESCRIPTION = """\
frictionsim: servo actuators with extended friction models (M1-M6).

Simulate bench logs with a parameter file, compare parameter files, process raw
logs, measure the compiled simulator's speed, run the demo on built-in data,
record bench logs from a servo, or serve a virtual servo on a pseudo-terminal.
Every command takes --help."""


def _add_experiment(sub, exp) -> None:
    p = sub.add_parser(exp.name, help=exp.help, description=exp.description)
    exp.add_arguments(p)
    p.set_defaults(experiment=exp)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="frictionsim", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for exp in EXPERIMENTS.values():
        if exp.subcommand:
            _add_experiment(sub, exp)
    run = sub.add_parser("run", help="list the experiments, or run one: run NAME [ARGS]",
                         description="Without NAME, list the experiments; with it, run one.")
    run_sub = run.add_subparsers(dest="experiment_name", metavar="NAME")
    for exp in EXPERIMENTS.values():
        _add_experiment(run_sub, exp)
    return parser


def list_experiments() -> None:
    width = max(len(n) for n in EXPERIMENTS)
    print("experiments (frictionsim run NAME --help):")
    for exp in EXPERIMENTS.values():
        print(f"  {exp.name:<{width}}  {exp.help}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "run" and getattr(args, "experiment", None) is None:
        list_experiments()
        return 0
    try:
        return args.experiment.run(args)
    except (LogError, ParameterFileError, ServoError, ValueError, OSError) as e:
        print(f"frictionsim {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"frictionsim {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
