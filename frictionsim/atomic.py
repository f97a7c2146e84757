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

from frictionsim.errors import ConfigurationError


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, fsync, rename)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        # the rename would replace the link or the special file itself (as root, /dev/stdout)
        kind = "a symbolic link" if path.is_symlink() else "not a regular file"
        raise ConfigurationError(f"{path} is {kind}; it is not replaced")
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary file is created inside the ``try``: a Ctrl-C landing between its creation
    # and the ``try`` (inside tempfile.mkstemp, say) would leave it behind.
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        # O_EXCL: never another's file; mode 0666 less the umask, as open() gives
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


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
