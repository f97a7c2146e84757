"""The firmware settings are built once: one set-up gives one vector through every entry point.

The entry points: a log header (``Log.bench``), a recording's set-up (``BenchSetup.bench``),
a robot joint (``JointServo.firmware``), the Python front door (``frictionsim.Servo``), the
virtual servo (``SimulatedJoint``) and the EtherCAT drive's host law (``ErobServo``). They
once disagreed on the STS3215's D coefficient: the virtual bench ran it without its D term
and a replay of its own recording with it.
"""

from __future__ import annotations

import numpy as np
import pytest

import frictionsim as fs
from frictionsim import layout, schema
from frictionsim.bench_setup import BenchSetup
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings
from frictionsim.logs import Log
from frictionsim.params import ParameterSet

SETUP = {"mass": 0.2, "length": 0.1, "kp": 32.0}
DT = 0.005


def log_with(header: dict) -> Log:
    entry = {"position": 0.0, "speed": 0.0, "load": 0.0, "input_volts": 12.0, "temp": 30.0,
             "goal_position": 0.0, "torque_enable": True, "timestamp": 0.0}
    return Log({**header, "dt": DT, "motor": "sts3215_12v", "trajectory": "t"},
               [dict(entry, timestamp=k * DT) for k in range(3)], "log")


def every_entry_point(actuator: str, setup: dict) -> dict[str, np.ndarray]:
    from frictionsim.hw.virtual_servo.joint import SimulatedJoint
    from frictionsim.solvers.robot import JointServo

    params = ParameterSet.defaults("m1", actuator)
    vectors = {
        "firmware_settings": firmware_settings(actuator, setup, DT),
        "Log.bench": log_with(setup).bench(actuator),
        "BenchSetup.bench": BenchSetup(**setup).bench(actuator, DT),
        "Servo": fs.Servo(params, dt=DT, **setup).bench,
    }
    robot = JointServo("j", params, kp=setup["kp"]).firmware(DT)
    robot[[layout.MASS, layout.LENGTH, layout.ARM_MASS]] = \
        setup["mass"], setup["length"], setup.get("arm_mass", 0.0)  # a robot has no pendulum
    vectors["JointServo.firmware"] = robot
    joint = SimulatedJoint(params, setup["mass"], setup["length"], physics_dt=DT)
    joint.bench[layout.KP] = setup["kp"]  # the virtual servo starts at the actuator's gain
    vectors["SimulatedJoint"] = joint.bench
    return vectors


@pytest.mark.parametrize("actuator", ["sts3215_12v", "xl330", "sts3215"])
def test_one_setup_gives_one_vector_through_every_entry_point(actuator):
    vectors = every_entry_point(actuator, SETUP)
    reference = vectors.pop("firmware_settings")
    for name, vector in vectors.items():
        np.testing.assert_array_equal(vector, reference, err_msg=name)


def test_the_sts3215_12v_keeps_its_d_term_through_every_entry_point():
    act = schema.get_actuator("sts3215_12v")
    assert act.derivative and act.kd == 32
    for name, vector in every_entry_point("sts3215_12v", SETUP).items():
        assert vector[layout.KD] == 32.0, name
    # an actuator without the D term ignores a kd in its set-up
    assert firmware_settings("xl330", {**SETUP, "kd": 32.0}, DT)[layout.KD] == 0.0


def test_the_erob_host_law_takes_the_same_settings():
    from frictionsim.hw.ethercat.servo import ErobServo

    class Drive:  # what ErobServo reads of a drive before its cycle starts
        cycle = 0.001

        def enable(self, mode):
            pass

    servo = ErobServo(Drive(), "erob80_100", start=False)
    act = schema.get_actuator("erob80_100")
    np.testing.assert_array_equal(servo.bench, firmware_settings(act, {"kp": act.kp}, 0.001))
    assert servo.bench[layout.DAMPING] == act.damping


def test_overrides_replace_the_setup_and_unknown_ones_are_refused():
    v = firmware_settings("sts3215_12v", SETUP, DT, kd=0.0, torque_limit=0.5, vin=None)
    assert v[layout.KD] == 0.0 and v[layout.TORQUE_LIMIT] == 0.5 and v[layout.VIN] == 12.0
    with pytest.raises(ConfigurationError, match="unknown setting"):
        firmware_settings("xl330", SETUP, DT, kpp=3.0)
    with pytest.raises(ConfigurationError, match="kp is required"):
        firmware_settings("xl330", {"mass": 0.2}, DT)
    with pytest.raises(ConfigurationError, match="dt must be positive"):
        firmware_settings("xl330", SETUP, 0.0)
    for vin in (0.0, -3.0):  # a log header's rule; a current-law drive has no supply setting
        with pytest.raises(ConfigurationError, match=f"vin = {vin!r} V: the xl330's supply must "
                                                     "be positive"):
            firmware_settings("xl330", SETUP, DT, vin=vin)
    assert firmware_settings("erob80_100", {"kp": 1.0}, DT, vin=0.0)[layout.VIN] == 0.0


@pytest.mark.parametrize("setting,value,match", [
    ("kp", "400", "kp = '400' must be a number"),
    ("vin", True, "vin = True must be a number"),
    ("torque_limit", None, None),
    ("kd", -1.0, "kd = -1.0 must be a finite number ≥ 0"),
    ("kd", float("nan"), "kd = nan must be a finite number ≥ 0"),
])
def test_a_setting_that_is_not_a_number_is_refused_even_where_it_is_ignored(setting, value,
                                                                            match):
    # the XL330 ignores kd, but a negative one is a mistake on any servo
    setup = {**SETUP, setting: value}
    if match is None:
        assert firmware_settings("xl330", setup, DT)[layout.TORQUE_LIMIT] == 0.0
        return
    with pytest.raises(ConfigurationError, match=match):
        firmware_settings("xl330", setup, DT)
