"""Control-table registers of serial servos and the conversions of their values to SI units.

A :class:`ControlTable` lists the registers frictionsim uses on one model (address,
size, :class:`Encoding`) and its unit scales; the Dynamixel tables live in
:mod:`frictionsim.hw.dynamixel.control_tables`, the Feetech STS3215 in
:mod:`frictionsim.hw.feetech.control_table`.

Conventions of the converted values (those of :mod:`frictionsim.hw.servo`): angles in rad,
counter-clockwise positive, 0 at the centre of the encoder range; velocities in
rad/s, counter-clockwise positive; voltages in V; temperatures in °C; currents
in A. Raw register values are integers as the servo stores them: unsigned,
two's complement, or sign-magnitude (a sign bit above the magnitude).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from frictionsim.errors import ConfigurationError

RPM_TO_RAD_S = 2.0 * math.pi / 60.0


class Encoding(Enum):
    """How a register's bytes (little-endian) map to an integer."""

    UNSIGNED = "unsigned"
    SIGNED = "signed"  # two's complement over the register size
    SIGN_MAGNITUDE = "sign-magnitude"  # magnitude below ``sign_bit``, that bit set: negative


@dataclass(frozen=True)
class Register:
    """A control-table field: ``address`` and ``size`` in bytes, and its :class:`Encoding`.

    Sign-magnitude fields set bit ``sign_bit`` for negative values (Dynamixel 1.0
    and XL320 speed/load: bit 10, i.e. 0..1023 counter-clockwise and 1024..2047
    clockwise; Feetech STS speed: bit 15).
    """

    address: int
    size: int
    encoding: Encoding = Encoding.UNSIGNED
    sign_bit: int = 10

    @property
    def magnitude_max(self) -> int:
        """Largest magnitude a sign-magnitude field holds."""
        return (1 << self.sign_bit) - 1

    def decode(self, data: bytes) -> int:
        """Raw integer value of the register from its ``size`` little-endian bytes."""
        if len(data) != self.size:
            raise ConfigurationError(f"register at {self.address} is {self.size} byte(s), got {len(data)}")
        if self.encoding is Encoding.SIGNED:
            return int.from_bytes(data, "little", signed=True)
        value = int.from_bytes(data, "little")
        if self.encoding is Encoding.SIGN_MAGNITUDE:
            magnitude = value & self.magnitude_max
            return -magnitude if value >> self.sign_bit & 1 else magnitude
        return value

    def encode(self, value: int) -> bytes:
        """Little-endian bytes of raw integer ``value``; ValueError if it does not fit."""
        value = int(value)
        if self.encoding is Encoding.SIGNED:
            return value.to_bytes(self.size, "little", signed=True)
        if self.encoding is Encoding.SIGN_MAGNITUDE:
            top = self.magnitude_max
            if not -top <= value <= top:
                raise ConfigurationError(f"sign-magnitude value {value} outside -{top}..{top}")
            raw = -value | 1 << self.sign_bit if value < 0 else value
            return raw.to_bytes(self.size, "little")
        return value.to_bytes(self.size, "little")


@dataclass(frozen=True)
class ControlTable:
    """The registers frictionsim uses on one model, and its unit scales.

    ``None`` marks a register the model does not have. ``position_centre`` and
    ``position_max`` are in counts, ``rad_per_count`` in rad, ``velocity_unit``
    in rpm per raw unit, ``voltage_unit`` in V, ``temperature_unit`` in °C,
    ``current_unit`` in A per raw unit with ``current_offset`` raw units at zero
    current (protocol-1.0 MX current register: 4.5 mA × (raw − 2048)).
    """

    model: str
    protocol: int
    model_number: int
    torque_enable: Register
    operating_mode: Register | None
    p_gain: Register
    goal_position: Register
    present_position: Register
    present_velocity: Register
    present_load: Register | None
    present_pwm: Register | None
    present_current: Register | None
    present_input_voltage: Register
    present_temperature: Register
    position_centre: int
    position_max: int
    rad_per_count: float
    velocity_unit: float
    voltage_unit: float = 0.1
    temperature_unit: float = 1.0
    current_unit: float | None = None
    current_offset: int = 0
    #: Value of ``operating_mode`` selecting position control (X-series 3, XL320 joint mode 2).
    position_mode: int = 3
    #: Protocol 1.0 MX: the CW / CCW angle-limit registers; joint (position) mode is
    #: selected by limits other than 0/0, so position control writes 0 and ``position_max``.
    angle_limits: tuple[Register, Register] | None = None
    #: Model number (u16) and firmware version (u8) registers, and the id register.
    model_number_register: Register = Register(0, 2)
    firmware_register: Register = Register(6, 1)
    id_register: Register = Register(7, 1)
    #: Raw load-register value at 100 % (Dynamixel 1023, Feetech 1000 in 0.1 %).
    load_full_scale: int = 1023
    #: Largest P gain register value the firmware accepts.
    p_gain_max: int = 16383
    #: ``"dynamixel"`` or ``"feetech"`` (Feetech STS speaks the protocol 1.0 framing with
    #: SYNC READ and its own error bits).
    family: str = "dynamixel"
    #: Feetech: the EEPROM lock register, cleared around writes of EEPROM settings.
    eeprom_lock: Register | None = None


# -- conversions --------------------------------------------------------------------------
def sensor_block(table: ControlTable) -> tuple[int, int]:
    """``(address, length)`` of the smallest contiguous read covering the registers
    :meth:`frictionsim.hw.serialbus.servo.RegisterServo.read` reports (one transaction per tick)."""
    regs = [r for r in (table.present_position, table.present_velocity, table.present_load,
                        table.present_pwm, table.present_input_voltage,
                        table.present_temperature) if r is not None]
    start = min(r.address for r in regs)
    return start, max(r.address + r.size for r in regs) - start


def field(register: Register, block: bytes, start: int) -> int:
    """Raw value of ``register`` cut out of ``block``, read from address ``start``."""
    offset = register.address - start
    return register.decode(block[offset: offset + register.size])


def counts_to_rad(table: ControlTable, counts: int) -> float:
    """Position register value (counts) to angle (rad, CCW positive, 0 at the range centre)."""
    return (counts - table.position_centre) * table.rad_per_count


def rad_to_counts(table: ControlTable, angle: float) -> int:
    """Angle (rad) to the nearest position count; ValueError outside the position range."""
    counts = round(angle / table.rad_per_count) + table.position_centre
    if not 0 <= counts <= table.position_max:
        lo = counts_to_rad(table, 0)
        hi = counts_to_rad(table, table.position_max)
        raise ConfigurationError(f"{table.model}: angle {angle:.4f} rad outside [{lo:.4f}, {hi:.4f}] rad")
    return counts


def velocity_resolution(table: ControlTable) -> float:
    """One unit of the velocity register (rad/s)."""
    return table.velocity_unit * RPM_TO_RAD_S


def velocity_to_rad_s(table: ControlTable, raw: int) -> float:
    """Signed velocity register value to rad/s (CCW positive)."""
    return raw * table.velocity_unit * RPM_TO_RAD_S


def rad_s_to_velocity(table: ControlTable, velocity: float) -> int:
    """Velocity (rad/s) to the nearest signed register value."""
    return round(velocity / (table.velocity_unit * RPM_TO_RAD_S))


def voltage_to_volts(table: ControlTable, raw: int) -> float:
    """Input-voltage register value to V."""
    return raw * table.voltage_unit


def temperature_to_celsius(table: ControlTable, raw: int) -> float:
    """Temperature register value to °C."""
    return raw * table.temperature_unit


def current_to_amps(table: ControlTable, raw: int) -> float:
    """Current register value to A (ValueError on models without a current register)."""
    if table.current_unit is None:
        raise ConfigurationError(f"{table.model} has no current register")
    return (raw - table.current_offset) * table.current_unit
