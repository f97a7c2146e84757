"""Dynamixel Protocol 1.0: instruction set, error bits and the :class:`Dynamixel1` dialect.

Frames are the checksum frames of :mod:`frictionsim.hw.serialbus.checksum_framing` (re-exported
here): ``FF FF | ID | LEN | INST-or-ERROR | PARAM... | CHECKSUM``. Addresses and
lengths are one byte; multi-byte data little-endian. Protocol 1.0 has no SYNC
READ and (on MX/AX firmware) no REBOOT; ids 0..253. Reference: ROBOTIS e-manual,
"Protocol 1.0".
"""

from __future__ import annotations

from enum import IntEnum

from frictionsim.hw.serialbus.checksum_framing import (  # noqa: F401  (the shared framing, re-exported)
    BROADCAST_ID,
    HEADER,
    MIN_FRAME,
    InstructionPackets,
    StreamParser,
    build_packet,
    checksum,
    one_byte,
    parse_packet,
    parse_status,
    status_packet,
    to_status,
)
from frictionsim.hw.serialbus.dialect import Dialect

MAX_ID = 253


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


_PACKETS = InstructionPackets(MAX_ID, "Dynamixel")
ping_packet = _PACKETS.ping_packet
read_packet = _PACKETS.read_packet
write_packet = _PACKETS.write_packet
sync_write_packet = _PACKETS.sync_write_packet


def decode_error(error: int) -> tuple[str, ...]:
    """Names of the error bits set in ``error`` (bit 7 is not defined: ``"unknown bit 7"``)."""
    names = [name for bit, name in ERROR_BITS.items() if error & bit]
    if error & 0x80:
        names.append("unknown bit 7")
    return tuple(names)


class Dynamixel1(Dialect):
    """Dynamixel protocol 1.0 (MX and AX firmware)."""

    name = "Dynamixel 1.0"
    family = "Dynamixel"
    version = 1
    max_id = MAX_ID
    broadcast_id = BROADCAST_ID

    def parser(self) -> StreamParser:
        return StreamParser()

    ping_packet = staticmethod(ping_packet)
    read_packet = staticmethod(read_packet)
    write_packet = staticmethod(write_packet)
    sync_write_packet = staticmethod(sync_write_packet)
    to_status = staticmethod(to_status)
    decode_error = staticmethod(decode_error)

    def is_transmission_error(self, error: int) -> bool:
        return bool(error & 0x10)

    def model_number(self, bus, servo_id, ping) -> int:
        return int.from_bytes(bus.read(servo_id, 0, 2), "little")


DIALECT = Dynamixel1()
