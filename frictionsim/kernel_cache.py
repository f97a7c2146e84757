"""Keep Numba's on-disk cache of the compiled kernels consistent with their sources.

``@njit(cache=True)`` keys a cached function on its own source file only. A kernel
that inlines a function from another module (the batched rollouts inline the step,
which inlines the friction budget…) keeps the old machine code when only that other
module changes: after an upgrade in place, it would silently compute with the old
physics. :func:`purge_stale` hashes every source file of the project that holds
cached kernels; when the hash differs from the one recorded beside the cache, it
deletes all of their cached machine code (``*.nbi``, ``*.nbc`` in the ``__pycache__``
folders next to the sources, Numba's default place), so everything recompiles once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

#: The packages whose modules may hold ``cache=True`` kernels.
PACKAGES = ("frictionsim", "frictionsim.solvers", "frictionsim.experiments", "frictionsim.hw")
MARKER = Path(__file__).resolve().parent / "__pycache__" / "kernels.sha256"


def package_folders() -> list[Path]:
    """The folders of :data:`PACKAGES` wherever they are installed (a wheel nests them in
    ``frictionsim/``; an editable install maps them to the repository's top-level folders)."""
    here = Path(__file__).resolve().parent
    folders = [here]
    for name in PACKAGES[1:]:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations))).resolve()
            if not folder.is_relative_to(here):
                folders.append(folder)
    return folders


def kernel_sources() -> list[Path]:
    """Every project source file with a cached kernel, in a fixed order."""
    out = []
    for folder in package_folders():
        for path in sorted(folder.rglob("*.py")):
            try:
                if "cache=True" in path.read_text(encoding="utf-8"):
                    out.append(path)
            except OSError:
                continue
    return out


def purge_stale() -> bool:
    """Delete the cached kernels if their sources changed since they were cached; True if it
    did. Quiet and harmless where the cache folders are not writable."""
    if os.environ.get("NUMBA_CACHE_DIR") or os.environ.get("NUMBA_DISABLE_JIT"):
        return False
    sources = kernel_sources()
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.read_bytes())
    stamp = digest.hexdigest()
    try:
        if MARKER.read_text() == stamp:
            return False
    except OSError:
        pass
    purged = False
    for folder in {p.parent / "__pycache__" for p in sources}:
        for cached in list(folder.glob("*.nbi")) + list(folder.glob("*.nbc")):
            try:
                cached.unlink()
                purged = True
            except OSError:
                pass
    try:
        MARKER.parent.mkdir(exist_ok=True)
        MARKER.write_text(stamp)
    except OSError:
        pass
    return purged
