"""Progress display: a tqdm bar on an interactive terminal, nothing otherwise.

Redrawing a bar into a file or a pipe fills it with carriage returns (143 KB for
``process`` of 960 logs), so bars are drawn only when stderr is a terminal and the
user did not pass ``--no-progress``; the quiet stand-in has the same interface and
still prints :meth:`Quiet.write` messages.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable


class Quiet:
    """A progress bar that draws nothing: iterates, counts, and prints ``write`` messages."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None) -> None:
        self.iterable = iterable
        self.total = total
        self.n = 0

    def __iter__(self):
        for item in self.iterable or ():
            self.n += 1
            yield item

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str) -> None:
        pass

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
    and for at least ``minimum`` items; else a :class:`Quiet` stand-in."""
    count = total if total is not None else (len(iterable) if hasattr(iterable, "__len__")
                                             else None)
    if enabled and interactive() and (count is None or count >= minimum):
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True)
    return Quiet(iterable, total)
