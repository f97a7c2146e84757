"""The command line's first moments: an interrupt before its own handlers are in place.

``frictionsim`` (the console script) and ``python -m frictionsim.experiments.runner.cli``
import the package first, which takes a while on a busy machine (numpy, the kernel cache's
check, the actuator declarations). A Ctrl-C or SIGTERM landing there would end the
process with a Python traceback and status −2. :func:`guard`, called by
``frictionsim/__init__.py`` before any other import when the command line is starting,
answers such a signal as the command line does: one line, ``frictionsim CMD: interrupted``,
and status 128 + the signal. Nothing has been written yet, so the process ends at once. The
command line's own handlers (:mod:`frictionsim.experiments.runner.cli`) replace these as
soon as it runs. Standard library only: this must work before anything else is imported.
"""

from __future__ import annotations

import os
import signal
import sys

#: The module ``python -m`` runs as the command line.
CLI_MODULE = "frictionsim.experiments.runner.cli"
_NAMES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated (SIGTERM)",
          signal.SIGHUP: "terminated (SIGHUP)"}


def starting_cli(argv: list[str], orig_argv: list[str]) -> bool:
    """Whether this process is the command line starting: the ``frictionsim`` script, or
    ``python -m`` of the command line's module."""
    if argv and os.path.basename(argv[0]) in ("frictionsim", "frictionsim.exe"):
        return True
    return "-m" in orig_argv[:-1] and orig_argv[orig_argv.index("-m") + 1] == CLI_MODULE


def command_name(args: list[str]) -> str:
    """The command as the command line names it in its messages (``frictionsim identify``,
    ``frictionsim run NAME``, ``frictionsim robot ACTION``), from its arguments."""
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return "frictionsim"
    if words[0] in ("run", "robot") and len(words) > 1:
        return f"frictionsim {words[0]} {words[1]}"
    return f"frictionsim {words[0]}"


def guard(argv: list[str]) -> None:
    """Until the command line installs its own, answer SIGINT, SIGTERM and SIGHUP with one
    line and status 128 + signal (module docstring)."""
    command = command_name(argv[1:])

    def on_signal(signum, frame) -> None:
        try:
            sys.stderr.write(f"{command}: {_NAMES.get(signum, 'interrupted')}\n")
            sys.stderr.flush()
        finally:
            os._exit(128 + int(signum))

    for sig in _NAMES:
        signal.signal(sig, on_signal)
