"""Servos on a robot in one call: which joints, which parameters, which firmware, which
control period, and what of the MJCF's own joint dynamics the servo replaces.

A robot comes either as a robot file (docs/model.md §12: its MJCF, joints, firmware
settings, control period; a built-in one by name) or as a bare MJCF (a path, text or
``MjSpec``) whose servo joints are chosen by name pattern. Its servos' parameters come as
a parameter file or set (every servo gets it), a learned actuator, or a robot fit (``robot
identify``'s robot parameter file: a set per actuator type). :func:`servos_on_robot`
resolves all of it into what every engine takes — an ``MjSpec`` and the servos — and
:meth:`frictionsim.solvers.mujoco_adapter.ServoModel.from_robot` builds the adapter from it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription, get_robot
from frictionsim.robot_params import RobotParameters, load_robot_params
from frictionsim.solvers.robot import JointServo


def robot_spec(robot: RobotDescription, mjcf, plain: bool = False):
    """The robot's MJCF as an ``MjSpec`` ready for the servos, a new one (the file is only
    read): the joints left out held rigid (their joint and actuators removed), on each servo
    joint the MJCF's own armature, damping and frictionloss dropped when the robot file says
    the servo model replaces them (``joint_dynamics = "servo"``) unless ``plain`` (the
    ``mjcf`` engine: the model as shipped), its floating base held when the robot file
    says so (``base = "fixed"``, :func:`fix_base`), the timestep the control period, and MuJoCo's
    contacts off when the robot file says its motions touch nothing (``contacts = "off"``,
    again unless ``plain``): then every engine runs one model, frictionsim's own engines
    (which have no contact solver) included."""
    from frictionsim.solvers.mjcf_files import read_spec
    from frictionsim.solvers.mujoco_dynamics import mujoco

    spec = read_spec(mjcf)
    joints = {j.name: j for j in spec.joints}
    for joint in robot.joints:
        if joint.mjcf not in joints:
            raise ConfigurationError(f"{mjcf}: no joint {joint.mjcf!r} (robot {robot.name}, "
                                     f"recorded joint {joint.name}); joints: {', '.join(joints)}")
    left_out = {j.mjcf for j in robot.joints if j.left_out}
    for act in list(spec.actuators):
        if act.target in left_out:
            spec.delete(act)
    for name in left_out:
        spec.delete(joints[name])
    if left_out:
        drop_keyframes(spec)
    if robot.joint_dynamics == "servo" and not plain:
        replace_joint_dynamics(spec, [j.mjcf for j in robot.servo_joints])
    if robot.base == "fixed":
        fix_base(spec)
    spec.option.timestep = robot.control_period
    if robot.contacts == "off" and not plain:
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    return spec


def fix_base(spec) -> None:
    """Remove ``spec``'s free joints: each floating body is then held where the MJCF puts it,
    as a robot hung on a stand by its trunk (a robot file's ``base = "fixed"``); the
    keyframes go too (:func:`drop_keyframes`)."""
    from frictionsim.solvers.mujoco_dynamics import mujoco

    free = [j for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_FREE]
    for joint in free:
        spec.delete(joint)
    if free:
        drop_keyframes(spec)


def drop_keyframes(spec) -> None:
    """Remove ``spec``'s keyframes: after joints are removed, their positions (and controls)
    count coordinates the model no longer has, and MuJoCo would refuse to compile it."""
    for key in list(spec.keys):
        spec.delete(key)


def replace_joint_dynamics(spec, joints: Sequence[str]) -> None:
    """Zero the named joints' own armature, damping and frictionloss in ``spec``: the servo
    model stands for them (its rotor's reflected inertia, back-EMF and friction), and the
    MJCF's values (often a hand-tuned stand-in for the servo) would count them twice."""
    by_name = {j.name: j for j in spec.joints}
    for name in joints:
        j = by_name[name]
        j.armature = 0.0
        j.damping = np.zeros(3)
        j.frictionloss = 0.0


def joint_servos(robot: RobotDescription, params: dict) -> list[JointServo]:
    """One :class:`~frictionsim.solvers.robot.JointServo` per simulated joint: its parameter
    set (``params``: actuator name → ParameterSet, and joint name → the joint's own set where
    it has one, :meth:`~frictionsim.robot_params.RobotParameters.for_robot`) and the firmware
    settings of the robot file."""
    from frictionsim.robot_params import params_of

    out = []
    for joint in robot.servo_joints:
        if joint.actuator not in params:
            raise ConfigurationError(f"no parameters for actuator {joint.actuator!r} (joint "
                                     f"{joint.name}); have: {', '.join(params) or 'none'}")
        fw = joint.firmware
        out.append(JointServo(joint.mjcf, params_of(params, joint), kp=fw.kp, kd=fw.kd,
                              torque_limit=fw.torque_limit, acceleration=fw.acceleration))
    return out


@dataclass
class RobotServos:
    """What :func:`servos_on_robot` resolved: the model (``spec``, a new ``MjSpec``), its
    servos in joint order, and the control period (s)."""

    spec: object
    servos: list[JointServo]
    control_period: float


def _robot_file(model) -> RobotDescription | None:
    """``model`` as a robot file: a description, a ``.toml`` path, or a bare name (no folder,
    no suffix: a built-in robot); None for an MJCF (a path, text or spec)."""
    if isinstance(model, RobotDescription):
        return model
    if isinstance(model, (str, os.PathLike)) and not str(model).lstrip().startswith("<"):
        text = str(model)
        if Path(text).suffix == ".toml" or "/" not in text and "." not in text:
            return get_robot(text)
    return None


def _parameters(params) -> RobotParameters:
    if isinstance(params, RobotParameters):
        return params
    if isinstance(params, (ParameterSet, LearnedActuator)):
        return RobotParameters("", {params.actuator: params}, source=params.source)
    if isinstance(params, (str, os.PathLike)):
        return load_robot_params(params)
    raise ConfigurationError(f"params: a parameter file's path, a ParameterSet, a learned "
                             f"actuator or RobotParameters, got {type(params).__name__}")


def _select(names: list[str], joints: str | Sequence[str] | None, what: str) -> list[str]:
    """The names matching any of the fnmatch ``joints`` patterns (None: all), in model order;
    ConfigurationError for a pattern that matches nothing."""
    if joints is None:
        return names
    patterns = [joints] if isinstance(joints, str) else list(joints)
    for pattern in patterns:
        if not fnmatch.filter(names, pattern):
            raise ConfigurationError(f"joints {pattern!r} matches none of {what}: "
                                     f"{', '.join(names)}")
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def servos_on_robot(model, params=None, joints: str | Sequence[str] | None = None, *,
                    mjcf: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
                    kp: float | None = None, control_period: float | None = None,
                    replace_dynamics: bool | None = None) -> RobotServos:
    """Servos on a robot, resolved once.

    ``model``: a robot file (a built-in robot's name, a ``.toml`` path, a
    :class:`~frictionsim.robot_files.RobotDescription`) or an MJCF (path, text, ``MjSpec``).
    ``params``: a parameter file, a robot fit or a learned actuator file (path), a
    ``ParameterSet``, a ``LearnedActuator`` or ``RobotParameters``; None: the robot file's
    default servos (its ``params``, a published parameter file). ``joints``: fnmatch
    patterns of MJCF joint names (``"*_knee"``; None: a robot file's servo joints, or every
    hinge of a bare MJCF), among the hinges an actuator of the MJCF drives when it has
    actuators (a hinge without one, a backlash hinge say, is passive and gets no servo).

    With a robot file: its MJCF (``mjcf`` overrides it; a relative one lies in ``data``),
    firmware settings and control period, and its ``joint_dynamics`` decide. With a bare
    MJCF: each servo the actuator's default firmware at gain ``kp`` (default the actuator's),
    the control period ``control_period`` (default the model's timestep: the firmware runs
    every physics step, as MuJoCo's own actuators do), and ``replace_dynamics`` (default
    True): the joints' own armature, damping and frictionloss zeroed, the servo standing for
    them.
    """
    from frictionsim.solvers.mjcf_files import read_spec

    robot = _robot_file(model)
    if params is None:
        if robot is None or not robot.default_params:
            raise ConfigurationError("params: none given, and "
                                     + (f"robot {robot.name} ships no default servos"
                                        if robot is not None else "a bare MJCF has no defaults"))
        from frictionsim.params import load_published

        params = load_published(robot.default_params)
    fit = _parameters(params)
    if robot is not None:
        if kp is not None:
            raise ConfigurationError("kp: a robot file's firmware table sets each servo's gain")
        robot, sets = fit.for_robot(robot)
        path = robot.mjcf_path(Path(data) if data is not None else None, mjcf)
        if replace_dynamics is False:  # the robot file's own switch: keep the MJCF's too
            robot = dataclasses.replace(robot, joint_dynamics="mjcf")
        spec = robot_spec(robot, path)
        servos = joint_servos(robot, sets)
        chosen = set(_select([s.joint for s in servos], joints, f"{robot.name}'s servo joints"))
        servos = [s for s in servos if s.joint in chosen]
        return RobotServos(spec, servos, control_period or robot.control_period)

    from frictionsim.solvers.mujoco_dynamics import mujoco

    spec = read_spec(model)
    hinges = [j.name for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE and j.name]
    if not hinges:
        raise ConfigurationError("the model has no named hinge joint to put a servo on (servos "
                                 "are rotary: one per hinge)")
    driven = {a.target for a in spec.actuators
              if a.trntype in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT)}
    if any(h in driven for h in hinges):
        # a hinge no actuator drives is passive (a backlash hinge, a wheel, a linkage): no servo
        names = _select([h for h in hinges if h in driven], joints,
                        "the model's hinge joints an actuator drives (a hinge without one, "
                        "such as a backlash hinge, is passive)")
    else:
        names = _select(hinges, joints, "the model's named hinge joints")
    if fit.joint_scales:
        raise ConfigurationError(
            f"{fit.source or 'params'}: its joint_scales name a robot file's joints "
            f"({', '.join(fit.joint_scales)}); give the robot file, not a bare MJCF")
    if len(fit.servos) != 1:
        raise ConfigurationError(
            f"{fit.source or 'params'}: parameters of {len(fit.servos)} actuator types "
            f"({', '.join(fit.servos)}); on a bare MJCF give one, or a robot file that says "
            "which joint is which servo")
    (actuator, servo_params), = fit.servos.items()
    if kp is None:
        from frictionsim import schema

        kp = schema.get_actuator(actuator).kp
    if replace_dynamics is not False:
        replace_joint_dynamics(spec, names)
    period = control_period if control_period is not None else float(spec.option.timestep)
    return RobotServos(spec, [JointServo(n, servo_params, kp=kp) for n in names], period)
