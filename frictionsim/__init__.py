"""frictionsim — the physics of servo actuators with extended friction.

The front door (:mod:`frictionsim.experiments.api`): ``load_log``, ``load_logs``, ``load_params``,
``load_actuator``, ``simulate``, ``identify`` and ``Servo`` (a servo's compiled kernels),
all importable from here; ``docs/python.md`` walks through them.

Below it:

Parameter schema (:mod:`~frictionsim.schema`) and flat-vector layout
(:mod:`~frictionsim.layout`); the friction budget of M1–M6
(:mod:`~frictionsim.friction`), the servos' firmware laws and motors
(:mod:`~frictionsim.actuator_laws`) and the pendulum bench
(:mod:`~frictionsim.pendulum`) as Numba kernels; actuator declarations
(:mod:`~frictionsim.actuator_files`, the built-in ones in ``frictionsim/actuators/``); log files
(:mod:`~frictionsim.logs`), parameter files (:mod:`~frictionsim.params`) and
bench trajectories (:mod:`~frictionsim.trajectories`).
"""

import sys as _sys

from frictionsim import startup as _startup

if _sys.argv and _startup.starting_cli(_sys.argv, getattr(_sys, "orig_argv", [])):
    _startup.guard(_sys.argv)  # a Ctrl-C from here on: one line and 130, not a traceback

from frictionsim import kernel_cache  # noqa: E402

kernel_cache.purge_stale()  # before any kernel is loaded from Numba's cache

from frictionsim import actuator_files, schema  # noqa: E402
from frictionsim.schema import ACTUATORS, MODELS  # noqa: E402

# The registry of actuators reads declarations with the one loader (docs/model.md §11).
schema.ACTUATORS.reader = actuator_files.load_actuator_file
schema.ACTUATORS.builtins = actuator_files.builtin_actuators

#: Public name -> the module that defines it. Imported on first use (PEP 562), so that
#: ``import frictionsim`` (and the command line's ``--help``) stays light: no numpy yet.
_LAZY = {
    **dict.fromkeys(("Identification", "ModelResult", "Servo", "identify", "load_actuator",
                     "load_logs", "simulate"), "frictionsim.experiments.api"),
    **dict.fromkeys(("FrictionsimError", "ConfigurationError", "MissingExtra"),
                    "frictionsim.errors"),
    **dict.fromkeys(("Log", "LogError", "load_log", "process", "save_log"), "frictionsim.logs"),
    "read_lerobot": "frictionsim.lerobot_datasets",
    **dict.fromkeys(("ParameterFileError", "ParameterSet", "load_params", "save_params"),
                    "frictionsim.params"),
}

__all__ = ["ACTUATORS", "MODELS", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'frictionsim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
