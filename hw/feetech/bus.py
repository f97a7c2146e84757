"""A Feetech STS bus: :class:`~hw.dynamixel.bus.DynamixelBus` with Feetech's differences.

Transactions, timeouts, retries and errors are the Dynamixel bus's (protocol 1.0
framing). Feetech differs in three places: the model number PING reports is read
at address 3, SYNC READ exists, and the status error bits have other meanings.
"""

from __future__ import annotations

from collections.abc import Iterable

from hw.dynamixel.bus import DynamixelBus, SerialLike
from hw.feetech import protocol

MODEL_NUMBER_ADDRESS = 3


class FeetechBus(DynamixelBus):
    """Transactions with the Feetech servos on one serial port (default 1 Mbit/s)."""

    def __init__(self, port: SerialLike, timeout: float = 0.05, retries: int = 2) -> None:
        super().__init__(port, protocol=1, timeout=timeout, retries=retries)
        self._p = protocol

    @classmethod
    def open(cls, device: str, baudrate: int = 1_000_000, protocol: int = 1,
             timeout: float = 0.05, retries: int = 2, raise_on_alert: bool = True) -> FeetechBus:
        """Open serial ``device`` at ``baudrate`` bit/s with pyserial."""
        import serial  # optional dependency: only needed for real hardware

        return cls(serial.Serial(device, baudrate=baudrate, timeout=timeout), timeout=timeout,
                   retries=retries)

    def ping(self, servo_id: int) -> int:
        """PING ``servo_id``; return its model number (777 for an STS3215)."""
        self._transact(protocol.ping_packet(servo_id), "PING (Feetech)", [servo_id], 0)
        return int.from_bytes(self.read(servo_id, MODEL_NUMBER_ADDRESS, 2), "little")

    def sync_read(self, address: int, length: int, ids: Iterable[int]) -> dict[int, bytes]:
        """SYNC READ ``length`` bytes at ``address`` of each of ``ids``."""
        ids = list(dict.fromkeys(ids))
        got = self._transact(protocol.sync_read_packet(address, length, ids),
                             f"SYNC READ {length} byte(s) at {address}", ids, length)
        return {i: got[i].data for i in ids}
