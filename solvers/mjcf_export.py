"""A parameter file as plain MuJoCo joint and actuator attributes (no adapter, no callback).

Two targets: a ``<position>`` actuator (:func:`export_m1`, any MuJoCo) and MuJoCo's own DC
motor, ``<dcmotor>`` (:func:`export_dcmotor`, MuJoCo ≥ :data:`DCMOTOR_MUJOCO`).

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
import warnings

from frictionsim import plausibility, schema
from frictionsim.errors import ConfigurationError
from frictionsim.params import ParameterSet

STOP_IN_ONE_STEP = 0.9999
#: The finest MuJoCo timestep an export writes (s): a hundredth of the fastest servo loop a
#: robot file may declare (10 kHz).
MIN_TIMESTEP = 1e-6
#: The first MuJoCo whose ``<dcmotor>`` has the on-board controller in torque space with
#: ``input="pos"`` (3.12.0); 4.0.0 is what the tests run.
DCMOTOR_MUJOCO = "3.12"


class NotExportable(ConfigurationError):
    """A parameter set MuJoCo's attributes cannot express (M2–M6)."""


def check_export_arguments(joint: str, kp: float | None, vin: float | None,
                           timestep: float) -> None:
    """ValueError naming the argument that cannot go into an MJCF snippet: a joint name that is
    empty or holds XML's special characters, a gain or supply that is not a positive finite
    number or lies outside what a log's header may hold (:data:`frictionsim.plausibility.HEADER`),
    a timestep outside [:data:`MIN_TIMESTEP`, 1] s."""
    if not isinstance(joint, str) or not joint.strip() or joint != joint.strip() \
            or any(c in joint for c in '"<>&\'') or not joint.isprintable():
        raise ConfigurationError(f"joint name {joint!r}: give the joint's name as in your model (not "
                                 "empty; no quotes, <, >, & or surrounding spaces)")
    for name, value in (("kp", kp), ("vin", vin)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigurationError(f"{name} {value!r} must be a positive finite number")
        if value is not None:  # a log's header would be refused beyond these
            plausibility.HEADER[name].check(value, name, ConfigurationError)
    if not (math.isfinite(timestep) and MIN_TIMESTEP <= timestep <= 1.0):
        raise ConfigurationError(f"timestep {timestep!r} s must be in [{MIN_TIMESTEP:g}, 1]")


class SchemeWarning(UserWarning):
    """A parameter file identified with the reference scheme, used with MuJoCo's Euler step."""


def reference_scheme_note(source: str) -> str:
    """What a :class:`SchemeWarning` says of the parameter file ``source``."""
    return (f"{source}: identified with the reference scheme (q += v·dt + ½·a·dt²); MuJoCo "
            "steps with semi-implicit Euler, about 7 mrad mean away on the XL330 logs: "
            "identify with --scheme semi_implicit for MuJoCo")


def warn_reference_scheme(params: ParameterSet) -> None:
    """A :class:`SchemeWarning` when ``params`` were identified with the reference scheme: an
    export runs them with MuJoCo's Euler step, as the adapter does."""
    if params.scheme != "semi_implicit":
        source = params.source or f"{params.model} on {params.actuator}"
        warnings.warn(reference_scheme_note(source), SchemeWarning, stacklevel=3)


#: The parameters an export writes into MuJoCo's attributes, and the sign each must have there:
#: k_t, R and the gain ratio scale the actuator's gain and force range (a negative one turns
#: them round, and MuJoCo refuses a force range whose low end is above its high end); the
#: armature, Coulomb and viscous friction, the D term's time and the speed limits become
#: armature, frictionloss, damping, kv and slewmax, which MuJoCo takes only ≥ 0.
POSITIVE = ("kt", "R", "error_gain_ratio", "max_current_limit")
NON_NEGATIVE = ("armature", "friction_base", "friction_viscous", "derivative_time",
                "max_velocity")


def check_native_values(params: ParameterSet, where: str | None = None) -> None:
    """:class:`NotExportable` naming the first parameter (:data:`POSITIVE`,
    :data:`NON_NEGATIVE`) whose value no MuJoCo attribute takes: frictionsim simulates such a
    set (with a warning), but an export would write a file MuJoCo refuses or turns round."""
    where = where or params.source or f"{params.model} on {params.actuator}"
    for names, ok, need in ((POSITIVE, lambda x: x > 0.0, "> 0"),
                            (NON_NEGATIVE, lambda x: x >= 0.0, "≥ 0")):
        for name in names:
            if name in params.values and not ok(params.values[name]):
                raise NotExportable(f"{where}: {name} = {params.values[name]:g} has no MuJoCo "
                                    f"attribute (an export needs {name} {need})")


def firmware_gain(params: ParameterSet, kp: float | None) -> float:
    """The firmware P gain to export: ``kp``, else the actuator's default; ValueError when that
    is 0 (a current-law drive's declaration, whose gain each log carries), which would
    export a limp actuator."""
    gain = schema.get_actuator(params.actuator).kp if kp is None else kp
    if not gain > 0:
        raise ConfigurationError(f"{params.actuator} declares no firmware P gain (kp = {gain:g}): "
                                 "give the gain the servo runs at (--kp)")
    return gain


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
    check_native_values(params)
    warn_reference_scheme(params)
    act = schema.get_actuator(params.actuator)
    v = params.values
    kt, resistance, armature = v["kt"], v["R"], v["armature"]
    gain = firmware_gain(params, kp)
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
    lost = "".join(f"\n     Not carried: {_comment(x)}." for x in what_position_drops(params))
    header = header.removesuffix(" -->") + lost + " -->"
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


def dcmotor_attributes(params: ParameterSet, kp: float | None = None, vin: float | None = None,
                       damping: float | None = None) -> dict[str, str]:
    """The attributes of a ``<dcmotor>`` that is the servo's firmware and motor (docs/model.md §3).

    Voltage law: the controller's torque-space gains ``kp = (K/R)·vin·KP·error_gain·ratio`` and
    ``kd = K²/R`` (its drive voltage ``(R/K)·τ + K·v`` then is ``vin·KP·eg·ratio·e``: the
    back-EMF compensation cancelled), ``Vmax = vin·max_pwm``; the motor K = k_t, R. The
    sts3215 target limiter is the controller's ``slewmax`` (= max_velocity). Current law
    (eRob): ``kp = k_t·KP``, ``kd = k_t·d·√KP``, the 12 A clip as the ``saturation`` current,
    the back-EMF window as ``Vmax``. With ``current_limit``, the saturation current is
    ``max_current_limit`` (a hard clip of k_t·i where frictionsim's is smooth)."""
    check_native_values(params)
    act = schema.get_actuator(params.actuator)
    v = params.values
    kt, resistance = v["kt"], v["R"]
    gain = firmware_gain(params, kp)
    out = {"input": "pos", "resistance": f"{resistance:.9g}", "motorconst": f"{kt:.9g} {kt:.9g}"}
    slew = v.get("max_velocity", 0.0) if act.target_speed_limit else 0.0
    if act.law == "voltage":
        supply = act.vin if vin is None else vin
        stiffness = (kt / resistance) * supply * gain * act.error_gain * \
            v.get("error_gain_ratio", 1.0)
        out["controller"] = (f"{stiffness:.9g} 0 {kt**2 / resistance:.9g} {slew:.9g} 0 "
                             f"{supply * act.max_pwm:.9g}")
        current = v.get("max_current_limit", 0.0)
    else:
        d = act.damping if damping is None else damping
        out["controller"] = (f"{kt * gain:.9g} 0 {kt * d * math.sqrt(gain):.9g} {slew:.9g} 0 "
                             f"{act.max_voltage:.9g}")
        current = act.max_current
    if current:
        out["saturation"] = f"0 {current:.9g} 0"
    return out


def what_dcmotor_drops(params: ParameterSet) -> list[str]:
    """What of a parameter set a ``<dcmotor>`` export cannot carry (each a sentence)."""
    act = schema.get_actuator(params.actuator)
    v = params.values
    lost = []
    if "current_limit" in params.extensions:
        lost.append("the current limit's smooth saturation becomes a hard clip at "
                    f"k_t·{v['max_current_limit']:g} A")
    lost += _extensions_dropped(params)
    if act.derivative or act.dead_band:
        lost.append("the Feetech position loop's D term on the error rate and its dead band "
                    "are dropped (the controller's kd damps the velocity only)")
    if act.law == "current":
        lost.append("with torque disabled the drive does not brake (the eRob's back-EMF "
                    "window acts only while enabled)")
    if act.law == "voltage" and act.target_speed_limit:
        lost.append("the controller's slew state starts at 0: set data.act (or the first ctrl) "
                    "to the joint's initial position, as the firmware's limiter starts there")
    return lost


def what_position_drops(params: ParameterSet) -> list[str]:
    """What of an M1 parameter set's electrical extensions (docs/model.md §9) a
    ``<position>`` export cannot carry (each a sentence)."""
    lost = []
    if "current_limit" in params.extensions:
        lost.append(f"the current limit ({params.values['max_current_limit']:g} A) is dropped: "
                    "the force range is the drive's voltage limit")
    return lost + _extensions_dropped(params)


def _extensions_dropped(params: ParameterSet) -> list[str]:
    """The extensions neither export carries: the logged supply, the delays, the friction's
    position ripple and the gear train's backlash."""
    v = params.values
    lost = []
    if "supply" in params.extensions:
        lost.append("the supply follows no log: vin is constant")
    if v.get("latency_steps", 0.0):
        lost.append(f"latency ({v['latency_steps']:g} control periods) is dropped")
    if v.get("observation_delay", 0.0):
        lost.append(f"observation_delay ({1e3 * v['observation_delay']:g} ms) is dropped: it "
                    "delays what the logs record, not the joint")
    if v.get("ripple_amplitude", 0.0) or v.get("meshing_amplitude", 0.0):
        lost.append("the position ripple of the friction is dropped: frictionloss is constant")
    if v.get("backlash", 0.0):
        lost.append(f"the gear train's backlash ({1e3 * v['backlash']:.3g} mrad gap) is dropped: "
                    "the joint is stiff")
    return lost


def export_dcmotor(params: ParameterSet, joint: str = "servo", kp: float | None = None,
                   vin: float | None = None, timestep: float = 0.001,
                   bench: tuple[float, float, float] | None = None,
                   note: str = "", lugre: tuple[float, ...] | None = None) -> str:
    """A complete MJCF document with the servo as a native ``<dcmotor>`` (:func:`dcmotor_attributes`)
    and M1's friction on its joint (``frictionloss`` K_c stopping the joint within one step,
    ``damping`` K_v explicit with ``eulerdamp`` disabled, ``armature``), as a default class
    named after the actuator that any model's joint and actuator can take, on a body of its
    own: the pendulum bench of ``bench`` = (mass, length, arm mass) or a small rod. Only M1
    (:class:`NotExportable` otherwise: M2–M6 need the closest M1 fitted on logs first).
    ``note``: a line for the header (e.g. the fidelity measured). ``lugre`` = (stiffness
    N·m/rad, damping N·m·s/rad, Coulomb N·m, static N·m, Stribeck rad/s): the dcmotor's own
    LuGre friction instead of the joint's Coulomb term (K_v then the actuator's damping)."""
    if params.model != "m1":
        raise NotExportable(f"{params.source or 'the parameters'}: model {params.model}'s "
                            "friction has no MuJoCo attribute; export the closest M1 (fitted "
                            "on your logs: export-mjcf --target dcmotor --logs …)")
    check_export_arguments(joint, kp, vin, timestep)
    warn_reference_scheme(params)
    act = schema.get_actuator(params.actuator)
    v = params.values
    cls = "".join(c if c.isalnum() or c in "_-" else "_" for c in params.actuator)
    attributes = dcmotor_attributes(params, kp, vin)
    friction = (f'frictionloss="{v["friction_base"]:.9g}" solreffriction="-1 '
                f'{-STOP_IN_ONE_STEP / timestep:.9g}" solimpfriction="{STOP_IN_ONE_STEP} '
                f'{STOP_IN_ONE_STEP} 0.001 0.5 2" damping="{v["friction_viscous"]:.9g}"')
    if lugre is not None:
        if len(lugre) != 5 or not all(math.isfinite(x) and x >= 0 for x in lugre) \
                or not lugre[0] > 0:
            raise ConfigurationError(f"lugre {lugre!r}: five numbers ≥ 0, the stiffness > 0")
        attributes["lugre"] = " ".join(f"{x:.9g}" for x in lugre)
        attributes["damping"] = f"{v['friction_viscous']:.9g}"
        friction = 'frictionloss="0" damping="0"'
    attrs = " ".join(f'{k}="{val}"' for k, val in attributes.items())
    if bench is not None:
        mass, length, arm_mass = bench
        total = mass + arm_mass
        com = (mass * length + arm_mass * length / 2) / total
        about = mass * length**2 + (arm_mass / 3) * length**2
        inertia = max(about - total * com**2, 1e-10 * about)
        body = (f'<inertial pos="0 0 {-com:.9g}" mass="{total:.9g}" '
                f'diaginertia="{inertia:.9g} {inertia:.9g} {inertia:.9g}"/>')
        what = f"a pendulum bench: {mass:g} kg at {length:g} m, arm {arm_mass:g} kg"
    else:
        body = '<geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.005" mass="0.01"/>'
        what = "a small rod standing for your link"
    lost = what_dcmotor_drops(params)
    gain = firmware_gain(params, kp)
    supply = act.vin if vin is None else vin
    lines = [f'<mujoco model="{cls}">',
             f"  <!-- frictionsim export-mjcf, target dcmotor: {params.model} on "
             f"{params.actuator} ({_comment(params.source or 'parameters')}), firmware kp "
             f"{gain:g}" + (f", vin {supply:g} V" if act.law == "voltage" else "") + ".",
             f"       Needs MuJoCo >= {DCMOTOR_MUJOCO} (<dcmotor input=\"pos\">). Put class="
             f'"{cls}" on your servo\'s joint and on a dcmotor actuator of it; the controller '
             "runs every physics step (the firmware every control period: use that timestep).",
             *[f"       Not carried: {_comment(x)}." for x in lost],
             *([f"       {_comment(note)}"] if note else []),
             "  -->",
             f'  <option timestep="{timestep:.9g}" gravity="0 0 -9.80665" integrator="Euler">',
             '    <flag eulerdamp="disable"/>',
             "  </option>",
             "  <default>",
             f'    <default class="{cls}">',
             f'      <joint armature="{v["armature"]:.9g}" {friction}/>',
             f"      <dcmotor {attrs}/>",
             "    </default>",
             "  </default>",
             "  <worldbody>",
             f"    <body name=\"{joint}_link\">  <!-- {what} -->",
             f'      <joint name="{joint}" class="{cls}" type="hinge" axis="0 1 0"/>',
             f"      {body}",
             "    </body>",
             "  </worldbody>",
             "  <actuator>",
             f'    <dcmotor name="{joint}" class="{cls}" joint="{joint}"/>',
             "  </actuator>",
             "</mujoco>"]
    if v["q_offset"]:
        lines.insert(len(lines) - 1, f"  <!-- q_offset = {v['q_offset']:.9g} rad: the encoder "
                     "reads the joint angle minus it -->")
    return "\n".join(lines) + "\n"
