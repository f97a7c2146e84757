"""A Feetech STS servo for the bench recorder: the register-level adapter, opened and identified."""

from __future__ import annotations

from frictionsim.hw.feetech.bus import FeetechBus
from frictionsim.hw.feetech.control_table import STS3215, TABLES
from frictionsim.hw.serialbus.registers import ControlTable
from frictionsim.hw.serialbus.servo import RegisterServo, find_table, hardware_of


class FeetechServo(RegisterServo):
    """One Feetech servo on a :class:`FeetechBus` (default: an STS3215 with id 1). The
    configuration unlocks and relocks the EEPROM around the P-gain write."""

    def __init__(self, bus: FeetechBus, servo_id: int = 1, table: ControlTable = STS3215,
                 motor: str = "sts3215") -> None:
        super().__init__(bus, table, servo_id, motor)

    @classmethod
    def open(cls, device: str, motor: str = "sts3215", servo_id: int = 1,
             baudrate: int | None = None, timeout: float = 0.05, retries: int = 2
             ) -> FeetechServo:
        """Open ``device`` and check with a PING that servo ``servo_id`` is a ``motor``."""
        hw = hardware_of(motor, "feetech", servo_id)
        bus = FeetechBus.open(device, baudrate or hw.baudrate, timeout=timeout, retries=retries)
        try:
            table = find_table(TABLES, bus.ping(servo_id), f"{device}: Feetech id {servo_id}",
                               hw.model_numbers, motor)
        except BaseException:
            bus.close()
            raise
        return cls(bus, servo_id, table, motor)
