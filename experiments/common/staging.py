"""An output folder replaced whole or not at all.

A command that writes a folder of results (``identify``, ``robot identify``, ``robot
export-mjcf``, ``robot synthesize``, ``demo``, ``run vs-mujoco --robot``) writes them into
a staging folder beside it (``.NAME.new-PID``) and swaps it in when it is done
(``record-campaign`` only adds logs, each under a new name, and needs none): until then, and
whatever stops it (a full disk, a crash, an interrupt), the earlier result in the folder is
untouched. An interrupted run's partial result (its files say so) takes the folder's
place when there was nothing there to lose, and is kept beside it as ``NAME.interrupted``
when there was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from frictionsim.atomic import STAGES
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.interrupts import kept_on_interrupt


class StagedFolder:
    """``with StagedFolder(out, overwrite) as stage:`` write into ``stage`` (a fresh folder
    beside ``out``; with ``carry`` the earlier result copied in first, for ``--resume``; else
    the earlier entries ``keep`` says are not the run's own); on a normal exit it replaces
    ``out``. A command that catches the interrupt itself and returns sets
    :attr:`interrupted`; :attr:`result` is then where the partial result went. ``out`` is
    checked first: a file, or a non-empty folder without ``overwrite`` (or ``carry``), is
    refused naming ``flag``. Messages naming a file inside the stage name it inside ``out``
    (:func:`frictionsim.atomic.shown`)."""

    def __init__(self, out: str | os.PathLike, overwrite: bool = False, flag: str = "--out",
                 carry: bool = False, keep=None) -> None:
        self.out = Path(out)
        self.flag = flag
        self.carry = carry
        #: which of the earlier folder's entries (a Path → bool) the new one keeps: the
        #: files a run does not write itself (a user's notes beside a fit); all with carry
        self.keep = keep
        self.interrupted = False
        #: where the result lies once the ``with`` is left: ``out``, or beside it
        self.result = self.out
        if self.out.exists() and not self.out.is_dir():
            raise ConfigurationError(f"{flag} {self.out} is a file; it must be a directory")
        if self._earlier() and not (overwrite or carry):
            raise ConfigurationError(f"{flag} {self.out} is not empty; pass --overwrite to "
                                     "replace it, or choose another directory")
        self.path = self.out.parent / f".{self.out.name}.new-{os.getpid()}"

    def _earlier(self) -> bool:
        return self.out.is_dir() and any(self.out.iterdir())

    def __enter__(self) -> Path:
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                shutil.rmtree(self.path)
            self.path.mkdir()
            for entry in sorted(self.out.iterdir()) if self.out.is_dir() else ():
                if self.carry or (self.keep is not None and self.keep(entry)):
                    copy = self.path / entry.name
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.copytree(entry, copy, symlinks=True)
                    else:
                        shutil.copy2(entry, copy, follow_symlinks=False)
        except OSError as e:
            shutil.rmtree(self.path, ignore_errors=True)
            raise ConfigurationError(f"{self.flag} {self.out}: cannot write beside it "
                                     f"({e.strerror or e})") from None
        STAGES[self.path] = self.out
        ACTIVE.append(self)
        return self.path

    def __exit__(self, kind, error, trace) -> bool:
        STAGES.pop(self.path, None)
        if self in ACTIVE:
            ACTIVE.remove(self)
        try:
            # SIGTERM and SIGHUP arrive as KeyboardInterrupt's subclass (the runner's)
            if (kind is not None and issubclass(kind, KeyboardInterrupt)) or \
                    (kind is None and self.interrupted):
                self._keep_partial()
            elif kind is not None:
                shutil.rmtree(self.path, ignore_errors=True)
            else:
                self._swap_in(self.out)
        except OSError as e:
            shutil.rmtree(self.path, ignore_errors=True)
            if kind is None:
                raise ConfigurationError(f"{self.flag} {self.out}: the new result could not "
                                         f"take its place ({e.strerror or e}); the earlier "
                                         "one is kept") from None
        return False

    def _keep_partial(self) -> None:
        if not self._earlier():
            if not any(self.path.iterdir()):  # stopped before it saved anything: no folder
                shutil.rmtree(self.path)
                return
            self._swap_in(self.out)
            return
        beside = self.beside()
        self._swap_in(beside)
        self.result = beside
        kept_on_interrupt(f"{self.out} keeps the earlier result; this run's partial one is "
                          f"in {beside}")

    def beside(self) -> Path:
        """Where an interrupted run's partial result goes when ``out`` holds an earlier one."""
        return self.out.with_name(f"{self.out.name}.interrupted")

    def _swap_in(self, target: Path) -> None:
        """Rename the stage to ``target``, the folder there first renamed aside and removed
        after: at every instant one of the two is complete on disk."""
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        if target.exists():
            if old.exists():
                shutil.rmtree(old)
            os.rename(target, old)
        os.rename(self.path, target)
        shutil.rmtree(old, ignore_errors=True)


#: The folders being written (entered, not yet left), innermost last.
ACTIVE: list[StagedFolder] = []


def name_interrupted() -> None:
    """From now on, name the files of every folder being written where an interrupt will
    leave them (:func:`frictionsim.atomic.shown`): beside the folder, as ``NAME.interrupted``,
    when it holds an earlier result; called when the interrupt arrives, so that the files
    written after it (the report saying so) are named where they will be."""
    for staged in ACTIVE:
        if staged._earlier() and staged.path in STAGES:
            STAGES[staged.path] = staged.beside()


def settle_interrupted() -> None:
    """Settle every folder being written as an interrupt does (:meth:`StagedFolder.__exit__`
    with Ctrl-C), for a program that leaves without unwinding (an interrupt during a compile:
    :func:`frictionsim.experiments.runner.cli._leave_during_compile`)."""
    while ACTIVE:
        staged = ACTIVE.pop()
        STAGES.pop(staged.path, None)
        try:
            staged._keep_partial()
        except OSError:
            pass
