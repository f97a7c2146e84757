"""Opening a serial port with pyserial, an optional dependency (the ``hw`` extra)."""

from __future__ import annotations


def open_serial(device: str, baudrate: int, timeout: float):
    """``serial.Serial(device, baudrate, timeout)``; a clear error when pyserial is missing."""
    try:
        import serial
    except ImportError:
        raise ImportError("talking to a servo needs pyserial: pip install 'frictionsim[hw]'") \
            from None
    return serial.Serial(device, baudrate=baudrate, timeout=timeout)
