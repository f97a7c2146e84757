"""Shared test configuration: where the published reference data lives.

The recorded XL330 logs, parameter files and reference rollouts are read in
place from ``../shared/data/xl330`` next to the project (never copied into it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330"

if str(ROOT) not in sys.path:  # run from anywhere, not only from the project root
    sys.path.insert(0, str(ROOT))


def require_shared() -> Path:
    """SHARED, or skip the calling test with a message saying what is missing."""
    if not SHARED.is_dir():
        pytest.skip(
            f"shared reference data not found at {SHARED} "
            "(expected ../shared/data/xl330 next to the project root)"
        )
    return SHARED


@pytest.fixture(scope="session")
def shared() -> Path:
    """The xl330 reference-data folder; skips the test when it is absent."""
    return require_shared()
