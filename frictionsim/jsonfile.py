"""Reading the JSON files frictionsim takes (logs, parameter files) with errors that name the file.

Every failure (missing, a directory, unreadable, not UTF-8, not JSON, nested so
deeply that the parser gives up) becomes the caller's error class with the path
in the message, never a traceback. Python's parser accepts the non-standard
tokens ``NaN`` and ``Infinity``; they are read as floats here so that the
validators can name the entry and field that holds them
(:func:`first_non_finite`), and nothing read can fail to be written back.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

#: Larger files are refused before they are read: a log of a long recording is a few MB.
MAX_BYTES = 1 << 30


def check_regular_file(path: Path, error: type[Exception], what: str) -> None:
    """``error`` unless ``path`` is a regular file of at most :data:`MAX_BYTES`: a FIFO with no
    writer would block for ever, a device such as /dev/zero never ends."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file (a FIFO, socket or device); a {what} must "
                    "be a file")
    if st.st_size > MAX_BYTES:
        raise error(f"{path}: {st.st_size / 2**30:.1f} GiB is too large for a {what} "
                    f"(at most {MAX_BYTES / 2**30:g} GiB)")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object, refusing a key written twice (json.loads would keep the last silently)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _number(text: str) -> int | float:
    """An integer of JSON, as float when it has too many digits to be a count: a number of
    hundreds of digits becomes infinity, which the validators name, not an overflow later."""
    return int(text) if len(text) <= 18 else float(text)


def as_path(value, error: type[Exception], what: str) -> Path:
    """``value`` as a Path; ``error`` naming ``what`` (the kind of file) for anything but a
    str or an ``os.PathLike`` (a number, a Log, a ParameterSet passed where its file goes)."""
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise error(f"{what}: a path (a str or os.PathLike), not {type(value).__name__} "
                f"({value!r:.40})")


def read_json(path: str | os.PathLike, error: type[Exception], what: str) -> Any:
    """The parsed content of ``path``; ``error(message)`` naming the path on any failure.

    ``what`` names the kind of file in messages ("log file", "parameter file"). Refused too:
    a file that is not a regular one (FIFO, device), a key written twice in an object.
    """
    path = as_path(path, error, what)
    check_regular_file(path, error, what)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not content
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {what}") from None
    except PermissionError:
        raise error(f"{path}: permission denied (cannot read the {what})") from None
    except UnicodeDecodeError as e:
        raise error(f"{path}: not a {what}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_number)
    except _DuplicateKey as e:
        raise error(f"{path}: the key {e} is written twice in one object; which one is "
                    "meant is not clear") from None
    except json.JSONDecodeError as e:
        raise error(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise error(f"{path}: not a usable {what}: the JSON is nested too deeply") from None


def first_non_finite(value: Any, where: str) -> str | None:
    """The location (``where`` extended by keys and indices) of the first NaN or infinity in
    ``value``, or None. Iterative, so arbitrarily nested input cannot exhaust the stack."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return at
        elif isinstance(item, dict):
            stack.extend((v, f"{at}.{k}") for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def json_files(paths, error: type[Exception], keep=None, what: str = "*.json file") -> list[Path]:
    """The files named, a folder standing for its ``*.json`` files (sorted) that ``keep``
    accepts; ``error`` for a missing path, an unreadable folder (``glob`` would hide it as an
    empty one) or a folder without such a file."""
    out: list[Path] = []
    for p in (as_path(p, error, what) for p in paths):
        if p.is_dir():
            try:
                found = sorted(f for f in p.iterdir() if f.suffix == ".json")
            except OSError as e:
                raise error(f"{p}: cannot read the folder ({e.strerror or e})") from None
            found = [f for f in found if keep is None or keep(f)]
            if not found:
                raise error(f"{p}: directory holds no {what}")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise error(f"{p}: no such file or directory")
    return out
