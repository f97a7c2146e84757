"""A servo of a serial bus as the bench recorder sees it, by registers
(:class:`frictionsim.hw.servo.BenchServo`).

Each :meth:`RegisterServo.read` is one READ of the contiguous block holding the
present PWM/load, velocity, position, input voltage and temperature, so a
200 Hz control tick costs one read and one goal write (the torque flag is
written only when it changes). The family adapters
(:class:`frictionsim.hw.dynamixel.servo.DynamixelServo`, :class:`frictionsim.hw.feetech.servo.FeetechServo`)
add how to open and identify the servo. As a context manager, it always
releases the torque and the port on the way out.
"""

from __future__ import annotations

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.hw.serialbus import registers as rg
from frictionsim.hw.serialbus.bus import SerialBus
from frictionsim.hw.serialbus.errors import BusError, ServoStatusError
from frictionsim.hw.servo import ServoError
from frictionsim.schema import Hardware


def hardware_of(motor: str, family: str, servo_id: int | None = None) -> Hardware:
    """The hardware facts of actuator ``motor``, checked to be of bus ``family`` (and
    ``servo_id`` within its ids)."""
    hw = schema.get_actuator(motor).hardware
    if hw.family != family:
        raise ConfigurationError(f"{motor} is not a {family} servo (its declaration says "
                                 f"{hw.family or 'no bus'})")
    if servo_id is not None and not hw.ids[0] <= servo_id <= hw.ids[1]:
        raise ConfigurationError(f"{motor}: id {servo_id} out of range {hw.ids[0]}..{hw.ids[1]}")
    return hw


def motor_of(table: rg.ControlTable, family: str) -> str:
    """The actuator whose declaration lists the model number of ``table``."""
    for name, act in schema.ACTUATORS.items():
        if act.hardware.family == family and table.model_number in act.hardware.model_numbers:
            return name
    return table.model.lower()


def find_table(tables: tuple[rg.ControlTable, ...], number: int, where: str,
               expected: tuple[int, ...], motor: str) -> rg.ControlTable:
    """The table of the servo that reported model ``number``; :class:`BusError` if it is not
    one of the ``expected`` model numbers of actuator ``motor``."""
    found = next((t for t in tables if t.model_number == number), None)
    if number not in expected or found is None:
        name = found.model if found else f"model number {number}"
        models = [t.model for n in expected for t in tables if t.model_number == n]
        wanted = " or ".join(str(n) for n in expected)
        raise BusError(f"{where} is a {name}, not a {' or '.join(models) or motor} "
                       f"({motor}: model number {wanted})")
    return found


class RegisterServo:
    """One servo with id ``servo_id`` on ``bus``, described by control ``table``; ``motor`` is
    the frictionsim actuator name written to the logs."""

    def __init__(self, bus: SerialBus, table: rg.ControlTable, servo_id: int, motor: str) -> None:
        if bus.protocol != table.protocol:
            raise ConfigurationError(f"{table.model} table is for protocol {table.protocol}.0, "
                                     f"the bus speaks {bus.protocol}.0")
        self.bus = bus
        self.table = table
        self.id = servo_id
        self.motor = motor
        self._block = rg.sensor_block(table)
        self._torque: bool | None = None
        self._per_register = False

    def __enter__(self) -> RegisterServo:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._torque = None  # whatever the cache says, write it
            self.torque(False)
        except (ServoError, OSError):
            pass  # the servo is gone: nothing more can be done from here
        finally:
            self.close()

    def _write(self, register: rg.Register, value: int) -> None:
        self.bus.write(self.id, register.address, register.encode(value))

    def configure(self, kp: float) -> None:
        """Torque off, position-control mode, Position P gain register = ``kp`` (raw units)."""
        gain = round(kp)
        if gain != kp or not 0 <= gain <= self.table.p_gain_max:
            raise ConfigurationError(f"{self.table.model}: P gain {kp!r} must be an integer in "
                                     f"0..{self.table.p_gain_max}")
        self.torque(False)
        if self.table.eeprom_lock is not None:
            self._write(self.table.eeprom_lock, 0)
        if self.table.operating_mode is not None:
            self._write(self.table.operating_mode, self.table.position_mode)
        if self.table.angle_limits is not None:
            cw, ccw = self.table.angle_limits
            self._write(cw, 0)
            self._write(ccw, self.table.position_max)
        self._write(self.table.p_gain, gain)
        if self.table.eeprom_lock is not None:
            self._write(self.table.eeprom_lock, 1)

    def torque(self, enable: bool) -> None:
        """Write Torque Enable (only when it changes; a failed write forgets the cache)."""
        enable = bool(enable)
        if enable == self._torque:
            return
        self._torque = None
        self._write(self.table.torque_enable, int(enable))
        self._torque = enable

    def goal(self, position: float) -> None:
        """Goal Position from an angle (rad, CCW positive, 0 at the range centre)."""
        self._write(self.table.goal_position, rg.rad_to_counts(self.table, position))

    def read(self) -> dict:
        """Present position (rad), speed (rad/s), load (raw PWM or load register), input
        voltage (V) and temperature (°C) from one READ."""
        t = self.table
        start, length = self._block
        if self._per_register:
            block = self._read_registers(start, length)
        else:
            try:
                block = self.bus.read(self.id, start, length)
            except ServoStatusError:
                # a firmware (or emulator) refusing the block: read the registers one by one
                self._per_register = True
                block = self._read_registers(start, length)
        load_register = t.present_load if t.present_load is not None else t.present_pwm
        return {
            "position": rg.counts_to_rad(t, rg.field(t.present_position, block, start)),
            "speed": rg.velocity_to_rad_s(t, rg.field(t.present_velocity, block, start)),
            "load": rg.field(load_register, block, start),
            "input_volts": rg.voltage_to_volts(t, rg.field(t.present_input_voltage, block, start)),
            "temp": rg.temperature_to_celsius(t, rg.field(t.present_temperature, block, start)),
        }

    def _read_registers(self, start: int, length: int) -> bytes:
        """The sensor block assembled from one READ per register (gaps left zero)."""
        block = bytearray(length)
        t = self.table
        for r in (t.present_position, t.present_velocity, t.present_load, t.present_pwm,
                  t.present_input_voltage, t.present_temperature):
            if r is not None:
                block[r.address - start: r.address - start + r.size] = self.bus.read(
                    self.id, r.address, r.size)
        return bytes(block)

    def close(self) -> None:
        """Close the serial port."""
        self.bus.close()
