"""Choose the virtual device (the servo's firmware and protocol) for an actuator name."""

from __future__ import annotations

from hw.dynamixel import control_tables as ct
from hw.dynamixel.servo import MODELS
from hw.virtual_servo.dynamixel_device import DynamixelDevice
from hw.virtual_servo.joint import SimulatedJoint
from hw.virtual_servo.pty_link import Device


def make_device(motor: str, joint: SimulatedJoint, servo_id: int = 1, protocol: int = 2) -> Device:
    """The firmware of ``motor`` (``xl330``, ``mx64``, ``mx106``, ``xl320``, ``sts3215``)
    on ``joint``; Dynamixel servos answer protocol ``protocol`` (1 or 2)."""
    if motor in MODELS:
        return DynamixelDevice(ct.table_for(MODELS[motor], protocol), joint, servo_id)
    if motor == "sts3215":
        from hw.feetech.control_table import STS3215

        return DynamixelDevice(STS3215, joint, servo_id)
    raise ValueError(f"no virtual device for motor {motor!r}")
