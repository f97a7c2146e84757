"""Reading a MuJoCo model from what a user hands over: a path, MJCF text, an ``MjSpec`` or an
``MjModel``, with one kind of error naming the file.

MuJoCo's own parse errors span lines and leave out the file's path
(``Error=XML_ERROR_PARSING_TEXT ErrorID=8 … Line number=1``); a user with several MJCFs
cannot tell which one failed. Every loader of a user's model goes through here.
"""

from __future__ import annotations

import os
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.jsonfile import check_regular_file
from frictionsim.solvers.mujoco_dynamics import mujoco


def _is_text(source) -> bool:
    return isinstance(source, str) and source.lstrip().startswith("<")


def _failure(source, error: Exception) -> ConfigurationError:
    what = "the MJCF text" if _is_text(source) else str(source)
    reason = " ".join(str(error).split()) or type(error).__name__
    return ConfigurationError(f"{what}: not a usable MJCF model ({reason})")


def read_spec(source: str | os.PathLike | mujoco.MjSpec) -> mujoco.MjSpec:
    """A new ``MjSpec`` of ``source`` (a path, MJCF text or a spec, which is copied, never
    edited); :class:`ConfigurationError` naming the file and MuJoCo's reason on one line."""
    if isinstance(source, mujoco.MjSpec):
        return source.copy()
    if not _is_text(source):
        check_regular_file(Path(source), ConfigurationError, "MJCF file")
    try:
        if _is_text(source):
            return mujoco.MjSpec.from_string(source)
        return mujoco.MjSpec.from_file(str(source))
    except (ValueError, OSError) as e:
        raise _failure(source, e) from None


def read_model(source) -> mujoco.MjModel:
    """An ``MjModel`` from a path, MJCF text, an ``MjSpec`` (compiled from a copy) or an
    ``MjModel`` (returned as is); errors as :func:`read_spec`."""
    if isinstance(source, mujoco.MjModel):
        return source
    what = "the MjSpec" if isinstance(source, mujoco.MjSpec) else source
    return compile_spec(read_spec(source), what)


def compile_spec(spec: mujoco.MjSpec, what: str) -> mujoco.MjModel:
    """``spec.compile()``, MuJoCo's compile error named after ``what`` on one line."""
    try:
        return spec.compile()
    except ValueError as e:
        raise _failure(what, e) from None
