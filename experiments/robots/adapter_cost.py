"""What the servo adapter costs on a robot with contacts, like with like
(``frictionsim run adapter-cost``).

The comparison a user makes: the robot's own MJCF stepped by MuJoCo as it ships (its
position actuators, its joints' armature, damping and frictionloss, its contacts) against
the same MJCF with frictionsim's servos on the joints
(:meth:`~frictionsim.solvers.mujoco_adapter.ServoModel.from_robot`: the servos replace the
joints' own dynamics and drive the same actuators). A third model, the MJCF's actuators with
its joints' damping and frictionloss removed, is the cheapest thing MuJoCo can step: its
frictionloss rows cost the constraint solver, which the adapter's exact friction does not
use. Built in: a 20-dof biped (a floating torso, two legs of seven hinges, box feet on a
floor plane, the usual hobby-biped sizes); or any MJCF with ``--mjcf`` and ``--joints``.
Each model starts from its ``qpos0``, steps the same seconds, and the three are timed in
turn, several rounds, keeping each one's fastest round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

LEG = ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll", "toe")
AXES = ("0 0 1", "1 0 0", "0 1 0", "0 1 0", "0 1 0", "1 0 0", "0 0 1")


def _leg(side: str, y: float) -> str:
    bodies = []
    for i, (name, axis) in enumerate(zip(LEG, AXES)):
        pos = f"0 {y} -0.05" if i == 0 else "0 0 -0.02"
        bodies.append(
            f'<body name="{side}_{name}_link" pos="{pos}">'
            f'<joint name="{side}_{name}" axis="{axis}" range="-1.5 1.5" armature="0.028" '
            'damping="0.6" frictionloss="0.05"/>'
            '<geom type="capsule" fromto="0 0 0 0 0 -0.04" size="0.012" mass="0.06" '
            'contype="0" conaffinity="0"/>')
    foot = (f'<geom name="{side}_foot" type="box" size="0.05 0.03 0.008" pos="0 0 -0.05" '
            'mass="0.05"/>')
    return "".join(bodies) + foot + "</body>" * len(LEG)


def biped_mjcf() -> tuple[str, list[str]]:
    """The built-in 20-dof biped (MJCF text) and its 14 servo joints: position actuators
    (kp 10 N·m/rad, kv 0.3, ±2.9 N·m, an STS3215's stall torque) on hinges with the armature,
    damping and frictionloss such models ship with, feet that touch a floor plane."""
    joints = [f"{s}_{n}" for s in ("l", "r") for n in LEG]
    actuators = "".join(f'<position joint="{j}" kp="10" kv="0.3" forcerange="-2.9 2.9"/>'
                        for j in joints)
    xml = ('<mujoco model="biped20"><option timestep="0.002"/><worldbody>'
           '<geom name="floor" type="plane" size="5 5 0.1"/>'
           '<body name="torso" pos="0 0 0.36"><freejoint/>'
           '<geom type="box" size="0.08 0.06 0.05" mass="1.2" contype="0" conaffinity="0"/>'
           f'{_leg("l", 0.05)}{_leg("r", -0.05)}</body></worldbody>'
           f"<actuator>{actuators}</actuator></mujoco>")
    return xml, joints


@dataclass
class AdapterCost:
    """Fastest µs per physics step of each model, and what the models are."""

    dofs: int
    servos: int
    contacts: int
    shipped_us: float
    bare_us: float
    adapter_us: float

    @property
    def ratio_shipped(self) -> float:
        return self.adapter_us / self.shipped_us

    @property
    def ratio_bare(self) -> float:
        return self.adapter_us / self.bare_us


def _bare(spec, joints: list[str]):
    bare = spec.copy()
    for j in bare.joints:
        if j.name in joints:
            j.damping = np.zeros(3)
            j.frictionloss = 0.0
    return bare


def adapter_cost(mjcf: str | None = None, joints=None, params=None, seconds: float = 2.0,
                 rounds: int = 7, progress=lambda message: None) -> AdapterCost:
    """Time the MJCF as shipped, without its joints' damping and frictionloss, and with the
    servos of ``params`` (default the 7.4 V STS3215's M6, the usual biped servo) on
    ``joints`` (fnmatch patterns; default the built-in biped's, or every named hinge)."""
    import mujoco

    from frictionsim.experiments.common.timing import alternated
    from frictionsim.params import ParameterSet
    from frictionsim.solvers.mjcf_files import read_spec
    from frictionsim.solvers.mujoco_adapter import ServoModel

    if mjcf is None:
        mjcf, joints = biped_mjcf()
    spec = read_spec(mjcf)
    if params is None:
        params = ParameterSet.defaults("m6", "sts3215_7v4").with_scheme("semi_implicit")
    servo_model = ServoModel.from_robot(spec, params, joints)
    names = [s.joint for s in servo_model.servos]
    shipped = spec.compile()
    models = {"shipped": shipped, "bare": _bare(spec, names).compile(),
              "adapter": servo_model.model}
    steps = max(1, int(round(seconds / shipped.opt.timestep)))
    contacts = 0

    def run(name: str) -> float:
        """µs per step of one run of ``name``'s model."""
        nonlocal contacts
        model = models[name]
        data = mujoco.MjData(model)
        start = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(model, data)
        micros = (time.perf_counter() - start) / steps * 1e6
        if name == "adapter":
            servo_model.check(data)
            contacts = int(data.ncon)
        return micros

    times = alternated({name: (lambda n=name: run(n)) for name in models}, rounds,
                       lambda r, so_far: progress(
                           f"round {r + 1}/{rounds}: "
                           + ", ".join(f"{k} {min(v):.2f} µs" for k, v in so_far.items())))
    best = {name: min(t) for name, t in times.items()}
    return AdapterCost(int(shipped.nv), len(names), contacts, best["shipped"], best["bare"],
                       best["adapter"])
