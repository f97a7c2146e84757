"""Feetech STS: packets equal the official ``scservo_sdk``'s, the servo adapter against a
virtual STS3215, and the SDK as master of ``virtual-servo`` on a pseudo-terminal."""

from __future__ import annotations

import math
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frictionsim.hw.dynamixel import ServoCorruptPacket, ServoTimeout
from frictionsim.hw.feetech import STS3215, FeetechBus, FeetechServo
from frictionsim.hw.feetech import protocol as fp
from frictionsim.hw.serialbus import registers as rg
from frictionsim.hw.virtual_servo.device import make_device
from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.hw.virtual_servo.pty_link import PtyLink
from frictionsim.params import ParameterSet
from tests.dynamixel_fakes import LoopbackPort
from tests.dynamixel_fakes import SdkPort as FakePort

scs = pytest.importorskip("scservo_sdk")


ids = st.integers(0, 252)


@given(ids)
def test_ping_equals_sdk(servo_id):
    port = FakePort()
    scs.PacketHandler(0).ping(port, servo_id)
    assert port.written[0] == fp.ping_packet(servo_id)


@given(ids, st.integers(0, 255), st.integers(1, 200))
def test_read_equals_sdk(servo_id, address, length):
    port = FakePort()
    scs.PacketHandler(0).readTxRx(port, servo_id, address, length)
    assert port.written == [fp.read_packet(servo_id, address, length)]


@given(ids, st.integers(0, 255), st.binary(min_size=1, max_size=30))
def test_write_equals_sdk(servo_id, address, data):
    port = FakePort()
    scs.PacketHandler(0).writeTxRx(port, servo_id, address, len(data), list(data))
    assert port.written == [fp.write_packet(servo_id, address, data)]


@settings(max_examples=50)
@given(st.integers(0, 255), st.integers(1, 4), st.lists(ids, min_size=1, max_size=6, unique=True),
       st.data())
def test_sync_read_and_write_equal_sdk(address, length, id_list, data):
    ph = scs.PacketHandler(0)
    port = FakePort()
    reader = scs.GroupSyncRead(port, ph, address, length)
    for i in id_list:
        reader.addParam(i)
    reader.txPacket()
    assert port.written == [fp.sync_read_packet(address, length, id_list)]
    chunks = {i: data.draw(st.binary(min_size=length, max_size=length)) for i in id_list}
    port = FakePort()
    writer = scs.GroupSyncWrite(port, ph, address, length)
    for i, chunk in chunks.items():
        writer.addParam(i, list(chunk))
    writer.txPacket()
    assert port.written == [fp.sync_write_packet(address, length, chunks)]


@given(ids, st.sampled_from([0, 1, 2, 4, 8, 32, 0x25]), st.binary(max_size=20))
def test_status_round_trip_with_sdk(servo_id, error, data):
    """Our status packets pass the SDK's receiver; the bytes it accepts decode back."""
    frame = fp.status_packet(servo_id, error, data)
    rx, result = scs.PacketHandler(0).rxPacket(FakePort(frame))
    assert result == scs.COMM_SUCCESS and bytes(rx) == frame
    status = fp.parse_status(frame)
    assert (status.id, status.error, status.data) == (servo_id, error, data)


def test_error_names():
    assert fp.decode_error(0x21) == ("input voltage", "overload")
    assert fp.decode_error(0x08) == ("over-current",)
    assert fp.decode_error(0x40) == ("unknown bit 6",)


@given(st.integers(-32767, 32767))
def test_speed_sign_magnitude_matches_sdk(value):
    reg = STS3215.present_velocity
    raw = int.from_bytes(reg.encode(value), "little")
    assert raw == scs.SCS_TOSCS(value, 15)
    assert reg.decode(raw.to_bytes(2, "little")) == scs.SCS_TOHOST(raw, 15) == value


@given(st.integers(-1000, 1000))
def test_load_sign_magnitude_bit_10(value):
    reg = STS3215.present_load
    raw = int.from_bytes(reg.encode(value), "little")
    assert raw == scs.SCS_TOSCS(value, 10)
    assert reg.decode(reg.encode(value)) == value


def test_units():
    assert rg.counts_to_rad(STS3215, 2048) == 0.0
    assert rg.counts_to_rad(STS3215, 3072) == pytest.approx(math.pi / 2)
    assert rg.velocity_to_rad_s(STS3215, 4096) == pytest.approx(2 * math.pi)  # counts/s
    assert rg.voltage_to_volts(STS3215, 74) == pytest.approx(7.4)
    assert rg.current_to_amps(STS3215, 100) == pytest.approx(0.65)


def sts_device(clock=time.perf_counter, servo_id=1):
    joint = SimulatedJoint(ParameterSet("m1", "sts3215", {}), 0.2, 0.1, vin=7.4, noise=0.0,
                           clock=clock)
    return make_device("sts3215", joint, servo_id=servo_id)


def test_servo_against_virtual_sts3215():
    t = [0.0]
    device = sts_device(lambda: t[0])
    bus = FeetechBus(LoopbackPort(device))
    assert bus.ping(1) == 777
    servo = FeetechServo(bus)
    servo.configure(32)
    assert device.joint.bench_kp == 32
    assert device.memory[55] == 1  # EEPROM locked again after configuring
    servo.torque(True)
    servo.goal(0.3)
    t[0] += 1.5
    state = servo.read()
    assert 0.1 < state["position"] <= 0.3 + 1e-9
    assert state["input_volts"] == pytest.approx(7.4)
    assert bus.sync_read(56, 2, [1])[1] == device.memory[56:58]


def test_silent_and_corrupt_sts():
    port = LoopbackPort(sts_device())
    bus = FeetechBus(port, timeout=0.01, retries=1)
    port.silent = True
    with pytest.raises(ServoTimeout, match="id 1 did not answer"):
        bus.ping(1)
    port.silent = False
    port.mangle = lambda reply: reply[:-1] + bytes([reply[-1] ^ 0x5A])
    with pytest.raises(ServoCorruptPacket):
        bus.read(1, 56, 2)


def test_bad_request_is_ignored_like_the_firmware():
    bus = FeetechBus(LoopbackPort(sts_device()), timeout=0.01, retries=0)
    with pytest.raises(ServoTimeout):
        bus.read(1, 250, 10)


def test_official_sdk_masters_the_virtual_sts3215_over_a_pty():
    device = sts_device(servo_id=2)
    link = PtyLink()
    stop = threading.Event()
    thread = threading.Thread(target=link.serve, args=(device, stop), daemon=True)
    thread.start()
    port = scs.PortHandler(link.path)
    try:
        assert port.openPort() and port.setBaudRate(1_000_000)
        ph = scs.PacketHandler(0)
        assert ph.ping(port, 2) == (777, scs.COMM_SUCCESS, 0)
        assert ph.ping(port, 3)[1] == scs.COMM_RX_TIMEOUT
        assert ph.read1ByteTxRx(port, 2, 21) == (32, scs.COMM_SUCCESS, 0)
        assert ph.write2ByteTxRx(port, 2, 42, 2048 - 300) == (scs.COMM_SUCCESS, 0)
        assert ph.write1ByteTxRx(port, 2, 40, 1) == (scs.COMM_SUCCESS, 0)
        time.sleep(0.4)
        position, result, _ = ph.read2ByteTxRx(port, 2, 56)
        assert result == scs.COMM_SUCCESS and 2048 - 300 - 5 <= position < 2048 - 100
        reader = scs.GroupSyncRead(port, ph, 56, 4)
        assert reader.addParam(2)
        assert reader.txRxPacket() == scs.COMM_SUCCESS
        assert abs(reader.getData(2, 56, 2) - position) < 30
        speed = scs.SCS_TOHOST(reader.getData(2, 58, 2), 15)
        assert abs(speed) < 200
    finally:
        port.closePort()
        stop.set()
        thread.join(timeout=5)
        link.close()
