"""MuJoCo's own identification of a robot (the peer of ``run vs-mujoco --robot``): the delay of
the goals, the rollout against the mjcf engine's replay, a ground truth recovered by
``mujoco.sysid``, and the command line's refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("mujoco.sysid")

from frictionsim.experiments.robots import native_sysid as ns  # noqa: E402
from frictionsim.robot_files import get_robot  # noqa: E402
from frictionsim.solvers.robot_windows import RecordedWindow  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"


def test_the_delay_shifts_the_held_goals_and_interpolates_between_steps():
    goals = np.arange(10.0)[:, None] * np.array([[1.0, -2.0]])
    np.testing.assert_array_equal(ns.delayed(goals, 0.0, 0.002), goals)
    two = ns.delayed(goals, 0.004, 0.002)
    np.testing.assert_allclose(two[2:], goals[:-2])
    np.testing.assert_allclose(two[:2], goals[[0, 0]])  # before the first goal: the first
    half = ns.delayed(goals, 0.003, 0.002)  # 1.5 steps: halfway between the goals 1 and 2 back
    np.testing.assert_allclose(half[5], 0.5 * (goals[4] + goals[3]))


@pytest.fixture(scope="module")
def so101():
    mjcf = DATA / "so101" / "mjcf" / "so101_new_calib.xml"
    if not mjcf.is_file():
        pytest.skip(f"SO-101 MJCF not found at {mjcf}")
    robot = get_robot("so101")
    return robot, mjcf


def test_the_shipped_values_replay_as_the_mjcf_engine_does(so101):
    """The native rollout, at the MJCF's own values and no delay, is the mjcf engine's replay."""
    import dataclasses

    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.robot_recordings import read_recording
    from frictionsim.solvers.robot_servos import robot_spec

    robot, mjcf = so101
    if not RECORDINGS.is_dir():
        pytest.skip("SO-101 recordings not found")
    rec = read_recording(RECORDINGS / "triangle_wave", robot.bus_period)
    cut = dataclasses.replace(rec, t=rec.t[:400], goal=rec.goal[:400],
                              position=rec.position[:400], velocity=rec.velocity[:400],
                              torque=rec.torque[:400])
    native = ns.native_model(robot, mjcf)
    shipped = {n: start for n, start, *_ in native.space()}
    shipped[ns.DELAY] = 0.0
    ours = ns.native_mae(native, shipped, robot, [cut])[cut.name]
    theirs = Replay(robot, robot_spec(robot, mjcf, plain=True), {}, "mjcf").run(cut).mean_mae
    assert ours == pytest.approx(theirs, rel=1e-9) and ours > 1e-3


def _synthetic_windows(native, truth: np.ndarray, goals_of, q0s) -> list[RecordedWindow]:
    """Windows whose measured rows are the native model's own rollout with ``truth``."""
    rows = np.arange(0, 400, 10)
    made = []
    for k, (goals, q0) in enumerate(zip(goals_of, q0s)):
        w = RecordedWindow(f"w{k}", goals, q0, np.zeros_like(q0), rows,
                           np.zeros((len(rows), goals.shape[1])))
        made.append(w)
    errors = ns.NativeRollouts(native, made, threads=2).errors(truth)
    return [RecordedWindow(w.name, w.goals, w.q0, w.v0, w.rows, e) for w, e in zip(made, errors)]


def test_sysid_recovers_a_ground_truth(so101):
    """Measured rows simulated with known damping, frictionloss and delay; the fit from the
    shipped values reaches them (the windows' error falls to a hundredth of a milliradian)."""
    robot, mjcf = so101
    native = ns.native_model(robot, mjcf)
    space = native.space()
    start = np.array([s for _, s, *_ in space])
    truth = start.copy()
    n = len(native.dofs)
    truth[n:2 * n] = 0.1                # frictionloss (N·m; shipped 0.052)
    truth[2 * n:3 * n] = 1.5            # damping (N·m·s/rad; shipped 0.6)
    truth[-1] = 0.024                   # delay (s; the start 0.01)
    t = np.arange(400) * robot.control_period
    goals_of = [np.column_stack([0.3 * np.sin(2 * np.pi * (0.5 + 0.2 * j) * t + k)
                                 for j in range(n)]) for k in range(2)]
    q0s = [g[0].copy() for g in goals_of]
    windows = _synthetic_windows(native, truth, goals_of, q0s)
    before = np.mean([np.abs(e).mean() for e in ns.NativeRollouts(native, windows).errors(start)])
    fit = ns.fit_native(ns.native_model(robot, mjcf), windows, threads=2, max_iters=25)
    assert before > 0.01  # the shipped values are far from the truth
    assert fit.window_mae < 1e-5
    assert fit.values["delay"] == pytest.approx(0.024, abs=1e-3)
    assert fit.values["damping[1]"] == pytest.approx(1.5, rel=0.05)


def test_the_robot_comparison_refuses_bench_options(tmp_path, capsys):
    from frictionsim.experiments.runner.cli import main

    for extra, message in ((["--logs", str(tmp_path)], "--logs applies to the bench"),
                           (["--recordings", str(tmp_path)], "--recordings needs --validation"),
                           (["--cross-validate", "kp"], "--cross-validate applies to the bench")):
        assert main(["run", "vs-mujoco", "--robot", "so101", "--out", str(tmp_path / "o"),
                     *extra, "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert main(["run", "vs-mujoco", "--recordings", str(tmp_path), "--logs", str(tmp_path),
                 "--validation", str(tmp_path), "--actuator", "xl330"]) == 1
    assert "--recordings applies with --robot" in capsys.readouterr().err
