"""Process data of a CiA 402 drive for cyclic synchronous position (CSP) and torque (CST).

One mapping serves both modes (the mode is chosen by the modes-of-operation
object in the outputs each cycle):

RxPDO 0x1600 (master → drive), assigned in 0x1C12::

    0x6040 controlword u16 | 0x6060 modes of operation i8 | 0x607A target position i32
    | 0x6071 target torque i16 (per mille of rated torque)

TxPDO 0x1A00 (drive → master), assigned in 0x1C13::

    0x6041 statusword u16 | 0x6061 modes of operation display i8
    | 0x6064 position actual i32 (counts) | 0x606C velocity actual i32 (counts/s)
    | 0x6077 torque actual i16 (per mille) | 0x6079 DC link voltage u32 (mV)
    | 0x603F error code u16
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from frictionsim.errors import ConfigurationError

CSP = 8  #: modes of operation: cyclic synchronous position
CST = 10  #: modes of operation: cyclic synchronous torque

#: (index, subindex, bits) of the mapped objects, in PDO order.
RX_ENTRIES = ((0x6040, 0, 16), (0x6060, 0, 8), (0x607A, 0, 32), (0x6071, 0, 16))
TX_ENTRIES = ((0x6041, 0, 16), (0x6061, 0, 8), (0x6064, 0, 32), (0x606C, 0, 32),
              (0x6077, 0, 16), (0x6079, 0, 32), (0x603F, 0, 16))
RX_FORMAT = struct.Struct("<Hbih")
TX_FORMAT = struct.Struct("<HbiihIH")
RX_PDO, TX_PDO = 0x1600, 0x1A00
RX_ASSIGN, TX_ASSIGN = 0x1C12, 0x1C13


@dataclass(frozen=True)
class Outputs:
    """What the master sends each cycle."""

    controlword: int
    mode: int
    target_position: int = 0
    target_torque: int = 0

    def pack(self) -> bytes:
        return RX_FORMAT.pack(self.controlword, self.mode, self.target_position, self.target_torque)


@dataclass(frozen=True)
class Inputs:
    """What the drive reports each cycle."""

    statusword: int
    mode: int
    position: int
    velocity: int
    torque: int
    dc_link_mv: int
    error_code: int

    @classmethod
    def unpack(cls, data: bytes) -> Inputs:
        if len(data) < TX_FORMAT.size:
            raise ConfigurationError(f"drive input process data is {len(data)} bytes, expected "
                                     f"{TX_FORMAT.size}: PDO mapping not applied?")
        return cls(*TX_FORMAT.unpack_from(data))


def mapping_writes() -> list[tuple[int, int, bytes]]:
    """The SDO writes ``(index, subindex, data)`` that install the mapping and its assignment
    (in PRE-OP, from the slave's configuration hook), in the order CiA 402 requires:
    clear the assignment, clear the PDO, write its entries, set their count, assign."""
    writes: list[tuple[int, int, bytes]] = []
    for assign, pdo, entries in ((RX_ASSIGN, RX_PDO, RX_ENTRIES), (TX_ASSIGN, TX_PDO, TX_ENTRIES)):
        writes.append((assign, 0, b"\x00"))
        writes.append((pdo, 0, b"\x00"))
        for k, (index, sub, bits) in enumerate(entries, start=1):
            writes.append((pdo, k, struct.pack("<I", index << 16 | sub << 8 | bits)))
        writes.append((pdo, 0, bytes([len(entries)])))
        writes.append((assign, 1, struct.pack("<H", pdo)))
        writes.append((assign, 0, b"\x01"))
    return writes


def apply_mapping(sdo_write: Callable[[int, int, bytes], None]) -> None:
    """Install the mapping with ``sdo_write(index, subindex, data)``."""
    for index, sub, data in mapping_writes():
        sdo_write(index, sub, data)
