"""A servo exported as MuJoCo's own ``<dcmotor>`` (:func:`frictionsim.solvers.mjcf_export.export_dcmotor`),
run in plain MuJoCo on a bench log: no frictionsim code in the step, only MuJoCo's.

Each log gets its export (its gain, supply, bench and period); the joint starts at the
logged state, the goal is written to ``ctrl`` before each step, and while the log's torque is
off the actuator's group is disabled (``opt.disableactuator``: a disabled servo applies no
torque, docs/model.md §3). The position before each step is the prediction of that entry, as
frictionsim's rollouts give (docs/model.md §5).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from frictionsim import schema
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.mjcf_export import export_dcmotor
from frictionsim.solvers.mujoco_dynamics import mujoco
from frictionsim.solvers.rollouts import Rollout


@contextlib.contextmanager
def quiet_mujoco_warnings() -> Iterator[None]:
    """MuJoCo's warnings kept off the terminal (and out of ``MUJOCO_LOG.TXT``) for the
    duration: an optimiser's unstable candidate is an outcome the caller reads from
    ``data.warning``, not a message for the user."""
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda message: None)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def dcmotor_model(params: ParameterSet, log: Log, lugre: tuple[float, ...] | None = None):
    """The compiled export of M1 ``params`` (with the dcmotor's ``lugre`` friction instead of
    the joint's Coulomb term, when given) for ``log``'s bench, gain, supply and period."""
    act = schema.get_actuator(params.actuator)
    vin = float(log.header.get("vin", act.vin)) if act.law == "voltage" else None
    xml = export_dcmotor(params, "servo", kp=log.kp, vin=vin, timestep=log.dt,
                         bench=(log.mass, log.length, log.arm_mass), lugre=lugre)
    return mujoco.MjModel.from_xml_string(xml)


def dcmotor_rollout(params: ParameterSet, log: Log,
                    lugre: tuple[float, ...] | None = None) -> Rollout:
    """``log`` rolled out in plain MuJoCo with the ``<dcmotor>`` export of M1 ``params``
    (module docstring; ``lugre`` as in :func:`dcmotor_model`); SimulationError if it
    diverges."""
    model = dcmotor_model(params, log, lugre)
    data = mujoco.MjData(model)
    offset = params.values["q_offset"]
    goal = log.column("goal_position") + offset
    enable = log.column("torque_enable")
    data.qpos[0] = log.entries[0]["position"] + offset
    data.qvel[0] = float(log.entries[0].get("speed", 0.0))
    if model.actuator_actnum[0] and schema.get_actuator(params.actuator).target_speed_limit:
        data.act[0] = data.qpos[0]  # the slew state: the firmware's limiter starts at the joint
    q, v = np.empty(len(goal)), np.empty(len(goal))
    with quiet_mujoco_warnings():
        for k in range(len(goal)):
            q[k], v[k] = data.qpos[0] - offset, data.qvel[0]
            data.ctrl[0] = goal[k]
            model.opt.disableactuator = 0 if enable[k] > 0.5 else 1
            mujoco.mj_step(model, data)
    # MuJoCo resets a step whose acceleration blew up and carries on: that is a divergence
    unstable = data.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)].number > 0
    if unstable or not np.all(np.isfinite(q)):
        raise SimulationError(f"{log.name}: the <dcmotor> export of "
                              f"{params.source or params.model} diverged in MuJoCo")
    return Rollout(log, np.arange(len(goal)) * log.dt, q, v, log.column("position"))
