"""Dynamixel servos over a serial port: protocols 1.0 and 2.0, their bus, control tables.

- :mod:`hw.dynamixel.protocol2`, :mod:`hw.dynamixel.protocol1`: packet building,
  status parsing and the two dialects (pure functions, no I/O);
- :mod:`hw.dynamixel.bus`: :class:`DynamixelBus`, the shared serial bus speaking them;
- :mod:`hw.dynamixel.control_tables`: register addresses of each model;
- :mod:`hw.dynamixel.servo`: :class:`DynamixelServo` for the bench recorder.

Framing, registers, errors and the transaction logic are shared with Feetech in
:mod:`hw.serialbus`.
"""

from hw.dynamixel.bus import DynamixelBus
from hw.serialbus.bus import SerialLike
from hw.serialbus.errors import BusError, ServoCorruptPacket, ServoStatusError, ServoTimeout

__all__ = [
    "BusError",
    "DynamixelBus",
    "SerialLike",
    "ServoCorruptPacket",
    "ServoStatusError",
    "ServoTimeout",
]
