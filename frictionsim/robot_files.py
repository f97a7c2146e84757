"""Robot description files: a robot as data (docs/model.md §12).

A robot file (TOML) says which MJCF to load, which recorded joint drives which MJCF
joint through which servo, the firmware settings the servos ran with (register units, as
the bus wrote them), the encoder conventions, and the joints left out. The built-in robots
are such files, shipped in ``frictionsim/robots/`` (``--robot so101``); a user's is read
by the same :func:`load_robot_file` (``--robot PATH``)::

    name = "so101"
    title = "LeRobot SO-101 follower arm"
    mjcf = "so101/mjcf/so101_new_calib.xml"   # relative: beside this file if it is there,
                                    # else inside the data folder (--data)
    recordings = "sage"             # the recording format (frictionsim.robot_recordings)
    control_period = 0.002          # s: the servos' position loop, and the physics step
    bus_period = 0.02               # s: one sync write of the goals, one sync read of the state
    joint_dynamics = "servo"        # the servo replaces the MJCF's own armature, damping and
                                    # frictionloss of its joint ("mjcf": keep them as well)
    contacts = "off"                # the recorded motions touch nothing: MuJoCo's contacts
                                    # off in every engine ("model", the default: the MJCF's
                                    # contacts kept; frictionsim's own engines refuse them)
    base = "model"                  # "fixed": the MJCF's free joint removed, the robot hung
                                    # on a stand (a biped's legs moving in the air)
    params = ""                     # optional: a published parameter file the servos run
                                    # with when none is given ("sts3215_7v4_m1" on a 7.4 V
                                    # robot: frictionsim/published)
    [firmware]                      # every servo's settings, in its family's register names
                                    # and units: Feetech's below; a Dynamixel's are
                                    # Position_P_Gain (default the actuator's factory gain),
                                    # Position_D_Gain and Position_I_Gain (0), PWM_Limit (885)
    P_Coefficient = 16
    D_Coefficient = 32
    I_Coefficient = 0               # an I term is not modelled: must be 0
    Max_Torque_Limit = 1000         # 1000 = the full duty cycle
    Acceleration = 0                # 100 counts/s² per unit; 0 = no profile
    [joints.Rotation]               # a recorded joint (its column name)
    mjcf = "shoulder_pan"
    actuator = "sts3215_12v"
    sign = 1                        # q_mjcf = sign·q_recorded + offset (rad)
    offset = 0.0
    [joints.Jaw]
    mjcf = "gripper"
    left_out = "normalised 0..1, not an angle"   # not simulated: the joint is held rigid
    [joints.Jaw.firmware]           # per-joint settings override [firmware]
    Max_Torque_Limit = 500
    [lerobot]                       # optional: how LeRobot datasets of this robot store joints
    robot_types = ["so101_follower"]  # info.json's robot_type values this file describes
    units = "normalised"            # "normalised" (±100 of the calibrated range) or "degrees"
    zero = "range_middle"           # the MJCF's zero: the calibrated range's middle, or
                                    # "half_turn" (LeRobot's homing pose, count 2047)
    counts_per_turn = 4096
    # and per joint: lerobot = "shoulder_pan" (the motor's name; the feature is
    # "shoulder_pan.pos") and, optionally, id = 1 (its bus id, checked against a calibration)

Every field is checked: an unknown key, a wrong type or an implausible value is a
:class:`RobotFileError` naming the file and the key.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from frictionsim import schema
from frictionsim.actuator_files import TomlReader, read_toml
from frictionsim.errors import ConfigurationError, FrictionsimError

#: Where the built-in robot files live.
BUILTIN_DIR = Path(__file__).with_name("robots")
RECORDING_FORMATS = ("sage",)
JOINT_DYNAMICS = ("servo", "mjcf")
CONTACTS = ("model", "off")
BASES = ("model", "fixed")


@dataclass(frozen=True)
class Registers:
    """A servo family's firmware registers a robot file may set, by role: the position
    loop's P, D and I gains, the output limit and the target's acceleration limit (None: the
    family has no such register in the model), with the largest value each holds and the
    output limit's full scale."""

    p: str
    d: str
    i: str
    limit: str
    limit_full: int
    acceleration: str | None
    largest: dict

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.largest)


#: Feetech STS (its memory table: the gains and the acceleration are one byte; the torque
#: limit two, documented up to 1000 = the full duty cycle). Servos of other families than
#: Dynamixel (an EtherCAT drive on a robot, say) take these names too.
FEETECH_REGISTERS = Registers(
    "P_Coefficient", "D_Coefficient", "I_Coefficient", "Max_Torque_Limit", 1000, "Acceleration",
    {"P_Coefficient": 255, "D_Coefficient": 255, "I_Coefficient": 255, "Max_Torque_Limit": 1000,
     "Acceleration": 255})
#: Dynamixel X series, protocol 2.0 (the ROBOTIS e-manual's control table: the position
#: gains hold 0..16383, the PWM limit 0..885 = the full duty cycle).
DYNAMIXEL_REGISTERS = Registers(
    "Position_P_Gain", "Position_D_Gain", "Position_I_Gain", "PWM_Limit", 885, None,
    {"Position_P_Gain": 16383, "Position_D_Gain": 16383, "Position_I_Gain": 16383,
     "PWM_Limit": 885})
FIRMWARE_KEYS = FEETECH_REGISTERS.names + DYNAMIXEL_REGISTERS.names
#: The largest value each register holds.
REGISTER_MAX = {**FEETECH_REGISTERS.largest, **DYNAMIXEL_REGISTERS.largest}


def registers_of(actuator: str) -> Registers:
    """The firmware registers of ``actuator``'s family (Feetech's names for a family
    without its own)."""
    if actuator and schema.get_actuator(actuator).hardware.family == "dynamixel":
        return DYNAMIXEL_REGISTERS
    return FEETECH_REGISTERS
#: The shortest control period a robot file may give (s): no servo's position loop runs faster
#: than 10 kHz (the STS3215's and the XL330's run at 1–2 kHz).
MIN_CONTROL_PERIOD = 1e-4
#: The most control periods in one bus cycle (one recorded row).
MAX_PERIODS_PER_ROW = 1000
_TOP = {"name", "title", "mjcf", "recordings", "control_period", "bus_period",
        "joint_dynamics", "contacts", "base", "params", "firmware", "joints", "lerobot"}
_JOINT = {"mjcf", "actuator", "sign", "offset", "left_out", "firmware", "lerobot", "id"}
_LEROBOT = {"robot_types", "units", "zero", "counts_per_turn"}
#: How LeRobot stores joint values (its MotorNormMode): ±100 (0–100 for a gripper) of each
#: joint's calibrated range, or degrees from the range's middle.
LEROBOT_UNITS = ("normalised", "degrees")
#: Where a robot's MJCF puts a joint's zero in LeRobot's calibrated counts: the middle of the
#: calibrated range, or the half turn (count 2047) LeRobot's homing puts the calibration pose at.
LEROBOT_ZEROS = ("range_middle", "half_turn")


class RobotFileError(FrictionsimError, ValueError):
    """A robot file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Firmware:
    """One servo's firmware settings in SI units: proportional and derivative coefficients
    (register units, the law's ``kp``/``kd``), the torque limit as a fraction of the full duty
    cycle (0: none) and the internal target's acceleration limit (rad/s², 0: none)."""

    kp: float
    kd: float = 0.0
    torque_limit: float = 0.0
    acceleration: float = 0.0


@dataclass(frozen=True)
class RobotJoint:
    """A recorded joint: its column ``name``, the ``mjcf`` joint it is, its servo's
    ``actuator``, the encoder convention q_mjcf = sign·q_recorded + offset, and, when it is
    not simulated, why (``left_out``)."""

    name: str
    mjcf: str
    actuator: str = ""
    sign: float = 1.0
    offset: float = 0.0
    left_out: str = ""
    firmware: Firmware | None = None
    lerobot: str = ""
    """The motor's name in LeRobot's datasets and calibration files ("" when not mapped)."""
    bus_id: int | None = None
    """Its bus id, when the robot file gives one (checked against a LeRobot calibration)."""

    def to_model(self, q):
        """Recorded angle(s) (rad) → the MJCF joint's angle(s)."""
        return self.sign * q + self.offset

    def from_model(self, q):
        """The MJCF joint's angle(s) → recorded angle(s) (rad)."""
        return (q - self.offset) * self.sign


@dataclass(frozen=True)
class LeRobotConvention:
    """How LeRobot's datasets of a robot store its joints (the robot file's ``[lerobot]``)."""

    robot_types: tuple[str, ...]
    units: str = "normalised"
    zero: str = "range_middle"
    counts_per_turn: int = 4096


@dataclass(frozen=True)
class RobotDescription:
    """A robot: its MJCF, its joints and servos, its firmware and bus timing."""

    name: str
    title: str
    mjcf: str
    recordings: str
    control_period: float
    bus_period: float
    joint_dynamics: str
    joints: tuple[RobotJoint, ...]
    source: str = ""
    contacts: str = "model"
    lerobot: LeRobotConvention | None = None
    base: str = "model"
    """``fixed``: the MJCF's floating base (its free joint) removed, the root body held in
    the world, as a robot hung on a stand; ``model``: as the MJCF has it."""
    default_params: str = ""
    """A published parameter file (:func:`frictionsim.params.load_published`) the servos run
    with when no parameters are given ("": none)."""

    def at_rate(self, fps: float) -> RobotDescription:
        """This robot driven at ``fps`` bus cycles a second (a LeRobot dataset's rate): the bus
        period 1/fps, the control period the bus period over the whole number of control
        periods nearest to it (LeRobot's 30 fps: 17 periods of 1.96 ms for the SO-101's 2 ms)."""
        bus = 1.0 / fps
        n = max(1, int(round(bus / self.control_period)))
        return replace(self, bus_period=bus, control_period=bus / n)

    @property
    def servo_joints(self) -> tuple[RobotJoint, ...]:
        """The simulated joints (every joint not left out), in file order."""
        return tuple(j for j in self.joints if not j.left_out)

    @property
    def actuators(self) -> tuple[str, ...]:
        """The servo models on the robot, each once, in joint order."""
        return tuple(dict.fromkeys(j.actuator for j in self.servo_joints))

    @property
    def substeps(self) -> int:
        """Control periods per bus period."""
        return int(round(self.bus_period / self.control_period))

    def joint(self, name: str) -> RobotJoint:
        for j in self.joints:
            if name in (j.name, j.mjcf):
                return j
        raise ConfigurationError(f"{self.name}: no joint {name!r} (joints: "
                                 f"{', '.join(j.name for j in self.joints)})")

    @property
    def needs_data(self) -> bool:
        """Whether the MJCF is found through the data folder (a relative path not beside
        the robot file)."""
        return not Path(self.mjcf).is_absolute() and self.mjcf_beside is None

    @property
    def mjcf_beside(self) -> Path | None:
        """The MJCF when it lies beside the robot file (the built-in robots' own, or a relative
        path from a user's file), else None (an absolute path, or one in the data folder)."""
        path = Path(self.mjcf)
        if path.is_absolute() or not self.source:
            return None
        beside = Path(self.source).parent / path
        return beside if beside.is_file() else None

    def mjcf_path(self, data: Path | None, override: str | os.PathLike | None = None) -> Path:
        """The MJCF to load: ``override`` (``--mjcf``) when given, else the file's ``mjcf``:
        a relative one beside the robot file when it is there, else in the data folder
        ``data``. ConfigurationError naming what was looked for."""
        if override is not None:
            path = Path(override)
        elif self.mjcf_beside is not None:
            path = self.mjcf_beside
        else:
            path = Path(self.mjcf)
            if not path.is_absolute():
                if data is None:
                    raise ConfigurationError(
                        f"{self.name}: its MJCF {self.mjcf} lies in the data folder, which was "
                        "not found: pass --mjcf PATH or --data DIR")
                path = Path(data) / path
        if not path.is_file():
            raise ConfigurationError(f"{self.name}: no MJCF file at {path} (pass --mjcf PATH)")
        return path


def _registers(r: TomlReader, table: dict, where: str) -> dict[str, float]:
    """The register values of a firmware table: whole numbers the register holds
    (:data:`REGISTER_MAX`); 16.0 is read as 16."""
    out = {}
    for key, value in table.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = float(r.integer(value, f"{where}{key}", 0, REGISTER_MAX[key]))
    return out


def _firmware(r: TomlReader, table: dict, where: str, base: dict, actuator: str,
              base_where: str = "firmware.") -> Firmware:
    """Register values (``base`` overridden by ``table``) → :class:`Firmware` in SI units,
    each register named as the actuator's family names it (:func:`registers_of`)."""
    names = registers_of(actuator)
    r.keys(table, FIRMWARE_KEYS, where)
    for key, place in [(k, base_where) for k in base] + [(k, where) for k in table]:
        if key not in names.largest:
            family = "a Dynamixel" if names is DYNAMIXEL_REGISTERS else "not a Dynamixel"
            raise r.fail(f"{place}{key}", f"not a register of {actuator or 'this joint'}'s "
                                          f"servo ({family}: {', '.join(names.names)})")
    registers = dict(base)
    registers.update(_registers(r, table, where))
    act = schema.get_actuator(actuator) if actuator else None
    if names.p not in registers:
        if names is not DYNAMIXEL_REGISTERS or act is None:
            raise r.fail(f"{where}{names.p}", "missing (the position loop's gain)")
        registers[names.p] = act.kp  # a Dynamixel's factory gain is the actuator's default
    if registers.get(names.i, 0.0) != 0.0:
        raise r.fail(f"{where}{names.i}", f"an I term is not modelled; the servos must run "
                                          f"with {names.i} = 0")
    if names is DYNAMIXEL_REGISTERS and registers.get(names.d, 0.0) != 0.0 and \
            not (act and act.derivative):
        raise r.fail(f"{where}{names.d}", f"{actuator}'s model has no D term; the servos must "
                                          f"run with {names.d} = 0 to be simulated")
    limit = registers.get(names.limit, float(names.limit_full))
    if not 0 < limit <= names.limit_full:
        raise r.fail(f"{where}{names.limit}", f"{limit:g} must be in (0, {names.limit_full}]")
    counts = act.hardware.counts_per_turn if act else 4096.0
    acceleration = registers.get(names.acceleration, 0.0) if names.acceleration else 0.0
    return Firmware(kp=registers[names.p], kd=registers.get(names.d, 0.0),
                    torque_limit=0.0 if limit == names.limit_full else limit / names.limit_full,
                    acceleration=acceleration * 100.0 * 2 * math.pi / counts)


def _one_of(r: TomlReader, value, key: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise r.fail(key, f"{value!r} must be one of {', '.join(options)}")
    return value


def parse_robot(data: dict, source: str) -> RobotDescription:
    """The :class:`RobotDescription` a parsed robot file describes."""
    r = TomlReader(source, RobotFileError)
    if not isinstance(data, dict):
        raise RobotFileError(f"{source}: expected a TOML document")
    r.keys(data, _TOP, "")
    for key in ("name", "mjcf", "joints", "firmware"):
        if key not in data:
            raise r.fail(key, "missing")
    name = data["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise r.fail("name", f"{name!r} must be lower-case letters, digits and _")
    for key in ("title", "mjcf"):
        if not isinstance(data.get(key, ""), str) or (key == "mjcf" and not data[key]):
            raise r.fail(key, f"{data[key]!r} must be a non-empty string")
    recordings = _one_of(r, data.get("recordings", "sage"), "recordings", RECORDING_FORMATS)
    dynamics = _one_of(r, data.get("joint_dynamics", "servo"), "joint_dynamics", JOINT_DYNAMICS)
    contacts = _one_of(r, data.get("contacts", "model"), "contacts", CONTACTS)
    root = _one_of(r, data.get("base", "model"), "base", BASES)
    params = data.get("params", "")
    if params:
        from frictionsim.params import published_names

        if params not in published_names():
            raise r.fail("params", f"{params!r} is not a published parameter file shipped with "
                                   f"frictionsim ({', '.join(published_names())})")
    # bounded before anything is allocated: a replay holds a physics step per control
    # period for every row of a recording
    period = r.number(data, "control_period", "", at_least=MIN_CONTROL_PERIOD, at_most=0.1) \
        if "control_period" in data else 0.002
    bus = r.number(data, "bus_period", "", positive=True, at_most=1.0) \
        if "bus_period" in data else period
    if abs(bus / period - round(bus / period)) > 1e-9 or bus < period:
        raise r.fail("bus_period", f"{bus:g} s must be a whole number of control periods "
                                   f"({period:g} s)")
    if bus / period > MAX_PERIODS_PER_ROW:
        raise r.fail("bus_period", f"{bus:g} s is {bus / period:.0f} control periods of "
                                   f"{period:g} s; at most {MAX_PERIODS_PER_ROW} per bus cycle")
    base = r.table(data, "firmware")
    r.keys(base, FIRMWARE_KEYS, "firmware.")
    base = _registers(r, base, "firmware.")
    joints_table = r.table(data, "joints")
    if not joints_table:
        raise r.fail("joints", "no joint")
    joints, seen = [], set()
    for jname, spec in joints_table.items():
        where = f"joints.{jname}."
        if not isinstance(spec, dict):
            raise r.fail(f"joints.{jname}", "must be a table")
        r.keys(spec, _JOINT, where)
        mjcf = spec.get("mjcf")
        if not isinstance(mjcf, str) or not mjcf:
            raise r.fail(f"{where}mjcf", "missing (the MJCF joint this recorded joint is)")
        if mjcf in seen:
            raise r.fail(f"{where}mjcf", f"{mjcf!r} is named by two joints")
        seen.add(mjcf)
        left_out = spec.get("left_out", "")
        if not isinstance(left_out, str):
            raise r.fail(f"{where}left_out", "must be a string saying why")
        actuator = spec.get("actuator", "")
        if not left_out:
            if not isinstance(actuator, str) or not actuator:
                raise r.fail(f"{where}actuator", "missing (or say why the joint is left_out)")
            try:
                schema.get_actuator(actuator)
            except ValueError as e:
                raise r.fail(f"{where}actuator", str(e)) from None
        sign = spec.get("sign", 1)
        if sign not in (1, -1) or isinstance(sign, bool):
            raise r.fail(f"{where}sign", f"{sign!r} must be 1 or -1")
        offset = r.number(spec, "offset", where, at_most=2 * math.pi, at_least=-2 * math.pi) \
            if "offset" in spec else 0.0
        # a joint left out without a servo named keeps no firmware: nothing runs it
        firmware = None if left_out and not actuator and "firmware" not in spec else \
            _firmware(r, r.table(spec, "firmware"), f"{where}firmware.", base, actuator)
        motor = spec.get("lerobot", "")
        if not isinstance(motor, str) or (motor and not re.fullmatch(r"[A-Za-z0-9_]+", motor)):
            raise r.fail(f"{where}lerobot", f"{motor!r} must be the motor's name in LeRobot "
                                            "(letters, digits and _, without '.pos')")
        bus_id = r.integer(spec["id"], f"{where}id", 0, 253) if "id" in spec else None
        joints.append(RobotJoint(jname, mjcf, actuator, float(sign), offset, left_out, firmware,
                                 motor, bus_id))
    if not any(not j.left_out for j in joints):
        raise r.fail("joints", "every joint is left out: nothing to simulate")
    lerobot = _lerobot(r, data, joints) if "lerobot" in data else None
    return RobotDescription(name=name, title=data.get("title", name), mjcf=data["mjcf"],
                            recordings=recordings, control_period=period, bus_period=bus,
                            joint_dynamics=dynamics, joints=tuple(joints), source=source,
                            contacts=contacts, lerobot=lerobot, base=root,
                            default_params=params)


def _lerobot(r: TomlReader, data: dict, joints: list[RobotJoint]) -> LeRobotConvention:
    table = r.table(data, "lerobot")
    r.keys(table, _LEROBOT, "lerobot.")
    types = table.get("robot_types", [])
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types):
        raise r.fail("lerobot.robot_types", "must list the robot_type values (info.json) of "
                                            "this robot's datasets, e.g. [\"so101_follower\"]")
    units = _one_of(r, table.get("units", "normalised"), "lerobot.units", LEROBOT_UNITS)
    zero = _one_of(r, table.get("zero", "range_middle"), "lerobot.zero", LEROBOT_ZEROS)
    counts = r.integer(table.get("counts_per_turn", 4096), "lerobot.counts_per_turn", 2, 1 << 20)
    unmapped = [j.name for j in joints if not j.left_out and not j.lerobot]
    if unmapped:
        raise r.fail(f"joints.{unmapped[0]}.lerobot",
                     "missing: with a [lerobot] table every simulated joint names its motor")
    motors = [j.lerobot for j in joints if j.lerobot]
    twice = sorted({m for m in motors if motors.count(m) > 1})
    if twice:
        raise r.fail("joints", f"LeRobot motor {twice[0]!r} is named by two joints")
    return LeRobotConvention(tuple(types), units, zero, counts)


def load_robot_file(path: str | os.PathLike) -> RobotDescription:
    """Read and check one robot file; :class:`RobotFileError` naming file and key."""
    return parse_robot(read_toml(path, RobotFileError, "robot file"), str(path))


def builtin_robots() -> dict[str, Path]:
    """The robot files shipped with frictionsim, by name."""
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def get_robot(name_or_path: str | os.PathLike) -> RobotDescription:
    """A built-in robot by name (``so101``) or a robot file by path; ``RobotFileError``
    listing the built-in ones otherwise."""
    builtins = builtin_robots()
    if str(name_or_path) in builtins:
        return load_robot_file(builtins[str(name_or_path)])
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return load_robot_file(path)
    raise RobotFileError(f"unknown robot {str(name_or_path)!r} (built in: "
                         f"{', '.join(builtins) or 'none'}; or give a robot file's path)")
