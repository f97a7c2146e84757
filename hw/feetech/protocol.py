"""The Feetech STS/SCS serial protocol, where it differs from Dynamixel protocol 1.0.

Frames are Dynamixel 1.0 frames, ``FF FF | ID | LEN | INST-or-ERROR | PARAM... |
~(ID+LEN+INST+PARAM) & 0xFF``, so building, checksum and stream parsing are those
of :mod:`hw.dynamixel.protocol1` (re-exported here). Feetech adds SYNC READ
(0x82: start address, length, then the ids, each servo answering with its own
status packet) and defines its own status error bits. Multi-byte fields are
little-endian on STS servos (the SDK's ``protocol_end`` 0) and big-endian on the
older SCS series, which frictionsim does not drive. Signed fields are
sign-magnitude: bit 15 for speeds and the homing offset's bit 11, bit 10 for the
load (:class:`hw.dynamixel.control_tables.Register` with ``sign_bit``).
Reference: the ``feetech-servo-sdk`` (``scservo_sdk``) packet handler.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

from hw.dynamixel.packets import check_id
from hw.dynamixel.protocol1 import (  # noqa: F401  (the shared framing, re-exported)
    BROADCAST_ID,
    StreamParser,
    build_packet,
    checksum,
    parse_packet,
    parse_status,
    ping_packet,
    read_packet,
    status_packet,
    sync_write_packet,
    to_status,
    write_packet,
)

MAX_ID = 0xFC


class Instruction(IntEnum):
    """Feetech instruction codes (those of Dynamixel 1.0 plus SYNC READ)."""

    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


#: Status error bits of the STS firmware (``scservo_sdk`` ERRBIT_*).
ERROR_BITS: dict[int, str] = {
    0x01: "input voltage",
    0x02: "angle sensor",
    0x04: "overheating",
    0x08: "over-current",
    0x20: "overload",
}


def decode_error(error: int) -> tuple[str, ...]:
    """Names of the error bits set in a status packet's error byte."""
    names = [name for bit, name in ERROR_BITS.items() if error & bit]
    names += [f"unknown bit {b}" for b in range(8) if error & (1 << b) and (1 << b) not in ERROR_BITS]
    return tuple(names)


def sync_read_packet(address: int, length: int, ids: Iterable[int]) -> bytes:
    """SYNC READ ``length`` bytes at ``address`` from each of ``ids`` (they answer in order)."""
    ids = bytes(ids)
    for i in ids:
        check_id(i, MAX_ID)
    if not (0 <= address <= 0xFF and 0 <= length <= 0xFF):
        raise ValueError(f"SYNC READ address {address} / length {length} must fit in one byte")
    return build_packet(BROADCAST_ID, Instruction.SYNC_READ, bytes([address, length]) + ids)
