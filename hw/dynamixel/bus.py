"""A Dynamixel bus over a serial port: transactions with timeouts, retries and clear errors.

:class:`DynamixelBus` speaks protocol 1.0 or 2.0 over any pyserial-like object
(``write``, ``read``, ``reset_input_buffer`` and a ``timeout`` attribute in
seconds), so tests inject a fake. Servos are assumed to answer every
instruction addressed to them alone (Status Return Level 2, the factory
default); broadcasts and SYNC WRITE get no answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Protocol

from hw.dynamixel import protocol1, protocol2
from hw.dynamixel.errors import ServoCorruptPacket, ServoStatusError, ServoTimeout
from hw.dynamixel.packets import FrameParser, StatusPacket

__all__ = ["DynamixelBus", "SerialLike"]


class SerialLike(Protocol):
    """What the bus needs of a serial port (a subset of :class:`serial.Serial`)."""

    timeout: float | None

    def write(self, data: bytes) -> int | None:
        """Send ``data``."""

    def read(self, size: int = 1) -> bytes:
        """Return up to ``size`` bytes, fewer (maybe none) once ``timeout`` s have passed."""

    def reset_input_buffer(self) -> None:
        """Drop unread received bytes."""


class DynamixelBus:
    """Transactions with the Dynamixel servos on one serial port.

    Parameters
    ----------
    port:
        pyserial-like port, already open at the servos' baud rate.
    protocol:
        1 or 2 (protocol 1.0 or 2.0).
    timeout:
        seconds to wait for each expected status packet.
    retries:
        extra attempts after a silent servo, a corrupt reply, or a servo reporting
        that it received a corrupt instruction (CRC/checksum error).
    raise_on_alert:
        protocol 2.0: raise :class:`ServoStatusError` when a status packet has only the
        hardware alert bit set (the instruction was executed, but the servo is in
        a hardware-error state, typically torque off after an overload).
    """

    def __init__(self, port: SerialLike, protocol: int = 2, timeout: float = 0.05, retries: int = 2,
                 raise_on_alert: bool = True) -> None:
        if protocol not in (1, 2):
            raise ValueError(f"Dynamixel protocol must be 1 or 2, got {protocol!r}")
        if timeout <= 0 or retries < 0:
            raise ValueError(f"need timeout > 0 s and retries >= 0, got {timeout}, {retries}")
        self.port = port
        self.protocol = protocol
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.raise_on_alert = raise_on_alert
        self._p: ModuleType = protocol2 if protocol == 2 else protocol1
        self._parser: FrameParser = self._p.StreamParser()
        self.port.timeout = self.timeout

    @classmethod
    def open(cls, device: str, baudrate: int = 57600, protocol: int = 2, timeout: float = 0.05,
             retries: int = 2, raise_on_alert: bool = True) -> DynamixelBus:
        """Open serial ``device`` (e.g. ``/dev/ttyUSB0``) at ``baudrate`` bit/s with pyserial."""
        import serial  # optional dependency: only needed for real hardware

        port = serial.Serial(device, baudrate=baudrate, timeout=timeout)
        return cls(port, protocol=protocol, timeout=timeout, retries=retries,
                   raise_on_alert=raise_on_alert)

    def close(self) -> None:
        """Close the port if it can be closed."""
        close = getattr(self.port, "close", None)
        if close is not None:
            close()

    # -- transactions -----------------------------------------------------------------
    def _error_is_transmission(self, error: int) -> bool:
        """True if ``error`` says the servo received a corrupted instruction (worth resending)."""
        if self.protocol == 2:
            return (error & 0x7F) == 3
        return bool(error & 0x10)

    def _check_error(self, status: StatusPacket, instruction: str) -> None:
        error = status.error
        if self.protocol == 2 and error == protocol2.ALERT_BIT and not self.raise_on_alert:
            return
        if error:
            raise ServoStatusError(status.id, instruction, error, self._p.decode_error(error),
                             alert=self.protocol == 2 and bool(error & protocol2.ALERT_BIT))

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
            while len(got) < len(ids) and time.monotonic() < deadline:
                chunk = self.port.read(self._parser.needed())
                if not chunk:
                    break
                for packet in self._parser.feed(chunk):
                    if packet.raw == tx or packet.id not in ids or packet.id in got:
                        continue  # our own echo on a half-duplex adapter, or another servo
                    if self.protocol == 2 and packet.code != protocol2.Instruction.STATUS:
                        continue  # an instruction packet from another master
                    try:
                        status = self._p.to_status(packet)
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
            if len(got) == len(ids):
                resend = [s for s in got.values() if self._error_is_transmission(s.error)]
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
                f"Dynamixel id {', '.join(map(str, missing))}: corrupt reply to {instruction} "
                f"after {attempts} attempt(s): {corrupt}")
        raise ServoTimeout(missing, instruction, attempts, self.timeout)

    # -- instructions -------------------------------------------------------------------
    def ping(self, servo_id: int) -> int:
        """PING ``servo_id``; return its model number (e.g. 1200 for an XL330-M288)."""
        name = f"PING (protocol {self.protocol}.0)"
        if self.protocol == 2:
            status = self._transact(protocol2.ping_packet(servo_id), name, [servo_id], 3)[servo_id]
            return int.from_bytes(status.data[:2], "little")
        self._transact(protocol1.ping_packet(servo_id), name, [servo_id], 0)
        return int.from_bytes(self.read(servo_id, 0, 2), "little")

    def read(self, servo_id: int, address: int, length: int) -> bytes:
        """READ ``length`` bytes at control-table ``address`` of ``servo_id``."""
        tx = self._p.read_packet(servo_id, address, length)
        name = f"READ {length} byte(s) at {address}"
        return self._transact(tx, name, [servo_id], length)[servo_id].data

    def write(self, servo_id: int, address: int, data: bytes) -> None:
        """WRITE ``data`` at control-table ``address`` of ``servo_id`` (no answer awaited if broadcast)."""
        tx = self._p.write_packet(servo_id, address, bytes(data))
        ids = [] if servo_id == self._p.BROADCAST_ID else [servo_id]
        self._transact(tx, f"WRITE {len(data)} byte(s) at {address}", ids, 0)

    def sync_read(self, address: int, length: int, ids: Iterable[int]) -> dict[int, bytes]:
        """SYNC READ (protocol 2.0 only) ``length`` bytes at ``address`` of each of ``ids``."""
        if self.protocol != 2:
            raise NotImplementedError("SYNC READ exists only in protocol 2.0; use read() per servo")
        ids = list(dict.fromkeys(ids))
        tx = protocol2.sync_read_packet(address, length, ids)
        got = self._transact(tx, f"SYNC READ {length} byte(s) at {address}", ids, length)
        return {i: got[i].data for i in ids}

    def sync_write(self, address: int, length: int, data: Mapping[int, bytes]) -> None:
        """SYNC WRITE ``data[id]`` (``length`` bytes each) at ``address``; servos do not answer."""
        self._transact(self._p.sync_write_packet(address, length, data), "SYNC WRITE", [], None)

    def reboot(self, servo_id: int) -> None:
        """REBOOT (protocol 2.0 only) ``servo_id``; clears a hardware-error shutdown."""
        if self.protocol != 2:
            raise NotImplementedError("REBOOT is not available in protocol 1.0 (MX/AX firmware)")
        ids = [] if servo_id == protocol2.BROADCAST_ID else [servo_id]
        self._transact(protocol2.reboot_packet(servo_id), "REBOOT", ids, 0)
