"""The Feetech STS bus: a :class:`~frictionsim.hw.serialbus.bus.SerialBus` speaking the Feetech dialect."""

from __future__ import annotations

from frictionsim.hw.feetech.protocol import Feetech
from frictionsim.hw.serialbus.bus import SerialBus, SerialLike
from frictionsim.hw.serialbus.port import open_serial

DIALECT = Feetech()


class FeetechBus(SerialBus):
    """Transactions with the Feetech servos on one serial port (factory rate 1 Mbit/s)."""

    def __init__(self, port: SerialLike, timeout: float = 0.05, retries: int = 2) -> None:
        super().__init__(port, DIALECT, timeout, retries)

    @classmethod
    def open(cls, device: str, baudrate: int = 1_000_000, timeout: float = 0.05,
             retries: int = 2) -> FeetechBus:
        """Open serial ``device`` at ``baudrate`` bit/s with pyserial."""
        return cls(open_serial(device, baudrate, timeout), timeout, retries)
