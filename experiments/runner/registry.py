"""The table of commands: name, one-line help, module. Nothing here imports a command.

A command module (``frictionsim.experiments.commands.*``) defines ``DESCRIPTION`` (its ``--help``
text), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code); the runner
imports it only to build its own parser or run it, so ``frictionsim --help`` and
``frictionsim run`` stay instant.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Command:
    """One command: ``frictionsim NAME`` when ``subcommand``, always ``frictionsim run NAME``."""

    name: str
    help: str
    module: str
    subcommand: bool = True

    def load(self) -> ModuleType:
        """The command's module (``DESCRIPTION``, ``add_arguments``, ``run``)."""
        return importlib.import_module(self.module)


COMMANDS: tuple[Command, ...] = (
    Command("process", "resample raw logs at a fixed dt", "frictionsim.experiments.commands.process"),
    Command("simulate", "simulate logs with a parameter file; MAE per log and a figure",
            "frictionsim.experiments.commands.simulate"),
    Command("compare", "evaluate every parameter file on every log",
            "frictionsim.experiments.commands.compare"),
    Command("identify", "fit friction models to bench logs (nevergrad CMA), validate, report",
            "frictionsim.experiments.commands.identify"),
    Command("crosscheck", "fixed-step kernel vs the event-driven solver: errors, order, stick "
            "intervals", "frictionsim.experiments.commands.crosscheck"),
    Command("bench", "rollout throughput of the compiled simulator",
            "frictionsim.experiments.commands.bench"),
    Command("demo", "the main job on built-in data: virtual bench, identification of M1-M6, "
            "validation", "frictionsim.experiments.commands.demo"),
    Command("record", "record one bench log from a servo", "frictionsim.experiments.commands.record"),
    Command("record-campaign", "record every trajectory x gain for one or more bench set-ups",
            "frictionsim.experiments.commands.record_campaign"),
    Command("virtual-servo", "a simulated servo answering its serial protocol on a "
            "pseudo-terminal", "frictionsim.experiments.commands.virtual_servo"),
    Command("robot", "a real robot's recordings replayed in simulation: robot simulate",
            "frictionsim.experiments.commands.robot"),
    Command("export-mjcf", "a parameter file as MuJoCo attributes: a position actuator, or "
            "MuJoCo's own dcmotor",
            "frictionsim.experiments.commands.export_mjcf"),
    Command("oscillator", "Coulomb oscillator: event-driven vs plain, smoothed and fixed-step "
            "friction", "frictionsim.experiments.commands.oscillator", subcommand=False),
    Command("arm2r", "the 2R arms of docs/model.md §10 on every engine: event-driven, fixed step, MuJoCo",
            "frictionsim.experiments.commands.arm2r", subcommand=False),
    Command("drive-backdrive", "drive/backdrive diagram: the static area of parameter files "
            "against the external torque", "frictionsim.experiments.commands.drive_backdrive",
            subcommand=False),
    Command("torque-contributions", "each torque's share along simulated logs; the "
            "negligible terms", "frictionsim.experiments.commands.torque_contributions", subcommand=False),
    Command("physics-vs-learned", "M1, M6, a learned network and a hybrid on held-out "
            "repetitions, gains and masses", "frictionsim.experiments.commands.physics_vs_learned",
            subcommand=False),
    Command("vs-mujoco", "MuJoCo's dcmotor fitted by mujoco.sysid against frictionsim's M1, M6 "
            "and M6 with the current limit, on the same logs",
            "frictionsim.experiments.commands.vs_mujoco", subcommand=False),
    Command("engines", "every engine on the bench, the SO-101 and a biped: deviation, "
            "held-joint drift, cost per environment-step", "frictionsim.experiments.commands.engines",
            subcommand=False),
    Command("mjlab-actuators", "a robot's own actuators, frictionsim's servos and the reference "
            "project's actuator, timed in mjlab", "frictionsim.experiments.commands.mjlab_actuators",
            subcommand=False),
    Command("adapter-cost", "the MuJoCo servo adapter's cost on a robot with contacts, against "
            "its own actuators", "frictionsim.experiments.commands.adapter_cost",
            subcommand=False),
    Command("jitter", "the recorder's timing: period statistics of raw logs and a histogram",
            "frictionsim.experiments.commands.jitter", subcommand=False),
)

