"""LeRobot datasets as robot recordings: both layouts and both unit modes against LeRobot's own
normalisation (tests/lerobot_writer.py), the refusals naming their culprit, the command line,
and a shared SO-101 recording written as a dataset and read back to the same replay."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.lerobot_datasets import open_dataset, read_lerobot  # noqa: E402
from frictionsim.robot_files import get_robot  # noqa: E402
from frictionsim.robot_recordings import RecordingError  # noqa: E402
from tests.lerobot_writer import (  # noqa: E402
    MOTORS,
    calibration,
    episode_from_angles,
    write_dataset,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"
ARM = MOTORS[:5]  # the SO-101's simulated joints; the gripper is held rigid


def motion(seconds: float = 2.0, fps: float = 30, phase: float = 0.0):
    """Angles (rad) of the six motors: a slow sine per joint, within each calibrated range."""
    t = np.arange(int(seconds * fps)) / fps
    q = np.column_stack([0.4 * np.sin(2 * math.pi * (0.3 + 0.1 * k) * t + phase + k)
                         for k in range(6)])
    q[:, 5] = 0.2 + 0.1 * np.sin(t)  # the gripper: inside its 0–100 range
    return t, q, q + 0.01


def dataset(tmp_path, version="v3.0", units="normalised", cal=None, zero="range_middle",
            n=3, **kw):
    cal = cal or calibration()
    eps = []
    for k in range(n):
        t, qs, qa = motion(phase=k)
        eps.append(episode_from_angles(t, qs, qa, cal, units, zero=zero))
    root = write_dataset(tmp_path / f"ds_{version}_{units}", eps, version=version, **kw)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    return root, path


@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
@pytest.mark.parametrize("units", ["normalised", "degrees"])
def test_both_layouts_and_units_read_back_the_angles(tmp_path, version, units):
    root, cal = dataset(tmp_path, version, units)
    read = read_lerobot(root, get_robot("so101"), calibration=cal, units=units,
                        episodes="0,2")
    assert [r.name for r in read.recordings] == [f"{root.name}_episode_000000",
                                                 f"{root.name}_episode_000002"]
    for rec, phase in zip(read.recordings, (0, 2)):
        t, qs, qa = motion(phase=phase)
        assert rec.joints == ("Rotation", "Pitch", "Elbow", "Wrist_Pitch", "Wrist_Roll")
        # float32 values of ±100 carry about 1e-5 of the range: a few µrad
        np.testing.assert_allclose(rec.position, qs[:, :5], atol=2e-5)
        np.testing.assert_allclose(rec.goal, qa[:, :5], atol=2e-5)
        np.testing.assert_allclose(rec.t, t, atol=1e-6)
        # central differences of the positions stand for the velocity a dataset lacks
        v = np.gradient(qs[:, :5], t, axis=0)
        np.testing.assert_allclose(rec.velocity[1:-1], v[1:-1], atol=2e-3)
        assert np.isnan(rec.torque).all()
    assert read.robot.bus_period == pytest.approx(1 / 30)
    assert read.robot.substeps == 17 and read.robot.control_period == pytest.approx(1 / 510)


def test_degrees_about_the_range_middle_need_no_calibration(tmp_path):
    root, _ = dataset(tmp_path, units="degrees")
    read = read_lerobot(root, get_robot("so101"), units="degrees", episodes=[1])
    t, qs, _ = motion(phase=1)
    np.testing.assert_allclose(read.recordings[0].position, qs[:, :5], atol=2e-5)


def test_drive_mode_and_the_half_turn_zero(tmp_path):
    cal = calibration(drive_modes=(1, 0, 1, 0, 1, 1))
    robot = get_robot("so101")
    half = dataclasses.replace(robot, lerobot=dataclasses.replace(robot.lerobot,
                                                                  zero="half_turn"))
    for units in ("normalised", "degrees"):
        root, path = dataset(tmp_path / units, units=units, cal=cal, zero="half_turn", n=1)
        rec = read_lerobot(root, half, calibration=path, units=units).recordings[0]
        t, qs, _ = motion()
        np.testing.assert_allclose(rec.position, qs[:, :5], atol=2e-5)
    # the same values read with the range's middle as zero are shifted by the middle's counts
    root, path = dataset(tmp_path / "mid", cal=cal, zero="half_turn", n=1)
    mid = read_lerobot(root, robot, calibration=path).recordings[0]
    c = cal["shoulder_pan"]
    shift = 2 * math.pi * (2047 - (c["range_min"] + c["range_max"]) / 2) / 4096
    np.testing.assert_allclose(mid.position[:, 0] - motion()[1][:, 0], shift, atol=2e-5)


def test_open_dataset_lists_episodes_of_both_layouts(tmp_path):
    for version in ("v2.1", "v3.0"):
        root, _ = dataset(tmp_path, version, n=5)
        info = open_dataset(root)
        assert info.version == version and info.fps == 30 and sorted(info.episodes) == list(range(5))
        assert info.robot_type == "so101_follower" and info.state_names[0] == "shoulder_pan.pos"


def _refusal(tmp_path, edit, **read):
    root, cal = dataset(tmp_path)
    robot = get_robot("so101")
    args = {"calibration": cal}
    robot = edit(root, cal, robot, args) or robot
    args.update(read)
    return lambda: read_lerobot(root, robot, **args)


def _no_calibration(root, cal, robot, args):
    args["calibration"] = None


def _other_motors(root, cal, robot, args):
    data = json.loads(cal.read_text())
    data["elbow"] = data.pop("elbow_flex")
    cal.write_text(json.dumps(data))


def _other_ids(root, cal, robot, args):
    data = json.loads(cal.read_text())
    data["wrist_flex"]["id"] = 14
    cal.write_text(json.dumps(data))


def _info(change):
    def edit(root, cal, robot, args):
        path = root / "meta" / "info.json"
        info = json.loads(path.read_text())
        change(info)
        path.write_text(json.dumps(info))
    return edit


def _no_lerobot_table(root, cal, robot, args):
    return dataclasses.replace(robot, lerobot=None)


@pytest.mark.parametrize("edit, read, error, message", [
    (_no_calibration, {}, ConfigurationError, "need the arm's LeRobot calibration file"),
    (_other_motors, {}, ConfigurationError, "the calibration of another arm"),
    (_other_ids, {}, ConfigurationError, "wrist_flex has id 14 there, 4 in the robot file"),
    (_info(lambda i: i.update(fps=50)), {}, RecordingError, "contradict the fps"),
    (_info(lambda i: i.update(robot_type="koch_follower")), {}, ConfigurationError,
     "a dataset of a 'koch_follower'"),
    (_info(lambda i: i.update(codebase_version="v1.6")), {}, RecordingError,
     "codebase_version 'v1.6'"),
    (_no_lerobot_table, {}, ConfigurationError, "has no [lerobot] table"),
    (lambda *a: None, {"episodes": "1,7"}, ConfigurationError, "no episode 7 (it has 3: 0-2)"),
    (lambda *a: None, {"episodes": "2-1"}, ConfigurationError, "expected indices and ranges"),
    (lambda *a: None, {"episodes": [0, 2, 0]}, ConfigurationError, "episode 0 is named twice"),
    (lambda *a: None, {"episodes": "0-2,1"}, ConfigurationError, "episode 1 is named twice"),
    (lambda *a: None, {"episodes": []}, ConfigurationError, "no episode chosen"),
    (lambda *a: None, {"calibration": 42}, ConfigurationError,
     "calibration: a LeRobot calibration file's path or its parsed dict, not int"),
    (lambda *a: None, {"calibration": {"shoulder_pan": {"id": 1}}}, ConfigurationError,
     "motor 'shoulder_pan' must give exactly id, drive_mode"),
    (lambda *a: None, {"units": "degrees", "calibration": None}, None, None),
])
def test_refusals_name_the_culprit(tmp_path, edit, read, error, message):
    call = _refusal(tmp_path, edit, **read)
    if error is None:  # normalised values read as degrees: the angles come out wrong but
        call()         # legal — the check below catches degrees read as normalised instead
        return
    with pytest.raises(error, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        call()


def test_the_robot_by_name_and_the_calibration_as_parsed_read_the_same(tmp_path):
    root, cal = dataset(tmp_path)
    first = read_lerobot(root, get_robot("so101"), calibration=cal)
    again = read_lerobot(root, "so101", calibration=json.loads(cal.read_text()))
    assert len(again.recordings) == len(first.recordings) == 3
    for a, b in zip(first.recordings, again.recordings):
        np.testing.assert_array_equal(a.position, b.position)
        np.testing.assert_array_equal(a.goal, b.goal)
    for robot, folder, message in ((42, root, "robot: a RobotDescription, a built-in robot's "
                                    "name or a robot file's path, not int"),
                                   ("so101", 42, "a LeRobot dataset folder's path, not int")):
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            read_lerobot(folder, robot, calibration=cal)


def test_degrees_read_as_normalised_values_are_refused(tmp_path):
    cal = calibration()
    t = np.arange(60) / 30
    q = np.full((60, 6), 2.5)  # 143°: beyond ±100
    ep = episode_from_angles(t, q, q, cal, "degrees")
    root = write_dataset(tmp_path / "ds", [ep])
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    with pytest.raises(RecordingError, match=r"outside the normalised ±100: are the values "
                                             r"degrees \(--units degrees\)"):
        read_lerobot(root, get_robot("so101"), calibration=path)


@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
def test_dropped_frames_and_gaps_are_refused(tmp_path, version):
    cal = calibration()
    t, qs, qa = motion()
    ep = episode_from_angles(t, qs, qa, cal, "normalised")
    dropped = {k: v[np.r_[0:20, 23:len(t)]] for k, v in ep.items()}
    dropped["frames"] = list(range(20)) + list(range(23, len(t)))
    root = write_dataset(tmp_path / "dropped", [dropped], version=version)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    with pytest.raises(RecordingError, match="frame 23 follows frame 19: dropped"):
        read_lerobot(root, get_robot("so101"), calibration=path)
    gap = dict(ep, t=np.where(np.arange(len(t)) >= 30, t + 0.1, t))
    root = write_dataset(tmp_path / "gap", [gap], version=version)
    with pytest.raises(RecordingError, match=r"from frame 29 to frame 30 .* \(dropped frames\)"):
        read_lerobot(root, get_robot("so101"), calibration=path)


def test_a_gripper_only_dataset_is_refused(tmp_path):
    cal = calibration()
    t, qs, qa = motion()
    ep = episode_from_angles(t, qs[:, 5:], qa[:, 5:], cal, "normalised", motors=("gripper",))
    root = write_dataset(tmp_path / "g", [ep], names=("gripper.pos",))
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    with pytest.raises(RecordingError, match=r"no shoulder_pan.pos .* records only gripper"):
        read_lerobot(root, get_robot("so101"), calibration=path)


def test_robot_file_lerobot_table_is_checked(tmp_path):
    from frictionsim.robot_files import RobotFileError, load_robot_file

    text = (Path(__file__).resolve().parents[1] / "frictionsim" / "robots" / "so101.toml").read_text()
    for old, new, message in [
        ('units = "normalised"', 'units = "ticks"', "lerobot.units"),
        ('zero = "range_middle"', 'zero = "homing"', "lerobot.zero"),
        ('lerobot = "elbow_flex"\n', "", "joints.Elbow.lerobot: missing"),
        ('lerobot = "elbow_flex"', 'lerobot = "shoulder_pan"', "named by two joints"),
        ('lerobot = "elbow_flex"', 'lerobot = "elbow_flex.pos"', "without '.pos'"),
        ("id = 3", "id = 300", "joints.Elbow.id"),
    ]:
        assert old in text
        path = tmp_path / "r.toml"
        path.write_text(text.replace(old, new, 1))
        with pytest.raises(RobotFileError, match=re.escape(message)):
            load_robot_file(path)



@pytest.fixture(scope="module")
def so101_mjcf():
    mjcf = DATA / "so101" / "mjcf" / "so101_new_calib.xml"
    if not mjcf.is_file():
        pytest.skip(f"SO-101 MJCF not found at {mjcf}")
    pytest.importorskip("mujoco")
    return mjcf


def _as_dataset(rec, robot, cal: dict, root: Path, units: str = "normalised") -> Path:
    """A recording written as LeRobot would have (its own timestamps, 50 fps)."""
    motors = [j.lerobot for j in robot.servo_joints]
    cols = [rec.column(j.name) for j in robot.servo_joints]
    ep = episode_from_angles(rec.t, rec.position[:, cols], rec.goal[:, cols], cal, units,
                             motors=motors)
    return write_dataset(root, [ep], fps=50, names=tuple(f"{m}.pos" for m in motors))


def test_a_shared_recording_round_trips_through_a_dataset(tmp_path, so101_mjcf):
    """The same motion as a LeRobot dataset replays to the same error: the angles within
    float32's few µrad; only the first state's velocity differs (differences, not the servo's
    reading)."""
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.params import ParameterSet
    from frictionsim.robot_recordings import read_recording
    from frictionsim.solvers.robot_servos import robot_spec

    if not RECORDINGS.is_dir():
        pytest.skip("SO-101 recordings not found")
    robot = get_robot("so101")
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    cut = dataclasses.replace(rec, t=rec.t[:500], goal=rec.goal[:500], position=rec.position[:500],
                              velocity=rec.velocity[:500], torque=rec.torque[:500])
    cal = calibration()
    cal["wrist_roll"].update(range_min=0, range_max=4095)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    root = _as_dataset(cut, robot, cal, tmp_path / "ds")
    read = read_lerobot(root, robot, calibration=path)
    back = read.recordings[0]
    cols = [cut.column(j) for j in back.joints]
    np.testing.assert_allclose(back.position, cut.position[:, cols], atol=1e-5)
    np.testing.assert_allclose(back.goal, cut.goal[:, cols], atol=1e-5)
    assert read.robot.bus_period == pytest.approx(0.02) and read.robot.substeps == 10
    servos = {"sts3215_12v": ParameterSet("m1", "sts3215_12v", {}).with_scheme("semi_implicit")}
    spec = robot_spec(robot, so101_mjcf)
    a = Replay(robot, spec, servos).run(cut)
    b = Replay(read.robot, spec, servos).run(back)
    assert abs(a.mean_mae - b.mean_mae) < 1e-4  # rad: 0.1 mrad
    assert a.mean_mae > 1e-3  # a real comparison: the replays have errors to agree on


def test_the_command_line_reads_a_dataset(tmp_path, so101_mjcf, capsys):
    from frictionsim.experiments.runner.cli import main

    root, cal = dataset(tmp_path, n=2)
    params = tmp_path / "m1.json"
    params.write_text(json.dumps({"model": "m1", "actuator": "sts3215_12v"}))
    out = tmp_path / "o.json"
    code = main(["robot", "simulate", "--robot", "so101", "--mjcf", str(so101_mjcf), "--params",
                 str(params), str(root), "--calibration", str(cal), "--episodes", "1",
                 "--json", str(out), "--no-progress"])
    assert code == 0
    result = json.loads(out.read_text())
    assert list(result["recordings"]) == [f"{root.name}_episode_000001"]
    # --calibration and --episodes do nothing without a dataset: refused
    for extra, message in ((["--calibration", str(cal)], "--calibration applies to LeRobot"),
                           (["--episodes", "0"], "--episodes: none of")):
        capsys.readouterr()
        assert main(["robot", "simulate", "--robot", "so101", "--mjcf", str(so101_mjcf),
                     "--params", str(params), str(RECORDINGS / "friction_gravity"), *extra,
                     "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    # held-out episodes without held-out datasets, and a folder among datasets
    for extra, message in ((["--validation-episodes", "1"], "there is no --validation"),
                           (["--validation", str(RECORDINGS / "friction_gravity")],
                            "recorded at 50 Hz, the training recordings at 30 Hz")):
        assert main(["robot", "identify", "--robot", "so101", "--mjcf", str(so101_mjcf),
                     "--recordings", str(root), "--calibration", str(cal), "--model", "m1", "--out",
                     str(tmp_path / "fit"), *extra, "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
