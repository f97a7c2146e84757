"""The errors frictionsim raises for what a user gave it: one base class, ``FrictionsimError``.

Every error the project raises on purpose derives from :class:`FrictionsimError`: a log
(:class:`frictionsim.logs.LogError`), a parameter file
(:class:`frictionsim.params.ParameterFileError`), an actuator file
(:class:`frictionsim.actuator_files.ActuatorFileError`), a robot file
(:class:`frictionsim.robot_files.RobotFileError`), a robot recording
(:class:`frictionsim.robot_recordings.RecordingError`), a simulation that cannot give a
meaningful number (:class:`frictionsim.solvers.errors.SimulationError`), a servo or its bus
(:class:`frictionsim.hw.servo.ServoError`), a value out of its range
(:class:`ConfigurationError`), a file that cannot be written (:class:`OutputError`), an
optional extra not installed (:class:`MissingExtra`).
``except FrictionsimError`` catches what a user can fix; anything else is a bug. The command
line says so: the first kind in one line (exit status 1), the second as an internal error
(status 2) with how to report it.

Each keeps the built-in base it had (``ValueError``, ``ArithmeticError``, ``RuntimeError``,
``ImportError``), so code that caught those still does.
"""

from __future__ import annotations


class FrictionsimError(Exception):
    """An error in what a user gave frictionsim (a file, a value, a servo), with a message
    that names it."""


class ConfigurationError(FrictionsimError, ValueError):
    """A value frictionsim cannot use: an argument, a setting, a vector of the wrong length,
    a limit exceeded (:mod:`frictionsim.limits`). The message names it and its range."""


class OutputError(FrictionsimError, OSError):
    """A file frictionsim could not write: a full disk, a read-only or missing folder; the
    message names the file and the system's reason."""


class MissingExtra(FrictionsimError, ImportError):
    """An optional dependency that is not installed; the message says which extra brings it
    (``pip install 'frictionsim[mujoco]'``…)."""
