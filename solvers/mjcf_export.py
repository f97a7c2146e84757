"""An M1 parameter file as plain MuJoCo joint and actuator attributes (no adapter, no callback).

For the voltage law (Dynamixel, Feetech) the servo of docs/model.md §3 with M1 friction is
exactly a MuJoCo ``<position>`` actuator plus joint attributes::

    τ_m = clip(kp·eg·egr·vin·(k_t/R)·(q_t − q), ±max_pwm·vin·k_t/R) − (k_t²/R)·v

so ``kp = KP·error_gain·error_gain_ratio·vin·k_t/R``, ``forcerange = ±max_pwm·vin·k_t/R``,
joint ``damping = k_t²/R + K_v``, ``armature``, ``frictionloss = K_c`` with the
friction row stopping the joint within one step (``solreffriction = (−1, −dw/h)``,
``solimpfriction = (dw, dw, …)``, dw = 0.9999) and ``eulerdamp`` disabled. That is
docs/model.md §4's ``semi_implicit`` scheme up to MuJoCo's soft friction row: on the 9 XL330
logs without torque-off, 0.007 mrad mean from frictionsim's rollout (tests check it). For the current law
(eRob) the P-D law maps onto ``kp = k_t·KP``, ``kv = k_t·d·√KP`` and
``forcerange = ±k_t·max_current``, but the back-EMF window is not representable: that
export is approximate and says so. M2–M6 friction depends on velocity (Stribeck) and
on the motor and load torques: no MuJoCo attribute expresses it; use
:class:`frictionsim.solvers.mujoco_adapter.ServoModel`.
"""

from __future__ import annotations

import math

from frictionsim import schema
from frictionsim.params import ParameterSet

STOP_IN_ONE_STEP = 0.9999


class NotExportable(ValueError):
    """A parameter set MuJoCo's attributes cannot express (M2–M6)."""


def check_export_arguments(joint: str, kp: float | None, vin: float | None,
                           timestep: float) -> None:
    """ValueError naming the argument that cannot go into an MJCF snippet: a joint name that is
    empty or holds XML's special characters, a gain or supply that is not a positive finite
    number, a timestep outside (0, 1] s."""
    if not isinstance(joint, str) or not joint.strip() or joint != joint.strip() \
            or any(c in joint for c in '"<>&\'') or not joint.isprintable():
        raise ValueError(f"joint name {joint!r}: give the joint's name as in your model (not "
                         "empty; no quotes, <, >, & or surrounding spaces)")
    for name, value in (("kp", kp), ("vin", vin)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} {value!r} must be a positive finite number")
    if not (math.isfinite(timestep) and 0 < timestep <= 1.0):
        raise ValueError(f"timestep {timestep!r} s must be in (0, 1]")


def _comment(text: str) -> str:
    """Text safe inside an XML comment (which may not hold '--')."""
    return text.replace("--", "- -")


def export_m1(params: ParameterSet, joint: str = "servo", kp: float | None = None,
              vin: float | None = None, timestep: float = 0.001) -> str:
    """The MJCF snippet (option, joint attributes, actuator) of an M1 parameter set."""
    if params.model != "m1":
        raise NotExportable(
            f"{params.source or 'the parameters'}: model {params.model} has friction that "
            "depends on velocity (Stribeck) or on the motor and load torques; MuJoCo's "
            "frictionloss/damping cannot express it. Attach the servo with frictionsim's MuJoCo "
            "adapter instead (frictionsim.solvers.mujoco_adapter.ServoModel, or "
            "`frictionsim simulate --engine mujoco`)"
        )
    check_export_arguments(joint, kp, vin, timestep)
    act = schema.get_actuator(params.actuator)
    v = params.values
    kt, resistance, armature = v["kt"], v["R"], v["armature"]
    gain = act.kp if kp is None else kp
    if act.target_speed_limit:
        note = ("\n     The firmware's target-speed limiter (max_velocity) is not exported: "
                "goals must move slower than it.")
    else:
        note = ""
    friction = (f'frictionloss="{v["friction_base"]:.9g}" solreffriction="-1 '
                f'{-STOP_IN_ONE_STEP / timestep:.9g}" solimpfriction="{STOP_IN_ONE_STEP} '
                f'{STOP_IN_ONE_STEP} 0.001 0.5 2"')
    if act.law == "voltage":
        supply = act.vin if vin is None else vin
        stiffness = gain * act.error_gain * v.get("error_gain_ratio", 1.0) * supply * kt / resistance
        limit = act.max_pwm * supply * kt / resistance
        damping = kt**2 / resistance + v["friction_viscous"]
        header = (f"<!-- frictionsim export-mjcf: {params.model} on {params.actuator} "
                  f"({_comment(params.source or 'parameters')}), firmware kp {gain:g}, "
                  f"vin {supply:g} V.\n"
                  "     docs/model.md §3's voltage law and M1 friction for MuJoCo's Euler step: 0.007 mrad "
                  "mean from frictionsim's semi_implicit rollout on the XL330 logs." + note + " -->")
        actuator = (f'<position name="{joint}" joint="{joint}" kp="{stiffness:.9g}" '
                    f'forcelimited="true" forcerange="{-limit:.9g} {limit:.9g}"/>')
    else:
        damping_fw = act.damping
        stiffness = kt * gain
        kv = kt * damping_fw * math.sqrt(gain)
        limit = kt * act.max_current
        damping = v["friction_viscous"]
        header = (f"<!-- frictionsim export-mjcf: {params.model} on {params.actuator} "
                  f"({_comment(params.source or 'parameters')}), firmware kp {gain:g}, damping "
                  f"{damping_fw:g}.\n     Approximate: the current law's back-EMF window "
                  f"(±{act.max_voltage:g} V) has no MuJoCo counterpart; the rest is exact. -->")
        actuator = (f'<position name="{joint}" joint="{joint}" kp="{stiffness:.9g}" '
                    f'kv="{kv:.9g}" forcelimited="true" forcerange="{-limit:.9g} {limit:.9g}"/>')
    offset = v["q_offset"]
    joint_line = (f'<joint name="{joint}" armature="{armature:.9g}" damping="{damping:.9g}" '
                  f"{friction}/>")
    lines = [header,
             '<option integrator="Euler">',
             '  <flag eulerdamp="disable"/>',
             "</option>",
             "<!-- on the servo's hinge joint (keep its pos, axis and range): -->",
             joint_line,
             "<actuator>",
             f"  {actuator}",
             "</actuator>"]
    if offset:
        lines.insert(1, f"<!-- q_offset = {offset:.9g} rad: the encoder reads the joint angle "
                        "minus it; rotate the link's body by it about the joint axis to model "
                        "the calibration -->")
    return "\n".join(lines) + "\n"
