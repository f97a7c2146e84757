"""Choose the virtual device (the servo's firmware and protocol) for an actuator name."""

from __future__ import annotations

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus.registers import ControlTable
from frictionsim.hw.virtual_servo.dynamixel_device import DynamixelDevice
from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.hw.virtual_servo.pty_link import Device

#: Serial families the virtual servo can play.
FAMILIES = ("dynamixel", "feetech")


def control_table(motor: str, protocol: int | None = None) -> ControlTable:
    """The control table a ``motor`` answers with: its first declared model number that has a
    table for ``protocol`` (default: its first declared protocol)."""
    hw = schema.get_actuator(motor).hardware
    if hw.family == "dynamixel":
        from frictionsim.hw.dynamixel.control_tables import TABLES
    elif hw.family == "feetech":
        from frictionsim.hw.feetech.control_table import TABLES
    else:
        raise ConfigurationError(f"{motor} has no serial protocol to emulate (its declaration's "
                                 f"hardware family is {hw.family or 'none'}; serial families: "
                                 f"{', '.join(FAMILIES)})")
    protocol = protocol or (hw.protocols[0] if hw.protocols else None)
    for number in hw.model_numbers:
        for table in TABLES:
            if table.model_number == number and protocol in (None, table.protocol):
                return table
    raise ConfigurationError(f"{motor}: no control table for model numbers {list(hw.model_numbers)} "
                             f"with protocol {protocol}")


def make_device(motor: str, joint: SimulatedJoint, servo_id: int = 1,
                protocol: int | None = None) -> Device:
    """The firmware of ``motor`` (any declared Dynamixel or Feetech servo) on ``joint``;
    Dynamixel servos answer ``protocol`` (1 or 2; default: the first the actuator declares)."""
    hw = schema.get_actuator(motor).hardware
    if hw.family == "dynamixel" and protocol is not None and protocol not in hw.protocols:
        raise ConfigurationError(f"{motor} speaks Dynamixel protocol "
                                 f"{' or '.join(f'{p}.0' for p in hw.protocols)}, not {protocol}.0")
    table = control_table(motor, protocol if hw.family == "dynamixel" else None)
    if not hw.ids[0] <= servo_id <= hw.ids[1]:
        raise ConfigurationError(f"{motor}: id {servo_id} out of range {hw.ids[0]}..{hw.ids[1]}")
    return DynamixelDevice(table, joint, servo_id)
