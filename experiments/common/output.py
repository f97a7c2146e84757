"""Writing results: JSON of the numbers, figures to files, tables to the terminal; and the
checks of an output path (writable, not replacing anything unasked, a figure format)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from frictionsim import atomic
from frictionsim.errors import ConfigurationError


def json_safe(data):
    """``data`` with non-finite floats (NaN: "not reached", inf) as null, which JSON allows."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def figure_formats() -> dict[str, str]:
    """File suffixes matplotlib can write (without the dot) → description."""
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def check_writable(path: Path, overwrite: bool) -> None:
    """``ValueError`` unless ``path`` can be written as a new file (or replaced, with
    ``overwrite``, when it is a regular file: a symlink, a device or a FIFO is never replaced
    by the atomic rename, which would replace the link itself)."""
    if path.is_dir():
        raise ConfigurationError(f"{path} is a directory; give a file name")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a symbolic link" if path.is_symlink() else "not a regular file"
        raise ConfigurationError(f"{path} is {kind}; an output is written as a new regular file and "
                                 "never replaces one, even with --overwrite: choose another name")
    if path.exists() and not overwrite:
        raise ConfigurationError(f"{path} exists; pass --overwrite to replace it, or choose another name")
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigurationError(f"{path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        why = "read-only file system" if read_only(folder) else "permission denied"
        raise ConfigurationError(f"{path}: cannot write in {folder} ({why})")


def read_only(folder: Path) -> bool:
    """Whether ``folder`` lies on a file system mounted read-only (no write is possible there,
    whatever the permissions say)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_figure_path(path: Path) -> None:
    """``ValueError`` unless the suffix of ``path`` names a format matplotlib writes."""
    formats = figure_formats()
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        known = ", ".join(sorted(formats))
        what = f"suffix .{suffix}" if suffix else "no suffix"
        raise ConfigurationError(f"{path}: {what}; a figure needs one of {known} (e.g. {path.stem}.png)")


def fresh_directory(path: Path) -> Path:
    """``path`` if it is missing or empty, else the first of ``path-2``, ``path-3`` … that is."""
    candidate, n = path, 1
    while candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def check_directory(path: Path, overwrite: bool, flag: str = "--out") -> None:
    """``ValueError`` unless ``path`` is a missing or empty folder (any folder with ``overwrite``)."""
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{flag} {path} is a file; it must be a directory")
    if path.exists() and any(path.iterdir()) and not overwrite:
        raise ConfigurationError(f"{flag} {path} is not empty; pass --overwrite to write into it "
                                 "(files of the same name are replaced), or choose another directory")


def write_json(path: str | os.PathLike, data) -> Path:
    """Write a result JSON atomically (non-finite numbers as null) and say where it went."""
    path = atomic.write_json(path, json_safe(data))
    print(f"wrote {atomic.shown(path)}")
    return path


@contextmanager
def marked_on_interrupt(path: Path, report: dict) -> Iterator[None]:
    """Around what a report writes after its JSON (``path``, holding ``report``): an
    interrupt there (the figures, the Markdown) rewrites the JSON with ``"interrupted":
    true`` before it goes on, so that a folder cut short then never reads as a finished
    run."""
    try:
        yield
    except KeyboardInterrupt:
        if not report.get("interrupted"):
            write_json(path, {**report, "interrupted": True,
                              "interrupted_while": "writing the report and its figures"})
        raise


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Save a matplotlib figure (format from the suffix) atomically and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(tmp, dpi=120, bbox_inches="tight", format=path.suffix.lstrip(".") or "png")
        os.replace(tmp, path)
    except OSError as e:
        raise atomic.unwritable(path, e) from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        plt.close(fig)
    print(f"wrote {atomic.shown(path)}")
    return path


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural unless n is 1 ("1 log", "0 logs", "12 logs")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A plain-text table; ``align`` holds one of '<' '>' per column (default: first left)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "<" + ">" * (len(headers) - 1)
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, align, widths)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
