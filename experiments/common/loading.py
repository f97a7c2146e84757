"""Loading the inputs of a command: logs (with progress when there are many) and warnings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.common.progress import progress
from frictionsim.logs import Log, disambiguate, json_files, load_log

#: The environment variable naming the published data folder (recordings, parameter files,
#: the 2R arms' MJCF models) when a command is not given ``--data``.
DATA_ENV = "FRICTIONSIM_DATA"


def shared_data(data: str | os.PathLike | None = None) -> Path:
    """The published data folder: ``data`` when given (``--data``), else ``$FRICTIONSIM_DATA``,
    else ``shared/data`` or ``../shared/data`` below the working directory (a checkout with
    the data beside it). Never found through the install location: an installed wheel has no
    data beside it. ValueError naming all three when none is a folder."""
    if data is not None:
        path = Path(data)
        if not path.is_dir():
            raise ConfigurationError(f"--data {data}: not a folder")
        return path
    env = os.environ.get(DATA_ENV)
    if env:
        path = Path(env)
        if not path.is_dir():
            raise ConfigurationError(f"{DATA_ENV}={env}: not a folder")
        return path
    for candidate in (Path("shared") / "data", Path("..") / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    raise ConfigurationError(f"the published data folder was not found: pass --data DIR or set "
                             f"{DATA_ENV} (tried ./shared/data and ../shared/data)")


def load_logs(paths: list[str | os.PathLike], processed: bool | None = True,
              show_progress: bool = True) -> list[Log]:
    """Every log named (a directory stands for its ``*.json`` files), with a progress bar on a
    terminal when there are 20 or more."""
    files = json_files(paths)
    bar = progress(files, desc="loading logs", unit="log", enabled=show_progress, minimum=20,
                   leave=False)
    logs = disambiguate([load_log(path, processed) for path in bar])
    check_quality(logs)
    return logs


def check_quality(logs: list[Log]) -> None:
    """Warn (stderr) about encoder glitches, per log and time, and in one line about header
    vins the logged supply contradicts (:mod:`frictionsim.log_quality`); nothing is changed."""
    from frictionsim.log_quality import find_glitches, supply_mismatch, supply_summary

    mismatches = []
    for log in logs:
        glitches = find_glitches(log)
        for g in glitches[:3]:
            print(f"warning: {g.describe(log.name)}", file=sys.stderr)
        if glitches:
            print(f"warning: {log.name}: {len(glitches)} encoder glitch"
                  f"{'es' * (len(glitches) > 1)}; they enter the error as recorded: reprocess "
                  "the raw log with `frictionsim process --glitches repair` (or drop)",
                  file=sys.stderr)
        mismatch = supply_mismatch(log)
        if mismatch:
            mismatches.append(mismatch)
    summary = supply_summary(mismatches)
    if summary:
        print(f"warning: {summary}", file=sys.stderr)


def other_motors(logs: list[Log], actuator: str) -> dict[str, list[str]]:
    """The logs whose informative ``motor`` field names another actuator than ``actuator``:
    {motor: [log names]}, in the logs' order."""
    by_motor: dict[str, list[str]] = {}
    for log in logs:
        motor = log.header.get("motor")
        if motor is not None and motor != actuator:
            by_motor.setdefault(str(motor), []).append(log.name)
    return by_motor


def refuse_motor_mismatch(logs: list[Log], actuator: str, what: str,
                          option: str = "--other-motor") -> None:
    """ConfigurationError naming the first log whose ``motor`` field names another actuator
    than ``actuator`` (``what``: the file that says so; ``option``: what takes them on
    purpose): a fit or a score of one servo's parameters on another servo's logs is no one's
    result."""
    for motor, names in other_motors(logs, actuator).items():
        raise ConfigurationError(f"{names[0]} was recorded with motor {motor!r}, but {what} "
                                 f"is for {actuator!r}: give logs of that servo, a "
                                 f"parameter file of {motor!r}, or {option} to take "
                                 "them on purpose")


def check_motor_match(logs: list[Log], actuator: str, what: str, other_motor: bool,
                      option: str = "--other-motor", say=None) -> None:
    """Logs of another motor than ``actuator`` (``what``: where it comes from): refused
    (:func:`refuse_motor_mismatch`, naming ``option``), or with ``other_motor`` taken on
    purpose and said by ``say(logs, actuator)`` (default :func:`warn_motor_mismatch`, on
    stderr; the Python API warns instead)."""
    if other_motor:
        (say or warn_motor_mismatch)(logs, actuator)
    else:
        refuse_motor_mismatch(logs, actuator, what, option)


def warn_motor_mismatch(logs: list[Log], actuator: str) -> None:
    """Warn (stderr) about logs whose informative ``motor`` field names another actuator: one
    line per motor named, however many logs name it."""
    for motor, names in other_motors(logs, actuator).items():
        which = names[0] if len(names) == 1 else (
            f"{counted(len(names), 'log')} ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})")
        print(f"warning: {which} {'was' if len(names) == 1 else 'were'} recorded with motor "
              f"{motor!r}; simulating {'it' if len(names) == 1 else 'them'} as {actuator!r} "
              "(from the parameter file)", file=sys.stderr)
