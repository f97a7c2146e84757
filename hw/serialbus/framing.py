"""Packet records and the resynchronising stream parser shared by every serial dialect.

A :class:`FrameParser` subclass says how a frame starts (its header), how long it
is and whether its CRC/checksum is right; the base class does the buffering,
garbage skipping and resynchronisation, identically for Dynamixel 1.0, 2.0 and
Feetech.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus.errors import ServoCorruptPacket


@dataclass(frozen=True)
class Packet:
    """One framed packet, its integrity already verified.

    ``code`` is the instruction byte (protocol 2.0: 0x55 for a status packet;
    protocol 1.0: the instruction of an instruction packet or the error byte of a
    status packet, the two being framed identically). ``params`` are the bytes
    after ``code`` and before the CRC/checksum, unstuffed. ``raw`` is the frame
    exactly as it was on the wire.
    """

    id: int
    code: int
    params: bytes
    raw: bytes


@dataclass(frozen=True)
class StatusPacket:
    """A servo's answer: its ``id``, raw ``error`` byte and the returned ``data`` bytes."""

    id: int
    error: int
    data: bytes
    raw: bytes


class Verdict(Enum):
    """What a parser can say about the bytes at the start of its buffer."""

    NEED_MORE = 0
    BAD = 1
    OK = 2


class FrameParser:
    """Finds packets in an arbitrary byte stream.

    ``feed(data)`` appends bytes and returns every complete packet found so far.
    Garbage before a header is skipped; a frame whose header, length, CRC/checksum
    or contents are invalid is abandoned one byte at a time, so the parser
    resynchronises on the next header and never returns a packet whose integrity
    check failed. ``discarded`` counts the bytes thrown away. ``feed`` raises
    nothing for any input.
    """

    header: bytes = b""
    min_frame: int = 1
    max_buffer: int = 1 << 16

    def __init__(self) -> None:
        self._buf = bytearray()
        self.discarded = 0

    # -- protocol specific ---------------------------------------------------
    def _check(self, buf: bytes) -> tuple[Verdict, int]:
        """Judge ``buf`` (which starts with ``header``): verdict and frame length in bytes."""
        raise NotImplementedError

    def _decode(self, frame: bytes) -> Packet:
        """Turn a verified frame into a :class:`Packet`; raise ServoCorruptPacket if malformed."""
        raise NotImplementedError

    def _frame_length_hint(self, buf: bytes) -> int | None:
        """Total frame length if the buffer's header and length field are in, else None."""
        raise NotImplementedError

    # -- generic ------------------------------------------------------------
    def reset(self) -> None:
        """Forget buffered bytes (after a bus flush)."""
        self._buf.clear()

    @property
    def buffered(self) -> int:
        """Number of bytes held waiting for the rest of a frame."""
        return len(self._buf)

    def _discard(self, n: int) -> None:
        del self._buf[:n]
        self.discarded += n

    def _keep_header_prefix(self) -> None:
        """No header in the buffer: drop all but a trailing partial header."""
        h = self.header
        for k in range(min(len(h) - 1, len(self._buf)), 0, -1):
            if self._buf[-k:] == h[:k]:
                self._discard(len(self._buf) - k)
                return
        self._discard(len(self._buf))

    def feed(self, data: bytes) -> list[Packet]:
        """Append ``data`` to the buffer and return the complete valid packets it now holds."""
        self._buf += data
        out: list[Packet] = []
        while self._buf:
            start = self._buf.find(self.header)
            if start < 0:
                self._keep_header_prefix()
                break
            if start:
                self._discard(start)
            buf = bytes(self._buf)
            verdict, n = self._check(buf)
            if verdict is Verdict.NEED_MORE:
                if len(self._buf) > self.max_buffer:
                    self._discard(1)
                    continue
                break
            if verdict is Verdict.OK:
                try:
                    packet = self._decode(buf[:n])
                except ServoCorruptPacket:
                    self._discard(1)
                    continue
                del self._buf[:n]
                out.append(packet)
            else:
                self._discard(1)
        return out

    def needed(self) -> int:
        """How many more bytes at least complete the next frame (at least 1): a read size hint."""
        buf = bytes(self._buf)
        if buf.startswith(self.header):
            total = self._frame_length_hint(buf)
            if total is not None and total > len(buf):
                return total - len(buf)
        return max(1, self.min_frame - len(buf))


def check_id(servo_id: int, top: int, family: str = "Dynamixel") -> None:
    """ValueError unless ``0 <= servo_id <= top``."""
    if not 0 <= servo_id <= top:
        raise ConfigurationError(f"{family} id {servo_id} out of range 0..{top}")


def sync_write_params(head: bytes, length: int, data: Mapping[int, bytes], max_id: int,
                      family: str = "Dynamixel") -> bytes:
    """SYNC WRITE parameters: ``head`` (address and length fields), then id + ``length``
    bytes for each servo of ``data``."""
    params = bytearray(head)
    for servo_id, chunk in data.items():
        check_id(servo_id, max_id, family)
        if len(chunk) != length:
            raise ConfigurationError(f"sync write: id {servo_id} has {len(chunk)} bytes, expected {length}")
        params.append(servo_id)
        params += chunk
    return bytes(params)


def le_bytes(value: int, size: int) -> bytes:
    """``value`` as ``size`` little-endian bytes (two's complement if negative)."""
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
