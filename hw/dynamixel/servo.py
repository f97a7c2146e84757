"""A Dynamixel servo for the bench recorder: the register-level adapter, opened and identified."""

from __future__ import annotations

from frictionsim.errors import ConfigurationError
from frictionsim.hw.dynamixel import control_tables as ct
from frictionsim.hw.dynamixel.bus import DynamixelBus
from frictionsim.hw.serialbus.registers import ControlTable
from frictionsim.hw.serialbus.servo import RegisterServo, find_table, hardware_of, motor_of


class DynamixelServo(RegisterServo):
    """One Dynamixel servo with id ``servo_id`` on ``bus``, described by control ``table``.

    ``motor`` is the frictionsim actuator name written to the logs (default: the
    actuator declaring the table's model number).
    """

    def __init__(self, bus: DynamixelBus, table: ControlTable, servo_id: int = 1,
                 motor: str | None = None) -> None:
        super().__init__(bus, table, servo_id, motor or motor_of(table, "dynamixel"))

    @classmethod
    def open(cls, device: str, motor: str, servo_id: int = 1, protocol: int | None = None,
             baudrate: int | None = None, timeout: float = 0.05, retries: int = 2
             ) -> DynamixelServo:
        """Open ``device`` and check with a PING that servo ``servo_id`` is a ``motor``.

        Protocol, baud rate, allowed ids and model numbers come from the actuator's
        declaration (its ``[hardware]`` table); ``protocol`` and ``baudrate`` override.
        """
        hw = hardware_of(motor, "dynamixel", servo_id)
        protocol = protocol or hw.protocols[0]
        if protocol not in hw.protocols:
            raise ConfigurationError(f"{motor} speaks Dynamixel protocol "
                                     f"{' or '.join(f'{p}.0' for p in hw.protocols)}, not {protocol}.0")
        bus = DynamixelBus.open(device, baudrate or hw.baudrate, protocol=protocol,
                                timeout=timeout, retries=retries)
        try:
            number = bus.ping(servo_id)
            table = find_table(ct.TABLES, number, f"{device}: id {servo_id}", hw.model_numbers,
                               motor)
            if table.protocol != protocol:
                raise ConfigurationError(f"{device}: id {servo_id} is a {table.model}, whose table is "
                                         f"for protocol {table.protocol}.0, not {protocol}.0")
        except BaseException:
            bus.close()
            raise
        return cls(bus, table, servo_id, motor)
