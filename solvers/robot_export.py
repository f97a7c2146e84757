"""A robot fit as a plain MuJoCo model: the robot's MJCF with every servo joint's armature,
damping, frictionloss and actuator set from the fit (``frictionsim robot export-mjcf``), for
users of plain MuJoCo, MJX or mjlab who take the fit without frictionsim.

The servo of docs/model.md §12 (the Feetech position loop on the voltage law, M1 friction)
maps onto a MuJoCo ``<position>`` actuator and its joint as the bench export does
(:mod:`frictionsim.solvers.mjcf_export`), with the robot file's firmware settings::

    kp_mj      = KP·eg·egr·vin·k_t/R          (the P term, N·m/rad)
    kv_mj      = KD·T_d·eg·egr·vin·k_t/R      (the D term: on the error's rate, which is −q̇
                                               while the goal holds)
    forcerange = ±max_pwm·torque_limit·vin·k_t/R
    armature   = the servo's reflected rotor inertia
    damping    = k_t²/R + K_v                  (back-EMF and viscous friction)
    frictionloss = K_c, its row stopping the joint within one step

with the integrator Euler (``eulerdamp`` off) at the robot's control period. The
``dcmotor`` target (MuJoCo ≥ 3.12) is MuJoCo's own DC motor with ``input="pos"``: the motor
(k_t, R) and its back-EMF inside the actuator, the controller's kp and kd as above (kd plus
k_t²/R, which cancels the back-EMF compensation), the target-speed limiter as ``slewmax``,
the supply window as its voltage clip. What has no
attribute is dropped and listed in the file's header: the dead band, the target-speed
limiter, latency, and for M2–M6 the Stribeck and load-dependent friction (the closest
native expression keeps the model's Coulomb level ``friction_base`` and viscous term). The
MJCF's other joints, bodies, contacts and actuators are kept; its meshes are copied next to
the export so that the folder stands alone.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription, RobotJoint
from frictionsim.robot_params import RobotParameters
from frictionsim.solvers.mjcf_export import STOP_IN_ONE_STEP, check_native_values

TARGETS = ("position", "dcmotor")
#: The name of a servo joint's gear-gap hinge in an export: ``<joint>_backlash``.
BACKLASH_HINGE = "{joint}_backlash"


@dataclass
class JointExport:
    """One servo joint's native attributes (SI units); ``damping`` is k_t²/R + K_v for a
    ``<position>`` actuator, K_v for a ``<dcmotor>`` (whose motor model has the back-EMF)."""

    joint: str
    armature: float
    damping: float
    frictionloss: float
    kp: float
    kv: float
    force_limit: float
    max_velocity: float = 0.0
    """The firmware's target-speed limit (rad/s; 0: none): a dcmotor's ``slewmax``."""


@dataclass
class RobotExport:
    """The exported model (``spec``), each servo joint's attributes, and what the export
    could not carry (sentences)."""

    spec: object
    joints: list[JointExport]
    dropped: list[str] = field(default_factory=list)


def joint_attributes(joint: RobotJoint, params: ParameterSet) -> JointExport:
    """The native attributes of ``params`` on ``joint`` with its firmware settings."""
    act = schema.get_actuator(params.actuator)
    if act.law != "voltage":
        raise ConfigurationError(f"{joint.name}: {params.actuator} runs the current law; its "
                                 "back-EMF window has no MuJoCo attribute (export the bench "
                                 "servo with frictionsim export-mjcf --target dcmotor)")
    check_native_values(params, f"{params.source or params.actuator} on joint {joint.name}")
    v = params.values
    fw = joint.firmware
    volts_to_torque = act.vin * v["kt"] / v["R"]
    gain = act.error_gain * v.get("error_gain_ratio", 1.0) * volts_to_torque
    kd = fw.kd * v.get("derivative_time", 0.0) if act.derivative else 0.0
    return JointExport(joint.mjcf, v["armature"], v["kt"] ** 2 / v["R"] + v["friction_viscous"],
                       v["friction_base"], fw.kp * gain, kd * gain,
                       act.max_pwm * (fw.torque_limit or 1.0) * volts_to_torque,
                       v.get("max_velocity", 0.0) if act.target_speed_limit else 0.0)


def _set_dcmotor(actuator, attrs: JointExport, params: ParameterSet, mujoco) -> None:
    """``actuator`` as MuJoCo's ``<dcmotor>`` with ``input="pos"``: the motor (k_t, R), the
    controller's torque-space gains (kp; kd = k_t²/R, which cancels the back-EMF the motor
    model adds, plus the D term's velocity gain), the target limiter as ``slewmax``, the
    supply window ±vin·max_pwm·torque_limit as its voltage clip."""
    kt, resistance = params.values["kt"], params.values["R"]
    volts = attrs.force_limit * resistance / kt
    actuator.set_to_dcmotor(
        motorconst=[kt, kt], resistance=resistance,
        controller=[attrs.kp, 0.0, kt**2 / resistance + attrs.kv, attrs.max_velocity, 0.0,
                    volts], ctrlspec=int(mujoco.mjtCtrlInput.mjINPUT_POS))


def _dropped(params: ParameterSet, target: str) -> list[str]:
    act = schema.get_actuator(params.actuator)
    v = params.values
    lost = []
    if params.model != "m1":
        lost.append(f"{params.model}'s Stribeck and load-dependent friction: the joint keeps "
                    "its Coulomb level (friction_base) and viscous term")
    if act.dead_band:
        lost.append(f"the dead band (±{act.dead_band:.4g} rad)")
    if act.target_speed_limit and target == "position":
        lost.append(f"the target-speed limiter ({v.get('max_velocity', 0.0):.4g} rad/s): goals "
                    "must move slower than it")
    if act.derivative:
        lost.append("the D term acts on the joint velocity (the firmware's acts on the error's "
                    "rate, which also follows a moving goal)")
    if v.get("latency_steps", 0.0) or v.get("observation_delay", 0.0):
        lost.append("latency and observation delay")
    for ext in params.extensions:
        lost.append(f"the {ext} extension")  # backlash: unless exported as a hinge
    return lost


def exported_physics(params: ParameterSet | LearnedActuator, source) -> ParameterSet:
    """The physical set a servo's ``params`` export as: itself, or a hybrid's physics;
    ConfigurationError for a network alone, which has no MuJoCo attribute."""
    if not isinstance(params, LearnedActuator):
        return params
    if params.physics is None:
        raise ConfigurationError(f"{source}: a learned network has no MuJoCo attribute; "
                                 "export a physical model (m1 … m6)")
    return params.physics


def export_robot(robot: RobotDescription, mjcf: Path, fit: RobotParameters,
                 target: str = "position", backlash_hinge: dict[str, float] | None = None
                 ) -> RobotExport:
    """The robot's MJCF with the fit's servos as native attributes (module docstring).

    ``backlash_hinge``: actuator name → its fitted ``backlash`` (g, rad; the fit's own, also
    when ``fit`` is a refit without it); a servo with g > 0 gets the Open Duck Mini's
    expression of it, a second hinge ``<joint>_backlash`` on the joint's body and axis,
    free within ±g/2 and stopped by MuJoCo's joint limit (time constant two steps, critically
    damped: close to an inelastic impact). The servo joint is then the motor side (its
    armature, damping, friction and actuator, whose position loop reads it, where the
    firmware reads the output) and the body turns by the sum of both, the output."""
    from frictionsim.robot_params import params_of
    from frictionsim.solvers.mjcf_files import read_spec
    from frictionsim.solvers.mujoco_dynamics import mujoco

    if target not in TARGETS:
        raise ConfigurationError(f"--target {target!r}: one of {', '.join(TARGETS)}")
    robot, sets = fit.for_robot(robot)
    spec = read_spec(mjcf)
    joints = {j.name: j for j in spec.joints}
    actuators = {a.target: a for a in spec.actuators}
    out, dropped = [], []
    keep = robot.joint_dynamics == "mjcf"  # the MJCF's own dynamics kept besides the servo
    for joint in robot.servo_joints:
        params = params_of(sets, joint)
        if isinstance(params, LearnedActuator):
            dropped.append(f"{joint.name}: the hybrid's learned residual (its physics kept)")
            params = exported_physics(params, fit.source)
        attrs = joint_attributes(joint, params)
        if target == "dcmotor":  # the back-EMF lives in the motor model, not the joint
            attrs = dataclasses.replace(attrs, damping=params.values["friction_viscous"])
        for line in _dropped(params, target):
            if line not in dropped:
                dropped.append(line)
        if joint.mjcf not in joints:
            raise ConfigurationError(f"{mjcf}: no joint {joint.mjcf!r} (robot {robot.name})")
        j = joints[joint.mjcf]
        j.armature = attrs.armature + (float(j.armature) if keep else 0.0)
        j.damping = np.array([attrs.damping + (float(j.damping[0]) if keep else 0.0), 0, 0])
        j.frictionloss = attrs.frictionloss + (float(j.frictionloss) if keep else 0.0)
        j.solref_friction = [-1.0, -STOP_IN_ONE_STEP / robot.control_period]
        j.solimp_friction = [STOP_IN_ONE_STEP, STOP_IN_ONE_STEP, 0.001, 0.5, 2.0]
        gap = (backlash_hinge or {}).get(joint.actuator, 0.0)
        if gap > 0.0:
            j.parent.add_joint(name=BACKLASH_HINGE.format(joint=j.name), type=j.type,
                               axis=j.axis, pos=j.pos, range=[-0.5 * gap, 0.5 * gap],
                               limited=mujoco.mjtLimited.mjLIMITED_TRUE,
                               solref_limit=[2.0 * robot.control_period, 1.0])
            hinge = (f"{joint.name}: the position loop reads the motor side of the gear's "
                     f"{1e3 * gap:.3g} mrad gap (the hinge {BACKLASH_HINGE.format(joint=j.name)}), "
                     "the firmware the output")
            dropped[:] = [line for line in dropped if line != "the backlash extension"]
            dropped.append(hinge)
        act = actuators.get(joint.mjcf)
        if act is None:
            act = spec.add_actuator(name=joint.mjcf, target=joint.mjcf,
                                    trntype=mujoco.mjtTrn.mjTRN_JOINT)
        if target == "dcmotor":
            _set_dcmotor(act, attrs, params, mujoco)
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_FALSE
        else:
            act.set_to_position(kp=attrs.kp, kv=attrs.kv)
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-attrs.force_limit, attrs.force_limit]
        out.append(attrs)
    spec.option.timestep = robot.control_period
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    return RobotExport(spec, out, dropped)


def _bundle_assets(spec, mjcf: Path, assets: Path) -> None:
    """Copy the mesh and texture files ``spec`` names (relative to its ``meshdir`` and
    ``texturedir``, themselves relative to the MJCF's folder) into ``assets``, keeping their
    relative paths, and point the spec there: the export loads from wherever it is moved."""
    for items, attr in ((spec.meshes, "meshdir"), (spec.textures, "texturedir")):
        base = Path(getattr(spec, attr) or "")
        base = base if base.is_absolute() else mjcf.parent / base
        for item in items:
            if not item.file or Path(item.file).is_absolute():
                continue  # a built-in texture, or a path that holds anywhere
            source = base / item.file
            if source.is_file():  # else MuJoCo names what is missing when it loads
                target = assets / item.file
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target)
                except OSError as e:
                    from frictionsim.atomic import unwritable

                    raise unwritable(target, e) from None
        setattr(spec, attr, assets.name)


def write_export(export: RobotExport, mjcf: Path, folder: Path, name: str,
                 header: str) -> Path:
    """``folder/<name>.xml`` with ``header`` as a comment, the mesh and texture files it
    names copied to ``folder/assets``; the written path."""
    import xml.dom.minidom

    from frictionsim import atomic

    folder.mkdir(parents=True, exist_ok=True)
    _bundle_assets(export.spec, mjcf, folder / "assets")
    text = export.spec.to_xml()
    comment = "<!--\n" + header.replace("--", "- -") + "\n-->\n"
    first = text.index(">") + 1 if text.startswith("<?xml") else 0
    text = text[:first] + ("\n" if first else "") + comment + text[first:].lstrip("\n")
    xml.dom.minidom.parseString(text)  # well-formed for strict parsers too
    path = folder / f"{name}.xml"
    atomic.write_text(path, text)
    return path
