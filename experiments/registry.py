"""The experiment registry: every experiment module registers itself here.

An experiment is a name, a one-line help, a function adding its arguments to
an ``argparse`` parser and a function running it (returning an exit code).
``frictionsim run`` lists them; the everyday ones are also subcommands.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Experiment:
    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    subcommand: bool = False


EXPERIMENTS: dict[str, Experiment] = {}


def register(
    name: str,
    help: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    subcommand: bool = False,
) -> Experiment:
    """Register an experiment (``subcommand``: also a top-level ``frictionsim NAME``)."""
    if name in EXPERIMENTS:
        raise ValueError(f"experiment {name!r} registered twice")
    exp = Experiment(name, help, description, add_arguments, run, subcommand)
    EXPERIMENTS[name] = exp
    return exp
