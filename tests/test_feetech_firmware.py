"""The Feetech position loop of docs/model.md §12, by hand, and the SO-101 replayed by two engines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from frictionsim import layout
from frictionsim.actuator_laws import firmware_control
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import lockstep_compatible, servo_control, servo_state

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DT = 0.002
VIN = 12.0
GAIN = 0.16489  # the sts3215_12v's error_gain


def feetech(**values) -> np.ndarray:
    return ParameterSet("m1", "sts3215_12v", {"max_velocity": 1e3, **values}).theta()


def firmware(kd=32.0, torque_limit=0.0, acceleration=0.0) -> np.ndarray:
    return layout.bench_vector(kp=16.0, vin=VIN, dt=DT, kd=kd, torque_limit=torque_limit,
                               acceleration=acceleration)


def test_the_d_term_acts_on_the_error_rate():
    theta = feetech(derivative_time=0.004)
    servo = servo_state(0.0, 0.0)
    u1 = servo_control(servo, 0.05, 0.0, 0.0, math.nan, theta, firmware())
    assert u1 == pytest.approx(VIN * GAIN * 16 * 0.05)  # the first period has no D term
    u2 = servo_control(servo, 0.05, 0.01, 0.0, math.nan, theta, firmware())
    rate = (0.04 - 0.05) / DT
    assert u2 == pytest.approx(VIN * GAIN * (16 * 0.04 + 32 * 0.004 * rate))
    servo = servo_state(0.0, 0.0)
    servo_control(servo, 0.05, 0.0, 0.0, math.nan, theta, firmware(kd=0.0))
    assert servo_control(servo, 0.05, 0.01, 0.0, math.nan, theta, firmware(kd=0.0)) \
        == pytest.approx(VIN * GAIN * 16 * 0.04)


def test_the_dead_band_and_the_torque_limit():
    theta = feetech(derivative_time=0.0)
    band = theta[layout.DEAD_BAND]
    assert band == pytest.approx(2 * math.pi / 4096)  # one count, the factory dead zone
    for error, driven in [(0.9 * band, False), (band, False), (1.1 * band, True)]:
        u = servo_control(servo_state(0.0, 0.0), error, 0.0, 0.0, math.nan, theta, firmware())
        assert (u != 0.0) == driven
    big = servo_control(servo_state(0.0, 0.0), 2.0, 0.0, 0.0, math.nan, theta, firmware())
    half = servo_control(servo_state(0.0, 0.0), 2.0, 0.0, 0.0, math.nan, theta,
                         firmware(torque_limit=0.5))
    assert big == pytest.approx(VIN * 0.97) and half == pytest.approx(VIN * 0.97 * 0.5)


def test_the_acceleration_limit_reaches_the_target_without_overshoot():
    theta = ParameterSet("m1", "sts3215_12v", {}).theta()
    omega = theta[layout.MAX_VELOCITY]
    accel = 254 * 100 * 2 * math.pi / 4096  # LeRobot's Acceleration = 254
    servo = servo_state(0.0, 0.0)
    targets = []
    for _ in range(400):
        servo_control(servo, 1.0, 0.0, 0.0, math.nan, theta, firmware(acceleration=accel))
        targets.append(servo[layout.SERVO_Q_SMOOTH])
    targets = np.array(targets)
    speed = np.diff(np.concatenate(([0.0], targets))) / DT
    change = np.abs(np.diff(speed))
    settle = int(np.argmax(targets >= 1.0))
    # a·dt per period at most; on the last step the target lands on the goal, within 2·a·dt
    assert np.all(np.delete(change, settle - 1) <= accel * DT * (1 + 1e-9))
    assert change[settle - 1] <= 2 * accel * DT
    assert speed.max() == pytest.approx(omega)  # cruises at the speed limit
    assert targets.max() == 1.0 and targets[-1] == 1.0  # settles exactly, never beyond
    assert np.argmax(targets >= 1.0) < 300
    unlimited = servo_state(0.0, 0.0)
    servo_control(unlimited, 1.0, 0.0, 0.0, math.nan, theta, firmware())
    assert unlimited[layout.SERVO_Q_SMOOTH] == pytest.approx(omega * DT)  # the speed limit alone


def test_what_cannot_honour_the_feetech_terms_refuses_them():
    theta = feetech(derivative_time=0.002)
    assert not lockstep_compatible(theta[None, :], firmware()[None, :])
    assert lockstep_compatible(ParameterSet("m1", "sts3215", {}).theta()[None, :],
                               layout.bench_vector(kp=32, vin=7.4, dt=0.005)[None, :])
    with pytest.raises(ValueError, match="D term"):
        firmware_control(0.1, 0.0, 0.0, 0.0, theta, firmware())
    with pytest.raises(ValueError, match="acceleration"):
        firmware_control(0.1, 0.0, 0.0, 0.0, theta, firmware(kd=0.0, acceleration=5.0))


M6_ON_THE_ARM = {"friction_base": 0.1, "load_friction_external": 0.4,
                 "load_friction_motor": 0.01, "load_friction_external_stribeck": 0.25,
                 "dtheta_stribeck": 0.16, "friction_viscous": 0.18, "armature": 0.012}


@pytest.mark.skipif(not (DATA / "so101").is_dir(), reason="../shared/data is absent")
@pytest.mark.parametrize("model, values", [("m1", {"friction_base": 0.04}),
                                           ("m6", M6_ON_THE_ARM)])
def test_the_so101_replayed_by_the_fixed_step_and_by_mujoco_agree(model, values, tmp_path,
                                                                   monkeypatch):
    from frictionsim.experiments.runner.cli import main

    monkeypatch.chdir(tmp_path)  # MuJoCo's warning log stays out of the checkout
    params = tmp_path / "sts.json"
    params.write_text(json.dumps({"model": model, "actuator": "sts3215_12v",
                                  "scheme": "semi_implicit", **values}))
    recording = DATA / "so101" / "recordings" / "friction_gravity"
    out = {}
    for engine in ("fixed_step", "mujoco"):
        assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                     str(params), str(recording), "--engine", engine, "--json",
                     str(tmp_path / f"{engine}.json"), "--no-progress"]) == 0
        out[engine] = json.loads((tmp_path / f"{engine}.json").read_text())
    fixed, mj = out["fixed_step"], out["mujoco"]
    assert set(fixed["recordings"]["friction_gravity"]["joint_mae_rad"]) == {
        "Rotation", "Pitch", "Elbow", "Wrist_Pitch", "Wrist_Roll"}
    assert abs(fixed["mean_mae_rad"] - mj["mean_mae_rad"]) < 1e-3
    assert 0.002 < fixed["mean_mae_rad"] < 0.05  # it tracks the arm, not perfectly


#: BAM's published 7.4 V M1 of the STS3215 (Rhoban/bam, params/feetech_sts3215_7_4V/m1.json).
BAM_7V4_M1 = {"kt": 1.21164135295077, "R": 2.6761663274455603, "armature": 0.02840336348682085,
              "q_offset": -0.05116067663549731, "friction_base": 0.05239296084748866,
              "friction_viscous": 0.05908515565091076}


def test_the_7v4_robot_sts3215_is_bams_published_m1_with_the_robot_loop():
    from frictionsim import schema

    robot, bench = schema.get_actuator("sts3215_7v4"), schema.get_actuator("sts3215")
    assert (robot.law, robot.vin, robot.error_gain, robot.max_pwm, robot.kp) == \
        (bench.law, bench.vin, bench.error_gain, bench.max_pwm, bench.kp)
    assert robot.derivative and robot.kd == 32 and robot.dead_band == pytest.approx(2 * math.pi / 4096)
    defaults = ParameterSet.defaults("m1", "sts3215_7v4").values
    for name in ("kt", "R", "armature"):
        assert defaults[name] == BAM_7V4_M1[name]
    # BAM's M1 on its bench actuator and on the robot loop with the D term off: one law,
    # but for the one-count dead zone
    on_bench = ParameterSet("m1", "sts3215", BAM_7V4_M1).theta()
    on_robot = ParameterSet("m1", "sts3215_7v4", BAM_7V4_M1).theta()
    no_d = layout.bench_vector(kp=32.0, vin=7.4, dt=DT, kd=0.0)
    band = on_robot[layout.DEAD_BAND]
    for error in (-0.3, -2 * band, 1.5 * band, 0.01, 0.2):
        u_bench = servo_control(servo_state(0.0, 0.0), error, 0.0, 0.1, math.nan, on_bench, no_d)
        u_robot = servo_control(servo_state(0.0, 0.0), error, 0.0, 0.1, math.nan, on_robot, no_d)
        assert u_robot == u_bench != 0.0
    assert servo_control(servo_state(0.0, 0.0), 0.5 * band, 0.0, 0.1, math.nan, on_robot,
                         no_d) == 0.0
    # and with the factory D term, the first period's duty is the P term's alone
    # (no target speed limit, no offset: the duty is the register law itself)
    with_d = layout.bench_vector(kp=32.0, vin=7.4, dt=DT, kd=32.0)
    free = ParameterSet("m1", "sts3215_7v4", {"max_velocity": 1e3}).theta()
    assert servo_control(servo_state(0.0, 0.0), 0.05, 0.0, 0.0, math.nan, free, with_d) == \
        pytest.approx(7.4 * 0.166 * 32 * 0.05)
