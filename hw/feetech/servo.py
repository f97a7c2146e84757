"""A Feetech STS3215 as the bench recorder sees it (:class:`hw.servo.Servo`)."""

from __future__ import annotations

from hw.dynamixel.errors import DynamixelError
from hw.dynamixel.servo import DynamixelServo
from hw.feetech.bus import FeetechBus
from hw.feetech.control_table import STS3215


class FeetechServo(DynamixelServo):
    """One STS3215 on a :class:`FeetechBus`: same register-level logic as the Dynamixel
    adapter (one sensor-block READ per tick), with the Feetech table and EEPROM lock."""

    def __init__(self, bus: FeetechBus, servo_id: int = 1) -> None:
        super().__init__(bus, STS3215, servo_id, motor="sts3215")

    @classmethod
    def open(cls, device: str, motor: str = "sts3215", servo_id: int = 1, protocol: int = 1,
             baudrate: int | None = None, timeout: float = 0.05, retries: int = 2
             ) -> FeetechServo:
        """Open ``device`` (default 1 Mbit/s) and check with a PING that ``servo_id`` is an STS3215."""
        if motor != "sts3215":
            raise ValueError(f"FeetechServo drives the sts3215, not {motor!r}")
        bus = FeetechBus.open(device, baudrate or 1_000_000, timeout=timeout, retries=retries)
        try:
            number = bus.ping(servo_id)
            if number != STS3215.model_number:
                raise DynamixelError(f"{device}: Feetech id {servo_id} reports model number "
                                     f"{number}, not {STS3215.model_number} (STS3215)")
        except BaseException:
            bus.close()
            raise
        return cls(bus, servo_id)
