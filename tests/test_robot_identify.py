"""Identifying the SO-101's servos from its own recordings: the window evaluator against the
plain simulator, its offsets against the robot parameter file's, threads, the search space,
and ``robot identify`` end to end (files, report, resume, refusals, Ctrl-C)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim import layout  # noqa: E402
from frictionsim.experiments.robots import identify as robot_pipeline  # noqa: E402
from frictionsim.experiments.robots.search_space import (  # noqa: E402
    MAX_JOINT_OFFSET,
    RobotSearchSpace,
)
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.robot_files import get_robot  # noqa: E402
from frictionsim.robot_params import RobotParameters, load_robot_params  # noqa: E402
from frictionsim.robot_recordings import read_recording  # noqa: E402
from frictionsim.solvers.robot_windows import RobotWindows  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"


@pytest.fixture(scope="module")
def recording(so101):
    return read_recording(RECORDINGS / "friction_gravity")


def params(**values) -> ParameterSet:
    return ParameterSet("m1", "sts3215_12v", values).with_scheme("semi_implicit")


def candidate(p: ParameterSet, offsets=(0.0,) * 5) -> np.ndarray:
    return np.concatenate([p.theta(), offsets])[None, :]


def test_a_window_is_the_plain_simulator_restarted_from_the_recorded_state(so101, recording):

    robot, mjcf = so101
    windows = robot_pipeline.recording_windows(robot, recording, 4.0, 10, 3)
    assert len(windows) == 3 and windows[0].name == "friction_gravity@28s"
    w = windows[0]
    assert w.rows[0] == 0 and len(w.rows) == 200 and len(w.goals) == w.rows[-1] + 1
    evaluator = robot_pipeline._evaluator(robot, mjcf, "sts3215_12v", windows, threads=1)
    p = params(friction_base=0.2)
    got = evaluator.errors(candidate(p))[0]
    sim = evaluator.robot
    sim.thetas = np.array([p.theta()] * 5)
    for k, win in enumerate(windows):
        q0 = sim.model.qpos0.copy()
        q0[sim.qadr] = win.q0
        v0 = np.zeros(sim.nv)
        v0[sim.dofs] = win.v0
        run = sim.fixed_step(win.goals, q0=q0, v0=v0)
        mae = np.abs(run.q[win.rows[1:]][:, sim.qadr] - win.measured[1:]).mean()
        assert got[k] == pytest.approx(mae, rel=1e-12)


def test_a_window_may_start_from_the_positions_central_difference(so101, recording):
    """``difference``: every window's starting velocity is numpy's gradient of the recorded
    positions (the MJCF's convention) over the timestamps at its first row, what a LeRobot
    dataset's reader gives as the velocity; ``recorded``: the velocity read."""
    from frictionsim.experiments.robots.recorded import recorded_arrays

    robot, _ = so101
    _, q, v = recorded_arrays(robot, recording)
    slope = np.gradient(q, recording.t, axis=0)
    read = robot_pipeline.recording_windows(robot, recording, 4.0, 10, 3)
    differenced = robot_pipeline.recording_windows(robot, recording, 4.0, 10, 3, "difference")
    rows = robot_pipeline.window_rows(robot, 4.0)
    firsts = [w * rows for w in range(robot_pipeline.window_count(robot, recording, 4.0))
              if (w + 3) % 10 == 0]
    assert len(firsts) == len(read) == len(differenced) == 3
    for first, w, d in zip(firsts, read, differenced):
        np.testing.assert_array_equal(d.q0, w.q0)
        np.testing.assert_array_equal(w.q0, q[first])
        np.testing.assert_array_equal(d.goals, w.goals)
        np.testing.assert_array_equal(w.v0, v[first])
        np.testing.assert_array_equal(d.v0, slope[first])
    assert any(np.any(w.v0 != d.v0) for w, d in zip(read, differenced))
    with pytest.raises(ValueError, match="start velocity 'guessed': one of recorded, difference"):
        robot_pipeline.recording_windows(robot, recording, 4.0, 10, 3, "guessed")


def test_a_candidates_offsets_are_the_robot_files_calibration(so101, recording):
    robot, mjcf = so101
    offsets = (0.03, -0.02, 0.01, 0.0, -0.04)
    joints = [j.name for j in robot.servo_joints]
    shifted = RobotParameters("so101", {"sts3215_12v": params()},
                              dict(zip(joints, offsets))).apply(robot)
    p = params()
    plain = robot_pipeline._evaluator(
        robot, mjcf, "sts3215_12v", robot_pipeline.recording_windows(robot, recording, 4, 10),
        threads=1)
    moved = robot_pipeline._evaluator(
        shifted, mjcf, "sts3215_12v", robot_pipeline.recording_windows(shifted, recording, 4, 10),
        threads=1)
    np.testing.assert_allclose(plain.errors(candidate(p, offsets)), moved.errors(candidate(p)),
                               rtol=1e-9)
    assert not np.allclose(plain.errors(candidate(p, offsets)), plain.errors(candidate(p)))


def test_threads_change_nothing_and_a_diverging_candidate_costs_infinity(so101, recording):
    robot, mjcf = so101
    windows = robot_pipeline.recording_windows(robot, recording, 3.0, 8)
    one = robot_pipeline._evaluator(robot, mjcf, "sts3215_12v", windows, threads=1)
    two = RobotWindows(one.robot, windows, threads=2)
    rows = np.vstack([candidate(params(friction_base=f)) for f in (0.05, 0.3, 0.6)])
    assert np.array_equal(one.errors(rows), two.errors(rows))
    bad = candidate(params())
    bad[0, layout.ARMATURE] = np.nan
    assert np.all(np.isinf(two.errors(bad)))
    with pytest.raises(ValueError, match="columns"):
        two.errors(params().theta()[None, :])


def test_the_search_space_folds_offsets_into_their_bounds_and_round_trips(so101):
    robot, _ = so101
    joints = tuple(j.name for j in robot.servo_joints)
    settings = robot_pipeline.RobotFitSettings(("m1",))
    space = RobotSearchSpace(robot_pipeline.servo_space("m1", "sts3215_12v", settings), joints,
                             joints[1:3])
    assert "q_offset" not in space.free and space.free[-2:] == ["offset:Pitch", "offset:Elbow"]
    values = {**space.defaults(), "friction_base": 0.3, "offset:Pitch": 0.04,
              "offset:Elbow": -0.07}
    x = space.point(values)
    point = space.parameter_set(x)
    assert point.params.values["friction_base"] == pytest.approx(0.3)
    assert point.offsets == pytest.approx({"Pitch": 0.04, "Elbow": -0.07})
    rows = space.thetas(np.vstack([x, x + 7.3]))
    assert rows.shape == (2, layout.THETA_SIZE + 5)
    assert np.all(np.abs(rows[:, layout.THETA_SIZE:]) <= MAX_JOINT_OFFSET)
    assert rows[0, layout.THETA_SIZE] == 0.0 and rows[0, layout.THETA_SIZE + 1] == pytest.approx(0.04)
    np.testing.assert_allclose(space.exact(values).theta(), rows[0], rtol=1e-12)
    with pytest.raises(ValueError, match="not a servo joint"):
        RobotSearchSpace(space.servo, joints, ("Jaw",))


def _identify(out: Path, *extra: str) -> list[str]:
    """A short robot identify of the shared set alone (the joint scales have their own
    tests, test_joint_scales.py)."""
    return ["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
            str(RECORDINGS / "friction_gravity"), str(RECORDINGS / "multisine"),
            "--model", "m1", "--budget", "12", "--window", "3", "--stride", "10",
            "--out", str(out), "--no-progress", "--no-joint-scales", *extra]


def test_robot_identify_writes_files_robot_simulate_reads(so101, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning log stays out of the checkout
    out = tmp_path / "fit"
    assert main(_identify(out, "--validation", str(RECORDINGS / "slow_precision"), "--json",
                          str(tmp_path / "s.json"), "--per-joint", "offsets",
                          "--start-velocity", "difference")) == 0
    fitted = load_robot_params(out / "m1.json")
    assert fitted.robot == "so101" and set(fitted.joint_offsets) == {
        j.name for j in so101[0].servo_joints}
    assert fitted.fit["evaluations"] >= 12 and fitted.fit["per_joint"] == "offsets"
    assert fitted.fit["start_velocity"] == "difference"
    assert "the positions' central difference" in (out / "report.md").read_text()
    summary = json.loads((tmp_path / "s.json").read_text())
    model = summary["models"]["m1"]
    assert summary["validation_recordings"] == ["slow_precision"]
    assert set(model["validation_joint_mae_rad"]) == set(fitted.joint_offsets)
    assert (out / "report.md").read_text().count("goal as prediction") == 1
    assert (out / "validation_per_joint.png").stat().st_size > 0
    # robot simulate replays the held-out motion with the file: the same figure as the report
    assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                 str(out / "m1.json"), str(RECORDINGS / "slow_precision"), "--json",
                 str(tmp_path / "r.json"), "--no-progress"]) == 0
    replay = json.loads((tmp_path / "r.json").read_text())
    assert replay["mean_mae_rad"] == pytest.approx(model["validation_mae_rad"], rel=1e-9)
    # a second run does not replace the first unasked; --resume starts from it
    capsys.readouterr()
    assert main(_identify(out)) == 1
    assert "not empty" in capsys.readouterr().err
    assert main(_identify(out, "--resume", "--budget", "1")) == 0
    again = load_robot_params(out / "m1.json")
    assert again.fit["window_loss_rad"] <= fitted.fit["window_loss_rad"]


def test_robot_identify_keeps_the_lowest_of_its_fits(so101, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fit"
    assert main(_identify(out, "--fits", "2", "--exact-dynamics", "--no-polish")) == 0
    fitted = load_robot_params(out / "m1.json")
    losses = fitted.fit["fit_losses_rad"]
    assert fitted.fit["fits"] == 2 and len(losses) == 2
    assert fitted.fit["window_loss_rad"] == pytest.approx(min(losses), rel=1e-12)
    assert fitted.fit["evaluations"] >= 2 * 12


@pytest.mark.parametrize("argv, culprit", [
    (["--validation", str(RECORDINGS / "multisine")], "is the training recording"),
    (["--window", "0"], "--window"),
    (["--stride", "0"], "--stride"),
    (["--search-stride", "0"], "--search-stride"),
    (["--budget", "0"], "--budget"),
    (["--folds", "3"], "--cross-validate motion only"),
    (["--cross-validate", "motion", "--folds", "9"], "--folds 9"),
    (["--fix", "q_offset=0"], "q_offset"),
    (["--fix", "friction_base=9"], "outside its bounds"),
])
def test_robot_identify_refuses_what_would_mislead(so101, argv, culprit, tmp_path, capsys):
    assert main(_identify(tmp_path / "fit", *argv)) == 1
    assert culprit in capsys.readouterr().err


def test_an_interrupted_robot_fit_keeps_its_best_so_far(so101, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    calls = {"n": 0}
    original = RobotWindows.errors

    def interrupted(self, rows):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, rows)

    monkeypatch.setattr(RobotWindows, "errors", interrupted)
    out = tmp_path / "fit"
    assert main(_identify(out, "--budget", "500")) == 130
    saved = load_robot_params(out / "m1.json")
    assert saved.fit["interrupted"] is True and saved.fit["evaluations"] < 500
    assert saved.joint_offsets == {} and saved.fit["per_joint"] == "none"  # the default
    assert "interrupted" in capsys.readouterr().err


def test_an_interrupt_between_the_search_and_the_polish_still_writes_the_report(
        so101, tmp_path, monkeypatch, capsys):
    """Ctrl-C in the exact replay of the search's best (no stage of its own catches it
    there): the best so far kept, the report written, its loss said to be the reused one."""
    monkeypatch.chdir(tmp_path)

    def interrupted(evaluator, result):
        raise KeyboardInterrupt

    monkeypatch.setattr(robot_pipeline, "exact_result", interrupted)
    out = tmp_path / "fit"
    assert main(_identify(out, "--budget", "20", "--validation",
                          str(RECORDINGS / "ramp_motion"))) == 130
    saved = load_robot_params(out / "m1.json")
    assert saved.fit["interrupted"] is True
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"] is True and "m1" in report["models"]
    markdown = (out / "report.md").read_text()
    assert "except m1's (interrupted before its exact replay" in markdown
    # the held-out table is written, its figure is not (it would hold the exit back)
    assert "The figure is not drawn: the run was interrupted" in markdown
    assert not list(out.glob("*.png"))
    said = capsys.readouterr()
    # one line says the interrupt and what was kept, none of the command's own beside it
    assert [line for line in said.err.splitlines() if "interrupted" in line] == [
        f"frictionsim robot identify: interrupted; the best parameters so far are saved in {out}"]


def test_motion_folds_cover_every_recording_once():
    from frictionsim.experiments.robots.cross_validation import motion_folds

    recs = [dataclasses.make_dataclass("R", ["name"])(f"m{i}") for i in range(11)]
    folds = motion_folds(recs, 3, seed=0)
    assert sorted(i for f in folds for i in f) == list(range(11))
    assert sorted(len(f) for f in folds) == [3, 4, 4]
    with pytest.raises(ValueError, match="--folds"):
        motion_folds(recs, 1, seed=0)


def test_a_bench_parameter_file_of_another_supply_goes_on_the_arm_with_a_warning(
        so101, tmp_path, monkeypatch, capsys):
    from frictionsim.params import save_params

    monkeypatch.chdir(tmp_path)
    # the sts3215's default rotor inertia (1e-4 kg·m²) on the wrist roll (4e-5 kg·m² of its
    # own): kt²/R = 0.72 N·m·s/rad would make the 2 ms step unstable; the replay shortens it
    bench = ParameterSet("m1", "sts3215", {"friction_base": 0.1, "kt": 1.2}, scheme="reference")
    save_params(tmp_path / "bench.json", bench)
    assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                 str(tmp_path / "bench.json"), str(RECORDINGS / "slow_precision"),
                 "--json", str(tmp_path / "b.json"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "put on the so101's 'sts3215_12v' servos" in err
    assert "physics step 0.166667 ms" in out  # 12 steps per control period
    assert 1e-3 < json.loads((tmp_path / "b.json").read_text())["mean_mae_rad"] < 0.1


def test_the_shipped_mjcf_is_the_baseline_engine(so101, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rec = str(RECORDINGS / "slow_precision")
    base = ["robot", "simulate", "--robot", "so101", "--data", str(DATA), rec, "--no-progress"]
    assert main([*base, "--engine", "mjcf", "--json", str(tmp_path / "m.json")]) == 0
    shipped = json.loads((tmp_path / "m.json").read_text())
    assert shipped["engine"] == "mjcf" and shipped["params"] is None
    # the shipped position actuators follow the goal: closer than 0.1 rad, not on it
    assert 1e-3 < shipped["mean_mae_rad"] < 0.1
    assert main([*base, "--engine", "mjcf", "--params", str(tmp_path / "m.json")]) == 1
    assert "takes no --params" in capsys.readouterr().err
    assert main([*base, "--engine", "mujoco"]) == 1
    assert "needs --params" in capsys.readouterr().err


def test_overwrite_replaces_only_what_a_robot_identification_writes(tmp_path):
    from frictionsim.atomic import write_json
    from frictionsim.experiments.robots.report import not_ours, prepare_robot_out

    out = tmp_path / "fit"
    (out / "cross_validation" / "none").mkdir(parents=True)
    write_json(out / "m1.json", RobotParameters("so101", {"sts3215_12v": params()}).to_dict())
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        prepare_robot_out(out, "so101")
    with pytest.raises(ValueError, match="robot so101, not other"):
        prepare_robot_out(out, "other", resume=True)
    assert set(prepare_robot_out(out, "so101", resume=True)) == {"m1"}
    # nothing is removed before the run: it replaces the folder when done, keeping the files
    # that are not its own (tests/test_output_folders.py)
    assert prepare_robot_out(out, "so101", overwrite=True) == {}
    assert sorted(p.name for p in out.iterdir()) == ["cross_validation", "m1.json", "notes.txt"]
    assert [p.name for p in out.iterdir() if not_ours(p)] == ["notes.txt"]


def test_a_robot_fit_carries_its_uncertainty_to_every_randomisation(so101, tmp_path,
                                                                     monkeypatch, capsys):
    from frictionsim.experiments.runner.cli import main
    from frictionsim.solvers.robot import draw_servos
    from frictionsim.solvers.robot_servos import joint_servos

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fit"
    assert main(_identify(out, "--uncertainty", "2", "--budget", "40")) == 0
    said = capsys.readouterr().out
    assert said.count("m1: polished") <= 1  # the fit's own; the replicates' are not printed
    assert "m1: ranges of" in said
    fit = load_robot_params(out / "m1.json")
    params = fit.servos["sts3215_12v"]
    assert {"kt", "R", "friction_base"} <= set(params.ranges)
    for name, (low, high) in params.ranges.items():
        assert low <= params.values[name] <= high
    assert fit.fit["uncertainty"]["replicates"] == 2
    # the robot simulator's draws, the parameter set's own, and the command line's
    robot = get_robot("so101")
    wide = [k for k, (low, high) in params.ranges.items() if high > low]
    assert wide
    drawn = draw_servos(joint_servos(robot, fit.servos), 3, seed=1)
    assert len({s[0].params.values[wide[0]] for s in drawn}) == 3
    assert len(params.variants(2)) == 2
    capsys.readouterr()
    assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                 str(out / "m1.json"), "--variants", "2", str(RECORDINGS / "slow_precision"),
                 "--no-progress"]) == 0
    assert "2 servo sets drawn within the ranges" in capsys.readouterr().out


def test_the_default_stride_keeps_about_twelve_windows_of_small_data_and_the_stride_of_large(
        so101, recording):
    robot, _ = so101
    short = 4.0  # a recording of the SO-101 holds a dozen windows of 4 s
    held = robot_pipeline.window_count(robot, recording, short)
    assert held == len(robot_pipeline.recording_windows(robot, recording, short, 1))
    # one recording: one window in held // 12, so about twelve are kept
    stride = robot_pipeline.default_stride(robot, [recording], short)
    assert stride == max(1, held // robot_pipeline.MIN_WINDOWS) > 1
    decided = robot_pipeline.RobotFitSettings(("m1",), window=short).resolved(robot, [recording])
    assert decided.stride == stride
    kept = robot_pipeline.training_windows(robot, [recording], short, stride)
    assert robot_pipeline.MIN_WINDOWS <= len(kept) < 2 * robot_pipeline.MIN_WINDOWS
    # a window longer than half the recording: a single one, kept (one in 1)
    long = float(recording.t[-1] - recording.t[0]) * 0.6
    assert robot_pipeline.default_stride(robot, [recording], long) == 1
    assert len(robot_pipeline.training_windows(robot, [recording], long, 1)) == 1
    # many recordings: one in STRIDE at most
    assert robot_pipeline.default_stride(robot, [recording] * 40, robot_pipeline.WINDOW) \
        == robot_pipeline.STRIDE


def test_the_window_defaults_in_the_help_are_the_constants(capsys):
    with pytest.raises(SystemExit):
        main(["robot", "identify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default {robot_pipeline.WINDOW:g})" in text
    assert f"(default {robot_pipeline.STRIDE}," in text
    assert f"about {robot_pipeline.MIN_WINDOWS} windows" in text


def test_the_saved_loss_is_the_exact_fixed_steps_and_the_reuse_is_reported(so101, tmp_path,
                                                                           monkeypatch):
    """The fit reuses MuJoCo's terms along a reference, but writes the exact loss of its best
    and what the reuse moved; --exact-dynamics asks MuJoCo at every step."""
    from frictionsim.solvers import robot_windows

    robot, mjcf = so101
    monkeypatch.chdir(tmp_path)
    # the first candidate stays the reference: the best's reused loss is not its exact one
    monkeypatch.setattr(robot_windows, "REFRESH", 1.0)
    reports = {}
    for flag in ((), ("--exact-dynamics",)):
        out = tmp_path / f"fit{len(flag)}"
        assert main(_identify(out, "--json", str(out) + ".json", "--budget", "40", *flag)) == 0
        reports[flag] = json.loads(Path(str(out) + ".json").read_text())
        fitted = load_robot_params(out / "m1.json")
        recordings = [read_recording(RECORDINGS / n) for n in ("friction_gravity", "multisine")]
        windows = robot_pipeline.training_windows(robot, recordings, 3.0, 10)
        exact = robot_pipeline._evaluator(robot, mjcf, "sts3215_12v", windows, threads=1)
        row = candidate(fitted.servos["sts3215_12v"])
        assert fitted.fit["window_loss_rad"] == pytest.approx(exact.errors(row).mean(),
                                                              rel=1e-12)
        said = (out / "report.md").read_text()
        if flag:
            assert fitted.fit["reuse_error_rad"] is None
            assert "reused" not in said
        else:
            assert 0 < fitted.fit["reuse_error_rad"] < 1e-3
            # the report says it, beside the exact losses, flagged past the tolerance
            moved = reports[flag]["models"]["m1"]["reuse_error_rad"]
            assert moved == fitted.fit["reuse_error_rad"]
            assert f"of each model's best by at most m1 {1e3 * moved:.3f} mrad" in said
            assert ("**Above 0.05 mrad** for m1" in said) == (moved > 5e-5)
    assert reports[()]["cost"]["reused_dynamics"] is True
    assert reports[()]["cost"]["references"] >= 1
    assert reports[("--exact-dynamics",)]["cost"]["reused_dynamics"] is False
