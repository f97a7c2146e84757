"""Dynamixel Protocol 2.0: instruction packets, status packets, stream parsing.

Frame: ``FF FF FD 00 | ID | LEN_L LEN_H | INST | PARAM... | CRC_L CRC_H`` where LEN
counts INST, the (stuffed) parameters and the CRC. Any ``FF FF FD`` in INST+PARAM
is sent as ``FF FF FD FD`` (byte stuffing). The CRC is CRC-16 with polynomial
0x8005, initial value 0, no reflection (CRC-16/BUYPASS, the table of the ROBOTIS
SDK's ``updateCRC``), over the whole frame before the CRC, stuffed bytes
included. A status packet is INST 0x55 followed by an error byte and the data.
Multi-byte fields are little-endian. Reference: ROBOTIS e-manual, "Protocol 2.0".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import IntEnum

from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus.dialect import Dialect
from frictionsim.hw.serialbus.errors import ServoCorruptPacket
from frictionsim.hw.serialbus.framing import (
    FrameParser,
    Packet,
    StatusPacket,
    Verdict,
    check_id,
    le_bytes,
    sync_write_params,
)

HEADER = b"\xff\xff\xfd\x00"
BROADCAST_ID = 0xFE
MAX_ID = 252
#: Largest LEN field accepted (the SDK's 1 KiB packet buffer).
MAX_LENGTH = 1024 - 7
#: Smallest frame: header, id, length, instruction, CRC.
MIN_FRAME = 10


class Instruction(IntEnum):
    """Protocol 2.0 instruction codes."""

    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    FACTORY_RESET = 0x06
    REBOOT = 0x08
    CLEAR = 0x10
    STATUS = 0x55
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83
    BULK_READ = 0x92
    BULK_WRITE = 0x93


#: Names of the error numbers in the low 7 bits of a status packet's error byte.
ERROR_NAMES: dict[int, str] = {
    1: "result fail",
    2: "instruction error",
    3: "crc error",
    4: "data range",
    5: "data length",
    6: "data limit",
    7: "access",
}
#: Hardware alert bit of the error byte: check the Hardware Error Status register.
ALERT_BIT = 0x80


def _make_crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_CRC_TABLE = _make_crc_table()


def crc16(data: bytes | bytearray, crc: int = 0) -> int:
    """CRC-16 (poly 0x8005, MSB first, init ``crc``) of ``data``, as the ROBOTIS SDK computes it."""
    for b in data:
        crc = ((crc << 8) ^ _CRC_TABLE[((crc >> 8) ^ b) & 0xFF]) & 0xFFFF
    return crc


def stuff(payload: bytes) -> bytes:
    """Byte-stuff ``payload`` (instruction and parameters): each ``FF FF FD`` gets an extra ``FD``."""
    out = bytearray()
    for i, b in enumerate(payload):
        out.append(b)
        if b == 0xFD and i >= 2 and payload[i - 1] == 0xFF and payload[i - 2] == 0xFF:
            out.append(0xFD)
    return bytes(out)


def unstuff(payload: bytes) -> bytes:
    """Undo :func:`stuff`; raise :class:`ServoCorruptPacket` if an ``FF FF FD`` lacks its extra ``FD``."""
    out = bytearray()
    i = 0
    n = len(payload)
    while i < n:
        out.append(payload[i])
        i += 1
        if len(out) >= 3 and out[-3:] == b"\xff\xff\xfd":
            if i >= n or payload[i] != 0xFD:
                raise ServoCorruptPacket("protocol 2.0: unstuffed FF FF FD inside a packet")
            i += 1
    return bytes(out)


def _check_id(servo_id: int, broadcast_ok: bool) -> None:
    check_id(servo_id, BROADCAST_ID if broadcast_ok else MAX_ID)


def build_packet(servo_id: int, instruction: int, params: bytes = b"") -> bytes:
    """A complete protocol 2.0 frame (header, id, length, stuffed payload, CRC) for ``instruction``."""
    if not 0 <= servo_id <= BROADCAST_ID:
        raise ConfigurationError(f"Dynamixel id {servo_id} out of range 0..{BROADCAST_ID}")
    payload = stuff(bytes([instruction]) + bytes(params))
    length = len(payload) + 2
    if length > MAX_LENGTH:
        raise ConfigurationError(f"protocol 2.0 packet too long ({length} > {MAX_LENGTH})")
    body = HEADER + bytes([servo_id]) + le_bytes(length, 2) + payload
    return body + le_bytes(crc16(body), 2)


def ping_packet(servo_id: int) -> bytes:
    """PING ``servo_id`` (answer: model number u16, firmware version u8)."""
    _check_id(servo_id, broadcast_ok=True)
    return build_packet(servo_id, Instruction.PING)


def read_packet(servo_id: int, address: int, length: int) -> bytes:
    """READ ``length`` bytes from control-table ``address`` of ``servo_id``."""
    _check_id(servo_id, broadcast_ok=False)
    return build_packet(servo_id, Instruction.READ, le_bytes(address, 2) + le_bytes(length, 2))


def write_packet(servo_id: int, address: int, data: bytes) -> bytes:
    """WRITE ``data`` at control-table ``address`` of ``servo_id`` (or broadcast)."""
    _check_id(servo_id, broadcast_ok=True)
    return build_packet(servo_id, Instruction.WRITE, le_bytes(address, 2) + bytes(data))


def sync_read_packet(address: int, length: int, ids: Iterable[int]) -> bytes:
    """SYNC READ ``length`` bytes at ``address`` from each of ``ids`` (they answer in order)."""
    ids = bytes(ids)
    for i in ids:
        _check_id(i, broadcast_ok=False)
    return build_packet(BROADCAST_ID, Instruction.SYNC_READ,
                        le_bytes(address, 2) + le_bytes(length, 2) + ids)


def sync_write_packet(address: int, length: int, data: Mapping[int, bytes]) -> bytes:
    """SYNC WRITE ``data[id]`` (each exactly ``length`` bytes) at ``address`` of each id; no answer."""
    params = sync_write_params(le_bytes(address, 2) + le_bytes(length, 2), length, data, MAX_ID)
    return build_packet(BROADCAST_ID, Instruction.SYNC_WRITE, params)


def reboot_packet(servo_id: int) -> bytes:
    """REBOOT ``servo_id`` (clears a hardware-error shutdown)."""
    _check_id(servo_id, broadcast_ok=True)
    return build_packet(servo_id, Instruction.REBOOT)


def status_packet(servo_id: int, error: int = 0, data: bytes = b"") -> bytes:
    """A status packet as a servo would send it (for fakes and tests)."""
    return build_packet(servo_id, Instruction.STATUS, bytes([error]) + bytes(data))


def decode_error(error: int) -> tuple[str, ...]:
    """Names of the error byte's error number and, if set, ``"alert"`` (hardware error)."""
    names: list[str] = []
    number = error & 0x7F
    if number:
        names.append(ERROR_NAMES.get(number, f"unknown error {number}"))
    if error & ALERT_BIT:
        names.append("alert")
    return tuple(names)


class StreamParser(FrameParser):
    """Protocol 2.0 packets (instruction or status) found in a byte stream; see :class:`FrameParser`."""

    header = HEADER
    min_frame = MIN_FRAME

    def _frame_length_hint(self, buf: bytes) -> int | None:
        if len(buf) < 7:
            return None
        return 7 + int.from_bytes(buf[5:7], "little")

    def _check(self, buf: bytes) -> tuple[Verdict, int]:
        if len(buf) < 7:
            return Verdict.NEED_MORE, 0
        length = int.from_bytes(buf[5:7], "little")
        if buf[4] > BROADCAST_ID or length < 3 or length > MAX_LENGTH:
            return Verdict.BAD, 0
        total = 7 + length
        if len(buf) < total:
            return Verdict.NEED_MORE, 0
        if crc16(buf[: total - 2]) != int.from_bytes(buf[total - 2 : total], "little"):
            return Verdict.BAD, 0
        return Verdict.OK, total

    def _decode(self, frame: bytes) -> Packet:
        payload = unstuff(frame[7:-2])
        return Packet(id=frame[4], code=payload[0], params=payload[1:], raw=frame)


def parse_packet(frame: bytes) -> Packet:
    """Parse exactly one protocol 2.0 frame; raise :class:`ServoCorruptPacket` if it is not one."""
    parser = StreamParser()
    packets = parser.feed(bytes(frame))
    if len(packets) != 1 or parser.discarded or parser.buffered:
        raise ServoCorruptPacket(f"not one valid protocol 2.0 packet: {bytes(frame).hex(' ')}")
    return packets[0]


def to_status(packet: Packet) -> StatusPacket:
    """View ``packet`` as a status packet; raise :class:`ServoCorruptPacket` if it is not one."""
    if packet.code != Instruction.STATUS or not packet.params:
        raise ServoCorruptPacket(
            f"protocol 2.0: id {packet.id} sent instruction 0x{packet.code:02X}, not a status packet"
        )
    return StatusPacket(id=packet.id, error=packet.params[0], data=packet.params[1:], raw=packet.raw)


def parse_status(frame: bytes) -> StatusPacket:
    """Parse exactly one protocol 2.0 status frame (CRC checked, unstuffed)."""
    return to_status(parse_packet(frame))


class Dynamixel2(Dialect):
    """Dynamixel protocol 2.0 (X series, MX and XL320 with 2.0 firmware)."""

    name = "Dynamixel 2.0"
    family = "Dynamixel"
    version = 2
    max_id = MAX_ID
    broadcast_id = BROADCAST_ID
    ping_data_length = 3

    def parser(self) -> StreamParser:
        return StreamParser()

    ping_packet = staticmethod(ping_packet)
    read_packet = staticmethod(read_packet)
    write_packet = staticmethod(write_packet)
    sync_write_packet = staticmethod(sync_write_packet)
    sync_read_packet = staticmethod(sync_read_packet)
    reboot_packet = staticmethod(reboot_packet)
    to_status = staticmethod(to_status)
    decode_error = staticmethod(decode_error)

    def is_status(self, packet: Packet) -> bool:
        return packet.code == Instruction.STATUS

    def is_transmission_error(self, error: int) -> bool:
        return (error & 0x7F) == 3

    def is_alert(self, error: int) -> bool:
        return bool(error & ALERT_BIT)

    def alert_only(self, error: int) -> bool:
        return error == ALERT_BIT

    def model_number(self, bus, servo_id, ping) -> int:
        return int.from_bytes(ping.data[:2], "little")


DIALECT = Dynamixel2()
