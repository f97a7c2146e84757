"""Atomic file writes: a reader (or a crash) never sees a half-written file.

The file is written to a temporary name in the same folder, flushed to disk and
renamed over the target. It gets the permissions an ordinary ``open()`` would
give it (0666 less the umask), not the private 0600 of a temporary file.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from frictionsim.errors import ConfigurationError, OutputError
from frictionsim.jsonfile import as_path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, fsync, rename)."""
    path = as_path(path, ConfigurationError, "output file")
    if not isinstance(text, str):
        raise ConfigurationError(f"{path}: not written, the text is a {type(text).__name__}")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        # the rename would replace the link or the special file itself (as root, /dev/stdout)
        kind = "a symbolic link" if path.is_symlink() else "not a regular file"
        raise ConfigurationError(f"{path} is {kind}; it is not replaced")
    # The temporary file is created inside the ``try``: a Ctrl-C landing between its creation
    # and the ``try`` (inside tempfile.mkstemp, say) would leave it behind.
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: never another's file; mode 0666 less the umask, as open() gives
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise unwritable(path, e) from None
    except BaseException:
        _remove(tmp)
        raise
    return path


def unwritable(path: str | os.PathLike, error: OSError) -> OutputError:
    """The one-line error for a file the system would not let us write (a full disk, a
    read-only or missing folder), naming the file the user asked for."""
    out = OutputError(f"{shown(path)}: not written ({error.strerror or error})")
    out.errno = error.errno
    return out


def shown(path: str | os.PathLike | None) -> Path | None:
    """``path`` as the user knows it: inside an output folder being staged
    (:mod:`frictionsim.experiments.common.staging`), the folder's own name (None: None)."""
    if path is None:
        return None
    path = Path(path)
    for stage, final in STAGES.items():
        if path == stage or stage in path.parents:
            return final / path.relative_to(stage)
    return path


#: Output folders being written beside their final place: staging folder → final folder.
STAGES: dict[Path, Path] = {}


def _remove(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def write_json(path: str | os.PathLike, data: Any, indent: int | None = 4) -> Path:
    """Write ``data`` as JSON to ``path`` atomically.

    Raises ``ValueError`` naming the file when ``data`` holds what JSON cannot
    represent (NaN, infinity, non-serialisable objects); the file is left untouched.
    """
    try:
        text = json.dumps(data, indent=indent, allow_nan=False)
    except (ValueError, TypeError) as e:
        raise ConfigurationError(f"{path}: not written, the data cannot be stored as JSON ({e})") from None
    return write_text(path, text + "\n")
