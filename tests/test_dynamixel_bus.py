"""The Dynamixel bus, servo adapter and virtual device against each other, in process.

A :class:`LoopbackPort` wires the bus straight to a virtual device, so every
transaction is real packet bytes both ways, and faults (silence, corruption,
echo, error statuses) are injected at will.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frictionsim.hw.dynamixel import (
    BusError,
    DynamixelBus,
    ServoCorruptPacket,
    ServoStatusError,
    ServoTimeout,
)
from frictionsim.hw.dynamixel import control_tables as ct
from frictionsim.hw.dynamixel import protocol1 as p1
from frictionsim.hw.dynamixel import protocol2 as p2
from frictionsim.hw.dynamixel.servo import DynamixelServo
from frictionsim.hw.recorder import BenchSetup, Clock, record
from frictionsim.hw.serialbus import registers as rg
from tests.dynamixel_fakes import LoopbackPort, virtual_xl330


class SimClock(Clock):
    def __init__(self) -> None:
        self.t = 0.0
        super().__init__(now=lambda: self.t, sleep=self.sleep_for)

    def sleep_for(self, dt: float) -> None:
        self.t += dt


@pytest.fixture
def clock() -> SimClock:
    return SimClock()


TABLES = [ct.XL330_M288, ct.MX64_P2, ct.MX106_P1, ct.MX64_P1, ct.XL320]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"{t.model}-p{t.protocol}")
def test_servo_round_trip_through_virtual_device(table, clock):
    device = virtual_xl330(clock.now, table)
    bus = DynamixelBus(LoopbackPort(device), protocol=table.protocol)
    assert bus.ping(1) == table.model_number
    servo = DynamixelServo(bus, table)
    kp = 400 if table.model.startswith("XL330") else 32  # the actuators' default gains
    servo.configure(kp)
    assert device.joint.bench_kp == kp
    servo.torque(True)
    servo.goal(0.4)
    clock.t += 2.0
    state = servo.read()
    # the arm went towards the goal, sagging under gravity with this low gain
    assert 0.05 < state["position"] < 0.4 + 1e-9
    assert abs(state["speed"]) < 0.5
    assert state["input_volts"] == pytest.approx(7.4)
    assert state["temp"] == 31
    # the registers hold what a real servo reports, in its own encoding
    goal = rg.field(table.goal_position, bytes(device.memory[table.goal_position.address:][:4]),
                    table.goal_position.address)
    assert goal == rg.rad_to_counts(table, 0.4)


def test_conversions_centre_direction_and_resolution():
    t = ct.XL330_M288
    assert rg.rad_to_counts(t, 0.0) == 2048
    assert rg.counts_to_rad(t, 2048 + 1024) == pytest.approx(math.pi / 2)  # CCW positive
    assert rg.counts_to_rad(ct.XL320, 512 + 1024 // 300 * 90) == pytest.approx(
        math.radians(300 / 1024 * (1024 // 300 * 90)))
    assert rg.velocity_to_rad_s(t, 100) == pytest.approx(100 * 0.229 * 2 * math.pi / 60)
    with pytest.raises(ValueError, match="outside"):
        rg.rad_to_counts(t, 4.0)
    sm = ct.MX64_P1.present_load
    assert sm.decode(sm.encode(-300)) == -300
    assert sm.encode(-300) == (300 | 0x400).to_bytes(2, "little")
    assert rg.current_to_amps(ct.MX64_P1, 2048 + 100) == pytest.approx(0.45)


def test_silent_servo_times_out_with_clear_error(clock):
    port = LoopbackPort(virtual_xl330(clock.now))
    port.silent = True
    bus = DynamixelBus(port, timeout=0.01, retries=2)
    with pytest.raises(ServoTimeout, match=r"id 1 did not answer READ.*3 attempt"):
        bus.read(1, 132, 4)
    assert len(port.written) == 3


def test_wrong_id_is_silence(clock):
    bus = DynamixelBus(LoopbackPort(virtual_xl330(clock.now, servo_id=7)), timeout=0.01, retries=0)
    assert bus.ping(7) == 1200
    with pytest.raises(ServoTimeout):
        bus.ping(1)


def test_corrupt_reply_is_retried_then_reported(clock):
    port = LoopbackPort(virtual_xl330(clock.now))
    flips = iter([True, False])
    port.mangle = lambda reply: reply[:-1] + bytes([reply[-1] ^ 0xFF]) if next(flips, True) \
        else reply
    bus = DynamixelBus(port, timeout=0.01, retries=2)
    assert len(bus.read(1, 132, 4)) == 4  # first reply corrupt, second good
    port.mangle = lambda reply: reply[:-1] + bytes([reply[-1] ^ 0xFF])
    with pytest.raises(ServoCorruptPacket, match="corrupt reply"):
        bus.read(1, 132, 4)


def test_half_duplex_echo_is_ignored(clock):
    bus = DynamixelBus(LoopbackPort(virtual_xl330(clock.now), echo=True))
    assert bus.ping(1) == 1200
    assert len(bus.read(1, 132, 4)) == 4


def test_error_status_raises_with_names(clock):
    device = virtual_xl330(clock.now)
    bus = DynamixelBus(LoopbackPort(device))
    bus.write(1, 64, b"\x01")  # torque on: the EEPROM (operating mode) is locked
    with pytest.raises(ServoStatusError, match="access") as info:
        bus.write(1, 11, b"\x03")
    assert info.value.errors == ("access",)
    with pytest.raises(ServoStatusError, match="data range"):
        bus.read(1, 1020, 10)


def test_p1_error_bits(clock):
    bus = DynamixelBus(LoopbackPort(virtual_xl330(clock.now, ct.MX64_P1)), protocol=1)
    with pytest.raises(ServoStatusError, match="range"):
        bus.read(1, 250, 10)


def test_sync_read_write_and_reboot(clock):
    device = virtual_xl330(clock.now)
    bus = DynamixelBus(LoopbackPort(device))
    bus.sync_write(116, 4, {1: (2048 + 300).to_bytes(4, "little"), 2: b"\0\0\0\0"})
    assert device.joint.goal == pytest.approx(rg.counts_to_rad(ct.XL330_M288, 2348))
    bus.write(1, 64, b"\x01")
    assert bus.sync_read(116, 4, [1]) == {1: (2348).to_bytes(4, "little")}
    bus.reboot(1)
    assert bus.read(1, 64, 1) == b"\x00"  # torque off after a reboot
    with pytest.raises(NotImplementedError):
        DynamixelBus(LoopbackPort(device), protocol=1).sync_read(116, 4, [1])


def test_open_checks_model(clock, monkeypatch):
    import serial

    device = virtual_xl330(clock.now, ct.XL330_M288)
    # serial.Serial is replaced: any character device passes open_serial's check
    monkeypatch.setattr(serial, "Serial", lambda *a, **k: LoopbackPort(device))
    assert DynamixelServo.open("/dev/null", "xl330").table is ct.XL330_M288
    with pytest.raises(BusError, match="is a XL330-M288, not a MX-64"):
        DynamixelServo.open("/dev/null", "mx64")
    device = virtual_xl330(clock.now, ct.XL330_M077)  # same control table, other gear ratio
    assert DynamixelServo.open("/dev/null", "xl330").table is ct.XL330_M077


def test_configure_rejects_bad_gain(clock):
    servo = DynamixelServo(DynamixelBus(LoopbackPort(virtual_xl330(clock.now))), ct.XL330_M288)
    with pytest.raises(ValueError, match="P gain"):
        servo.configure(400.5)
    with pytest.raises(ValueError, match="P gain"):
        DynamixelServo(DynamixelBus(LoopbackPort(virtual_xl330(clock.now, ct.MX64_P1)), protocol=1),
                       ct.MX64_P1).configure(400)


class Glitch:
    """Drops every answer from the ``start``-th write for ``count`` writes (a cable glitch)."""

    def __init__(self, port: LoopbackPort, start: int, count: int) -> None:
        self.port, self.start, self.count = port, start, count
        self.original = port.write

    def __call__(self, data: bytes) -> int:
        n = len(self.port.written)
        self.port.silent = self.start <= n < self.start + self.count
        return self.original(data)


@pytest.mark.parametrize("comes_back", [True, False])
def test_servo_that_stops_answering_mid_run(tmp_path, clock, comes_back):
    device = virtual_xl330(clock.now)
    port = LoopbackPort(device)
    port.write = Glitch(port, start=300, count=5 if comes_back else 10**9)
    servo = DynamixelServo(DynamixelBus(port, timeout=0.001, retries=2), ct.XL330_M288)
    path = tmp_path / "log.json"
    with pytest.raises(ServoTimeout, match="did not answer"):
        record(servo, "sin_sin", BenchSetup(0.3, 0.1, 400), path, clock=clock)
    saved = json.loads(path.read_text())
    assert saved["incomplete"] is True and "ServoTimeout" in saved["reason"]
    assert 50 < len(saved["entries"]) < 300
    # safe stop: torque off is the last instruction, and the servo (hearing, not answering) got it
    assert port.written[-1] == p2.write_packet(1, 64, b"\x00")
    assert device.joint.enable == 0.0
    # back at 0 slowly first, only if the servo answered again
    went_home = p2.write_packet(1, 116, (2048).to_bytes(4, "little")) in port.written[-5:]
    assert went_home == comes_back


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_parsers_never_crash_and_never_yield_bad_frames(data):
    for proto, check in ((p2, lambda raw: p2.crc16(raw[:-2]) == int.from_bytes(raw[-2:], "little")),
                         (p1, lambda raw: p1.checksum(raw[2:-1]) == raw[-1])):
        parser = proto.StreamParser()
        packets = []
        for k in range(0, len(data), 7):  # arbitrary chunking
            packets += parser.feed(data[k: k + 7])
        for packet in packets:
            assert check(packet.raw)
            assert proto.parse_packet(packet.raw) == packet


no_header = st.lists(st.integers(0, 0xFE), max_size=60).map(bytes)


@settings(max_examples=200)
@given(no_header, st.one_of(st.binary(max_size=40), st.just(b"\xff\xff\xfd\xff\xff\xfd")),
       st.integers(0, 252), st.binary(max_size=60))
def test_a_valid_frame_after_garbage_is_found(before, data, servo_id, after):
    """Garbage without a header before a frame never hides it (bytes after it may be anything)."""
    frame = p2.status_packet(servo_id, 0, data)
    packets = p2.StreamParser().feed(before + frame + after)
    assert packets and packets[0].raw == frame
    assert p2.to_status(packets[0]).data == data


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TABLES), st.integers(0, 254), st.integers(0, 255), st.binary(max_size=40))
def test_virtual_device_answers_any_instruction_without_crashing(table, servo_id, code, params):
    """Whatever a master sends, the virtual servo answers with a valid status or stays silent."""
    device = virtual_xl330(lambda: 0.0, table)
    proto = p2 if table.protocol == 2 else p1
    packet = proto.parse_packet(proto.build_packet(servo_id, code, params))
    reply = device.handle(packet)
    if reply is not None:
        status = proto.parse_status(reply)
        assert status.id == 1


def test_servo_falls_back_to_register_reads_when_the_block_is_refused(clock):
    device = virtual_xl330(clock.now)
    handle = device.handle

    def picky(packet):  # a firmware that only serves reads of at most 4 bytes
        if packet.code == p2.Instruction.READ and int.from_bytes(packet.params[2:4], "little") > 4:
            return p2.status_packet(1, 4)
        return handle(packet)

    device.handle = picky
    servo = DynamixelServo(DynamixelBus(LoopbackPort(device)), ct.XL330_M288)
    servo.goal(0.0)
    first, second = servo.read(), servo.read()
    assert first["input_volts"] == second["input_volts"] == pytest.approx(7.4)
    assert servo._per_register
