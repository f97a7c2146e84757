"""Progress display: a tqdm bar on an interactive terminal, a line now and then otherwise.

Redrawing a bar into a file or a pipe fills it with carriage returns (143 KB for
``process`` of 960 logs), so bars are drawn only when stderr is a terminal and the
user did not pass ``--no-progress``. Off a terminal the stand-in (:class:`Quiet`) has the
same interface, prints :meth:`Quiet.write` messages and, unless ``--no-progress``, one line
on stderr every :data:`HEARTBEAT_S` seconds of a long job (a CI log or ``| tee`` would
otherwise show minutes of silence).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from time import monotonic as clock

#: Seconds between two of :class:`Quiet`'s progress lines (none before the first interval).
HEARTBEAT_S = 30.0


class Quiet:
    """A progress bar that draws nothing: iterates, counts, prints ``write`` messages and,
    when ``heartbeat``, a line "DESC: N/TOTAL UNITs (POSTFIX), T s" on stderr at most every
    :data:`HEARTBEAT_S` seconds."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None,
                 desc: str = "", unit: str = "it", heartbeat: bool = False) -> None:
        self.iterable = iterable
        self.total = total
        self.n = 0
        self.desc, self.unit, self.heartbeat = desc, unit, heartbeat
        self.postfix = ""
        self.start = self.last = clock()

    def __iter__(self):
        for item in self.iterable or ():
            self.n += 1
            self._beat()
            yield item

    def update(self, n: int = 1) -> None:
        self.n += n
        self._beat()

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def _beat(self) -> None:
        now = clock()
        if not self.heartbeat or now - self.last < HEARTBEAT_S:
            return
        self.last = now
        done = f"{self.n}/{self.total}" if self.total is not None else f"{self.n}"
        unit = "" if self.unit == "it" else f" {self.unit}s"  # tqdm's default unit says nothing
        print(f"{self.desc or 'progress'}: {done}{unit}"
              + (f" ({self.postfix})" if self.postfix else "") + f", {now - self.start:.0f} s",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        pass

    @staticmethod
    def write(message: str, file=None) -> None:
        print(message, file=file or sys.stdout)

    def __enter__(self) -> Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def interactive() -> bool:
    """True when stderr is a terminal a bar can be redrawn on."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
             unit: str = "it", enabled: bool = True, leave: bool = True, minimum: int = 0):
    """A tqdm bar over ``iterable`` (or counting to ``total``) when ``enabled``, on a terminal,
    and for at least ``minimum`` items; else a :class:`Quiet` stand-in, whose lines every
    :data:`HEARTBEAT_S` seconds are on when ``enabled``."""
    count = total if total is not None else (len(iterable) if hasattr(iterable, "__len__")
                                             else None)
    if enabled and interactive() and (count is None or count >= minimum):
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True)
    return Quiet(iterable, total, desc, unit, heartbeat=enabled)
