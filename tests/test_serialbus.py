"""The shared serial layer: sibling dialects, each with its own ids and messages; a servo that
always releases its torque; optional dependencies that fail with an install hint."""

from __future__ import annotations

import sys
import time

import pytest

from frictionsim.hw.dynamixel import DynamixelBus
from frictionsim.hw.dynamixel import control_tables as ct
from frictionsim.hw.dynamixel import protocol1 as p1
from frictionsim.hw.dynamixel.servo import DynamixelServo
from frictionsim.hw.feetech import FeetechBus, FeetechServo
from frictionsim.hw.feetech import protocol as fp
from frictionsim.hw.serialbus.bus import SerialBus
from frictionsim.hw.serialbus.errors import ServoStatusError, ServoTimeout
from frictionsim.hw.virtual_servo.device import make_device
from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.params import ParameterSet
from tests.dynamixel_fakes import LoopbackPort, virtual_xl330


def sts_port(servo_id: int = 1) -> LoopbackPort:
    joint = SimulatedJoint(ParameterSet("m1", "sts3215", {}), 0.2, 0.1, vin=7.4, noise=0.0)
    return LoopbackPort(make_device("sts3215", joint, servo_id=servo_id))


def test_dynamixel_and_feetech_buses_are_siblings():
    assert issubclass(DynamixelBus, SerialBus) and issubclass(FeetechBus, SerialBus)
    assert not issubclass(FeetechBus, DynamixelBus) and not issubclass(DynamixelBus, FeetechBus)
    assert not issubclass(FeetechServo, DynamixelServo)


def test_feetech_ids_stop_at_252_where_dynamixel_1_0_goes_to_253():
    assert p1.read_packet(253, 56, 2)  # a Dynamixel 1.0 id
    for build in (lambda: fp.read_packet(253, 56, 2), lambda: fp.sync_read_packet(56, 2, [253]),
                  lambda: fp.sync_write_packet(42, 2, {253: b"\x00\x08"})):
        with pytest.raises(ValueError, match="Feetech id 253 out of range 0..252"):
            build()


def test_feetech_messages_say_feetech():
    port = sts_port()
    bus = FeetechBus(port, timeout=0.01, retries=0)
    port.silent = True
    with pytest.raises(ServoTimeout, match="^Feetech id 1 did not answer PING"):
        bus.ping(1)


def test_dynamixel_1_0_has_no_sync_read_nor_reboot():
    bus = DynamixelBus(LoopbackPort(virtual_xl330(time.perf_counter, ct.MX64_P1)), protocol=1)
    with pytest.raises(NotImplementedError, match="SYNC READ does not exist in Dynamixel 1.0"):
        bus.sync_read(36, 2, [1])
    with pytest.raises(NotImplementedError, match="REBOOT is not available in Dynamixel 1.0"):
        bus.reboot(1)


class TorqueWatch:
    """A serial port in front of a virtual servo, failing every write after ``fail_after``."""

    def __init__(self, port: LoopbackPort, fail_after: int | None = None) -> None:
        self.port = port
        self.fail_after = fail_after
        self.writes = 0
        self.timeout = port.timeout

    def write(self, data: bytes):
        self.writes += 1
        return self.port.write(data)

    def read(self, size: int = 1) -> bytes:
        return self.port.read(size)

    def reset_input_buffer(self) -> None:
        self.port.reset_input_buffer()

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("make", ["dynamixel", "feetech"])
def test_the_servo_as_a_context_manager_always_releases_torque(make):
    if make == "dynamixel":
        device = virtual_xl330(time.perf_counter)
        watch = TorqueWatch(LoopbackPort(device))
        servo = DynamixelServo(DynamixelBus(watch), ct.XL330_M288)
    else:
        loop = sts_port()
        device = loop.device
        watch = TorqueWatch(loop)
        servo = FeetechServo(FeetechBus(watch))
    with pytest.raises(RuntimeError, match="the bench fell over"), servo:
        servo.torque(True)
        servo.goal(0.2)
        assert device.joint.enable == 1.0
        raise RuntimeError("the bench fell over")
    assert device.joint.enable == 0.0  # torque written off on the way out
    assert watch.closed


def test_releasing_torque_of_a_silent_servo_still_closes_the_port():
    device = virtual_xl330(time.perf_counter)
    port = LoopbackPort(device)
    watch = TorqueWatch(port)
    with DynamixelServo(DynamixelBus(watch, timeout=0.005, retries=0), ct.XL330_M288) as servo:
        servo.torque(True)
        port.silent = True
    assert watch.closed


def test_a_host_stalled_past_the_deadline_still_takes_the_answer_waiting(monkeypatch):
    """Every clock reading a second later than the last (a busy machine descheduling the
    process): the answer, already in the port, is read before the deadline is checked."""
    from types import SimpleNamespace

    from frictionsim.hw.serialbus import bus as bus_module

    clock = iter(range(1, 10_000))
    monkeypatch.setattr(bus_module, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    bus = DynamixelBus(LoopbackPort(virtual_xl330(time.perf_counter)), timeout=0.005, retries=0)
    assert bus.ping(1) == ct.XL330_M288.model_number
    silent = LoopbackPort(virtual_xl330(time.perf_counter))
    silent.silent = True
    with pytest.raises(ServoTimeout):
        DynamixelBus(silent, timeout=0.005, retries=0).ping(1)


def test_a_status_error_names_the_family():
    bus = DynamixelBus(LoopbackPort(virtual_xl330(time.perf_counter)), timeout=0.01, retries=0)
    with pytest.raises(ServoStatusError, match="^Dynamixel id 1 reported error"):
        bus.read(1, 1000, 100)  # beyond the control table: data range


@pytest.mark.parametrize("module, call, extra", [
    ("serial", lambda: DynamixelBus.open("/dev/ttyUSB9"), "frictionsim[hw]"),
    ("serial", lambda: FeetechBus.open("/dev/ttyUSB9"), "frictionsim[hw]"),
])
def test_missing_optional_dependency_names_the_extra(monkeypatch, module, call, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(ImportError, match=extra.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_missing_pysoem_names_the_extra(monkeypatch):
    from frictionsim.hw.ethercat.drive import Cia402Drive

    monkeypatch.setitem(sys.modules, "pysoem", None)
    with pytest.raises(ImportError, match=r"pip install 'frictionsim\[hw\]'"):
        Cia402Drive.open("eth9")


def test_missing_dask_names_the_extra(monkeypatch):
    from frictionsim.experiments.identification.distributed import connect

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ValueError, match=r"pip install 'frictionsim\[dask\]'"):
        connect("tcp://127.0.0.1:1")
