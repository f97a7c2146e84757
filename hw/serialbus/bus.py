"""A serial servo bus: transactions with timeouts, retries and clear errors, for any dialect.

:class:`SerialBus` speaks a :class:`~frictionsim.hw.serialbus.dialect.Dialect` (Dynamixel 1.0
or 2.0, Feetech STS) over any pyserial-like object (``write``, ``read``,
``reset_input_buffer`` and a ``timeout`` attribute in seconds), so tests inject a
fake. Servos are assumed to answer every instruction addressed to them alone
(Status Return Level 2, the factory default); broadcasts and SYNC WRITE get no
answer. :class:`frictionsim.hw.dynamixel.bus.DynamixelBus` and :class:`frictionsim.hw.feetech.bus.FeetechBus`
are the two families' buses.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus.dialect import Dialect
from frictionsim.hw.serialbus.errors import ServoCorruptPacket, ServoStatusError, ServoTimeout
from frictionsim.hw.serialbus.framing import FrameParser, StatusPacket

__all__ = ["SerialBus", "SerialLike"]


class SerialLike(Protocol):
    """What the bus needs of a serial port (a subset of :class:`serial.Serial`)."""

    timeout: float | None

    def write(self, data: bytes) -> int | None:
        """Send ``data``."""

    def read(self, size: int = 1) -> bytes:
        """Return up to ``size`` bytes, fewer (maybe none) once ``timeout`` s have passed."""

    def reset_input_buffer(self) -> None:
        """Drop unread received bytes."""


class SerialBus:
    """Transactions with the servos of one serial port that speak ``dialect``.

    Parameters
    ----------
    port:
        pyserial-like port, already open at the servos' baud rate.
    dialect:
        the protocol (:class:`~frictionsim.hw.serialbus.dialect.Dialect`).
    timeout:
        seconds to wait for each expected status packet.
    retries:
        extra attempts after a silent servo, a corrupt reply, or a servo reporting
        that it received a corrupt instruction.
    raise_on_alert:
        raise :class:`ServoStatusError` when a status packet has only the hardware
        alert bit set (Dynamixel 2.0: the instruction was executed, but the servo is
        in a hardware-error state, typically torque off after an overload).
    """

    def __init__(self, port: SerialLike, dialect: Dialect, timeout: float = 0.05,
                 retries: int = 2, raise_on_alert: bool = True) -> None:
        if timeout <= 0 or retries < 0:
            raise ConfigurationError(f"need timeout > 0 s and retries >= 0, got {timeout}, {retries}")
        self.port = port
        self.dialect = dialect
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.raise_on_alert = raise_on_alert
        self._parser: FrameParser = dialect.parser()
        self.port.timeout = self.timeout

    @property
    def protocol(self) -> int:
        """The framing version the servos speak (1 or 2), as control tables state it."""
        return self.dialect.version

    def close(self) -> None:
        """Close the port if it can be closed."""
        close = getattr(self.port, "close", None)
        if close is not None:
            close()

    # -- transactions -----------------------------------------------------------------
    def _check_error(self, status: StatusPacket, instruction: str) -> None:
        error, d = status.error, self.dialect
        if not error or (d.alert_only(error) and not self.raise_on_alert):
            return
        raise ServoStatusError(status.id, instruction, error, d.decode_error(error),
                               alert=d.is_alert(error), family=d.family)

    def _transact(self, tx: bytes, instruction: str, ids: list[int], data_length: int | None
                  ) -> dict[int, StatusPacket]:
        """Send ``tx`` and collect one status packet from each of ``ids``.

        Status packets whose data is not ``data_length`` bytes (when given) are
        treated as corrupt. Returns the status packets by id.
        """
        if not ids:
            self.port.reset_input_buffer()
            self.port.write(tx)
            return {}
        attempts = 1 + self.retries
        corrupt: str | None = None
        got: dict[int, StatusPacket] = {}
        for attempt in range(attempts):
            self.port.reset_input_buffer()
            self._parser.reset()
            self._parser.discarded = 0
            self.port.write(tx)
            got = {}
            bad_reply = False
            deadline = time.monotonic() + self.timeout * len(ids)
            # the deadline is checked after each read, never before the first, and not within a
            # packet: a host that stalls past it (a busy machine) still takes the answer already
            # waiting in the port (the port's own read timeout bounds each read)
            while len(got) < len(ids):
                chunk = self.port.read(self._parser.needed())
                if not chunk:
                    break
                for packet in self._parser.feed(chunk):
                    if packet.raw == tx or packet.id not in ids or packet.id in got:
                        continue  # our own echo on a half-duplex adapter, or another servo
                    if not self.dialect.is_status(packet):
                        continue  # an instruction packet from another master
                    try:
                        status = self.dialect.to_status(packet)
                    except ServoCorruptPacket as exc:
                        bad_reply, corrupt = True, str(exc)
                        continue
                    if data_length is not None and len(status.data) != data_length \
                            and not status.error:  # an error status carries no data
                        bad_reply = True
                        corrupt = (f"id {status.id} answered {instruction} with {len(status.data)} "
                                   f"data bytes, expected {data_length}")
                        continue
                    got[status.id] = status
                if not self._parser.buffered and time.monotonic() >= deadline:
                    break
            if len(got) == len(ids):
                resend = [s for s in got.values() if self.dialect.is_transmission_error(s.error)]
                if not resend:
                    for status in got.values():
                        self._check_error(status, instruction)
                    return got
                if attempt == attempts - 1:
                    self._check_error(resend[0], instruction)
                continue
            if self._parser.discarded or self._parser.buffered:
                bad_reply = True
                corrupt = (f"{self._parser.discarded} garbage byte(s) and {self._parser.buffered} "
                           f"byte(s) of an incomplete packet in answer to {instruction}")
            if not bad_reply:
                corrupt = None
        missing = [i for i in ids if i not in got]
        if corrupt is not None:
            raise ServoCorruptPacket(
                f"{self.dialect.family} id {', '.join(map(str, missing))}: corrupt reply to "
                f"{instruction} after {attempts} attempt(s): {corrupt}")
        raise ServoTimeout(missing, instruction, attempts, self.timeout, self.dialect.family)

    # -- instructions -------------------------------------------------------------------
    def ping(self, servo_id: int) -> int:
        """PING ``servo_id``; return its model number (e.g. 1200 for an XL330-M288)."""
        d = self.dialect
        status = self._transact(d.ping_packet(servo_id), f"PING ({d.name})", [servo_id],
                                d.ping_data_length)[servo_id]
        return d.model_number(self, servo_id, status)

    def read(self, servo_id: int, address: int, length: int) -> bytes:
        """READ ``length`` bytes at control-table ``address`` of ``servo_id``."""
        tx = self.dialect.read_packet(servo_id, address, length)
        name = f"READ {length} byte(s) at {address}"
        return self._transact(tx, name, [servo_id], length)[servo_id].data

    def write(self, servo_id: int, address: int, data: bytes) -> None:
        """WRITE ``data`` at control-table ``address`` of ``servo_id`` (no answer awaited if broadcast)."""
        tx = self.dialect.write_packet(servo_id, address, bytes(data))
        ids = [] if servo_id == self.dialect.broadcast_id else [servo_id]
        self._transact(tx, f"WRITE {len(data)} byte(s) at {address}", ids, 0)

    def sync_read(self, address: int, length: int, ids: Iterable[int]) -> dict[int, bytes]:
        """SYNC READ ``length`` bytes at ``address`` of each of ``ids`` (where the dialect has it)."""
        ids = list(dict.fromkeys(ids))
        tx = self.dialect.sync_read_packet(address, length, ids)
        got = self._transact(tx, f"SYNC READ {length} byte(s) at {address}", ids, length)
        return {i: got[i].data for i in ids}

    def sync_write(self, address: int, length: int, data: Mapping[int, bytes]) -> None:
        """SYNC WRITE ``data[id]`` (``length`` bytes each) at ``address``; servos do not answer."""
        self._transact(self.dialect.sync_write_packet(address, length, data), "SYNC WRITE", [],
                       None)

    def reboot(self, servo_id: int) -> None:
        """REBOOT ``servo_id`` (where the dialect has it); clears a hardware-error shutdown."""
        ids = [] if servo_id == self.dialect.broadcast_id else [servo_id]
        self._transact(self.dialect.reboot_packet(servo_id), "REBOOT", ids, 0)
