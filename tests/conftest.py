"""Shared test configuration: where the published reference data lives.

The recorded XL330 logs, parameter files and reference rollouts are read in
place from ``../shared/data/xl330`` next to the project (never copied into it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330"

if str(ROOT) not in sys.path:  # run from anywhere, not only from the project root
    sys.path.insert(0, str(ROOT))

try:  # no test may depend on timing: hypothesis' 200 ms deadline per example fails when the
    # machine is busy (an example of 253 stuffed bytes took longer with both cores loaded)
    from hypothesis import HealthCheck, settings

    # The same examples on every run, so a red suite is a reproducible one;
    # FRICTIONSIM_HYPOTHESIS=explore draws new ones (it found the SDK's unstuffed READ).
    settings.register_profile("frictionsim", deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("explore", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("FRICTIONSIM_HYPOTHESIS", "frictionsim"))
except ImportError:  # hypothesis is a dev extra; the tests that use it import it themselves
    pass


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


@pytest.fixture(scope="module")
def so101():
    """The built-in SO-101 robot and its MJCF path; skips without MuJoCo or the recordings."""
    pytest.importorskip("mujoco")
    data = SHARED.parent
    if not (data / "so101" / "recordings").is_dir():
        pytest.skip(f"SO-101 recordings not found at {data / 'so101' / 'recordings'}")
    from frictionsim.robot_files import get_robot

    robot = get_robot("so101")
    return robot, robot.mjcf_path(data)


@pytest.fixture
def mlp_interrupted_at(monkeypatch):
    """``mlp_interrupted_at(k)``: scikit-learn's MLP gets a KeyboardInterrupt in its k-th
    epoch, which it swallows itself (a Ctrl-C landing there); returns the list of epochs
    begun, one entry each."""
    from sklearn.neural_network import MLPRegressor

    real = MLPRegressor._update_no_improvement_count

    def install(k: int) -> list:
        epochs = []

        def counted(self, *args, **kwargs):
            epochs.append(1)
            if len(epochs) == k:
                raise KeyboardInterrupt
            return real(self, *args, **kwargs)

        monkeypatch.setattr(MLPRegressor, "_update_no_improvement_count", counted)
        return epochs

    return install
