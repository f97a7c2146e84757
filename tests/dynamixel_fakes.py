"""A serial port wired straight to a virtual device, with faults on demand (for tests)."""

from __future__ import annotations

from collections.abc import Callable

from frictionsim.hw.dynamixel import control_tables as ct
from frictionsim.hw.serialbus import registers as rg
from frictionsim.hw.virtual_servo.dynamixel_device import DynamixelDevice
from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.params import ParameterSet

TRUTH = ParameterSet("m1", "xl330", {"q_offset": 0.0, "kt": 0.45, "R": 3.2, "armature": 0.002,
                                     "friction_base": 0.03, "friction_viscous": 0.01})


class LoopbackPort:
    """pyserial-like: what the bus writes goes to ``device``; its answers are read back.

    ``silent`` drops every answer; ``mangle(reply) -> bytes`` corrupts answers;
    ``echo`` returns the written bytes first, like a half-duplex adapter.
    """

    def __init__(self, device, echo: bool = False) -> None:
        self.device = device
        self.parser = device.parser()
        self.rx = bytearray()
        self.timeout: float | None = None
        self.silent = False
        self.mangle: Callable[[bytes], bytes] | None = None
        self.echo = echo
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> int:
        self.written.append(bytes(data))
        if self.echo:
            self.rx += data
        for packet in self.parser.feed(bytes(data)):
            reply = self.device.handle(packet)
            if reply and not self.silent:
                self.rx += self.mangle(reply) if self.mangle else reply
        return len(data)

    def read(self, size: int = 1) -> bytes:
        out = bytes(self.rx[:size])
        del self.rx[:size]
        return out

    def reset_input_buffer(self) -> None:
        self.rx.clear()

    def close(self) -> None:
        self.closed = True


def virtual_xl330(clock: Callable[[], float], table: rg.ControlTable = ct.XL330_M288,
                  noise: float = 0.0, mass: float = 0.3, length: float = 0.1,
                  servo_id: int = 1) -> DynamixelDevice:
    """A virtual servo of ``table``'s model on a simulated bench advanced by ``clock``."""
    params = TRUTH if table.model.startswith("XL330") else ParameterSet(
        "m1", {"MX-64": "mx64", "MX-106": "mx106", "XL-320": "xl320"}[table.model.split("(")[0]],
        {})
    joint = SimulatedJoint(params, mass, length, vin=7.4, noise=noise, clock=clock)
    return DynamixelDevice(table, joint, servo_id)


class SdkPort:
    """The subset of the SDKs' PortHandler (dynamixel_sdk, scservo_sdk) their packet handlers
    call: records what they write and feeds them canned replies."""

    def __init__(self, rx: bytes = b"") -> None:
        self.is_using = False
        self.written: list[bytes] = []
        self.rx = bytearray(rx)

    def clearPort(self) -> None:  # noqa: N802 - SDK names
        pass

    def writePort(self, packet: list[int]) -> int:  # noqa: N802
        self.written.append(bytes(packet))
        return len(packet)

    def readPort(self, length: int) -> list[int]:  # noqa: N802
        out = list(self.rx[:length])
        del self.rx[:length]
        return out

    def setPacketTimeout(self, n: int) -> None:  # noqa: N802
        pass

    def setPacketTimeoutMillis(self, ms: float) -> None:  # noqa: N802
        pass

    def isPacketTimeout(self) -> bool:  # noqa: N802
        return not self.rx

    def getBaudRate(self) -> int:  # noqa: N802
        return 1_000_000
