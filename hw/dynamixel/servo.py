"""A Dynamixel servo as the bench recorder sees it (:class:`hw.servo.Servo`).

Each :meth:`DynamixelServo.read` is one READ of the contiguous block holding the
present PWM/load, velocity, position, input voltage and temperature, so a
200 Hz control tick costs one read and one goal write (the torque flag is
written only when it changes).
"""

from __future__ import annotations

from hw.dynamixel import control_tables as ct
from hw.dynamixel.bus import DynamixelBus
from hw.dynamixel.errors import DynamixelError, ServoStatusError

#: Factory baud rates (bit/s) by model family.
DEFAULT_BAUDRATE = {"xl330": 57600, "mx64": 57600, "mx106": 57600, "xl320": 1_000_000}
#: frictionsim actuator name → Dynamixel model name of :mod:`hw.dynamixel.control_tables`.
MODELS = {"xl330": "XL330-M288", "mx64": "MX-64", "mx106": "MX-106", "xl320": "XL-320"}


class DynamixelServo:
    """One Dynamixel servo on ``bus`` with id ``servo_id``, described by control ``table``.

    ``motor`` is the frictionsim actuator name written to the logs (``xl330``,
    ``mx64``, ``mx106``, ``xl320``).
    """

    def __init__(self, bus: DynamixelBus, table: ct.ControlTable, servo_id: int = 1,
                 motor: str | None = None) -> None:
        if bus.protocol != table.protocol:
            raise ValueError(f"{table.model} table is for protocol {table.protocol}.0, "
                             f"the bus speaks {bus.protocol}.0")
        self.bus = bus
        self.table = table
        self.id = servo_id
        self.motor = motor or next((k for k, v in MODELS.items() if v == table.model),
                                   table.model.lower())
        self._block = ct.sensor_block(table)
        self._torque: bool | None = None
        self._per_register = False

    @classmethod
    def open(cls, device: str, motor: str, servo_id: int = 1, protocol: int = 2,
             baudrate: int | None = None, timeout: float = 0.05, retries: int = 2
             ) -> DynamixelServo:
        """Open ``device`` and check with a PING that the servo ``servo_id`` is a ``motor``."""
        if motor not in MODELS:
            raise ValueError(f"unknown Dynamixel motor {motor!r}; known: {', '.join(MODELS)}")
        table = ct.table_for(MODELS[motor], protocol)
        bus = DynamixelBus.open(device, baudrate or DEFAULT_BAUDRATE[motor], protocol=protocol,
                                timeout=timeout, retries=retries)
        try:
            number = bus.ping(servo_id)
            if number != table.model_number:
                try:
                    found = ct.table_for_model_number(number)
                except KeyError:
                    found = None
                # XL330-M077 and -M288 share one control table: either will do
                if found is None or found.model[:5] != table.model[:5] \
                        or found.protocol != table.protocol:
                    name = found.model if found else f"model number {number}"
                    raise DynamixelError(f"{device}: id {servo_id} is a {name}, not a "
                                         f"{table.model} (model number {table.model_number})")
                table = found
        except BaseException:
            bus.close()
            raise
        return cls(bus, table, servo_id, motor)

    def _write(self, register: ct.Register, value: int) -> None:
        self.bus.write(self.id, register.address, register.encode(value))

    def configure(self, kp: float) -> None:
        """Torque off, position-control mode, Position P gain register = ``kp`` (raw units)."""
        gain = round(kp)
        if gain != kp or not 0 <= gain <= self.table.p_gain_max:
            raise ValueError(f"{self.table.model}: P gain {kp!r} must be an integer in "
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
        self._write(self.table.goal_position, ct.rad_to_counts(self.table, position))

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
            "position": ct.counts_to_rad(t, ct.field(t.present_position, block, start)),
            "speed": ct.velocity_to_rad_s(t, ct.field(t.present_velocity, block, start)),
            "load": ct.field(load_register, block, start),
            "input_volts": ct.voltage_to_volts(t, ct.field(t.present_input_voltage, block, start)),
            "temp": ct.temperature_to_celsius(t, ct.field(t.present_temperature, block, start)),
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
