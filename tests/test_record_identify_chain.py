"""record → process → identify on the simulated joint (no bus): the bench chain end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frictionsim import trajectories
from frictionsim.experiments.runner.cli import main
from frictionsim.hw.recorder import BenchSetup, Clock, record
from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.params import ParameterSet, load_params

TRUTH = ParameterSet("m1", "xl330", {"q_offset": 0.0, "kt": 0.45, "R": 3.2, "armature": 0.002,
                                     "friction_base": 0.03, "friction_viscous": 0.01})


class JointServo:
    """The BenchServo interface straight onto a SimulatedJoint (the bus is tested elsewhere)."""

    motor = "xl330"

    def __init__(self, joint: SimulatedJoint):
        self.joint = joint

    def configure(self, kp):
        self.joint.set_kp(kp)

    def torque(self, enable):
        self.joint.set_torque(enable)

    def goal(self, position):
        self.joint.set_goal(position)

    def read(self):
        return {"position": self.joint.position_reading(), "speed": self.joint.velocity_reading(),
                "load": round(1000 * self.joint.load_reading()), "input_volts": 7.4, "temp": 30}

    def close(self):
        pass


class SimClock(Clock):
    def __init__(self):
        self.t = 0.0
        super().__init__(now=lambda: self.t, sleep=self.sleep_for)

    def sleep_for(self, dt):
        self.t += dt + 0.0003  # the OS wakes us a little late


def record_campaign(folder: Path) -> None:
    n = 0
    for mass, length in ((0.3, 0.1), (0.6, 0.12)):
        for kp in (300, 600):
            for traj in trajectories.IDENTIFICATION:
                clock = SimClock()
                joint = SimulatedJoint(TRUTH, mass, length, vin=7.4, noise=0.0, seed=n,
                                       clock=clock.now)
                record(JointServo(joint), traj, BenchSetup(mass, length, kp, vin=7.4),
                       folder / f"m{mass}_kp{kp}_{traj}.json", clock=clock)
                n += 1


@pytest.mark.parametrize("model", ["m1"])
def test_record_process_identify_recovers_the_servo(tmp_path, model):
    record_campaign(tmp_path / "raw")
    assert main(["process", str(tmp_path / "raw"), str(tmp_path / "processed")]) == 0
    rc = main(["identify", "--actuator", "xl330", "--model", model, "--logs",
               str(tmp_path / "processed"), "--validation-kp", "600", "--budget", "2000",
               "--out", str(tmp_path / "fit"), "--json", str(tmp_path / "fit.json"),
               "--no-progress"])
    assert rc == 0
    fitted = load_params(tmp_path / "fit" / f"{model}.json").values
    for name in ("kt", "R", "friction_base", "friction_viscous"):
        assert fitted[name] == pytest.approx(TRUTH.values[name], rel=0.15), name
    # The apparent inertia absorbs most of the 1 ms firmware vs 5 ms model mismatch.
    assert fitted["armature"] == pytest.approx(TRUTH.values["armature"], rel=0.3)
    import json

    summary = json.loads((tmp_path / "fit.json").read_text())["models"][model]
    # Noise floor: encoder quantisation (1.5 mrad steps) and the 1 ms firmware vs the 5 ms model.
    assert summary["validation_mae"] < 5e-3
    assert np.isfinite(summary["train_mae"])
