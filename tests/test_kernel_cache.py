"""Numba's cache cannot serve kernels compiled from older sources of another module."""

from __future__ import annotations

from pathlib import Path

from frictionsim import kernel_cache


def test_a_changed_kernel_source_purges_every_cached_kernel(tmp_path, monkeypatch):
    folders = [tmp_path / name for name in ("frictionsim", "solvers", "experiments", "hw")]
    for folder in folders:
        (folder / "__pycache__").mkdir(parents=True)
    (tmp_path / "solvers" / "step.py").write_text("@njit(cache=True)\ndef step(): pass\n")
    (tmp_path / "solvers" / "batch.py").write_text("@njit(cache=True)\ndef batch(): step()\n")
    (tmp_path / "solvers" / "plain.py").write_text("def helper(): pass\n")
    cached = [tmp_path / "solvers" / "__pycache__" / name
              for name in ("batch.batch-1.py311.nbi", "batch.batch-1.py311.1.nbc")]
    for path in cached:
        path.write_text("machine code")
    monkeypatch.setattr(kernel_cache, "package_folders", lambda: folders)
    monkeypatch.setattr(kernel_cache, "MARKER", tmp_path / "frictionsim" / "__pycache__" / "k")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
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


def test_the_package_folders_are_found_where_they_are_installed():
    import frictionsim.solvers

    folders = kernel_cache.package_folders()
    assert len(folders) == len(kernel_cache.PACKAGES)  # editable: four folders; wheel: nested
    assert Path(frictionsim.solvers.__file__).parent in folders
