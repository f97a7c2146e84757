"""Open the servo of a frictionsim actuator name on a port: the one entry point of the recorder.

``xl330``, ``mx64``, ``mx106``, ``xl320`` are Dynamixel servos on a serial port
(protocol 2.0 by default; MX firmware may be 1.0); ``sts3215`` is a Feetech servo on a
serial port; ``erob80_100`` and ``erob80_50`` are eRob drives on an EtherCAT network
interface (``--port eth0``).
"""

from __future__ import annotations

from hw.servo import Servo

DYNAMIXEL = ("xl330", "mx64", "mx106", "xl320")
FEETECH = ("sts3215",)
EROB = ("erob80_100", "erob80_50")
MOTORS = DYNAMIXEL + FEETECH + EROB


def open_servo(motor: str, port: str, servo_id: int = 1, protocol: int | None = None,
               baudrate: int | None = None) -> Servo:
    """The :class:`~hw.servo.Servo` for actuator ``motor`` on ``port`` (a serial device
    path, or a network interface for the eRob), checked to answer."""
    if motor in DYNAMIXEL:
        from hw.dynamixel.servo import DynamixelServo

        return DynamixelServo.open(port, motor, servo_id=servo_id, protocol=protocol or 2,
                                   baudrate=baudrate)
    if protocol not in (None, 1) and motor in FEETECH:
        raise ValueError(f"{motor} speaks the Feetech protocol; --protocol applies to Dynamixel")
    if motor in FEETECH:
        from hw.feetech.servo import FeetechServo

        return FeetechServo.open(port, servo_id=servo_id, baudrate=baudrate)
    if motor in EROB:
        from hw.ethercat.servo import open_erob

        return open_erob(port, motor, slave=servo_id - 1)
    raise ValueError(f"unknown motor {motor!r}; known: {', '.join(MOTORS)}")
