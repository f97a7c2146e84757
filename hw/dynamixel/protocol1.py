"""Dynamixel Protocol 1.0: instruction packets, status packets, stream parsing.

Frame: ``FF FF | ID | LEN | INST-or-ERROR | PARAM... | CHECKSUM`` where LEN counts
INST/ERROR, the parameters and the checksum, and CHECKSUM = ~(ID + LEN + INST +
PARAM...) & 0xFF. Instruction and status packets are framed alike: the byte after
LEN is the instruction in the first, the error bit field in the second.
Addresses and lengths are one byte; multi-byte data little-endian. Protocol 1.0
has no SYNC READ and (on MX/AX firmware) no REBOOT. Reference: ROBOTIS
e-manual, "Protocol 1.0".
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from hw.dynamixel.errors import ServoCorruptPacket
from hw.dynamixel.packets import (
    FrameParser,
    Packet,
    StatusPacket,
    Verdict,
    check_id,
    sync_write_params,
)

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
MAX_ID = 253
#: Smallest frame: header, id, length, instruction/error, checksum.
MIN_FRAME = 6


class Instruction(IntEnum):
    """Protocol 1.0 instruction codes."""

    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    FACTORY_RESET = 0x06
    SYNC_WRITE = 0x83
    BULK_READ = 0x92


#: Names of the error bits of a status packet's error byte.
ERROR_BITS: dict[int, str] = {
    0x01: "input voltage",
    0x02: "angle limit",
    0x04: "overheating",
    0x08: "range",
    0x10: "checksum",
    0x20: "overload",
    0x40: "instruction",
}


def checksum(body: bytes | bytearray) -> int:
    """Protocol 1.0 checksum of ``body`` (id, length, instruction/error, params): ``~sum & 0xFF``."""
    return ~sum(body) & 0xFF


def build_packet(servo_id: int, instruction: int, params: bytes = b"") -> bytes:
    """A complete protocol 1.0 frame for ``instruction`` (or, in a status packet, the error byte)."""
    if not 0 <= servo_id <= BROADCAST_ID:
        raise ValueError(f"Dynamixel id {servo_id} out of range 0..{BROADCAST_ID}")
    length = len(params) + 2
    if length > 0xFF:
        raise ValueError(f"protocol 1.0 packet too long (length {length} > 255)")
    body = bytes([servo_id, length, instruction]) + bytes(params)
    return HEADER + body + bytes([checksum(body)])


def _check_id(servo_id: int, broadcast_ok: bool) -> None:
    check_id(servo_id, BROADCAST_ID if broadcast_ok else MAX_ID)


def _byte(name: str, value: int) -> int:
    if not 0 <= value <= 0xFF:
        raise ValueError(f"protocol 1.0 {name} {value} does not fit in one byte")
    return value


def ping_packet(servo_id: int) -> bytes:
    """PING ``servo_id`` (answer: an empty status packet)."""
    _check_id(servo_id, broadcast_ok=True)
    return build_packet(servo_id, Instruction.PING)


def read_packet(servo_id: int, address: int, length: int) -> bytes:
    """READ ``length`` bytes at control-table ``address`` of ``servo_id``."""
    _check_id(servo_id, broadcast_ok=False)
    return build_packet(servo_id, Instruction.READ,
                        bytes([_byte("address", address), _byte("length", length)]))


def write_packet(servo_id: int, address: int, data: bytes) -> bytes:
    """WRITE ``data`` at control-table ``address`` of ``servo_id`` (or broadcast)."""
    _check_id(servo_id, broadcast_ok=True)
    return build_packet(servo_id, Instruction.WRITE, bytes([_byte("address", address)]) + bytes(data))


def sync_write_packet(address: int, length: int, data: Mapping[int, bytes]) -> bytes:
    """SYNC WRITE ``data[id]`` (each exactly ``length`` bytes) at ``address`` of each id; no answer."""
    head = bytes([_byte("address", address), _byte("length", length)])
    params = sync_write_params(head, length, data, MAX_ID)
    return build_packet(BROADCAST_ID, Instruction.SYNC_WRITE, params)


def status_packet(servo_id: int, error: int = 0, data: bytes = b"") -> bytes:
    """A status packet as a servo would send it (for fakes and tests)."""
    return build_packet(servo_id, error, data)


def decode_error(error: int) -> tuple[str, ...]:
    """Names of the error bits set in ``error`` (bit 7 is not defined: ``"unknown bit 7"``)."""
    names = [name for bit, name in ERROR_BITS.items() if error & bit]
    if error & 0x80:
        names.append("unknown bit 7")
    return tuple(names)


class StreamParser(FrameParser):
    """Protocol 1.0 packets found in a byte stream; see :class:`FrameParser`."""

    header = HEADER
    min_frame = MIN_FRAME

    def _frame_length_hint(self, buf: bytes) -> int | None:
        if len(buf) < 4:
            return None
        return 4 + buf[3]

    def _check(self, buf: bytes) -> tuple[Verdict, int]:
        if len(buf) < 4:
            return Verdict.NEED_MORE, 0
        if buf[2] > BROADCAST_ID or buf[3] < 2:
            return Verdict.BAD, 0
        total = 4 + buf[3]
        if len(buf) < total:
            return Verdict.NEED_MORE, 0
        if checksum(buf[2 : total - 1]) != buf[total - 1]:
            return Verdict.BAD, 0
        return Verdict.OK, total

    def _decode(self, frame: bytes) -> Packet:
        return Packet(id=frame[2], code=frame[4], params=frame[5:-1], raw=frame)


def parse_packet(frame: bytes) -> Packet:
    """Parse exactly one protocol 1.0 frame; raise :class:`ServoCorruptPacket` if it is not one."""
    parser = StreamParser()
    packets = parser.feed(bytes(frame))
    if len(packets) != 1 or parser.discarded or parser.buffered:
        raise ServoCorruptPacket(f"not one valid protocol 1.0 packet: {bytes(frame).hex(' ')}")
    return packets[0]


def to_status(packet: Packet) -> StatusPacket:
    """View ``packet`` as a status packet (``code`` is the error byte)."""
    if packet.code & 0x80:
        raise ServoCorruptPacket(
            f"protocol 1.0: id {packet.id} sent error byte 0x{packet.code:02X} with bit 7 set"
        )
    return StatusPacket(id=packet.id, error=packet.code, data=packet.params, raw=packet.raw)


def parse_status(frame: bytes) -> StatusPacket:
    """Parse exactly one protocol 1.0 status frame (checksum checked)."""
    return to_status(parse_packet(frame))
