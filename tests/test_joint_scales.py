"""Per-joint friction and armature scales of a robot fit: the friction budget scales exactly,
a parameter file carries them to every engine's servos, the window evaluator applies them as
the replay does, and the fit's scales never lose to the shared set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frictionsim import layout
from frictionsim.friction import friction_budget
from frictionsim.joint_scales import FRICTION_TERMS, scale_thetas, scaled_values
from frictionsim.params import ParameterFileError, ParameterSet
from frictionsim.robot_files import get_robot
from frictionsim.robot_params import load_robot_params, params_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"
M6 = {"friction_base": 0.02, "friction_stribeck": 0.01, "load_friction_motor": 0.05,
      "load_friction_external": 0.04, "load_friction_motor_quad": 0.3,
      "load_friction_external_quad": 0.2, "friction_viscous": 0.03, "armature": 0.01}


def test_the_friction_scale_scales_the_whole_budget():
    params = ParameterSet("m6", "sts3215_12v", M6)
    theta = params.theta()
    thetas = np.array([theta, theta])
    scale_thetas(thetas, np.array([[1.0, 1.0], [1.7, 0.4]]))
    np.testing.assert_array_equal(thetas[0], theta)
    for v, tm, te in ((0.0, 0.3, -0.5), (0.2, -0.4, 0.1), (-1.0, 0.5, 0.6)):
        a, b = friction_budget(v, tm, te, theta), friction_budget(v, tm, te, thetas[1])
        assert b[0] == pytest.approx(1.7 * a[0], rel=1e-12)
        assert b[1] == pytest.approx(1.7 * a[1], rel=1e-12)
    assert thetas[1, layout.ARMATURE] == pytest.approx(0.4 * theta[layout.ARMATURE])
    others = [i for i in range(theta.size) if i not in FRICTION_TERMS and i != layout.ARMATURE]
    np.testing.assert_array_equal(thetas[1, others], theta[others])
    # the parameter set's named values and the kernel vector agree
    named = ParameterSet("m6", "sts3215_12v", scaled_values(params.values, 1.7, 0.4))
    np.testing.assert_allclose(named.theta(), thetas[1], rtol=1e-15)


def _fit_file(tmp_path, scales) -> Path:
    data = {"robot": "so101",
            "servos": {"sts3215_12v": ParameterSet("m6", "sts3215_12v", M6).to_dict()},
            "joint_offsets": {}, "fit": {}, "joint_scales": scales}
    path = tmp_path / "m6.json"
    path.write_text(json.dumps(data))
    return path


def test_a_parameter_file_gives_a_scaled_joint_its_own_set(tmp_path):
    path = _fit_file(tmp_path, {"Elbow": {"friction": 1.5, "armature": 0.5}})
    fit = load_robot_params(path)
    assert fit.to_dict()["joint_scales"] == {"Elbow": {"friction": 1.5, "armature": 0.5}}
    robot, sets = fit.for_robot(get_robot("so101"))
    elbow, pan = robot.joint("Elbow"), robot.joint("Rotation")
    assert params_of(sets, pan) is sets["sts3215_12v"]
    assert params_of(sets, elbow).values["friction_base"] == pytest.approx(0.03)
    assert params_of(sets, elbow).values["armature"] == pytest.approx(0.005)
    from frictionsim.solvers.robot_servos import joint_servos

    servos = {s.joint: s for s in joint_servos(robot, sets)}
    assert servos["elbow_flex"].params.values["friction_viscous"] == pytest.approx(0.045)
    assert servos["shoulder_pan"].params.values["friction_viscous"] == pytest.approx(0.03)


def test_a_scaled_joint_draws_its_variants_about_its_own_set(tmp_path, recwarn):
    # robot identify --uncertainty over a fit with joint scales: the ranges bootstrapped for
    # the shared set are scaled as its values, so they hold the joint's own set (no warning)
    # and its variants spread about it
    ranges = {"friction_base": [0.018, 0.024], "armature": [0.008, 0.013],
              "kt": [0.9, 1.1]}
    path = _fit_file(tmp_path, {"Elbow": {"friction": 1.5, "armature": 0.5}})
    data = json.loads(path.read_text())
    kt = ParameterSet("m6", "sts3215_12v", M6).values["kt"]
    ranges["kt"] = [0.9 * kt, 1.1 * kt]
    data["servos"]["sts3215_12v"]["ranges"] = ranges
    path.write_text(json.dumps(data))
    robot, sets = load_robot_params(path).for_robot(get_robot("so101"))
    elbow = params_of(sets, robot.joint("Elbow"))
    assert elbow.ranges["friction_base"] == pytest.approx((0.027, 0.036))
    assert elbow.ranges["armature"] == pytest.approx((0.004, 0.0065))
    assert elbow.ranges["kt"] == pytest.approx(tuple(ranges["kt"]))
    assert params_of(sets, robot.joint("Rotation")).ranges["armature"] == (0.008, 0.013)
    assert not [w for w in recwarn if "does not contain" in str(w.message)]
    drawn = elbow.variants(50, seed=1)
    assert all(0.027 <= d.values["friction_base"] <= 0.036 for d in drawn)
    assert all(0.004 <= d.values["armature"] <= 0.0065 for d in drawn)


def test_a_bench_set_put_on_the_robot_keeps_its_ranges(tmp_path):
    # a bench fit with --uncertainty (another actuator) put on the SO-101's servos: its
    # ranges come along, so robot simulate --variants can draw within them
    from frictionsim.params import save_params

    bench = ParameterSet("m1", "xl330", {"friction_base": 0.05},
                         ranges={"friction_base": (0.04, 0.06)})
    save_params(tmp_path / "bench.json", bench)
    with pytest.warns(UserWarning, match="put on the so101's 'sts3215_12v' servos"):
        _, sets = load_robot_params(tmp_path / "bench.json").for_robot(get_robot("so101"))
    assert sets["sts3215_12v"].ranges == {"friction_base": (0.04, 0.06)}


@pytest.mark.parametrize("scales, message", [
    ({"Elbow": {"friction": 0.0, "armature": 1.0}}, "joint_scales.Elbow.friction = 0.0"),
    ({"Elbow": {"friction": 1.0}}, "must give exactly friction, armature"),
    ({"Jaw": {"friction": 1.0, "armature": 1.0}}, "joint_scales names 'Jaw'"),
])
def test_bad_joint_scales_are_refused(tmp_path, scales, message):
    path = _fit_file(tmp_path, scales)
    with pytest.raises(ParameterFileError, match=message):
        load_robot_params(path).for_robot(get_robot("so101"))


def test_the_evaluator_scales_as_the_replay_does(so101, tmp_path):
    """A window covering a recording's start, scored by the evaluator with scales, equals the
    fixed-step replay of the same stretch with a parameter file carrying them."""
    import dataclasses

    from frictionsim.experiments.robots import identify as rid
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.robot_recordings import read_recording
    from frictionsim.solvers.robot_servos import robot_spec

    robot, mjcf = so101
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    cut = dataclasses.replace(rec, t=rec.t[:150], goal=rec.goal[:150],
                              position=rec.position[:150], velocity=rec.velocity[:150],
                              torque=rec.torque[:150])
    window = rid.recording_windows(robot, cut, len(cut.t) * robot.bus_period, 1)[0]
    evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", [window], 1)
    params = ParameterSet("m6", "sts3215_12v", M6, scheme="semi_implicit")
    row = np.concatenate([params.theta(), np.zeros(5)])[None, :]
    scales = np.array([[1.0, 1.0], [2.0, 1.5], [0.5, 0.7], [1.0, 1.0], [3.0, 1.0]])
    named = {j.name: {"friction": s[0], "armature": s[1]}
             for j, s in zip(robot.servo_joints, scales)}
    path = _fit_file(tmp_path, named)
    data = json.loads(path.read_text())
    data["servos"]["sts3215_12v"]["scheme"] = "semi_implicit"
    path.write_text(json.dumps(data))
    applied, sets = load_robot_params(path).for_robot(robot)
    replayed = Replay(applied, robot_spec(applied, mjcf), sets).run(cut)
    # identify's held-out replay takes the parameter file: the same servos
    from frictionsim.experiments.robots.recorded import replay

    by_file = replay(robot, mjcf, load_robot_params(path), [cut])[cut.name]
    assert by_file == pytest.approx(replayed.joint_mae, rel=1e-12)
    scaled = evaluator.errors(row, scales=scales[None])[0, 0]
    shared = evaluator.errors(row)[0, 0]
    # the window's error excludes its first row (always 0); the replay's mean includes it
    n = len(cut.t)
    assert scaled == pytest.approx(replayed.mean_mae * n / (n - 1), rel=1e-9)
    assert abs(scaled - shared) > 1e-5  # the scales change the motion


def test_the_scales_never_lose_to_the_shared_set_and_their_loss_is_exact(so101):
    """The scales' search reuses the dynamics along a reference; what it returns is exact."""
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.experiments.robots.joint_scale_fit import fit_joint_scales
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    windows = rid.recording_windows(robot, rec, 2.0, 20)[:3]
    evaluator = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 2, reuse=True)
    params = ParameterSet("m6", "sts3215_12v", M6, scheme="semi_implicit")
    row = np.concatenate([params.theta(), np.zeros(5)])
    scales, loss, shared, reuse_error, evaluations = fit_joint_scales(evaluator, row,
                                                                      max_steps=8)
    assert 1 < evaluations <= 8 * (1 + 11)  # the steps and their Jacobians (10 scales)
    assert loss <= shared and scales.shape == (5, 2)
    assert shared == evaluator.exact_errors(row[None])[0].mean()
    exact = evaluator.exact_errors(row[None], scales=scales[None])[0]
    assert loss == exact.mean()  # the loss reported is the exact fixed step's
    assert evaluator.references >= 1 and reuse_error is not None
    reused = evaluator.reused_errors(row[None], scales[None])[0]
    assert reuse_error == pytest.approx(np.abs(reused - exact).max())
    assert reuse_error < 0.05e-3  # the scales stay near the reference's run
    assert np.all((scales >= np.exp(-1.5) - 1e-12) & (scales <= np.exp(1.5) + 1e-12))


def test_the_export_carries_a_joint_own_set(so101, tmp_path):
    from frictionsim.solvers.robot_export import export_robot

    robot, mjcf = so101
    fit = load_robot_params(_fit_file(tmp_path, {"Elbow": {"friction": 1.5, "armature": 0.5}}))
    attrs = {a.joint: a for a in export_robot(robot, mjcf, fit).joints}
    elbow, pan = attrs["elbow_flex"], attrs["shoulder_pan"]
    assert elbow.frictionloss == pytest.approx(1.5 * pan.frictionloss, rel=1e-9)
    assert elbow.armature == pytest.approx(0.5 * pan.armature, rel=1e-9)


def test_robot_identify_fits_and_saves_joint_scales_by_default(so101, tmp_path, monkeypatch, capsys):
    from frictionsim.experiments.robots import joint_scale_fit
    from frictionsim.experiments.runner.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(joint_scale_fit, "STEPS", 3)  # the command's path, not its optimum
    out = tmp_path / "fit"
    assert main(["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
                 str(RECORDINGS / "friction_gravity"), "--model", "m1", "--budget", "12",
                 "--window", "3", "--stride", "10", "--validation",
                 str(RECORDINGS / "slow_precision"), "--out", str(out), "--no-progress"]) == 0
    saved = load_robot_params(out / "m1.json")
    assert set(saved.joint_scales) == {j.name for j in get_robot("so101").servo_joints}
    report = json.loads((out / "report.json").read_text())["models"]["m1"]
    assert report["window_loss_rad"] <= report["shared_window_loss_rad"]
    assert "m1: joint scales, friction / armature:" in (out / "report.md").read_text()
    # the held-out figure is the scaled servos' (robot simulate replays the same file)
    assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                 str(out / "m1.json"), str(RECORDINGS / "slow_precision"), "--json",
                 str(tmp_path / "s.json"), "--no-progress"]) == 0
    simulated = json.loads((tmp_path / "s.json").read_text())["mean_mae_rad"]
    assert simulated == pytest.approx(report["validation_mae_rad"], rel=1e-9)


def test_ctrl_c_in_the_scales_keeps_the_shared_fit(so101, tmp_path, monkeypatch, capsys):
    from frictionsim.experiments.robots import joint_scale_fit
    from frictionsim.experiments.runner.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(joint_scale_fit, "fit_joint_scales", interrupted)
    out = tmp_path / "fit"
    assert main(["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
                 str(RECORDINGS / "friction_gravity"), "--model", "m1", "--budget", "12",
                 "--window", "3", "--stride", "10", "--joint-scales", "--out", str(out),
                 "--no-progress"]) == 130
    saved = load_robot_params(out / "m1.json")
    assert saved.joint_scales == {} and saved.servos["sts3215_12v"].model == "m1"
    assert json.loads((out / "report.json").read_text())["interrupted"] is True
