"""The robots built in beside the SO-101: the Open Duck Mini v2 (14 STS3215 at 7.4 V, hung by
its trunk), the SO-100 (six STS3215 at 7.4 V) and the Koch v1.1 (XL430 and XL330). Each file
and its shipped MJCF are checked against their sources' promises, simulated in every engine
(the fixed step and MuJoCo's step to round-off, the event-driven reference within a mrad on
average, MJX in float64 and MuJoCo Warp in float32 to the one-world replay), and identified
by ``robot identify`` from recordings ``robot synthesize`` made with a known ground truth;
MuJoCo's soft friction and the MJCF as shipped run them too."""

from __future__ import annotations

import json
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.experiments.robots.recorded import Replay, replay_batched  # noqa: E402
from frictionsim.experiments.robots.synthetic_motions import synthetic_recordings  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.params import ParameterSet, load_published  # noqa: E402
from frictionsim.robot_files import (  # noqa: E402
    BUILTIN_DIR,
    RobotFileError,
    builtin_robots,
    get_robot,
    load_robot_file,
)
from frictionsim.robot_params import RobotParameters, load_robot_params  # noqa: E402
from frictionsim.robot_recordings import read_recording, write_recording  # noqa: E402
from frictionsim.solvers.robot_servos import robot_spec, servos_on_robot  # noqa: E402

SHIPPED = ("open_duck_mini_v2", "so100", "koch_v1_1")
#: Per robot, the ground truth its synthetic recordings are made with: actuator → M1 values.
TRUTH = {
    "open_duck_mini_v2": {"sts3215_7v4": dict(kt=1.0, R=2.9, armature=0.02, friction_base=0.08,
                                              friction_viscous=0.04)},
    "so100": {"sts3215_7v4": dict(kt=1.0, R=2.9, armature=0.02, friction_base=0.08,
                                  friction_viscous=0.04)},
    "koch_v1_1": {"xl430": dict(kt=1.2, R=8.0, armature=0.006, friction_base=0.05,
                                friction_viscous=0.02),
                  "xl330": dict(kt=0.4, R=4.0, armature=0.002, friction_base=0.012,
                                friction_viscous=0.004)},
}


def truth_of(name: str) -> dict[str, ParameterSet]:
    return {a: ParameterSet("m1", a, v).with_scheme("semi_implicit")
            for a, v in TRUTH[name].items()}


def m6_defaults(robot) -> dict[str, ParameterSet]:
    return {a: ParameterSet.defaults("m6", a).with_scheme("semi_implicit")
            for a in robot.actuators}


@pytest.fixture(scope="module", params=SHIPPED)
def shipped(request):
    robot = get_robot(request.param)
    return robot, robot_spec(robot, robot.mjcf_path(None))


@pytest.fixture(scope="module")
def motions(shipped):
    """Two seconds of a synthetic motion of each robot, with every actuator's default M6."""
    robot, spec = shipped
    params = m6_defaults(robot)
    return params, synthetic_recordings(robot, spec, params, 2, 2.0, seed=3)


def test_the_built_in_robots_and_their_sources():
    assert set(builtin_robots()) == {"so101", *SHIPPED}
    sources = (BUILTIN_DIR / "SOURCES.md").read_text()
    assert "Apache License" in (BUILTIN_DIR / "LICENSE-Apache-2.0").read_text()
    for name in SHIPPED:
        robot = get_robot(name)
        path = robot.mjcf_beside
        assert path is not None and path.parent.parent == BUILTIN_DIR
        header = path.read_text()[:1500]
        commit = re.search(r"\b[0-9a-f]{40}\b", header).group(0)
        assert commit in sources and path.name in sources and "Apache License 2.0" in header
        root = ET.parse(path).getroot()
        # the meshes are gone, the dynamics are not: every moving body states its inertia
        assert not list(root.iter("mesh")) and not any(g.get("mesh") for g in root.iter("geom"))
        moving = [b for b in root.iter("body") if b.find("joint") is not None]
        assert moving and all(b.find("inertial") is not None for b in moving), name


def test_the_files_say_what_their_robots_run():
    duck = get_robot("open_duck_mini_v2")
    assert len(duck.servo_joints) == 14 and duck.actuators == ("sts3215_7v4",)
    assert duck.base == "fixed" and duck.default_params == "sts3215_7v4_m1"
    assert {j.firmware.kp for j in duck.servo_joints} == {32.0}
    assert {j.firmware.kd for j in duck.servo_joints} == {0.0}
    assert [j.name for j in duck.joints if j.left_out] == ["left_antenna", "right_antenna"]
    so100 = get_robot("so100")
    assert so100.joint("Jaw").firmware.torque_limit == 0.5
    assert so100.joint("Rotation").firmware.kp == 16.0 and so100.default_params
    koch = get_robot("koch_v1_1")
    assert koch.actuators == ("xl430", "xl330") and not koch.default_params
    # a Dynamixel's gain defaults to its actuator's factory Position P Gain
    assert [j.firmware.kp for j in koch.servo_joints] == [800.0, 800.0, 400.0, 400.0, 400.0]


def test_a_fixed_base_removes_the_free_joint_and_its_keyframes(shipped):
    robot, spec = shipped
    model = spec.compile()
    assert mujoco.mjtJoint.mjJNT_FREE not in set(model.jnt_type)
    assert model.nkey == 0 or model.nq == len(robot.servo_joints)
    assert model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT


def test_the_fixed_step_is_mujocos_step_and_near_the_event_driven_reference(shipped, motions):
    robot, spec = shipped
    params, recordings = motions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_mujoco = Replay(robot, spec, params, "mujoco")
        for rec in recordings:  # made by the fixed step
            assert np.abs(on_mujoco.run(rec).predicted - rec.position).max() < 1e-9
        exact = Replay(robot, spec, params, "event_driven").run(recordings[0])
    # the fixed step's 2 ms against the exact stick-slip: 0.4-1.2 mrad on these set-point
    # motions with the default M6 (the SO-101 on the same kind of motion: 1.1)
    assert np.abs(exact.predicted - recordings[0].position).mean() < 2e-3


def test_mujocos_soft_friction_and_the_mjcf_as_shipped_run_it_too(shipped, motions):
    """The reference project's method (friction as MuJoCo's frictionloss rows) stays near the
    budget's exact friction (0.7-3 mrad on these motions); the MJCF as shipped, its own
    actuators without frictionsim's servos, replays the same goals."""
    robot, spec = shipped
    params, recordings = motions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        soft = Replay(robot, spec, params, "mujoco_frictionloss").run(recordings[0])
        shipped_model = Replay(robot, robot_spec(robot, robot.mjcf_path(None), plain=True), {},
                               "mjcf").run(recordings[0])
    assert np.abs(soft.predicted - recordings[0].position).mean() < 1e-2
    assert np.all(np.isfinite(shipped_model.predicted))
    assert np.abs(shipped_model.predicted - shipped_model.goal).mean() < 0.2


@pytest.mark.parametrize("engine,tolerance", [("mjx", 1e-9), ("mjlab", 5e-4)])
def test_the_batched_engines_replay_as_one_world_does(shipped, motions, engine, tolerance):
    pytest.importorskip("warp")
    if engine == "mjx":
        jax = pytest.importorskip("jax")
        jax.config.update("jax_enable_x64", True)
    else:
        pytest.importorskip("mujoco_warp")
    robot, spec = shipped
    params, recordings = motions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = [Replay(robot, spec, params, "mujoco").run(r) for r in recordings]
        batched = replay_batched(robot, spec, params, recordings, engine)
    for a, b in zip(one, batched):
        assert a.name == b.name and np.abs(a.predicted - b.predicted).max() < tolerance


def test_a_recording_written_reads_back(tmp_path, motions):
    _, recordings = motions
    rec = recordings[0]
    back = read_recording(write_recording(tmp_path / rec.name, rec))
    assert back.joints == rec.joints and back.name == rec.name
    for field in ("goal", "position", "velocity", "torque"):
        np.testing.assert_array_equal(getattr(back, field), getattr(rec, field))
    np.testing.assert_allclose(back.t, rec.t, rtol=0, atol=1e-12)  # written as µs


def _fit(tmp_path, name: str, hold: str | None, capsys) -> dict:
    """robot synthesize with the ground truth, then robot identify (M1, R held at its true
    value: from positions alone the back-EMF kt²/R and the viscous friction trade off); 3
    motions of 6 s, 300 evaluations (the Koch's two XL430s: 8 s and 400)."""
    truth = truth_of(name)
    truth_file = tmp_path / "truth.json"
    truth_file.write_text(json.dumps(RobotParameters(name, truth).to_dict()))
    recordings = tmp_path / "recordings"
    seconds, window, budget = ("8", "4", "400") if name == "koch_v1_1" else ("6", "3", "300")
    assert main(["robot", "synthesize", "--robot", name, "--params", str(truth_file),
                 "--motions", "3", "--seconds", seconds, "--out", str(recordings),
                 "--no-progress"]) == 0
    fitted = next(a for a in truth if a != hold)
    fixed = [f"R={truth[fitted].values['R']}"]
    if get_robot(name).actuators[0].startswith("sts"):
        fixed += [f"{k}={truth[fitted].values[k]!r}"
                  for k in ("max_velocity", "error_gain_ratio", "derivative_time")]
    out = tmp_path / "fit"
    argv = ["robot", "identify", "--robot", name, "--recordings", str(recordings),
            "--model", "m1", "--budget", budget, "--window", window, "--exact-dynamics",
            "--no-joint-scales", "--out", str(out), "--no-progress", "--fix", *fixed]
    if hold:
        argv += ["--hold", f"{hold}={truth_file}"]
    assert main(argv) == 0
    capsys.readouterr()
    return json.loads((out / "m1.json").read_text()) | {"fitted": fitted, "truth": truth,
                                                         "truth_file": str(truth_file)}


@pytest.mark.parametrize("name,hold", [("open_duck_mini_v2", None), ("so100", None),
                                       ("koch_v1_1", "xl430"), ("koch_v1_1", "xl330")])
def test_robot_identify_recovers_the_ground_truth_of_synthetic_recordings(
        tmp_path, capsys, name, hold):
    saved = _fit(tmp_path, name, hold, capsys)
    fitted, truth = saved["fitted"], saved["truth"]
    got = saved["servos"][fitted]
    # the parameters come back; the window loss need not reach 0 near them: whether a joint
    # sticks one period sooner moves it by mrad (0.7-2.9 mrad within 0.5 % of the truth)
    assert saved["fit"]["window_loss_rad"] < 5e-3
    for key, share in (("kt", 0.03), ("armature", 0.05), ("friction_base", 0.05),
                       ("friction_viscous", 0.15)):
        want = truth[fitted].values[key]
        assert abs(got[key] - want) < share * want, (key, got[key], want)
    if hold:  # the held type is saved as it was given
        assert saved["servos"][hold]["kt"] == truth[hold].values["kt"]
        assert saved["fit"]["held"] == {hold: f"{saved['truth_file']}: servos.{hold}"}


def test_default_servos_where_the_robot_file_names_them(tmp_path, capsys):
    duck = get_robot("open_duck_mini_v2")
    servos = servos_on_robot("open_duck_mini_v2").servos
    assert len(servos) == 14 and servos[0].params == load_published("sts3215_7v4_m1")
    recordings = tmp_path / "recordings"
    assert main(["robot", "synthesize", "--robot", duck.name, "--motions", "1", "--seconds",
                 "1", "--out", str(recordings), "--no-progress"]) == 0
    assert load_robot_params(recordings / "truth.json").servos["sts3215_7v4"].values == \
        load_published("sts3215_7v4_m1").values
    capsys.readouterr()
    assert main(["robot", "simulate", "--robot", duck.name, str(recordings),
                 "--no-progress"]) == 0
    assert "no --params: open_duck_mini_v2's default servos" in capsys.readouterr().out
    with pytest.raises(ConfigurationError, match="koch_v1_1 ships no default servos"):
        servos_on_robot("koch_v1_1")
    assert main(["robot", "simulate", "--robot", "koch_v1_1", str(recordings),
                 "--no-progress"]) == 1
    assert "needs --params" in capsys.readouterr().err


@pytest.mark.parametrize("argv,culprit", [
    (["--hold", "xl430"], "expected TYPE=FILE"),
    (["--hold", "sts3215_12v=x.json"], "has no sts3215_12v servo"),
    ([], r"robot identify fits one type at a time.*--hold TYPE=FILE"),
    (["--hold", "xl430={truth}", "xl330={truth}"], "nothing is left to fit"),
    (["--hold", "xl430={truth}", "--uncertainty", "3"], "--hold with --uncertainty"),
    (["--hold", "xl430={truth}", "--joint-scales"], "--joint-scales with --hold"),
])
def test_robot_identify_on_several_actuator_types_says_how(tmp_path, capsys, argv, culprit):
    truth = tmp_path / "truth.json"
    truth.write_text(json.dumps(RobotParameters("koch_v1_1", truth_of("koch_v1_1")).to_dict()))
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    argv = [a.format(truth=truth) for a in argv]
    code = main(["robot", "identify", "--robot", "koch_v1_1", "--recordings", str(recordings),
                 "--model", "m1", "--out", str(tmp_path / "fit"), "--no-progress", *argv])
    assert code == 1
    assert any(re.search(culprit, line) for line in capsys.readouterr().err.splitlines()), \
        culprit


def _robot_file(tmp_path, body: str) -> Path:
    path = tmp_path / "arm.toml"
    path.write_text('name = "arm"\nmjcf = "arm.xml"\n' + body)
    return path


@pytest.mark.parametrize("body,culprit", [
    ('[firmware]\nP_Coefficient = 16\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n',
     r"firmware\.P_Coefficient.*not a register of xl330's servo \(a Dynamixel"),
    ('[firmware]\nPosition_P_Gain = 900\n[joints.a]\nmjcf = "a"\nactuator = "sts3215_12v"\n',
     r"firmware\.Position_P_Gain.*not a Dynamixel"),
    ('[firmware]\nPosition_D_Gain = 600\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n',
     r"Position_D_Gain.*xl330's model has no D term"),
    ('[firmware]\nPWM_Limit = 900\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n',
     r"PWM_Limit.*at most 885|PWM_Limit.*885"),
    ('base = "floating"\n[firmware]\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n',
     r"base.*one of model, fixed"),
    ('params = "nope"\n[firmware]\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n',
     r"params.*'nope' is not a published parameter file"),
])
def test_robot_files_name_what_their_servos_cannot_take(tmp_path, body, culprit):
    with pytest.raises(RobotFileError, match=culprit):
        load_robot_file(_robot_file(tmp_path, body))


def test_a_dynamixel_pwm_limit_is_the_torque_limit_and_an_mjcf_beside_the_file_is_found(
        tmp_path):
    robot = load_robot_file(_robot_file(
        tmp_path, '[firmware]\nPWM_Limit = 354\n[joints.a]\nmjcf = "a"\nactuator = "xl330"\n'))
    assert robot.joint("a").firmware.torque_limit == pytest.approx(0.4)
    assert robot.mjcf_beside is None
    (tmp_path / "arm.xml").write_text("<mujoco/>")
    assert load_robot_file(tmp_path / "arm.toml").mjcf_path(None) == tmp_path / "arm.xml"


def test_data_with_a_robot_that_ships_its_mjcf_is_refused(tmp_path, capsys):
    assert main(["robot", "simulate", "--robot", "so100", "--data", str(tmp_path),
                 str(tmp_path), "--no-progress"]) == 1
    assert "so100 ships its own" in capsys.readouterr().err


def test_a_robot_file_whose_bus_period_the_recordings_contradict_is_named(tmp_path, capsys,
                                                                          monkeypatch):
    """An absolute MJCF path needs no data folder; a bus period a few times off is the robot
    file's to fix (a factor of 1000 would be the recording's timestamps)."""
    monkeypatch.chdir(tmp_path)  # no shared/data below: the MJCF path alone finds the model
    monkeypatch.delenv("FRICTIONSIM_DATA", raising=False)
    text = (BUILTIN_DIR / "so100.toml").read_text()
    mjcf = get_robot("so100").mjcf_beside
    robot_file = tmp_path / "slow.toml"
    robot_file.write_text(text.replace('mjcf = "so100/so_arm100.xml"', f'mjcf = "{mjcf}"')
                          .replace("bus_period = 0.02 ", "bus_period = 0.1  "))
    recordings = tmp_path / "recordings"
    assert main(["robot", "synthesize", "--robot", "so100", "--motions", "1", "--seconds", "1",
                 "--out", str(recordings), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["robot", "simulate", "--robot", str(robot_file), str(recordings),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"set bus_period in the robot file ({robot_file})" in err and "µs" not in err, err
