"""Dynamixel servos over a serial port: protocols 1.0 and 2.0, a bus, control tables.

- :mod:`hw.dynamixel.protocol2`, :mod:`hw.dynamixel.protocol1`: packet building,
  status parsing, stream parsing (pure functions, no I/O);
- :mod:`hw.dynamixel.bus`: :class:`DynamixelBus`, transactions over a pyserial-like port;
- :mod:`hw.dynamixel.control_tables`: register addresses and unit conversions.
"""

from hw.dynamixel.bus import DynamixelBus, SerialLike
from hw.dynamixel.errors import DynamixelError, ServoCorruptPacket, ServoStatusError, ServoTimeout

__all__ = [
    "DynamixelBus",
    "DynamixelError",
    "SerialLike",
    "ServoCorruptPacket",
    "ServoStatusError",
    "ServoTimeout",
]
