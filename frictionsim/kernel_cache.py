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


def kernel_sources(folders: list[Path] | None = None) -> list[Path]:
    """Every project source file with a cached kernel (in ``folders``, by default the
    packages'), in a fixed order."""
    out = []
    for folder in folders if folders is not None else package_folders():
        for path in sorted(folder.rglob("*.py")):
            try:
                if "cache=True" in path.read_text(encoding="utf-8"):
                    out.append(path)
            except OSError:
                continue
    return out


def _suitable_subpath(source_dir: Path) -> str:
    """The folder name Numba gives a source folder's kernels inside a cache root other than
    ``__pycache__`` (``numba.core.caching._CacheLocator.get_suitable_cache_subpath``)."""
    path = os.path.abspath(source_dir)
    return f"{os.path.split(path)[-1]}_{hashlib.sha1(path.encode()).hexdigest()}"


def user_wide_root() -> Path:
    """Numba's user-wide cache (used where a package's ``__pycache__`` is not writable)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "numba"


def cache_places(sources: list[Path]) -> list[tuple[Path, list[Path]]]:
    """(marker file, cache folders) of every place Numba may keep our kernels: the in-tree
    ``__pycache__`` folders, ``$NUMBA_CACHE_DIR``, the user-wide cache."""
    dirs = sorted({p.parent for p in sources})
    places = [(MARKER, [d / "__pycache__" for d in dirs])]
    roots = [Path(os.environ["NUMBA_CACHE_DIR"])] if os.environ.get("NUMBA_CACHE_DIR") else []
    roots.append(user_wide_root())
    for root in roots:
        places.append((root / "frictionsim-kernels.sha256",
                       [root / _suitable_subpath(d) for d in dirs]))
    return places


def _remove_cached(folders: list[Path]) -> int:
    removed = 0
    for folder in folders:
        try:
            cached = list(folder.glob("*.nbi")) + list(folder.glob("*.nbc"))
        except OSError:
            continue
        for path in cached:
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def purge_stale() -> bool:
    """Delete the cached kernels if their sources changed since they were cached; True if it
    did. Every place Numba may cache them is kept apart (``cache_places``), with its own
    record of the sources. Quiet and harmless where a place is not writable."""
    if os.environ.get("NUMBA_DISABLE_JIT"):
        return False
    folders = package_folders()
    use_writable_cache(folders)
    sources = kernel_sources(folders)
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.read_bytes())
    stamp = digest.hexdigest()
    purged = False
    for marker, folders in cache_places(sources):
        try:
            if marker.read_text() == stamp:
                continue
        except OSError:
            pass
        purged |= _remove_cached(folders) > 0
        user_root = os.environ.get("NUMBA_CACHE_DIR")
        if marker.parent.is_dir() or marker == MARKER or (
                user_root and marker.parent == Path(user_root)):  # not ~/.cache uninvited
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(stamp)
            except OSError:
                pass
    return purged


def places_in_use(sources: list[Path]) -> list[tuple[Path, list[Path]]]:
    """The :func:`cache_places` Numba reads this process's kernels from: ``$NUMBA_CACHE_DIR``
    alone when it is set, otherwise the in-tree folders and the user-wide cache (where the
    in-tree ones are not writable)."""
    places = cache_places(sources)
    root = os.environ.get("NUMBA_CACHE_DIR")
    return [p for p in places if p[0].parent == Path(root)] if root else places


def purge_all() -> int:
    """Delete every cached kernel of the project where this process's Numba keeps them (a
    damaged cache file there); the number of files removed. Other places, which another
    setting of ``NUMBA_CACHE_DIR`` would use, are left alone: their files are not the damaged
    ones."""
    sources = kernel_sources()
    return sum(_remove_cached(folders) for _, folders in places_in_use(sources))


def _writable(folder: Path) -> bool:
    """Whether ``folder`` can be created or written (its nearest existing ancestor)."""
    while not folder.exists():
        if folder.parent == folder:
            return False
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def use_writable_cache(folders: list[Path] | None = None) -> str | None:
    """Where neither the packages' ``__pycache__`` folders nor the user-wide cache can be
    written (a read-only install, no writable home), Numba refuses every ``cache=True``
    kernel; point ``NUMBA_CACHE_DIR`` at a private folder of the temporary directory then.
    Returns the folder chosen, or None when nothing needed changing."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    folders = folders if folders is not None else package_folders()
    in_tree = all(_writable(folder / "__pycache__") for folder in folders)
    if in_tree or _writable(user_wide_root()):
        return None
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"frictionsim-numba-cache-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    import sys

    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba already imported: its config read the environment
        config.CACHE_DIR = str(folder)
    return str(folder)
