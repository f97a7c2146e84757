"""The bench recorder against a fake servo and a fake clock."""

from __future__ import annotations

import json

import pytest

from frictionsim.hw.recorder import BenchSetup, Clock, record
from frictionsim.hw.servo import ServoError
from frictionsim.logs import process, validate


class FakeClock(Clock):
    def __init__(self):
        self.t = 100.0
        super().__init__(now=lambda: self.t, sleep=self.advance)

    def advance(self, dt: float) -> None:
        self.t += dt


class FakeServo:
    """A servo whose position lags its goal; reads cost 0.4 ms of the fake clock."""

    motor = "xl330"

    def __init__(self, clock: FakeClock, fail_after: int | None = None, interrupt_after=None):
        self.clock = clock
        self.position = 0.0
        self.target = 0.0
        self.enabled = False
        self.kp = None
        self.reads = 0
        self.fail_after = fail_after
        self.interrupt_after = interrupt_after
        self.torque_log: list[bool] = []
        self.goals: list[float] = []

    def configure(self, kp):
        self.kp = kp

    def torque(self, enable):
        self.enabled = bool(enable)
        self.torque_log.append(self.enabled)

    def goal(self, position):
        self.target = position
        self.goals.append(position)

    def read(self):
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise ServoError("servo 1 did not answer READ within 3 tries")
        if self.interrupt_after is not None and self.reads == self.interrupt_after:
            raise KeyboardInterrupt
        self.clock.advance(0.0004)
        if self.enabled:
            self.position += 0.2 * (self.target - self.position)
        return {"position": self.position, "speed": 0.0, "load": 12, "input_volts": 7.4,
                "temp": 31}

    def close(self):
        pass


SETUP = BenchSetup(mass=0.49, length=0.1, kp=400, arm_mass=0.02, vin=7.4)


def test_records_a_valid_raw_log(tmp_path):
    clock = FakeClock()
    servo = FakeServo(clock)
    path = record(servo, "lift_and_drop", SETUP, tmp_path / "log.json", clock=clock)
    data = json.loads(path.read_text())
    log = validate(data, str(path))
    assert "incomplete" not in data
    assert data["kp"] == 400 and data["motor"] == "xl330" and data["trajectory"] == "lift_and_drop"
    t = log.column("timestamp")
    assert 1190 <= len(t) <= 1201 and t[-1] < 6.0
    assert abs((t[-1] - t[0]) / (len(t) - 1) - 0.005) < 1e-4
    enable = log.column("torque_enable")
    assert enable[t < 1.99].all() and not enable[t > 2.01].any()
    assert len(process(log).entries) > 1000
    assert servo.kp == 400
    assert servo.goals[-1] == 0.0 and servo.torque_log[-1] is False  # back at zero, torque off


def test_silent_servo_keeps_the_log_and_disables_torque(tmp_path):
    clock = FakeClock()
    servo = FakeServo(clock, fail_after=300)
    with pytest.raises(ServoError, match="did not answer"):
        record(servo, "sin_sin", SETUP, tmp_path / "log.json", clock=clock)
    data = json.loads((tmp_path / "log.json").read_text())
    assert data["incomplete"] is True and "did not answer" in data["reason"]
    assert len(data["entries"]) == 300
    validate(data, "partial")
    assert servo.torque_log[-1] is False


def test_ctrl_c_keeps_the_log_and_returns_to_zero(tmp_path):
    clock = FakeClock()
    servo = FakeServo(clock, interrupt_after=500)
    with pytest.raises(KeyboardInterrupt):
        record(servo, "up_and_down", SETUP, tmp_path / "log.json", clock=clock)
    data = json.loads((tmp_path / "log.json").read_text())
    assert data["incomplete"] is True and data["reason"] == "KeyboardInterrupt"
    assert len(data["entries"]) == 499
    assert servo.goals[-1] == 0.0 and servo.torque_log[-1] is False


def test_bad_setup_and_trajectory_are_refused(tmp_path):
    with pytest.raises(ValueError, match="length"):
        BenchSetup(mass=0.5, length=0.0, kp=32)
    clock = FakeClock()
    with pytest.raises(ValueError, match="trajectory"):
        record(FakeServo(clock), "zigzag", SETUP, tmp_path / "x.json", clock=clock)


def test_a_stall_before_the_end_still_closes_the_log(tmp_path):
    """A busy machine stalls the loop 0.4 s near the end: one late entry closes the log."""
    clock = FakeClock()
    servo = FakeServo(clock)
    read = servo.read

    def stalling_read():
        state = read()
        if servo.reads == 1150:  # at 5.75 s
            clock.advance(0.4)
        return state

    servo.read = stalling_read
    path = record(servo, "sin_sin", SETUP, tmp_path / "log.json", clock=clock)
    data = json.loads(path.read_text())
    assert "incomplete" not in data
    t = validate(data, str(path)).column("timestamp")
    assert 6.1 <= t[-1] < 6.2 and t[-2] < 5.8  # the stall, then the closing entry


def test_periodic_saves_leave_the_control_loop_and_never_follow_the_final_one(tmp_path,
                                                                              monkeypatch):
    import threading

    import frictionsim.hw.recorder as recorder

    writes = []  # (thread, entries, incomplete) of every write, in order
    saving, disk_free = threading.Event(), threading.Event()
    real = recorder.write_json

    def slow_disk(path, data, indent=None):
        writes.append((threading.current_thread(), len(data["entries"]),
                       data.get("incomplete", False)))
        if data.get("reason") == "recording in progress":
            saving.set()
            disk_free.wait(timeout=30)  # a save stuck behind another program's writes
        return real(path, data, indent=indent)

    monkeypatch.setattr(recorder, "write_json", slow_disk)
    log = recorder.Recording(tmp_path / "log.json", {"motor": "xl330"}, flush_every=5)
    for k in range(5):
        log.append({"timestamp": k * 0.005})
    assert saving.wait(timeout=30)
    for k in range(5, 12):  # the control loop goes on while the save waits for the disk
        log.append({"timestamp": k * 0.005})
    control = threading.current_thread()
    assert writes[0][0] is not control and writes[0][1:] == (5, True)
    disk_free.set()
    out = log.flush()
    assert writes[-1] == (control, 12, False)  # no periodic save lands after the final one
    log._saver.join(timeout=30)
    assert not log._saver.is_alive() and writes[-1] == (control, 12, False)
    data = json.loads(out.read_text())
    assert "incomplete" not in data and len(data["entries"]) == 12


def test_a_failed_periodic_save_stops_the_recording(tmp_path, monkeypatch):
    import frictionsim.hw.recorder as recorder

    real = recorder.write_json

    def full_disk(path, data, indent=None):
        if data.get("reason") == "recording in progress":
            raise OSError(28, "No space left on device")
        return real(path, data, indent=indent)

    monkeypatch.setattr(recorder, "write_json", full_disk)
    log = recorder.Recording(tmp_path / "log.json", {"motor": "xl330"}, flush_every=5)
    with pytest.raises(OSError, match="No space left"):
        for k in range(100_000):
            log.append({"timestamp": k * 0.005})
            log._saver and log._saver.join(timeout=0.01)
    saved = json.loads(log.flush(incomplete=True, reason="OSError").read_text())
    assert saved["incomplete"] is True and len(saved["entries"]) == len(log.entries)
