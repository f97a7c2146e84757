"""The local polish after CMA-ES (experiments.identification.polish): it minimises the mean of
the errors it is given, keeps the best candidate it evaluated, never returns a worse one,
steps around failed runs and hands back its best on Ctrl-C; in the robot fit its result is
exact, never worse than CMA's, and counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frictionsim.experiments.identification.polish import polish

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"

A = np.array([[1.0, 0.2], [0.3, -1.0], [0.5, 0.5], [-0.7, 0.4], [0.1, 0.9]])
B = np.array([0.3, -0.2, 0.6, 0.1, 0.5])


def absolute_errors(xs: np.ndarray) -> np.ndarray:
    """Errors whose mean is minimised at the L1 solution of A·x = B: |A·x − B| per row."""
    return np.abs(np.atleast_2d(xs) @ A.T - B)


def squared_errors(xs: np.ndarray) -> np.ndarray:
    return (np.atleast_2d(xs) @ A.T - B) ** 2


def test_the_polish_reaches_the_least_squares_solution():
    done = polish(np.array([2.0, -2.0]), squared_errors)
    exact = np.linalg.lstsq(A, B, rcond=None)[0]
    assert np.allclose(done.x, exact, atol=1e-4)
    assert done.loss == pytest.approx(squared_errors(exact).mean(), abs=1e-8)
    assert done.evaluations < 60
    assert not done.interrupted


def test_the_polish_lowers_a_mean_absolute_error_and_never_returns_a_worse_point():
    x0 = np.array([1.0, 1.0])
    done = polish(x0, absolute_errors)
    assert done.loss < absolute_errors(x0).mean()
    assert done.loss == pytest.approx(absolute_errors(done.x).mean())
    # from a point nothing beats, the point itself comes back
    best = polish(done.x, absolute_errors)
    assert best.loss <= done.loss


def test_no_point_is_run_twice_and_every_run_is_counted():
    seen = []

    def recorded(xs):
        seen.extend(map(tuple, np.atleast_2d(xs)))
        return squared_errors(xs)

    done = polish(np.array([2.0, -2.0]), recorded)
    # a Jacobian at the point trf just evaluated reuses its residuals
    assert len(seen) == len(set(seen)) == done.evaluations
    assert done.loss == pytest.approx(squared_errors(np.linalg.lstsq(A, B, rcond=None)[0])
                                      .mean(), abs=1e-8)


def test_a_failed_run_is_stepped_around():
    def failing(xs):
        errors = squared_errors(xs)
        errors[np.atleast_2d(xs)[:, 0] > 0.5] = np.inf  # runs beyond x0 = 0.5 diverge
        return errors

    done = polish(np.array([0.0, 0.0]), failing)
    assert np.isfinite(done.loss) and done.x[0] <= 0.5
    assert done.loss < squared_errors(np.zeros(2)).mean()


def test_a_start_whose_run_failed_comes_back_unpolished():
    done = polish(np.array([0.0, 0.0]), lambda xs: np.full((len(xs), 3), np.inf))
    assert np.array_equal(done.x, [0.0, 0.0]) and done.loss == np.inf and done.evaluations == 1


def test_ctrl_c_returns_the_best_so_far():
    calls = {"n": 0}

    def interrupted_after_three(xs):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return squared_errors(xs)

    x0 = np.array([2.0, -2.0])
    done = polish(x0, interrupted_after_three)
    assert done.interrupted
    assert done.loss <= squared_errors(x0).mean()
    assert done.loss == pytest.approx(squared_errors(done.x).mean())


def test_the_robot_fit_polishes_to_an_exact_loss_no_worse_than_cma(so101, tmp_path):
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.robot_params import load_robot_params
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    train = [read_recording(RECORDINGS / "friction_gravity", robot.bus_period)]
    runs = {}
    for polished in (False, True):
        settings = rid.RobotFitSettings(("m1",), FitSettings(40, 0), window=2.0, stride=20,
                                        progress=False, polish=polished)
        fits, interrupted, _ = rid.fit_robot(robot, mjcf, train, [], settings,
                                             tmp_path / str(polished))
        assert not interrupted
        runs[polished] = fits["m1"]
    cma, best = runs[False].result, runs[True].result
    assert best.loss <= cma.loss and best.evaluations > cma.evaluations
    # the loss reported is the exact fixed step's of the parameters written
    saved = load_robot_params(runs[True].path)
    windows = rid.training_windows(robot, train, 2.0, 20)
    evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 1)
    row = np.concatenate([saved.servos["sts3215_12v"].theta(), np.zeros(5)])
    assert evaluator.exact_errors(row[None])[0].mean() == pytest.approx(best.loss, rel=1e-12)


def test_cma_on_fewer_windows_polishes_and_reports_on_the_fits_own(so101, tmp_path,
                                                                    monkeypatch):
    """``search_stride``: CMA-ES evaluates one window in 40, the polish and the loss reported
    are on the one in 20 of the fit (the exact fixed step's loss of the file written)."""
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.robot_params import load_robot_params
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    train = [read_recording(RECORDINGS / "friction_gravity", robot.bus_period)]
    seen = []
    fit_model = rid._fit_model

    def counting(*args):
        seen.append(args[5].n_logs)  # the evaluator CMA-ES gets
        return fit_model(*args)

    monkeypatch.setattr(rid, "_fit_model", counting)
    settings = rid.RobotFitSettings(("m1",), FitSettings(30, 0), window=2.0, stride=20,
                                    progress=False, search_stride=40)
    fits, interrupted, cost = rid.fit_robot(robot, mjcf, train, [], settings, tmp_path)
    assert not interrupted
    windows = rid.training_windows(robot, train, 2.0, 20)
    assert seen == [cost["search_windows"]] == [len(rid.training_windows(robot, train, 2.0, 40))]
    assert cost["windows"] == len(windows) > cost["search_windows"]
    best = fits["m1"].result
    saved = load_robot_params(fits["m1"].path)
    evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 1)
    row = np.concatenate([saved.servos["sts3215_12v"].theta(), np.zeros(5)])
    assert evaluator.exact_errors(row[None])[0].mean() == pytest.approx(best.loss, rel=1e-12)


def test_joint_errors_average_to_the_windows_errors(so101):
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.params import ParameterSet
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    windows = rid.recording_windows(robot, rec, 2.0, 20)[:3]
    evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 2, reuse=True)
    params = ParameterSet.defaults("m6", "sts3215_12v").with_scheme("semi_implicit")
    heavier = params.with_values(armature=1.05 * params.values["armature"])
    rows = np.array([np.concatenate([p.theta(), np.zeros(5)]) for p in (params, heavier)])
    exact = evaluator.joint_errors(rows)  # no reference yet: exact
    assert exact.shape == (2, 3, 5)
    assert np.allclose(exact.mean(axis=2), evaluator.exact_errors(rows), rtol=1e-13, atol=0)
    evaluator.reference_at(rows[:1])
    assert evaluator.references == 1
    evaluator.reference_at(rows[:1])  # already the reference: no new run
    assert evaluator.references == 1
    reused = evaluator.joint_errors(rows)
    assert np.allclose(reused.mean(axis=2), evaluator.reused_errors(rows), rtol=1e-13, atol=0)
    assert np.array_equal(reused[0], exact[0])  # the reference's own run is exact


def test_the_reference_moves_to_a_polish_that_ended_far_from_it(so101, monkeypatch):
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.experiments.robots import reference_polish
    from frictionsim.experiments.robots.search_space import RobotSearchSpace
    from frictionsim.params import ParameterSet
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    windows = rid.recording_windows(robot, rec, 2.0, 20)[:3]
    settings = rid.RobotFitSettings(("m1",))
    space = RobotSearchSpace(rid.servo_space("m1", "sts3215_12v", settings),
                             tuple(j.name for j in robot.servo_joints))
    x0 = space.point(ParameterSet.defaults("m1", "sts3215_12v").values)

    def run(tolerance: float):
        monkeypatch.setattr(reference_polish, "REUSE_TOLERANCE", tolerance)
        evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 2, reuse=True)
        asked = []
        joint_errors = evaluator.joint_errors

        def recorded(rows, scales=None, exact=False):
            asked.append(exact)
            return joint_errors(rows, scales, exact)

        monkeypatch.setattr(evaluator, "joint_errors", recorded)
        done, exact, reuse_error = reference_polish.polish_on_reference(
            evaluator, x0, lambda xs: (space.thetas(xs), None), max_steps=4)
        assert done.loss == exact.mean() == evaluator.exact_errors(
            space.thetas(done.x[None]))[0].mean()
        return evaluator.references, reuse_error, asked

    references, reuse_error, asked = run(1.0)  # anything goes: one round, one reference
    assert references == 1 and reuse_error is not None and not any(asked)
    # nothing goes: every round moves the reference, then a last round runs on MuJoCo's terms
    references, reuse_error, asked = run(-1.0)
    assert references == reference_polish.ROUNDS and reuse_error == 0.0
    assert asked[-1] and not asked[0]
