"""Robot parameter files: the servos of a robot as identified on it (docs/model.md §12).

``robot identify`` writes, and ``robot simulate --params`` reads::

    {"robot": "so101",
     "servos": {"sts3215_12v": {<a parameter file, docs/model.md §7>}},
     "joint_offsets": {"Rotation": 0.004, ...},      # rad, added to the robot file's offsets
     "joint_scales": {"Elbow": {"friction": 1.21, "armature": 0.85}, ...},  # optional
     "fit": {...}}                                     # how it was fitted (informative)

``joint_scales`` (``robot identify --joint-scales``) scale a joint's friction budget and
armature from the shared set (:mod:`frictionsim.joint_scales`): that joint's servo gets its
own parameter set.

``--params`` also takes a plain parameter file (docs/model.md §7): every servo of that
actuator gets it, with no joint offsets (a servo identified on a bench, put on the robot).

A servo entry may also be a learned actuator (``net`` or ``hybrid``, docs/model.md §13; what
``robot identify --model net hybrid`` writes), and ``--params`` a plain learned actuator
file, which every servo of its actuator gets.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from frictionsim.joint_scales import check_scales, scaled_ranges, scaled_values
from frictionsim.jsonfile import read_json
from frictionsim.learned_files import LearnedActuator, is_learned, learned_from_dict
from frictionsim.params import ParameterFileError, ParameterSet, from_dict
from frictionsim.robot_files import RobotDescription

#: Largest calibration offset a robot parameter file may hold (rad).
MAX_OFFSET = 0.5


@dataclass
class RobotParameters:
    """The servos' parameter sets (or learned actuators) by actuator name and the joints'
    calibration offsets (rad)."""

    robot: str
    servos: dict[str, ParameterSet | LearnedActuator]
    joint_offsets: dict[str, float] = field(default_factory=dict)
    fit: dict = field(default_factory=dict)
    source: str = ""
    joint_scales: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per joint: the scales of its servo's friction budget and armature (joint_scales)."""

    def apply(self, robot: RobotDescription) -> RobotDescription:
        """The robot with these joint offsets added to its own; ``ParameterFileError`` when
        the file is another robot's or lacks an actuator the robot has."""
        where = self.source or "parameters"
        if self.robot and self.robot != robot.name:
            raise ParameterFileError(f"{where}: identified on robot {self.robot!r}, not "
                                     f"{robot.name!r}")
        missing = [a for a in robot.actuators if a not in self.servos]
        if missing:
            raise ParameterFileError(
                f"{where}: no parameters for actuator {missing[0]!r} of robot {robot.name} (the "
                f"file has {', '.join(self.servos) or 'none'}); a plain parameter file must be "
                "of an actuator the robot's servos are")
        names = {j.name for j in robot.servo_joints}
        for key, table in (("joint_offsets", self.joint_offsets),
                           ("joint_scales", self.joint_scales)):
            for joint in table:
                if joint not in names:
                    raise ParameterFileError(f"{where}: {key} names {joint!r}, not a simulated "
                                             f"joint of {robot.name} ({', '.join(names)})")
        joints = tuple(dataclasses.replace(j, offset=j.offset + self.joint_offsets.get(j.name, 0.0))
                       for j in robot.joints)
        return dataclasses.replace(robot, joints=joints)

    def for_robot(self, robot: RobotDescription) -> tuple[RobotDescription, dict[str, ParameterSet]]:
        """The robot with the joint offsets applied (:meth:`apply`) and the servos' parameter
        sets by actuator, and by joint name for each joint with ``joint_scales`` (its own set:
        :func:`params_of` picks a joint's). A plain parameter file of another actuator, on a
        robot whose servos are of one type, is put on them with a warning: the parameters
        (motor, rotor, friction) are the servo's, the actuator's constants (supply, firmware
        scaling) the robot's — a servo identified on a bench at another supply, put on the
        robot."""
        servos = self.servos
        kinds = robot.actuators
        if not self.robot and len(servos) == 1 and len(kinds) == 1 and kinds[0] not in servos:
            from frictionsim.plausibility import warn

            (theirs, params), = servos.items()
            if isinstance(params, LearnedActuator):
                raise ParameterFileError(
                    f"{self.source}: a learned {params.model} actuator of {theirs!r}: its network "
                    f"learned that servo's torques and cannot be put on {kinds[0]!r} servos")
            try:
                moved = ParameterSet(params.model, kinds[0], dict(params.values), params.source,
                                     params.scheme, params.extensions, dict(params.ranges))
            except ParameterFileError as e:
                raise ParameterFileError(f"{self.source}: parameters of actuator {theirs!r} "
                                         f"cannot be put on {kinds[0]!r}: {e}") from None
            warn(f"{self.source}: parameters identified on actuator {theirs!r}, put on the "
                 f"{robot.name}'s {kinds[0]!r} servos (their motor and friction values; the "
                 f"supply and firmware constants of {kinds[0]!r})")
            servos = {kinds[0]: moved}
        applied = dataclasses.replace(self, servos=servos).apply(robot)
        sets = dict(servos)
        for joint in applied.servo_joints:
            scales = self.joint_scales.get(joint.name)
            if scales is None:
                continue
            shared = servos[joint.actuator]
            if isinstance(shared, LearnedActuator):
                raise ParameterFileError(f"{self.source}: joint_scales scale a physical model; "
                                         f"{joint.actuator} is a learned {shared.model}")
            sets[joint.name] = dataclasses.replace(
                shared, values=scaled_values(shared.values, scales["friction"],
                                             scales["armature"]),
                ranges=scaled_ranges(shared.ranges, scales["friction"], scales["armature"]))
        return applied, sets

    def to_dict(self) -> dict:
        out = {"robot": self.robot,
               "servos": {a: p.to_dict() for a, p in self.servos.items()},
               "joint_offsets": dict(self.joint_offsets), "fit": dict(self.fit)}
        if self.joint_scales:
            out["joint_scales"] = {j: dict(s) for j, s in self.joint_scales.items()}
        return out


def params_of(sets: dict, joint) -> ParameterSet | LearnedActuator:
    """A servo joint's parameters among ``sets`` (:meth:`RobotParameters.for_robot`'s): its own
    set when it has one (joint_scales), else its actuator's."""
    return sets[joint.name] if joint.name in sets else sets[joint.actuator]


def robot_params_from_dict(data: dict, source: str, extensions=None) -> RobotParameters:
    """A robot parameter file's object, or a plain parameter file's (its actuator's servos get
    it); ``ParameterFileError`` naming the file and key."""
    if not isinstance(data, dict):
        raise ParameterFileError(f"{source}: expected a JSON object")
    if "servos" not in data:  # a plain parameter file, or a plain learned actuator file
        params = learned_from_dict(data, source) if is_learned(data) \
            else from_dict(data, source, extensions)
        return RobotParameters("", {params.actuator: params}, source=source)
    unknown = set(data) - {"robot", "servos", "joint_offsets", "joint_scales", "fit"}
    if unknown:
        raise ParameterFileError(f"{source}: unknown key {sorted(unknown)[0]!r} (a robot "
                                 "parameter file has robot, servos, joint_offsets, "
                                 "joint_scales, fit)")
    robot = data.get("robot", "")
    if not isinstance(robot, str):
        raise ParameterFileError(f"{source}: robot must be a robot's name")
    servos = data["servos"]
    if not isinstance(servos, dict) or not servos:
        raise ParameterFileError(f"{source}: servos must map actuator names to parameter sets")
    sets = {}
    for actuator, values in servos.items():
        where = f"{source}: servos.{actuator}"
        params = learned_from_dict(values, where) if is_learned(values) \
            else from_dict(values, where, extensions)
        if params.actuator != actuator:
            raise ParameterFileError(f"{source}: servos.{actuator} holds parameters of "
                                     f"actuator {params.actuator!r}")
        sets[actuator] = params
    offsets = data.get("joint_offsets", {})
    if not isinstance(offsets, dict):
        raise ParameterFileError(f"{source}: joint_offsets must map joint names to radians")
    for joint, value in offsets.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or abs(value) > MAX_OFFSET:
            raise ParameterFileError(f"{source}: joint_offsets.{joint} = {value!r} must be a "
                                     f"number of at most {MAX_OFFSET} rad")
    scales = data.get("joint_scales", {})
    if not isinstance(scales, dict):
        raise ParameterFileError(f"{source}: joint_scales must map joint names to scales")
    scales = {j: check_scales(v, f"{source}: joint_scales.{j}", ParameterFileError)
              for j, v in scales.items()}
    fit = data.get("fit", {})
    return RobotParameters(robot, sets, {k: float(v) for k, v in offsets.items()},
                           fit if isinstance(fit, dict) else {}, source, scales)


def load_robot_params(path: str | os.PathLike, extensions=None) -> RobotParameters:
    """Read a robot parameter file or a plain parameter file (see the module docstring)."""
    path = Path(path)
    data = read_json(path, ParameterFileError, "parameter file")
    return robot_params_from_dict(data, str(path), extensions)
