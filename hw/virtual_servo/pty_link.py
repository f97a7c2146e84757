"""A pseudo-terminal that a virtual servo answers on, like a USB serial adapter.

:class:`PtyLink` opens a pseudo-terminal pair in raw mode and keeps both ends
open, so clients (pyserial, the official SDKs) may open and close the device
path as often as they like. :meth:`PtyLink.serve` reads the bytes clients
write, finds instruction packets with the device's stream parser and writes
the device's status packets back.
"""

from __future__ import annotations

import os
import select
import threading
import tty
from typing import Protocol

from frictionsim.hw.serialbus.framing import FrameParser, Packet


class Device(Protocol):
    """The firmware side of a servo: a stream parser and an answer for each packet."""

    def describe(self) -> str:
        """Model and protocol, for the banner."""

    def parser(self) -> FrameParser:
        """A parser for the instruction packets of the device's protocol."""

    def handle(self, packet: Packet) -> bytes | None:
        """The reply to ``packet``, or None when the device stays silent."""


class PtyLink:
    """A raw-mode pseudo-terminal; ``path`` is the device clients open (e.g. ``/dev/pts/5``)."""

    def __init__(self, link: str | None = None) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        tty.setraw(self.master)
        self.path = os.ttyname(self._slave)
        self.link = link
        if link is not None:
            if os.path.islink(link):
                os.unlink(link)
            os.symlink(self.path, link)
        self.packets = 0

    def serve(self, device: Device, stop: threading.Event | None = None, poll: float = 0.05) -> None:
        """Answer ``device``'s protocol until ``stop`` is set (or forever)."""
        parser = device.parser()
        stop = stop or threading.Event()
        while not stop.is_set():
            ready, _, _ = select.select([self.master], [], [], poll)
            if not ready:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:  # no client has the device open right now
                stop.wait(poll)
                continue
            for packet in parser.feed(data):
                self.packets += 1
                reply = device.handle(packet)
                if reply:
                    os.write(self.master, reply)

    def close(self) -> None:
        """Close both ends and remove the symbolic link, if any."""
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.link is not None and os.path.islink(self.link):
            os.unlink(self.link)

    def __enter__(self) -> PtyLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
