"""The Feetech STS serial protocol and its :class:`Feetech` dialect.

Frames are the checksum frames Dynamixel 1.0 uses too
(:mod:`frictionsim.hw.serialbus.checksum_framing`, re-exported here), ``FF FF | ID | LEN |
INST-or-ERROR | PARAM... | ~(ID+LEN+INST+PARAM) & 0xFF``. Feetech has its own
instruction set (with SYNC READ, 0x82: start address, length, then the ids, each
servo answering with its own status packet), its own status error bits, ids
0..252, and the model number at address 3. Multi-byte fields are little-endian on
STS servos (the SDK's ``protocol_end`` 0) and big-endian on the older SCS series,
which frictionsim does not drive. Signed fields are sign-magnitude: bit 15 for
speeds and the homing offset's bit 11, bit 10 for the load
(:class:`frictionsim.hw.serialbus.registers.Register` with ``sign_bit``). Reference: the
``feetech-servo-sdk`` (``scservo_sdk``) packet handler.
"""

from __future__ import annotations

from enum import IntEnum

from frictionsim.hw.serialbus.checksum_framing import (  # noqa: F401  (the shared framing, re-exported)
    BROADCAST_ID,
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

MAX_ID = 0xFC
FAMILY = "Feetech"
MODEL_NUMBER_ADDRESS = 3


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


_PACKETS = InstructionPackets(MAX_ID, FAMILY)
ping_packet = _PACKETS.ping_packet
read_packet = _PACKETS.read_packet
write_packet = _PACKETS.write_packet
sync_write_packet = _PACKETS.sync_write_packet
sync_read_packet = _PACKETS.sync_read_packet


def decode_error(error: int) -> tuple[str, ...]:
    """Names of the error bits set in a status packet's error byte."""
    names = [name for bit, name in ERROR_BITS.items() if error & bit]
    names += [f"unknown bit {b}" for b in range(8) if error & (1 << b) and (1 << b) not in ERROR_BITS]
    return tuple(names)


class Feetech(Dialect):
    """Feetech STS (STS3215 and kin)."""

    name = "Feetech STS"
    family = FAMILY
    version = 1
    max_id = MAX_ID
    broadcast_id = BROADCAST_ID

    def parser(self) -> StreamParser:
        return StreamParser()

    ping_packet = staticmethod(ping_packet)
    read_packet = staticmethod(read_packet)
    write_packet = staticmethod(write_packet)
    sync_write_packet = staticmethod(sync_write_packet)
    sync_read_packet = staticmethod(sync_read_packet)
    to_status = staticmethod(to_status)
    decode_error = staticmethod(decode_error)

    def model_number(self, bus, servo_id, ping) -> int:
        return int.from_bytes(bus.read(servo_id, MODEL_NUMBER_ADDRESS, 2), "little")


DIALECT = Feetech()
