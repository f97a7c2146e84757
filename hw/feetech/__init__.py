"""Feetech STS serial bus servos (STS3215): the checksum framing Dynamixel 1.0 uses, with
Feetech's instructions, error bits and sign-magnitude fields.

- :mod:`hw.feetech.protocol`: instruction set, SYNC READ, error bits, the dialect;
- :mod:`hw.feetech.control_table`: the STS3215 control table and its units;
- :mod:`hw.feetech.bus`: :class:`FeetechBus`, the shared serial bus speaking Feetech;
- :mod:`hw.feetech.servo`: :class:`FeetechServo` for the bench recorder.
"""

from hw.feetech.bus import FeetechBus
from hw.feetech.control_table import STS3215
from hw.feetech.servo import FeetechServo

__all__ = ["STS3215", "FeetechBus", "FeetechServo"]
