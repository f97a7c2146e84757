"""Exceptions raised by the Dynamixel drivers.

All derive from :class:`hw.servo.ServoError`, so the bench recorder can catch one
type whatever the bus.
"""

from __future__ import annotations

from collections.abc import Sequence

from hw.servo import ServoError as _BaseServoError


class DynamixelError(_BaseServoError):
    """Any failure talking to a Dynamixel servo."""


class ServoTimeout(DynamixelError):
    """No (valid) status packet arrived from ``ids`` in answer to ``instruction``."""

    def __init__(self, ids: Sequence[int], instruction: str, attempts: int, timeout: float) -> None:
        self.ids = tuple(ids)
        self.instruction = instruction
        self.attempts = attempts
        self.timeout = timeout
        who = ", ".join(str(i) for i in self.ids)
        super().__init__(
            f"Dynamixel id {who} did not answer {instruction} "
            f"({attempts} attempt(s), {timeout:.3g} s each): servo missing, unpowered, "
            f"wrong id, baud rate or protocol?"
        )


class ServoCorruptPacket(DynamixelError, ValueError):
    """Bytes that are not a valid packet (bad header, length, CRC/checksum or contents)."""


class ServoStatusError(DynamixelError):
    """A servo answered with a status packet whose error field is non-zero.

    ``error`` is the raw error byte, ``errors`` its decoded names (e.g. ``("data range",)``
    or ``("overload", "overheating")``), ``alert`` the protocol-2.0 hardware alert bit.
    """

    def __init__(self, servo_id: int, instruction: str, error: int, errors: Sequence[str],
                 alert: bool = False) -> None:
        self.servo_id = servo_id
        self.instruction = instruction
        self.error = error
        self.errors = tuple(errors)
        self.alert = alert
        names = ", ".join(self.errors) or "none"
        super().__init__(
            f"Dynamixel id {servo_id} reported error 0x{error:02X} ({names}) to {instruction}"
        )
