"""MuJoCo's dynamics terms recorded along a reference run and reused by the robot fit's
candidates: the reference itself bit for bit, the derivatives against MuJoCo's own, a
nearby candidate within a small fraction of what separates it from the reference, the
refresh, and what is never reused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim import layout  # noqa: E402
from frictionsim.experiments.robots import identify as robot_pipeline  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.robot_files import get_robot  # noqa: E402
from frictionsim.robot_recordings import read_recording  # noqa: E402
from frictionsim.solvers import reused_dynamics  # noqa: E402
from frictionsim.solvers.robot_windows import REFRESH, RobotWindows  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"


@pytest.fixture(scope="module")
def windows():
    if not RECORDINGS.is_dir():
        pytest.skip(f"SO-101 recordings not found at {RECORDINGS}")
    robot = get_robot("so101")
    recording = read_recording(RECORDINGS / "friction_gravity")
    return robot, robot.mjcf_path(DATA), robot_pipeline.recording_windows(robot, recording, 3.0, 8)


def row(**values) -> np.ndarray:
    p = ParameterSet("m6", "sts3215_12v", values).with_scheme("semi_implicit")
    return np.concatenate([p.theta(), np.zeros(5)])[None, :]


def evaluators(windows, threads: int = 1) -> tuple[RobotWindows, RobotWindows]:
    robot, mjcf, cut = windows
    exact = robot_pipeline._evaluator(robot, mjcf, "sts3215_12v", cut, threads)
    return exact, RobotWindows(exact.robot, cut, threads, reuse=True)


def test_the_reference_reuses_its_own_terms_bit_for_bit(windows):
    """At the reference's own states every correction is 0: a step out of place (a row of
    another step) would move its errors."""
    exact, reuse = evaluators(windows)
    ref = row()
    first = reuse.errors(ref)
    assert np.array_equal(first, exact.errors(ref))
    assert np.array_equal(reuse.reused_errors(ref), first)
    assert np.array_equal(reuse.reference, ref[0]) and reuse.refresh_errors == []


def test_the_recorded_derivatives_are_mujocos(windows):
    """∂bias/∂q and ∂bias/∂v of a recorded row against MuJoCo's own finite-difference
    derivatives of the inverse dynamics (mjd_inverseFD, zero acceleration)."""
    exact, _ = evaluators(windows)
    model = exact.robot.dynamics
    data = mujoco.MjData(model)
    nv = model.nv
    rng = np.random.default_rng(2)
    q, v = rng.uniform(-1, 1, nv), rng.uniform(-3, 3, nv)
    mass, bias = np.empty((nv, nv)), np.empty(nv)
    reused_dynamics.dynamics_terms(model._address, data._address, data.qpos, data.qvel, q, v,
                                   mass, bias)
    path = np.empty(reused_dynamics.width(nv))
    reused_dynamics.record_row(model._address, data._address, data.qpos, data.qvel, q, v,
                               mass, bias, path)
    at = reused_dynamics.fields(nv)
    check = mujoco.MjData(model)
    check.qpos[:], check.qvel[:], check.qacc[:] = q, v, 0.0
    dfdq, dfdv = np.zeros((nv, nv)), np.zeros((nv, nv))
    mujoco.mjd_inverseFD(model, check, 1e-6, 1, dfdq, dfdv, None, None, None, None, None)
    # MuJoCo's are transposed (row j: the derivatives by q_j) and include the passive forces,
    # which the dynamics copy of the model has none of
    np.testing.assert_allclose(path[at[4]:at[5]].reshape(nv, nv), dfdq.T, rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(path[at[5]:].reshape(nv, nv), dfdv.T, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(path[at[2]:at[3]].reshape(nv, nv), mass)


def test_a_nearby_candidate_is_close_and_a_better_one_becomes_the_reference(windows):
    exact, reuse = evaluators(windows, threads=2)
    ref, near = row(), row(friction_base=0.055)
    reuse.errors(ref)
    moved = np.abs(exact.errors(near) - exact.errors(ref)).max()
    missed = np.abs(reuse.reused_errors(near) - exact.errors(near)).max()
    assert moved > 1e-4 and missed < 0.02 * moved
    # a candidate far better than the reference: run exactly, and the new reference
    rows = np.vstack([row(friction_base=0.15), row(load_friction_external=0.3, friction_base=0.02),
                      row(kt=3.0)])
    losses = exact.errors(rows).mean(axis=1)
    best = int(np.argmin(losses))
    assert losses[best] < (1 - REFRESH) * exact.errors(ref).mean()
    got = reuse.errors(rows)
    assert np.array_equal(got[best], exact.errors(rows[best:best + 1])[0])
    assert np.array_equal(reuse.reference, rows[best]) and len(reuse.refresh_errors) == 1
    assert len(reuse.refresh_errors) == 1 and 0 < reuse.refresh_errors[0] < 1e-3
    assert reuse.references == 2


def test_networks_and_gear_gaps_are_always_exact(windows):
    exact, reuse = evaluators(windows)
    gapped = row(friction_base=0.1)
    gapped[0, layout.BACKLASH] = 0.002
    assert np.array_equal(reuse.errors(gapped), exact.errors(gapped))
    assert reuse.reference is None
    with pytest.raises(ValueError, match="no reference"):
        reuse.reused_errors(row())


def test_a_reference_that_diverged_is_no_reference(windows):
    """A first candidate whose run diverges records no usable path: the windows it failed on
    are run with MuJoCo's terms until a reference holds there."""
    exact, reuse = evaluators(windows)
    bad = row()
    bad[0, layout.ARMATURE] = np.nan
    assert np.all(np.isinf(reuse.errors(bad)))
    good = row(friction_base=0.1)
    assert np.array_equal(reuse.reused_errors(good), exact.errors(good))


def test_a_reference_a_slow_search_leaves_behind_moves_all_the_same(windows, monkeypatch):
    from frictionsim.solvers import robot_windows

    monkeypatch.setattr(robot_windows, "REFRESH", 0.5)  # no candidate here gains 50 %
    monkeypatch.setattr(robot_windows, "REFRESH_EVERY", 4)
    exact, reuse = evaluators(windows)
    ref = row()
    reuse.errors(ref)
    batch = np.vstack([row(load_friction_external=0.2), row(friction_base=0.15)])
    reuse.errors(batch)  # three candidates since the reference: it stays
    assert np.array_equal(reuse.reference, ref[0])
    got = reuse.errors(batch)  # five: the better one, a few per cent ahead, takes over
    assert np.array_equal(reuse.reference, batch[0])
    assert np.array_equal(got[0], exact.errors(batch[:1])[0])
