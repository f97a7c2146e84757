"""frictionsim's servos as an mjlab actuator (optional extra ``mjlab``).

mjlab (an Isaac Lab-style API on MuJoCo Warp) plugs actuators into an entity through an
``ActuatorCfg`` (which joints, by name pattern) whose ``build`` makes an ``Actuator``
(``edit_spec``, ``initialize``, ``compute``, ``reset``). :class:`FrictionsimActuatorCfg` is one:
identified servos (a parameter file, a learned actuator file, or a robot parameter file
``robot identify`` wrote) on the joints its patterns select, their firmware settings from a
robot file or given here, every world its own servos
(:class:`~frictionsim.solvers.warp_servos.Randomisation`).
Each physics step its ``compute`` launches :class:`~frictionsim.solvers.warp_servos.WarpServos`'
kernel once, on MuJoCo Warp's own arrays (no copy, no host synchronisation, no torch operation
but the goals' copy): the control period of the worlds that are due, the motor, a learned
network, the supply, and friction by the budget on each world's mass matrix (exact for a held
joint: mjlab steps MuJoCo Warp after the actuators, so M(q) and the bias forces are the
previous step's, which for a joint at rest are this step's). The torque goes out through a
``<motor>`` actuator.

::

    from frictionsim.solvers.mjlab import FrictionsimActuatorCfg
    from frictionsim.solvers.warp_servos import Randomisation

    actuator = FrictionsimActuatorCfg(
        target_names_expr=(".*",), params="so101-fit/m6.json", robot="so101",
        randomisation=Randomisation(parameters=True, vin=(11.5, 12.5), delay=(0, 2),
                                    on_reset=True))

The policy reads what the servos report through :attr:`FrictionsimActuator.reported_position`
(``observation_delay``, on the encoder's grid of 4096 counts a turn for the STS3215 and the
XL330 unless ``encoder=False``) and :attr:`FrictionsimActuator.current`; each world's drawn
parameters through :meth:`FrictionsimActuator.parameters`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from frictionsim.errors import ConfigurationError, MissingExtra

try:
    from mjlab.actuator.actuator import Actuator, ActuatorCfg, ActuatorCmd
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("the mjlab actuator needs mjlab: pip install 'frictionsim[mjlab]'") \
        from None

from frictionsim.solvers.batched.setup import Randomisation, ServoSetup
from frictionsim.solvers.warp_servos import WarpServos


@dataclass(kw_only=True)
class FrictionsimActuatorCfg(ActuatorCfg):
    """Servos of frictionsim on the joints ``target_names_expr`` selects.

    ``params``: a parameter file (docs/model.md §7), a learned actuator file (§13) or a robot
    parameter file (``robot identify``; each joint gets its actuator's set), or the object one
    of them loads (a ``ParameterSet``, ``LearnedActuator`` or ``RobotParameters``). ``robot``: a
    built-in robot (``so101``) or a robot file whose joint table gives each servo's firmware
    settings (P, D, torque limit, acceleration) and the control period; ``kp``, ``vin``,
    ``kd``, ``torque_limit``, ``acceleration`` and ``control_period`` given here apply to every
    servo, in place of the robot file's (None: the robot file's, else the actuator's default;
    no torque limit or acceleration limit). ``randomisation``: what each world draws."""

    params: str | Path | object
    robot: str | Path | None = None
    kp: float | None = None
    vin: float | None = None
    kd: float | None = None
    torque_limit: float | None = None
    acceleration: float | None = None
    control_period: float | None = None
    randomisation: Randomisation = field(default_factory=Randomisation)
    encoder: bool | float = True

    def build(self, entity, target_ids: list[int], target_names: list[str]
              ) -> FrictionsimActuator:
        return FrictionsimActuator(self, entity, target_ids, target_names)


def joint_servos(cfg: FrictionsimActuatorCfg, target_names: list[str]) -> tuple[list, float]:
    """The :class:`~frictionsim.solvers.robot.JointServo` of each target joint and the control
    period (s), from the configuration's files."""
    from frictionsim import schema
    from frictionsim.learned_files import LearnedActuator, load_servo_model
    from frictionsim.params import ParameterSet
    from frictionsim.robot_params import RobotParameters, load_robot_params
    from frictionsim.solvers.robot import JointServo

    params_by_actuator, firmware = {}, {}
    period = cfg.control_period
    given = cfg.params
    if not isinstance(given, (str, Path, ParameterSet, LearnedActuator, RobotParameters)):
        raise ConfigurationError(f"FrictionsimActuatorCfg: params = {given!r}: a parameter "
                                 "file's path or the ParameterSet, LearnedActuator or "
                                 "RobotParameters it loads")
    if cfg.robot is not None:
        from frictionsim.robot_files import get_robot

        robot = get_robot(str(cfg.robot))
        period = robot.control_period if period is None else period
        if isinstance(given, (ParameterSet, LearnedActuator)):
            given = RobotParameters(robot.name, {given.actuator: given}, {})
        fit = given if isinstance(given, RobotParameters) else load_robot_params(given)
        robot, params_by_actuator = fit.for_robot(robot)
        firmware = {j.mjcf: j for j in robot.servo_joints}
    single = None if params_by_actuator else (
        given if isinstance(given, (ParameterSet, LearnedActuator)) else load_servo_model(given))
    if period is None:
        raise ConfigurationError("FrictionsimActuatorCfg needs control_period (s) or a robot file")
    servos = []
    for name in target_names:
        bare = name.rsplit("/", 1)[-1]  # an entity's prefix
        joint = firmware.get(bare) or firmware.get(name)
        if firmware and joint is None:
            raise ConfigurationError(f"joint {name!r} is not a servo joint of robot {cfg.robot}")
        params = params_by_actuator.get(joint.actuator) if joint is not None else single
        params = params or single
        if params is None:
            raise ConfigurationError(f"{cfg.params}: no parameters for joint {name!r}")
        fw = joint.firmware if joint is not None else None
        if cfg.kd not in (None, 0, 0.0) and not schema.get_actuator(params.actuator).derivative:
            raise ConfigurationError(f"joint {name!r}: kd = {cfg.kd!r} would do nothing: the "
                                     f"{params.actuator}'s firmware law has no D term")
        kp = cfg.kp if cfg.kp is not None else (fw.kp if fw is not None else None)
        if kp is None:
            raise ConfigurationError(f"joint {name!r}: give kp (the firmware gain) or a robot file")
        servos.append(JointServo(name, params, kp=kp, vin=cfg.vin,
                                 kd=_setting(cfg, fw, "kd", None),
                                 torque_limit=_setting(cfg, fw, "torque_limit", 0.0),
                                 acceleration=_setting(cfg, fw, "acceleration", 0.0)))
    return servos, period


def _setting(cfg: FrictionsimActuatorCfg, firmware, key: str, default):
    """A firmware setting: the configuration's where given, else the robot file's joint's
    (``firmware``, None without a robot file), else ``default``."""
    given = getattr(cfg, key)
    if given is not None:
        return given
    return getattr(firmware, key) if firmware is not None else default


class FrictionsimActuator(Actuator):
    """The servos of a :class:`FrictionsimActuatorCfg` in mjlab (module docstring)."""

    cfg: FrictionsimActuatorCfg

    def __init__(self, cfg: FrictionsimActuatorCfg, entity, target_ids: list[int],
                 target_names: list[str]) -> None:
        super().__init__(cfg, entity, target_ids, target_names)
        self.joint_servos, self.period = joint_servos(cfg, target_names)
        self.servos: WarpServos | None = None
        self._data = None

    def edit_spec(self, spec, target_names: list[str]) -> None:
        """A ``<motor>`` per target joint (its torque is the servo's); the joint's armature
        plus the servo's rotor inertia, no damping or friction of its own."""
        import numpy as np
        from mjlab.utils.spec import create_motor_actuator

        from frictionsim.layout import ARMATURE
        from frictionsim.solvers.mujoco_adapter import semi_implicit_theta

        joints = {j.name: j for j in spec.joints}
        for name, servo in zip(target_names, self.joint_servos):
            armature = float(semi_implicit_theta(servo)[ARMATURE])
            joint = joints.get(name)
            if joint is None:
                raise ConfigurationError(f"the entity has no joint {name!r}")
            act = create_motor_actuator(spec, name, effort_limit=1e6,
                                        transmission_type=self.cfg.transmission_type)
            joint.armature = float(joint.armature) + armature
            joint.damping = np.zeros(3)
            joint.frictionloss = 0.0
            self._mjs_actuators.append(act)

    def initialize(self, mj_model, model, data, device: str) -> None:
        super().initialize(mj_model, model, data, device)
        import dataclasses

        servos = [dataclasses.replace(s, joint=mj_model.joint(
            int(self.entity.indexing.joint_ids[t])).name)
            for s, t in zip(self.joint_servos, self._target_ids_list)]
        setup = ServoSetup.on_model(mj_model, servos, self.period, self.cfg.randomisation,
                                    self.cfg.encoder)
        self._data = data.struct if hasattr(data, "struct") else data  # mjlab's bridge
        self.servos = WarpServos(setup, self._data.nworld, device)
        self._goals = self.servos.torch(self.servos.goals)
        self._torque = self.servos.torch(self.servos.torque)
        self._cuda = self._goals.is_cuda

    def compute(self, cmd: ActuatorCmd):
        """The motor torques (worlds × servos) of this physics step, friction included: one
        kernel launch on MuJoCo Warp's arrays."""
        d = self._data
        self._goals.copy_(cmd.position_target)
        stream = self._user_stream() if self._cuda else None
        if stream is not None:  # the kernel waits for the goals, the torques for the kernel
            import warp as wp

            wp.get_stream(self.servos.device).wait_stream(wp.stream_from_torch(stream))
        self.servos.step(d.M, d.qfrc_bias, d.qfrc_passive, d.qpos, d.qvel)
        if stream is not None:
            stream.wait_stream(wp.stream_to_torch(self.servos.device))
        return self._torque

    def _user_stream(self):
        """The torch stream that writes the goals and reads the torques, where Warp's stream
        is not ordered with it: None for torch's legacy default stream (``cuda_stream`` 0),
        which Warp's blocking streams already wait for and are waited for by."""
        import torch

        stream = torch.cuda.current_stream(self._goals.device)
        return None if stream.cuda_stream == 0 else stream

    def reset(self, env_ids=None) -> None:
        super().reset(env_ids)
        if self.servos is not None:
            self.servos.reset(env_ids)

    @property
    def reported_position(self):
        """The position (worlds × servos, rad, a torch view) each servo reported at its last
        period, on its encoder's grid."""
        return self.servos.torch(self.servos.reported)

    @property
    def current(self):
        """The motor current (worlds × servos, A, a torch view) each servo drew at the last
        step (with the ``supply`` extension; 0 otherwise)."""
        from frictionsim.layout import SERVO_CURRENT

        return self.servos.torch(self.servos.records)[:, :, SERVO_CURRENT]

    def parameters(self, world: int | None = None) -> list:
        """The parameters each world drew (by name, a dict per servo), or world ``world``'s."""
        return self.servos.parameters(world)

