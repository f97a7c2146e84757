"""Exceptions of the serial servo buses (Dynamixel 1.0 and 2.0, Feetech).

All derive from :class:`frictionsim.hw.servo.ServoError`, so the bench recorder can catch one
type whatever the bus. Messages name the bus family ("Dynamixel id 3 …",
"Feetech id 1 …").
"""

from __future__ import annotations

from collections.abc import Sequence

from frictionsim.hw.servo import ServoError


class BusError(ServoError):
    """Any failure talking to a servo on a serial bus."""


class ServoTimeout(BusError):
    """No (valid) status packet arrived from ``ids`` in answer to ``instruction``."""

    def __init__(self, ids: Sequence[int], instruction: str, attempts: int, timeout: float,
                 family: str = "Dynamixel") -> None:
        self.ids = tuple(ids)
        self.instruction = instruction
        self.attempts = attempts
        self.timeout = timeout
        who = ", ".join(str(i) for i in self.ids)
        super().__init__(
            f"{family} id {who} did not answer {instruction} "
            f"({attempts} attempt(s), {timeout:.3g} s each): servo missing, unpowered, "
            f"wrong id, baud rate or protocol?"
        )


class ServoCorruptPacket(BusError, ValueError):
    """Bytes that are not a valid packet (bad header, length, CRC/checksum or contents)."""


class ServoStatusError(BusError):
    """A servo answered with a status packet whose error field is non-zero.

    ``error`` is the raw error byte, ``errors`` its decoded names (e.g. ``("data range",)``
    or ``("overload", "overheating")``), ``alert`` the protocol-2.0 hardware alert bit.
    """

    def __init__(self, servo_id: int, instruction: str, error: int, errors: Sequence[str],
                 alert: bool = False, family: str = "Dynamixel") -> None:
        self.servo_id = servo_id
        self.instruction = instruction
        self.error = error
        self.errors = tuple(errors)
        self.alert = alert
        names = ", ".join(self.errors) or "none"
        super().__init__(
            f"{family} id {servo_id} reported error 0x{error:02X} ({names}) to {instruction}"
        )
