"""The checksum framing of Dynamixel protocol 1.0, which Feetech STS servos speak too.

Frame: ``FF FF | ID | LEN | INST-or-ERROR | PARAM... | CHECKSUM`` where LEN counts
INST/ERROR, the parameters and the checksum, and CHECKSUM = ~(ID + LEN + INST +
PARAM...) & 0xFF. Instruction and status packets are framed alike: the byte after
LEN is the instruction in the first, the error bit field in the second. The two
dialects differ in their instruction sets, error bits and id ranges
(:mod:`frictionsim.hw.dynamixel.protocol1`, :mod:`frictionsim.hw.feetech.protocol`), not here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus.errors import ServoCorruptPacket
from frictionsim.hw.serialbus.framing import (
    FrameParser,
    Packet,
    StatusPacket,
    Verdict,
    check_id,
    sync_write_params,
)

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
#: Smallest frame: header, id, length, instruction/error, checksum.
MIN_FRAME = 6


def checksum(body: bytes | bytearray) -> int:
    """Checksum of ``body`` (id, length, instruction/error, params): ``~sum & 0xFF``."""
    return ~sum(body) & 0xFF


def build_packet(servo_id: int, instruction: int, params: bytes = b"") -> bytes:
    """A complete frame for ``instruction`` (or, in a status packet, the error byte)."""
    if not 0 <= servo_id <= BROADCAST_ID:
        raise ConfigurationError(f"servo id {servo_id} out of range 0..{BROADCAST_ID}")
    length = len(params) + 2
    if length > 0xFF:
        raise ConfigurationError(f"protocol 1.0 packet too long (length {length} > 255)")
    body = bytes([servo_id, length, instruction]) + bytes(params)
    return HEADER + body + bytes([checksum(body)])


def one_byte(name: str, value: int) -> int:
    """``value`` if it fits in the one-byte address/length fields of this framing."""
    if not 0 <= value <= 0xFF:
        raise ConfigurationError(f"protocol 1.0 {name} {value} does not fit in one byte")
    return value


#: Instruction codes both dialects share (one-byte addresses and lengths).
PING, READ, WRITE, SYNC_READ, SYNC_WRITE = 0x01, 0x02, 0x03, 0x82, 0x83


class InstructionPackets:
    """The instruction packets Dynamixel 1.0 and Feetech STS build alike, for ids 0..``max_id``
    (errors name the servo ``family``); the dialects differ only in those two and in whether
    they offer SYNC READ."""

    def __init__(self, max_id: int, family: str) -> None:
        self.max_id = max_id
        self.family = family

    def _check_id(self, servo_id: int, broadcast_ok: bool) -> None:
        check_id(servo_id, BROADCAST_ID if broadcast_ok else self.max_id, self.family)

    def ping_packet(self, servo_id: int) -> bytes:
        """PING ``servo_id`` (answer: an empty status packet)."""
        self._check_id(servo_id, broadcast_ok=True)
        return build_packet(servo_id, PING)

    def read_packet(self, servo_id: int, address: int, length: int) -> bytes:
        """READ ``length`` bytes at ``address`` of ``servo_id``."""
        self._check_id(servo_id, broadcast_ok=False)
        return build_packet(servo_id, READ,
                            bytes([one_byte("address", address), one_byte("length", length)]))

    def write_packet(self, servo_id: int, address: int, data: bytes) -> bytes:
        """WRITE ``data`` at ``address`` of ``servo_id`` (or broadcast)."""
        self._check_id(servo_id, broadcast_ok=True)
        return build_packet(servo_id, WRITE, bytes([one_byte("address", address)]) + bytes(data))

    def sync_write_packet(self, address: int, length: int, data: Mapping[int, bytes]) -> bytes:
        """SYNC WRITE ``data[id]`` (each exactly ``length`` bytes) at ``address``; no answer."""
        head = bytes([one_byte("address", address), one_byte("length", length)])
        return build_packet(BROADCAST_ID, SYNC_WRITE,
                            sync_write_params(head, length, data, self.max_id, self.family))

    def sync_read_packet(self, address: int, length: int, ids: Iterable[int]) -> bytes:
        """SYNC READ ``length`` bytes at ``address`` from each of ``ids`` (they answer in
        order; Feetech only)."""
        ids = bytes(ids)
        for i in ids:
            self._check_id(i, broadcast_ok=False)
        return build_packet(BROADCAST_ID, SYNC_READ,
                            bytes([one_byte("address", address), one_byte("length", length)])
                            + ids)


def status_packet(servo_id: int, error: int = 0, data: bytes = b"") -> bytes:
    """A status packet as a servo would send it (for fakes and tests)."""
    return build_packet(servo_id, error, data)


class StreamParser(FrameParser):
    """Checksum-framed packets found in a byte stream; see :class:`FrameParser`."""

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
    """Parse exactly one frame; raise :class:`ServoCorruptPacket` if it is not one."""
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
    """Parse exactly one status frame (checksum checked)."""
    return to_status(parse_packet(frame))
