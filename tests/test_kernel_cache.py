"""Numba's cache cannot serve kernels compiled from older sources of another module, wherever
it keeps them; a damaged cache file costs a compilation, not a failed command; a read-only
install still runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frictionsim import kernel_cache

XL330 = Path(__file__).resolve().parents[2] / "shared" / "data" / "xl330"


@pytest.mark.parametrize("where", ["in-tree", "NUMBA_CACHE_DIR"])
def test_a_changed_kernel_source_purges_every_cached_kernel(tmp_path, monkeypatch, where):
    monkeypatch.setattr(kernel_cache, "user_wide_root", lambda: tmp_path / "user-wide")
    folders = [tmp_path / name for name in ("frictionsim", "solvers", "experiments", "hw")]
    for folder in folders:
        (folder / "__pycache__").mkdir(parents=True)
    (tmp_path / "solvers" / "step.py").write_text("@njit(cache=True)\ndef step(): pass\n")
    (tmp_path / "solvers" / "batch.py").write_text("@njit(cache=True)\ndef batch(): step()\n")
    (tmp_path / "solvers" / "plain.py").write_text("def helper(): pass\n")
    if where == "in-tree":
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
        cache = tmp_path / "solvers" / "__pycache__"
    else:  # Numba's layout under a user-provided cache root
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba-cache"))
        cache = (tmp_path / "numba-cache"
                 / kernel_cache._suitable_subpath(tmp_path / "solvers"))
        cache.mkdir(parents=True)
    cached = [cache / name for name in ("batch.batch-1.py311.nbi", "batch.batch-1.py311.1.nbc")]
    for path in cached:
        path.write_text("machine code")
    monkeypatch.setattr(kernel_cache, "package_folders", lambda: folders)
    monkeypatch.setattr(kernel_cache, "MARKER", tmp_path / "frictionsim" / "__pycache__" / "k")
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    assert [p.name for p in kernel_cache.kernel_sources()] == ["batch.py", "step.py"]
    assert kernel_cache.purge_stale()  # first run: no record of the sources
    assert not any(p.exists() for p in cached)
    for path in cached:
        path.write_text("machine code")
    assert not kernel_cache.purge_stale()  # sources unchanged: the cache is kept
    assert all(p.exists() for p in cached)
    (tmp_path / "solvers" / "step.py").write_text("@njit(cache=True)\ndef step(): return 1\n")
    assert kernel_cache.purge_stale()  # only the callee changed: its caller's cache goes too
    assert not any(p.exists() for p in cached)


def test_a_damaged_cache_is_purged_where_numba_reads_and_nowhere_else(tmp_path, monkeypatch):
    """With NUMBA_CACHE_DIR set, Numba reads only there: a damaged file there must not cost the
    in-tree cache (which the same install uses without the variable), and the reverse."""
    monkeypatch.setattr(kernel_cache, "user_wide_root", lambda: tmp_path / "user-wide")
    solvers = tmp_path / "solvers"
    (solvers / "__pycache__").mkdir(parents=True)
    (solvers / "step.py").write_text("@njit(cache=True)\ndef step(): pass\n")
    monkeypatch.setattr(kernel_cache, "package_folders", lambda: [solvers])
    root = tmp_path / "numba-cache"
    places = {"in-tree": solvers / "__pycache__",
              "NUMBA_CACHE_DIR": root / kernel_cache._suitable_subpath(solvers),
              "user-wide": tmp_path / "user-wide" / kernel_cache._suitable_subpath(solvers)}
    for folder in places.values():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "step.step-1.py311.nbi").write_text("machine code")

    def kept():
        return {name for name, folder in places.items() if any(folder.glob("*.nbi"))}

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(root))
    assert kernel_cache.purge_all() == 1
    assert kept() == {"in-tree", "user-wide"}
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert kernel_cache.purge_all() == 2
    assert kept() == set()


def test_the_package_folders_are_found_where_they_are_installed():
    import frictionsim.solvers

    folders = kernel_cache.package_folders()
    assert len(folders) == len(kernel_cache.PACKAGES)  # editable: four folders; wheel: nested
    assert Path(frictionsim.solvers.__file__).parent in folders


def test_without_a_writable_cache_place_a_private_temporary_one_is_used(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kernel_cache, "_writable", lambda folder: False)
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))
    chosen = kernel_cache.use_writable_cache()
    assert chosen == os.environ["NUMBA_CACHE_DIR"]
    assert Path(chosen).is_dir() and Path(chosen).parent == tmp_path
    import numba.core.config

    assert numba.core.config.CACHE_DIR == chosen
    monkeypatch.setattr(kernel_cache, "_writable", lambda folder: True)
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert kernel_cache.use_writable_cache() is None and "NUMBA_CACHE_DIR" not in os.environ


SIMULATE = [sys.executable, "-m", "frictionsim.experiments.runner.cli", "simulate", "--params",
            str(XL330 / "params" / "m6.json"),
            str(XL330 / "processed" / "2026-01-15_10h28m42.json"), "--json", "out.json"]


@pytest.fixture(scope="module")
def compiled_cache(tmp_path_factory) -> tuple[Path, dict]:
    """A cache of the kernels ``simulate`` compiled (its own NUMBA_CACHE_DIR, compiled once for
    every kind of damage), and what the command wrote."""
    if not XL330.is_dir():
        pytest.skip("shared data not found")
    root = tmp_path_factory.mktemp("compiled")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(root / "cache")}
    first = subprocess.run(SIMULATE, cwd=root, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    return root / "cache", json.loads((root / "out.json").read_text())


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_cache_file_is_removed_and_the_command_runs(tmp_path, damage, compiled_cache):
    cache, expected = compiled_cache
    shutil.copytree(cache, tmp_path / "cache")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    files = sorted((tmp_path / "cache").rglob("fixed_step.rollout-*.nb*"))
    assert files
    for path in files:
        data = path.read_bytes()
        path.write_bytes(data[:30] if damage == "truncated" else data[:40] + b"\x8f" * 400)
    second = subprocess.run(SIMULATE, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert "damaged" in second.stderr and "Traceback" not in second.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == expected

