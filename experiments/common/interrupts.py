"""What an interrupted command kept, said in the one line every interrupt ends with.

A command that catches Ctrl-C (a fit that saves its best so far, a bootstrap cut short)
records here what it kept, and returns :func:`kept_on_interrupt`'s 130; the command line
then says one line, ``frictionsim CMD: interrupted; <what was kept>``
(:func:`frictionsim.experiments.runner.cli.main`), never a line of the command's own beside
the interrupt's.
"""

from __future__ import annotations

_KEPT: list[str] = []


def kept_on_interrupt(detail: str) -> int:
    """Record ``detail`` (a clause: "the best parameters so far are saved in fit/") for the
    interrupt's line; 130, the exit code of an interrupted command."""
    _KEPT.append(detail)
    return 130


def said() -> str | None:
    """The details recorded since :func:`clear`, joined; None when there are none."""
    return "; ".join(_KEPT) if _KEPT else None


def clear() -> None:
    """Forget the details (a new command line starts)."""
    _KEPT.clear()
