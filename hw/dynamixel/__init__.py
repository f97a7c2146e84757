"""Dynamixel servos over a serial port: protocols 1.0 and 2.0, their bus, control tables.

- :mod:`frictionsim.hw.dynamixel.protocol2`, :mod:`frictionsim.hw.dynamixel.protocol1`: packet building,
  status parsing and the two dialects (pure functions, no I/O);
- :mod:`frictionsim.hw.dynamixel.bus`: :class:`DynamixelBus`, the shared serial bus speaking them;
- :mod:`frictionsim.hw.dynamixel.control_tables`: register addresses of each model;
- :mod:`frictionsim.hw.dynamixel.servo`: :class:`DynamixelServo` for the bench recorder.

Framing, registers, errors and the transaction logic are shared with Feetech in
:mod:`frictionsim.hw.serialbus`.
"""

from frictionsim.hw.dynamixel.bus import DynamixelBus
from frictionsim.hw.serialbus.bus import SerialLike
from frictionsim.hw.serialbus.errors import BusError, ServoCorruptPacket, ServoStatusError, ServoTimeout

__all__ = [
    "BusError",
    "DynamixelBus",
    "SerialLike",
    "ServoCorruptPacket",
    "ServoStatusError",
    "ServoTimeout",
]
