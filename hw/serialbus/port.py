"""Opening a serial port with pyserial, an optional dependency (the ``hw`` extra).

Every failure of the port itself, when opening it (a path that is not a serial device, a
missing one, no permission) or later (the servo's USB adapter unplugged, a virtual servo
killed mid-recording), becomes a :class:`~frictionsim.hw.serialbus.errors.BusError` naming
the device: the bench recorder then saves what it has and releases what it can, and the
command line says which port failed, never pyserial's traceback.
"""

from __future__ import annotations

import os
import stat

from frictionsim.errors import MissingExtra
from frictionsim.hw.serialbus.errors import BusError


def open_serial(device: str, baudrate: int, timeout: float):
    """``serial.Serial(device, baudrate, timeout)``, wrapped so that its errors name
    ``device``; a clear error when pyserial is missing or ``device`` is not a serial device."""
    try:
        import serial
    except ImportError:
        raise MissingExtra("talking to a servo needs pyserial: pip install 'frictionsim[hw]'") \
            from None
    try:
        mode = os.stat(device).st_mode
    except FileNotFoundError:
        raise BusError(f"{device}: no such serial port") from None
    except OSError as e:
        raise BusError(f"{device}: cannot open the serial port ({e.strerror or e})") from None
    if not stat.S_ISCHR(mode):
        raise BusError(f"{device}: not a serial device (a {_kind(mode)}); give the port the "
                       "servo's USB adapter or virtual servo appears as, e.g. /dev/ttyUSB0")
    try:
        return Port(serial.Serial(device, baudrate=baudrate, timeout=timeout), device)
    except (serial.SerialException, OSError, ValueError) as e:
        raise BusError(f"{device}: cannot open the serial port ({e})") from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "special file"


class Port:
    """A pyserial port whose I/O errors are :class:`BusError` naming its device."""

    def __init__(self, port, device: str) -> None:
        self._port = port
        self.device = device

    def _failed(self, what: str, error: Exception) -> BusError:
        return BusError(f"{self.device}: the serial port failed while {what} ({error}); is the "
                        "servo's adapter still connected?")

    def read(self, size: int = 1) -> bytes:
        try:
            return self._port.read(size)
        except Exception as e:  # pyserial raises SerialException, OSError, TypeError…
            raise self._failed("reading", e) from None

    def write(self, data: bytes) -> int | None:
        try:
            return self._port.write(data)
        except Exception as e:
            raise self._failed("writing", e) from None

    def reset_input_buffer(self) -> None:
        try:
            self._port.reset_input_buffer()
        except Exception as e:
            raise self._failed("clearing its input", e) from None

    def close(self) -> None:
        try:
            self._port.close()
        except Exception:  # closing a port that is already gone: nothing left to release
            pass

    def __getattr__(self, name: str):
        return getattr(self._port, name)
