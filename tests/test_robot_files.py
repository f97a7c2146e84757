"""Robots as data: robot files, the sage recording reader, robot parameter files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frictionsim.robot_files import RobotFileError, get_robot, load_robot_file
from frictionsim.robot_params import load_robot_params
from frictionsim.robot_recordings import RecordingError, read_recording, recording_folders

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SO101 = DATA / "so101" / "recordings"
JOINTS = ["Rotation", "Pitch", "Elbow", "Wrist_Pitch", "Wrist_Roll", "Jaw"]


def write_recording(folder: Path, rows: int = 5, start: float = 7.25, *, goal=None,
                    state_times=None) -> Path:
    """A small sage recording: the first row's timestamp in seconds, later ones in µs."""
    folder.mkdir(parents=True)
    (folder / "joint_list.txt").write_text("\n".join(JOINTS) + "\n")
    times = [start] + [20_000.0 * k + 31.5 for k in range(1, rows)]
    control = ["type,timestamp,positions"]
    state = ["type,timestamp,positions,velocities,torques"]
    for k, t in enumerate(times):
        g = goal(k) if goal else [0.01 * k] * 6
        control.append(f'CONTROL,{t!r},"{json.dumps(g)}"')
        ts = state_times[k] if state_times else t
        state.append(f'STATE_MOTOR,{ts!r},"{json.dumps([0.01 * k - 0.001] * 6)}",'
                     f'"{json.dumps([0.5] * 6)}","{json.dumps([0.02] * 6)}"')
    (folder / "control.csv").write_text("\n".join(control) + "\n")
    (folder / "state_motor.csv").write_text("\n".join(state) + "\n")
    return folder


def test_the_timestamp_quirk_first_row_seconds_later_rows_microseconds(tmp_path):
    rec = read_recording(write_recording(tmp_path / "motion"))
    np.testing.assert_allclose(rec.t, [0.0, 0.0200315, 0.0400315, 0.0600315, 0.0800315])
    assert rec.joints == tuple(JOINTS) and rec.name == "motion"
    assert rec.goal.shape == rec.position.shape == (5, 6)
    assert rec.position[2, 1] == pytest.approx(0.019)
    assert rec.column("Elbow") == 2
    with pytest.raises(ValueError, match="no joint 'Knee'"):
        rec.column("Knee")


@pytest.mark.parametrize("edit,message", [
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.03, 0.03, 0.03, 0.03, 0.03, 0.03]", "[0.03, 0.03]")), r"control.csv: row 5: positions"),
    (lambda f: (f / "state_motor.csv").write_text((f / "state_motor.csv").read_text().replace(
        "60031.5", "1.0e99")), r"state_motor.csv: row \d: .*(timestamp|gap)"),
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "CONTROL,60031.5", "CONTROL,59000.0")), r"control.csv: row 5: timestamp 59000.0 differs"),
    (lambda f: (f / "state_motor.csv").write_text((f / "state_motor.csv").read_text().replace(
        "STATE_MOTOR,60031.5", "STATE_MOTOR,abc")), r"state_motor.csv: row 5: timestamp 'abc'"),
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.04, 0.04", "[NaN, 0.04")), r"control.csv: row 6: positions"),
    # what the one-parse fast path must hand to the row-by-row reader, which names the row
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.04, 0.04", "[true, 0.04")), r"control.csv: row 6: positions must be a list"),
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.02, 0.02, 0.02, 0.02, 0.02, 0.02]", "0.02, 0.02, 0.02, 0.02, 0.02, 0.02")),
     r"control.csv: row 4: positions"),
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.02, 0.02, 0.02, 0.02, 0.02, 0.02]", "[0.02, 0.02, 0.02], [0.02, 0.02, 0.02]")),
     r"control.csv: row 4: positions"),
    (lambda f: (f / "state_motor.csv").write_text((f / "state_motor.csv").read_text().replace(
        '"[0.5, 0.5', '"[500.0, 0.5', 1)), r"state_motor.csv: row 2: velocities\[0\] = 500.0"),
    (lambda f: (f / "control.csv").write_text((f / "control.csv").read_text().replace(
        "[0.04, 0.04", "[1" + "0" * 400 + ", 0.04")), r"control.csv: row 6: positions .* beyond"),
    (lambda f: (f / "joint_list.txt").write_text("A\nA\n"), "each joint once"),
    (lambda f: (f / "state_motor.csv").unlink(), "state_motor.csv"),
    (lambda f: (f / "control.csv").write_text("time,goal\n1,2\n"), "header must be"),
])
def test_a_broken_recording_is_refused_naming_file_and_row(tmp_path, edit, message):
    folder = write_recording(tmp_path / "motion")
    edit(folder)
    with pytest.raises(RecordingError, match=message):
        read_recording(folder)


def test_timestamps_that_go_back_are_refused(tmp_path):
    times = [7.25, 20_031.5, 40_031.5, 30_000.0, 80_031.5]
    folder = write_recording(tmp_path / "motion", state_times=times)
    with pytest.raises(RecordingError, match="row 5: timestamp 30000.0 is not after"):
        read_recording(folder)


def test_recording_folders_expand_and_refuse_namesakes(tmp_path):
    write_recording(tmp_path / "a" / "one")
    write_recording(tmp_path / "a" / "two")
    write_recording(tmp_path / "b" / "one")
    assert [p.name for p in recording_folders([tmp_path / "a"])] == ["one", "two"]
    with pytest.raises(RecordingError, match="named 'one'"):
        recording_folders([tmp_path / "a", tmp_path / "b"])
    with pytest.raises(RecordingError, match="no control.csv"):
        recording_folders([tmp_path])


@pytest.mark.skipif(not SO101.is_dir(), reason="../shared/data is absent")
def test_the_so101_recordings_read():
    folders = recording_folders([SO101])
    assert len(folders) == 35
    rec = read_recording(SO101 / "static_holding")
    assert len(rec.t) == 6000 and rec.t[0] == 0.0
    assert np.median(np.diff(rec.t)) == pytest.approx(0.02006, abs=1e-4)  # LeRobot's 50 Hz
    assert rec.duration == pytest.approx(120.3, abs=0.1)
    assert rec.joints == tuple(JOINTS)


def test_the_built_in_so101_file():
    robot = get_robot("so101")
    assert [j.mjcf for j in robot.servo_joints] == ["shoulder_pan", "shoulder_lift", "elbow_flex",
                                                    "wrist_flex", "wrist_roll"]
    assert robot.joint("Jaw").left_out and robot.actuators == ("sts3215_12v",)
    assert robot.substeps == 10 and robot.control_period == 0.002
    pitch = robot.joint("Pitch").firmware
    assert (pitch.kp, pitch.kd, pitch.torque_limit) == (16.0, 32.0, 0.0)
    assert pitch.acceleration == 0.0  # LeRobot's 254 predicts these recordings worse (README)
    assert robot.joint("gripper").firmware.torque_limit == 0.5
    with pytest.raises(RobotFileError, match="unknown robot 'so102'.*so101"):
        get_robot("so102")


BASE = '''name = "arm"
mjcf = "/nowhere/arm.xml"
control_period = 0.002
bus_period = 0.02
[firmware]
P_Coefficient = 16
D_Coefficient = 32
[joints.A]
mjcf = "a"
actuator = "sts3215_12v"
'''


@pytest.mark.parametrize("edit,message", [
    ("colour = 1\n", "colour: unknown key"),
    ("[joints.B]\nmjcf = \"b\"\nactuator = \"sts9999\"\n", "joints.B.actuator: unknown actuator"),
    ("[joints.B]\nmjcf = \"a\"\nactuator = \"sts3215_12v\"\n", "'a' is named by two joints"),
    ("[joints.B]\nmjcf = \"b\"\nactuator = \"sts3215_12v\"\nsign = 2\n", "sign: 2 must be"),
    ("[joints.B]\nmjcf = \"b\"\n", "joints.B.actuator: missing"),
    ("[joints.A.firmware]\nI_Coefficient = 4\n", "I_Coefficient: an I term is not modelled"),
    ("[joints.A.firmware]\nMax_Torque_Limit = 1500\n", "Max_Torque_Limit: 1500 is outside 0 … 1000"),
    ("[joints.A.firmware]\nMax_Torque_Limit = 0\n", r"Max_Torque_Limit: 0 must be in \(0, 1000\]"),
    # a register holds a whole number of its size (the gains one byte)
    ("[joints.A.firmware]\nP_Coefficient = 300\n", "P_Coefficient: 300 is outside 0 … 255"),
    ("[joints.A.firmware]\nD_Coefficient = 16.5\n", "D_Coefficient: 16.5 is not an integer"),
])
def test_a_bad_robot_file_names_file_and_key(tmp_path, edit, message):
    path = tmp_path / "arm.toml"
    path.write_text(BASE + edit)
    with pytest.raises(RobotFileError, match=f"arm.toml: .*{message}"):
        load_robot_file(path)


def test_robot_file_timing_and_mjcf_path(tmp_path):
    path = tmp_path / "arm.toml"
    path.write_text(BASE.replace("bus_period = 0.02", "bus_period = 0.003"))
    with pytest.raises(RobotFileError, match="bus_period: 0.003 s must be a whole number"):
        load_robot_file(path)
    path.write_text(BASE)
    robot = load_robot_file(path)
    with pytest.raises(ValueError, match="no MJCF file at /nowhere/arm.xml"):
        robot.mjcf_path(None)
    other = tmp_path / "other.xml"
    other.write_text("<mujoco/>")
    assert robot.mjcf_path(None, other) == other
    path.write_text(BASE.replace('"/nowhere/arm.xml"', '"arm/arm.xml"'))
    with pytest.raises(ValueError, match="pass --mjcf PATH or --data DIR"):
        load_robot_file(path).mjcf_path(None)
    (tmp_path / "arm").mkdir()
    (tmp_path / "arm" / "arm.xml").write_text("<mujoco/>")
    assert load_robot_file(path).mjcf_path(tmp_path) == tmp_path / "arm" / "arm.xml"


def test_robot_parameter_files(tmp_path):
    robot = get_robot("so101")
    plain = {"model": "m1", "actuator": "sts3215_12v", "kt": 2.0, "R": 8.0}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    params = load_robot_params(path)
    assert params.servos["sts3215_12v"].values["kt"] == 2.0 and params.joint_offsets == {}
    assert params.apply(robot) == robot
    full = {"robot": "so101", "servos": {"sts3215_12v": plain}, "joint_offsets": {"Pitch": 0.02}}
    path.write_text(json.dumps(full))
    moved = load_robot_params(path).apply(robot)
    assert moved.joint("Pitch").offset == 0.02 and moved.joint("Elbow").offset == 0.0
    for bad, message in [({**full, "robot": "koch"}, "robot 'koch', not 'so101'"),
                         ({**full, "joint_offsets": {"Knee": 0.1}}, "names 'Knee'"),
                         ({**full, "joint_offsets": {"Pitch": 3.0}}, "joint_offsets.Pitch"),
                         ({**full, "colour": 1}, "unknown key 'colour'")]:
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            load_robot_params(path).apply(robot)
    path.write_text(json.dumps({**plain, "actuator": "xl330", "kt": 1.6, "R": 2.6}))
    with pytest.raises(ValueError, match="no parameters for actuator 'sts3215_12v'"):
        load_robot_params(path).apply(robot)


def test_a_d_coefficient_counts_only_on_an_actuator_with_a_d_term(tmp_path):
    pytest.importorskip("mujoco")
    from frictionsim import layout
    from frictionsim.params import ParameterSet
    from frictionsim.solvers.robot import JointServo

    path = tmp_path / "arm.toml"
    # a Dynamixel's registers have their own names: the Feetech ones on an XL330 are refused
    path.write_text(BASE + "[joints.B]\nmjcf = \"b\"\nactuator = \"xl330\"\n")
    with pytest.raises(RobotFileError, match=r"firmware\.P_Coefficient: not a register of "
                                             r"xl330's servo \(a Dynamixel: Position_P_Gain"):
        load_robot_file(path)
    path.write_text(BASE)
    fw = load_robot_file(path).joint("A").firmware
    assert fw.kd == 32.0  # the same registers on a servo without a D term: the kernel ignores kd
    plain = JointServo("b", ParameterSet.defaults("m1", "xl330"), kp=fw.kp, kd=fw.kd)
    assert plain.firmware(0.002)[layout.KD] == 0.0  # the xl330 has no D term: it is ignored
    feetech = JointServo("a", ParameterSet.defaults("m1", "sts3215_12v"), kp=fw.kp, kd=fw.kd)
    assert feetech.firmware(0.002)[layout.KD] == 32.0
