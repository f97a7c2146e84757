"""The Dynamixel bus: a :class:`~frictionsim.hw.serialbus.bus.SerialBus` speaking protocol 1.0 or 2.0."""

from __future__ import annotations

from frictionsim.errors import ConfigurationError
from frictionsim.hw.dynamixel.protocol1 import Dynamixel1
from frictionsim.hw.dynamixel.protocol2 import Dynamixel2
from frictionsim.hw.serialbus.bus import SerialBus, SerialLike
from frictionsim.hw.serialbus.port import open_serial

DIALECTS = {1: Dynamixel1(), 2: Dynamixel2()}


class DynamixelBus(SerialBus):
    """Transactions with the Dynamixel servos on one serial port (protocol 1.0 or 2.0).

    SYNC READ and REBOOT exist in protocol 2.0 only (``NotImplementedError`` on 1.0).
    """

    def __init__(self, port: SerialLike, protocol: int = 2, timeout: float = 0.05,
                 retries: int = 2, raise_on_alert: bool = True) -> None:
        if protocol not in DIALECTS:
            raise ConfigurationError(f"Dynamixel protocol must be 1 or 2, got {protocol!r}")
        super().__init__(port, DIALECTS[protocol], timeout, retries, raise_on_alert)

    @classmethod
    def open(cls, device: str, baudrate: int = 57600, protocol: int = 2, timeout: float = 0.05,
             retries: int = 2, raise_on_alert: bool = True) -> DynamixelBus:
        """Open serial ``device`` (e.g. ``/dev/ttyUSB0``) at ``baudrate`` bit/s with pyserial."""
        return cls(open_serial(device, baudrate, timeout), protocol, timeout, retries,
                   raise_on_alert)
