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
from pathlib import Path
from typing import Any


def read_json(path: str | os.PathLike, error: type[Exception], what: str) -> Any:
    """The parsed content of ``path``; ``error(message)`` naming the path on any failure.

    ``what`` names the kind of file in messages ("log file", "parameter file").
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
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
        return json.loads(text)
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
