"""What a serial bus needs to know of the protocol its servos speak: one class per dialect.

:class:`frictionsim.hw.serialbus.bus.SerialBus` does the transactions (timeouts, retries, echo
and garbage handling) the same way for every dialect and asks its :class:`Dialect`
for everything that differs: packet building, status parsing, error bits, which
errors are worth a resend, how a PING reveals the model number, and which
instructions exist. The dialects are siblings: Dynamixel 2.0
(:class:`frictionsim.hw.dynamixel.protocol2.Dynamixel2`), Dynamixel 1.0
(:class:`frictionsim.hw.dynamixel.protocol1.Dynamixel1`) and Feetech STS
(:class:`frictionsim.hw.feetech.protocol.Feetech`), the last two sharing the checksum framing
of :mod:`frictionsim.hw.serialbus.checksum_framing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from frictionsim.hw.serialbus.framing import FrameParser, Packet, StatusPacket


class Reader(Protocol):
    """What a dialect may ask of the bus to learn a model number: one READ."""

    def read(self, servo_id: int, address: int, length: int) -> bytes:
        """READ ``length`` bytes at ``address`` of ``servo_id``."""


class Dialect:
    """One serial servo protocol. Subclasses fill in the class attributes and methods."""

    #: Readable name, e.g. "Dynamixel 2.0"; ``family`` names the servos in messages.
    name = ""
    family = ""
    #: Framing version (1: checksum frames, 2: Dynamixel 2.0 CRC frames); a control
    #: table states the version it is for.
    version = 0
    max_id = 0
    broadcast_id = 0xFE
    #: Data bytes of a PING's status packet.
    ping_data_length = 0

    def parser(self) -> FrameParser:
        raise NotImplementedError

    def ping_packet(self, servo_id: int) -> bytes:
        raise NotImplementedError

    def read_packet(self, servo_id: int, address: int, length: int) -> bytes:
        raise NotImplementedError

    def write_packet(self, servo_id: int, address: int, data: bytes) -> bytes:
        raise NotImplementedError

    def sync_write_packet(self, address: int, length: int, data: Mapping[int, bytes]) -> bytes:
        raise NotImplementedError

    def sync_read_packet(self, address: int, length: int, ids: Iterable[int]) -> bytes:
        raise NotImplementedError(f"SYNC READ does not exist in {self.name}; read each servo")

    def reboot_packet(self, servo_id: int) -> bytes:
        raise NotImplementedError(f"REBOOT is not available in {self.name}")

    def to_status(self, packet: Packet) -> StatusPacket:
        raise NotImplementedError

    def is_status(self, packet: Packet) -> bool:
        """False for a packet that is another master's instruction, not a servo's answer."""
        return True

    def decode_error(self, error: int) -> tuple[str, ...]:
        raise NotImplementedError

    def is_transmission_error(self, error: int) -> bool:
        """True if ``error`` says the servo received a corrupted instruction (worth resending)."""
        return False

    def is_alert(self, error: int) -> bool:
        """True if ``error`` carries a hardware-alert flag (Dynamixel 2.0)."""
        return False

    def alert_only(self, error: int) -> bool:
        """True if ``error`` is the hardware-alert flag and nothing else: the instruction was
        executed, but the servo is in a hardware-error state."""
        return False

    def model_number(self, bus: Reader, servo_id: int, ping: StatusPacket) -> int:
        """The model number of ``servo_id`` after its PING answered ``ping``."""
        raise NotImplementedError
