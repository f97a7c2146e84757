"""Packets built by frictionsim.hw.dynamixel equal those of the official ROBOTIS dynamixel_sdk.

The SDK's PacketHandler talks to a fake PortHandler that records what it writes
and feeds it canned replies, so its packet bytes can be compared with ours
byte for byte, and its status-packet check applied to our status packets.
"""

from __future__ import annotations

import pytest

dxl = pytest.importorskip("dynamixel_sdk")

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from frictionsim.hw.dynamixel import protocol1 as p1  # noqa: E402
from frictionsim.hw.dynamixel import protocol2 as p2  # noqa: E402
from frictionsim.hw.serialbus.errors import ServoCorruptPacket  # noqa: E402
from tests.dynamixel_fakes import SdkPort as FakePort  # noqa: E402

ids = st.integers(0, 252)
addr2 = st.integers(0, 0xFFFF)
payloads = st.binary(min_size=1, max_size=40)
# data rich in FF FF FD to exercise byte stuffing
stuffy = st.lists(st.sampled_from([b"\xff", b"\xfd", b"\x00", b"\xff\xff\xfd"]), min_size=1,
                  max_size=20).map(b"".join)


# --------------------------------------------------------------------- protocol 2.0 ---
@given(st.binary(max_size=200))
def test_crc_equals_sdk(data: bytes) -> None:
    sdk = dxl.PacketHandler(2.0)
    assert p2.crc16(data) == sdk.updateCRC(0, list(data), len(data))


def test_crc_known_vector() -> None:
    # e-manual protocol 2.0 example: PING id 1 is FF FF FD 00 01 03 00 01 19 4E
    assert p2.ping_packet(1) == bytes.fromhex("FFFFFD00010300011 94E".replace(" ", ""))


@given(ids)
def test_p2_ping_and_reboot_equal_sdk(servo_id: int) -> None:
    sdk = dxl.PacketHandler(2.0)
    port = FakePort()
    sdk.ping(port, servo_id)
    sdk.reboot(port, servo_id)
    assert port.written == [p2.ping_packet(servo_id), p2.reboot_packet(servo_id)]


@given(ids, addr2, st.integers(1, 300))
@example(0, 0xFFFF, 0xFD)  # address and length read FF FF FD: stuffed (the SDK does not)
def test_p2_read_equals_sdk(servo_id: int, address: int, length: int) -> None:
    ours = p2.read_packet(servo_id, address, length)
    params = address.to_bytes(2, "little") + length.to_bytes(2, "little")
    assert ours == _sdk_frame(servo_id, 0x02, params)
    if not _needs_stuffing(params):
        sdk = dxl.PacketHandler(2.0)
        port = FakePort()
        sdk.readTxRx(port, servo_id, address, length)
        assert port.written == [ours]


def _needs_stuffing(params: bytes) -> bool:
    return b"\xff\xff\xfd" in params


def _sdk_frame(servo_id: int, instruction: int, params: bytes) -> bytes:
    """A protocol 2.0 frame assembled with the SDK's own addStuffing and updateCRC.

    The SDK 4.1.0 ``txPacket`` calls ``addStuffing`` but drops the (longer) list
    it returns, so it sends unstuffed packets whenever stuffing is needed; the
    function itself is right, so we apply it as the e-manual specifies.
    """
    sdk = dxl.PacketHandler(2.0)
    length = len(params) + 3
    pkt = [0xFF, 0xFF, 0xFD, 0x00, servo_id, length & 0xFF, length >> 8, instruction, *params, 0, 0]
    pkt = sdk.addStuffing(pkt)
    total = (pkt[5] | pkt[6] << 8) + 7
    crc = sdk.updateCRC(0, pkt, total - 2)
    pkt[total - 2], pkt[total - 1] = crc & 0xFF, crc >> 8
    return bytes(pkt[:total])


@settings(max_examples=200)
@given(ids, addr2, st.one_of(payloads, stuffy))
def test_p2_write_equals_sdk_including_stuffing(servo_id: int, address: int, data: bytes) -> None:
    ours = p2.write_packet(servo_id, address, data)
    assert ours == _sdk_frame(servo_id, 0x03, address.to_bytes(2, "little") + data)
    if not _needs_stuffing(address.to_bytes(2, "little") + data):
        sdk = dxl.PacketHandler(2.0)
        port = FakePort()
        sdk.writeTxRx(port, servo_id, address, len(data), list(data))
        assert port.written == [ours]


def test_sdk_txpacket_stuffing_bug_is_what_we_think() -> None:
    """Documents the SDK divergence above: it sends FF FF FD unstuffed; we stuff (e-manual)."""
    sdk = dxl.PacketHandler(2.0)
    port = FakePort()
    sdk.writeTxRx(port, 0, 0, 3, [0xFF, 0xFF, 0xFD])
    assert port.written[0][5] == 8  # unstuffed length
    assert p2.write_packet(0, 0, b"\xff\xff\xfd")[5:7] == b"\x09\x00"
    assert p2.parse_packet(p2.write_packet(0, 0, b"\xff\xff\xfd")).params == b"\x00\x00\xff\xff\xfd"


@given(addr2, st.integers(1, 8), st.lists(ids, min_size=1, max_size=6, unique=True), st.data())
def test_p2_sync_write_and_sync_read_equal_sdk(address: int, length: int, id_list: list[int],
                                               data: st.DataObject) -> None:
    sdk = dxl.PacketHandler(2.0)
    port = FakePort()
    chunks = {i: data.draw(st.binary(min_size=length, max_size=length)) for i in id_list}
    group = dxl.GroupSyncWrite(port, sdk, address, length)
    for i, chunk in chunks.items():
        assert group.addParam(i, list(chunk))
    group.txPacket()
    reader = dxl.GroupSyncRead(port, sdk, address, length)
    for i in id_list:
        assert reader.addParam(i)
    reader.txPacket()
    ours = p2.sync_write_packet(address, length, chunks)
    params = p2.unstuff(ours[8:-2])
    if _needs_stuffing(params):
        # the SDK sends such packets unstuffed (see the stuffing test): compare with the
        # frame its own addStuffing and updateCRC make
        assert ours == _sdk_frame(p2.BROADCAST_ID, 0x83, params)
        port.written[0] = ours
    assert port.written == [ours, p2.sync_read_packet(address, length, id_list)]


@settings(max_examples=200)
@given(ids, st.integers(0, 255), st.one_of(st.binary(max_size=30), stuffy))
def test_p2_status_built_here_is_accepted_by_sdk(servo_id: int, error: int, data: bytes) -> None:
    """Our status packets pass the SDK's reader (header, CRC, unstuffing) with the same data.

    The SDK 4.1.0 ``removeStuffing`` unstuffs in place and then looks back at
    bytes it has already overwritten, so it mis-decodes e.g. ``FF FF FD FF FD FD``;
    with stuffing, the SDK's reader is only asked to accept the CRC.
    """
    sdk = dxl.PacketHandler(2.0)
    frame = p2.status_packet(servo_id, error, data)
    port = FakePort(rx=frame)
    rx, result, sdk_error = sdk.readTxRx(port, servo_id, 0, len(data))
    assert result == dxl.COMM_SUCCESS and sdk_error == error
    if not _needs_stuffing(data):
        assert bytes(rx) == bytes(data)
    status = p2.parse_status(frame)
    assert (status.id, status.error, status.data) == (servo_id, error, data)


@settings(max_examples=200)
@given(ids, st.integers(0, 255), st.one_of(st.binary(max_size=30), stuffy))
def test_p2_status_built_by_sdk_decodes(servo_id: int, error: int, data: bytes) -> None:
    frame = _sdk_frame(servo_id, 0x55, bytes([error]) + data)
    status = p2.parse_status(frame)
    assert (status.id, status.error, status.data, status.raw) == (servo_id, error, data, frame)


def test_p2_ping_reply_from_sdk_point_of_view() -> None:
    sdk = dxl.PacketHandler(2.0)
    port = FakePort(rx=p2.status_packet(7, 0, bytes([0xB0, 0x04, 0x2E])))
    model, result, error = sdk.ping(port, 7)
    assert (model, result, error) == (1200, dxl.COMM_SUCCESS, 0)


def test_p2_error_names() -> None:
    expect = {1: "result fail", 2: "instruction error", 3: "crc error", 4: "data range",
              5: "data length", 6: "data limit", 7: "access"}
    for number, name in expect.items():
        assert p2.decode_error(number) == (name,)
        assert p2.decode_error(number | 0x80) == (name, "alert")
    assert p2.decode_error(0x80) == ("alert",)
    assert p2.decode_error(0) == ()


def test_p2_stuffing_round_trip_and_example() -> None:
    assert p2.stuff(b"\x03\xff\xff\xfd\x01") == b"\x03\xff\xff\xfd\xfd\x01"
    assert p2.unstuff(b"\x03\xff\xff\xfd\xfd\x01") == b"\x03\xff\xff\xfd\x01"
    with pytest.raises(ServoCorruptPacket):
        p2.unstuff(b"\x03\xff\xff\xfd\x01")


def test_p2_bad_crc_rejected() -> None:
    frame = bytearray(p2.status_packet(1, 0, b"\x10\x20"))
    frame[-1] ^= 0x01
    with pytest.raises(ServoCorruptPacket):
        p2.parse_status(bytes(frame))


# --------------------------------------------------------------------- protocol 1.0 ---
@given(st.integers(0, 253))
def test_p1_ping_equals_sdk(servo_id: int) -> None:
    sdk = dxl.PacketHandler(1.0)
    port = FakePort()
    sdk.ping(port, servo_id)
    assert port.written[0] == p1.ping_packet(servo_id)


@given(st.integers(0, 253), st.integers(0, 255), st.integers(1, 200))
def test_p1_read_equals_sdk(servo_id: int, address: int, length: int) -> None:
    sdk = dxl.PacketHandler(1.0)
    port = FakePort()
    sdk.readTxRx(port, servo_id, address, length)
    assert port.written == [p1.read_packet(servo_id, address, length)]


@given(st.integers(0, 253), st.integers(0, 255), payloads)
def test_p1_write_equals_sdk(servo_id: int, address: int, data: bytes) -> None:
    sdk = dxl.PacketHandler(1.0)
    port = FakePort()
    sdk.writeTxRx(port, servo_id, address, len(data), list(data))
    assert port.written == [p1.write_packet(servo_id, address, data)]


@given(st.integers(0, 255), st.integers(1, 4), st.lists(ids, min_size=1, max_size=6, unique=True),
       st.data())
def test_p1_sync_write_equals_sdk(address: int, length: int, id_list: list[int],
                                  data: st.DataObject) -> None:
    sdk = dxl.PacketHandler(1.0)
    port = FakePort()
    chunks = {i: data.draw(st.binary(min_size=length, max_size=length)) for i in id_list}
    group = dxl.GroupSyncWrite(port, sdk, address, length)
    for i, chunk in chunks.items():
        assert group.addParam(i, list(chunk))
    group.txPacket()
    assert port.written == [p1.sync_write_packet(address, length, chunks)]


@given(st.integers(0, 253), st.integers(0, 0x7F), st.binary(max_size=30))
def test_p1_status_round_trip_with_sdk(servo_id: int, error: int, data: bytes) -> None:
    sdk = dxl.PacketHandler(1.0)
    frame = p1.status_packet(servo_id, error, data)
    port = FakePort(rx=frame)
    rx, result, sdk_error = sdk.readTxRx(port, servo_id, 0, len(data))
    assert result == dxl.COMM_SUCCESS and bytes(rx) == data and sdk_error == error
    status = p1.parse_status(frame)
    assert (status.id, status.error, status.data) == (servo_id, error, data)


def test_p1_error_bits_and_checksum() -> None:
    assert p1.decode_error(0x01 | 0x20) == ("input voltage", "overload")
    assert p1.decode_error(0x7F) == ("input voltage", "angle limit", "overheating", "range",
                                     "checksum", "overload", "instruction")
    # e-manual protocol 1.0 example: read internal temperature of id 1
    assert p1.read_packet(1, 0x2B, 1) == bytes.fromhex("FFFF010402 2B01CC".replace(" ", ""))
    frame = bytearray(p1.status_packet(1, 0, b"\x20"))
    frame[-1] ^= 0xFF
    with pytest.raises(ServoCorruptPacket):
        p1.parse_status(bytes(frame))
