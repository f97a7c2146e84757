"""A virtual Dynamixel (or Feetech STS): the control table in memory, answering instructions.

The device holds the model's control table as a byte array. Reads refresh the
present-state registers from the :class:`~frictionsim.hw.virtual_servo.joint.SimulatedJoint`
(encoder counts, velocity, PWM or load, input voltage, temperature); writes to
Torque Enable, Goal Position and the Position P gain drive the joint. It
answers PING, READ, WRITE, SYNC READ, SYNC WRITE and REBOOT as the servo's
firmware does, including the error statuses a real servo returns (data range,
data length, access, instruction), with Status Return Level 2 (every
instruction addressed to it alone is answered). A table of the ``feetech`` family
(:data:`frictionsim.hw.feetech.control_table.STS3215`) gets the Feetech dialect: protocol 1.0
framing plus SYNC READ, and silence instead of an error status for a bad request.
"""

from __future__ import annotations

from types import ModuleType

from frictionsim.hw.dynamixel import protocol1, protocol2
from frictionsim.hw.serialbus import registers as rg
from frictionsim.hw.serialbus.framing import FrameParser, Packet
from frictionsim.hw.virtual_servo.joint import SimulatedJoint

FIRMWARE_VERSION = 52
TEMPERATURE = 31  # °C, constant: the bench runs are short
#: Protocol 2.0 error numbers (low 7 bits of the status error byte).
P2_INSTRUCTION, P2_DATA_RANGE, P2_DATA_LENGTH, P2_ACCESS = 2, 4, 5, 7
#: Protocol 1.0 error bits.
P1_RANGE, P1_INSTRUCTION = 0x08, 0x40
#: Feetech's SYNC READ (protocol 1.0 framing, 1-byte address and length, then the ids).
FEETECH_SYNC_READ = 0x82
#: Full scale of the X-series PWM register (885 = 100 %).
PWM_FULL_SCALE = 885


class DynamixelDevice:
    """The firmware side of one Dynamixel (or Feetech) servo with id ``servo_id`` on ``joint``."""

    def __init__(self, table: rg.ControlTable, joint: SimulatedJoint, servo_id: int = 1) -> None:
        self.table = table
        self.joint = joint
        self.id = servo_id
        self.protocol: ModuleType = protocol2 if table.protocol == 2 else protocol1
        self.memory = bytearray(1024 if table.protocol == 2 and table.position_max > 1023 else 256)
        self._put(table.model_number_register, table.model_number)
        self._put(table.firmware_register, FIRMWARE_VERSION)
        self._put(table.id_register, servo_id)
        if table.operating_mode is not None:
            self._put(table.operating_mode, table.position_mode)
        if table.angle_limits is not None:
            self._put(table.angle_limits[1], table.position_max)
        self._put(table.p_gain, round(joint.bench_kp))
        self._put(table.goal_position, table.position_centre)
        self._put(table.torque_enable, 0)
        if table.eeprom_lock is not None:
            self._put(table.eeprom_lock, 1)  # Feetech ships with the EEPROM locked

    def describe(self) -> str:
        """Model and protocol, for the banner."""
        if self.table.family == "feetech":
            return f"{self.table.model}, Feetech STS protocol"
        return f"{self.table.model}, protocol {self.table.protocol}.0"

    def parser(self) -> FrameParser:
        """A stream parser for this device's protocol."""
        return self.protocol.StreamParser()

    # -- memory -----------------------------------------------------------------------
    def _put(self, register: rg.Register, value: int) -> None:
        self.memory[register.address: register.address + register.size] = register.encode(value)

    def _get(self, register: rg.Register) -> int:
        return register.decode(bytes(self.memory[register.address: register.address + register.size]))

    def _refresh(self) -> None:
        """Present-state registers from the simulated joint, as the firmware samples them."""
        t, joint = self.table, self.joint
        counts = round(joint.position_reading(t.rad_per_count) / t.rad_per_count) + t.position_centre
        self._put(t.present_position, min(max(counts, 0), t.position_max))
        speed = rg.rad_s_to_velocity(t, joint.velocity_reading(rg.velocity_resolution(t)))
        if t.present_velocity.encoding is rg.Encoding.SIGN_MAGNITUDE:
            top = t.present_velocity.magnitude_max
            speed = max(-top, min(top, speed))
        self._put(t.present_velocity, speed)
        if t.present_pwm is not None:
            self._put(t.present_pwm, round(PWM_FULL_SCALE * joint.load_reading()))
        if t.present_load is not None:
            self._put(t.present_load, round(t.load_full_scale * joint.load_reading()))
        self._put(t.present_input_voltage, round(joint.vin / t.voltage_unit))
        self._put(t.present_temperature, round(TEMPERATURE / t.temperature_unit))

    def _overlaps(self, register: rg.Register | None, address: int, length: int) -> bool:
        return register is not None and address < register.address + register.size \
            and register.address < address + length

    def _write(self, address: int, data: bytes) -> int:
        """Store ``data`` at ``address`` and act on it; returns a protocol error code (0: ok)."""
        t = self.table
        if address + len(data) > len(self.memory) or not data:
            return P2_DATA_RANGE if t.protocol == 2 else P1_RANGE
        torque_on = bool(self._get(t.torque_enable))
        locked = [t.operating_mode] + list(t.angle_limits or ())
        if torque_on and any(self._overlaps(r, address, len(data)) for r in locked):
            return P2_ACCESS if t.protocol == 2 else P1_RANGE  # EEPROM is locked with torque on
        self.memory[address: address + len(data)] = data
        if self._overlaps(t.p_gain, address, len(data)):
            self.joint.set_kp(float(self._get(t.p_gain)))
        if self._overlaps(t.goal_position, address, len(data)):
            self.joint.set_goal(rg.counts_to_rad(t, self._get(t.goal_position)))
        if self._overlaps(t.torque_enable, address, len(data)):
            self.joint.set_torque(bool(self._get(t.torque_enable)))
        return 0

    def _read(self, address: int, length: int) -> tuple[int, bytes]:
        if length < 1 or address + length > len(self.memory):
            return (P2_DATA_RANGE if self.table.protocol == 2 else P1_RANGE), b""
        self._refresh()
        return 0, bytes(self.memory[address: address + length])

    # -- instructions -------------------------------------------------------------------
    def handle(self, packet: Packet) -> bytes | None:
        """The status packet answering instruction ``packet``, or None when the servo is silent."""
        if self.table.protocol == 2:
            return self._handle_p2(packet)
        return self._handle_p1(packet)

    def _status(self, error: int = 0, data: bytes = b"") -> bytes:
        return self.protocol.status_packet(self.id, error, data)

    def _handle_p2(self, packet: Packet) -> bytes | None:
        ins, p = protocol2.Instruction, packet.params
        broadcast = packet.id == protocol2.BROADCAST_ID
        if packet.code == ins.STATUS or not (broadcast or packet.id == self.id):
            return None
        if packet.code == ins.PING:
            return self._status(data=self.memory[0:2] + bytes([FIRMWARE_VERSION]))
        if packet.code == ins.SYNC_READ:
            if len(p) < 4 or self.id not in p[4:]:
                return None
            error, data = self._read(int.from_bytes(p[0:2], "little"), int.from_bytes(p[2:4], "little"))
            return self._status(error, data)
        if packet.code == ins.SYNC_WRITE:
            if len(p) < 4:
                return None
            address, length = int.from_bytes(p[0:2], "little"), int.from_bytes(p[2:4], "little")
            for k in range(4, len(p) - length, length + 1):
                if p[k] == self.id:
                    self._write(address, p[k + 1: k + 1 + length])
            return None
        if packet.code == ins.READ:
            if len(p) != 4:
                error, data = P2_DATA_LENGTH, b""
            else:
                error, data = self._read(int.from_bytes(p[0:2], "little"),
                                         int.from_bytes(p[2:4], "little"))
        elif packet.code == ins.WRITE:
            error = P2_DATA_LENGTH if len(p) < 3 else self._write(int.from_bytes(p[0:2], "little"),
                                                                  p[2:])
            data = b""
        elif packet.code == ins.REBOOT:
            self._write(self.table.torque_enable.address, b"\x00")
            error, data = 0, b""
        else:
            error, data = P2_INSTRUCTION, b""
        return None if broadcast else self._status(error, data)

    def _handle_p1(self, packet: Packet) -> bytes | None:
        ins, p = protocol1.Instruction, packet.params
        broadcast = packet.id == protocol1.BROADCAST_ID
        feetech = self.table.family == "feetech"
        if feetech and packet.code == FEETECH_SYNC_READ:
            if len(p) < 2 or self.id not in p[2:]:
                return None
            error, data = self._read(p[0], p[1])
            return None if error else self._status(0, data)
        if not (broadcast or packet.id == self.id):
            return None
        if packet.code == ins.PING:
            return self._status()
        if packet.code == ins.SYNC_WRITE:
            if len(p) >= 2:
                address, length = p[0], p[1]
                for k in range(2, len(p) - length, length + 1):
                    if p[k] == self.id:
                        self._write(address, p[k + 1: k + 1 + length])
            return None
        if packet.code == ins.READ:
            error, data = self._read(p[0], p[1]) if len(p) == 2 else (P1_INSTRUCTION, b"")
            if error and len(p) == 2:
                # protocol 1.0 keeps the frame length of a READ answer (the SDK indexes into it)
                data = bytes(p[1])
        elif packet.code == ins.WRITE:
            error, data = (self._write(p[0], p[1:]) if len(p) >= 2 else P1_INSTRUCTION), b""
        else:
            error, data = P1_INSTRUCTION, b""
        if feetech and error:
            return None  # STS firmware has no error bit for a bad request: it ignores it
        return None if broadcast else self._status(error, data)
