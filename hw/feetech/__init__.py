"""Feetech STS serial bus servos (STS3215): the checksum framing Dynamixel 1.0 uses, with
Feetech's instructions, error bits and sign-magnitude fields.

- :mod:`frictionsim.hw.feetech.protocol`: instruction set, SYNC READ, error bits, the dialect;
- :mod:`frictionsim.hw.feetech.control_table`: the STS3215 control table and its units;
- :mod:`frictionsim.hw.feetech.bus`: :class:`FeetechBus`, the shared serial bus speaking Feetech;
- :mod:`frictionsim.hw.feetech.servo`: :class:`FeetechServo` for the bench recorder.
"""

from frictionsim.hw.feetech.bus import FeetechBus
from frictionsim.hw.feetech.control_table import STS3215
from frictionsim.hw.feetech.servo import FeetechServo

__all__ = ["STS3215", "FeetechBus", "FeetechServo"]
