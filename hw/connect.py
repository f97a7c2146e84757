"""Open the servo of a frictionsim actuator on a port: the one entry point of the recorder.

Which driver drives an actuator is data: the ``family`` of its declaration's
``[hardware]`` table (docs/model.md §11). ``dynamixel`` and ``feetech`` servos sit on a serial
port (``/dev/ttyUSB0``); ``ethercat`` drives (the eRob) on a network interface
(``--port eth0``).
"""

from __future__ import annotations

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.hw.servo import BenchServo

FAMILIES = ("dynamixel", "feetech", "ethercat")


def motors() -> list[str]:
    """The actuators that can be driven: those whose declaration names a bus family."""
    return [name for name, act in schema.ACTUATORS.items() if act.hardware.family in FAMILIES]


def open_servo(motor: str, port: str, servo_id: int = 1, protocol: int | None = None,
               baudrate: int | None = None, reply_timeout: float | None = None) -> BenchServo:
    """The :class:`~frictionsim.hw.servo.BenchServo` for actuator ``motor`` on ``port`` (a serial device
    path, or a network interface for an EtherCAT drive), checked to answer. ``reply_timeout``:
    seconds a serial servo's reply is waited for (None: the bus's default)."""
    family = schema.get_actuator(motor).hardware.family
    if protocol is not None and family != "dynamixel":
        raise ConfigurationError(f"{motor} is a {family or 'non-serial'} servo; --protocol applies to "
                                 "Dynamixel servos")
    if reply_timeout is not None and family not in ("dynamixel", "feetech"):
        raise ConfigurationError(f"{motor} is a {family or 'non-serial'} servo; --reply-timeout applies "
                                 "to serial servos")
    timeout = {} if reply_timeout is None else {"timeout": reply_timeout}
    if family == "dynamixel":
        from frictionsim.hw.dynamixel.servo import DynamixelServo

        return DynamixelServo.open(port, motor, servo_id=servo_id, protocol=protocol,
                                   baudrate=baudrate, **timeout)
    if family == "feetech":
        from frictionsim.hw.feetech.servo import FeetechServo

        return FeetechServo.open(port, motor, servo_id=servo_id, baudrate=baudrate, **timeout)
    if family == "ethercat":
        from frictionsim.hw.ethercat.servo import open_erob

        return open_erob(port, motor, slave=servo_id - 1)
    raise ConfigurationError(f"{motor} cannot be driven: its declaration names no hardware family "
                             f"(one of {', '.join(FAMILIES)})")
