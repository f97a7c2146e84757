"""Three actuators on one robot in mjlab, timed alternately in one process
(``frictionsim run mjlab-actuators``): the robot's own MJCF position actuators, frictionsim's
``FrictionsimActuatorCfg``, and the reference project's (BAM's ``bam/mjlab.py``, from a
checkout the user gives), both servo models with BAM's published 7.4 V STS3215 M1 on every
hinge (kp 32, 7.4 V, a 6 ms control period on 2 ms physics steps, Euler).

Each actuator's robot is stepped in chunks of 10 physics steps after three warm-up chunks,
the three alternated chunk by chunk so that a load on the machine falls on all of them; the
figure is the median chunk's µs per batched physics step. BAM creates its STS3215 limiter
state only when it loads a log: it is set here once to zero, the state a fresh servo starts in.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra

KINDS = ("mjcf", "frictionsim", "bam")
TIMESTEP = 0.002
CONTROL_PERIOD = 0.006
KP, VIN = 32.0, 7.4
CHUNK = 10
BAM_M1 = Path("bam") / "params" / "feetech_sts3215_7_4V" / "m1.json"


@dataclass
class ActuatorTimes:
    """µs per batched physics step of each actuator (``KINDS``), the median chunk."""

    robot: str
    hinges: int
    worlds: int
    threads: int
    median_us: dict

    def ratio(self, kind: str) -> float:
        """``kind``'s time over the robot's own actuators'."""
        return self.median_us[kind] / self.median_us["mjcf"]


def bam_checkout(path: Path) -> Path:
    """``path`` if it is a checkout of Rhoban/bam with its mjlab actuator and 7.4 V M1."""
    for needed in (Path("bam") / "mjlab.py", BAM_M1):
        if not (path / needed).is_file():
            raise ConfigurationError(f"--bam {path}: no {needed} there (give a checkout of "
                                     "github.com/Rhoban/bam)")
    return path


def time_actuators(bam: Path, mjcf: Path | None, height: float | None, worlds: int,
                   rounds: int, device: str, progress: Callable[[str], None]) -> ActuatorTimes:
    """The three actuators on ``mjcf`` (None: the built-in 20-dof biped; ``height``: a floor
    and the free base that high above it), ``worlds`` worlds, ``rounds`` alternated chunks."""
    try:
        import mujoco
        import torch
        from mjlab.actuator.xml_actuator import XmlActuatorCfg
        from mjlab.entity import EntityArticulationInfoCfg, EntityCfg
        from mjlab.scene import Scene, SceneCfg
        from mjlab.sim import MujocoCfg, Simulation, SimulationCfg
        from mjlab.terrains import TerrainEntityCfg
    except ImportError:
        raise MissingExtra("run mjlab-actuators needs mjlab: pip install 'frictionsim[mjlab]'") \
            from None
    sys.path.insert(0, str(bam))
    try:
        from bam.mjlab import BamActuatorCfg
    finally:
        sys.path.remove(str(bam))

    from frictionsim.experiments.common.timing import alternated
    from frictionsim.experiments.robots.adapter_cost import biped_mjcf
    from frictionsim.params import ParameterSet
    from frictionsim.solvers.mjlab import FrictionsimActuatorCfg

    if mjcf is None:
        xml, _ = biped_mjcf()

        def spec():
            return mujoco.MjSpec.from_string(xml)
    else:
        def spec():
            return mujoco.MjSpec.from_file(str(mjcf))
    probe = spec().compile()
    joints = tuple(probe.joint(i).name for i in range(probe.njnt)
                   if probe.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE)
    if not joints:
        raise ConfigurationError(f"{mjcf}: no hinge joints to put servos on")
    published = json.loads((bam / BAM_M1).read_text())
    m1 = ParameterSet("m1", "sts3215_7v4", {k: published[k] for k in (
        "kt", "R", "armature", "q_offset", "friction_base", "friction_viscous")})
    m1 = m1.with_scheme("semi_implicit")

    def without_actuators():
        s = spec()
        for actuator in list(s.actuators):
            s.delete(actuator)
        return s

    def build(kind: str):
        if kind == "mjcf":
            actuator, spec_fn = XmlActuatorCfg(target_names_expr=joints), spec
        elif kind == "frictionsim":
            actuator = FrictionsimActuatorCfg(target_names_expr=joints, params=m1, kp=KP,
                                              vin=VIN, control_period=CONTROL_PERIOD)
            spec_fn = without_actuators
        else:
            actuator = BamActuatorCfg(target_names_expr=joints, json_path=str(bam / BAM_M1),
                                      kp_fw=KP, vin=VIN)
            spec_fn = without_actuators
        entity = EntityCfg(spec_fn=spec_fn,
                           articulation=EntityArticulationInfoCfg(actuators=(actuator,)))
        terrain = None
        if height is not None:
            terrain = TerrainEntityCfg(terrain_type="plane")
            entity.init_state = EntityCfg.InitialStateCfg(pos=(0.0, 0.0, height))
        scene = Scene(SceneCfg(num_envs=worlds, terrain=terrain, entities={"robot": entity}),
                      device)
        sim = Simulation(num_envs=worlds, device=device, model=scene.compile(),
                         cfg=SimulationCfg(mujoco=MujocoCfg(timestep=TIMESTEP,
                                                            integrator="euler")))
        if kind == "bam":  # BAM writes these per world
            sim.expand_model_fields(("dof_frictionloss", "dof_damping"))
        scene.initialize(sim.mj_model, sim.model, sim.data)
        robot = scene["robot"]
        target = robot.data.default_joint_pos[:, -len(joints):].clone()
        sim.reset()
        sim.forward()
        if kind == "bam":
            robot.actuators[0]._bam_model.actuator.q_target_smooth = torch.zeros_like(target)
        return scene, sim, robot, target

    def chunk(world) -> float:
        scene, sim, robot, target = world
        start = time.perf_counter()
        for _ in range(CHUNK):
            robot.set_joint_position_target(target)
            scene.write_data_to_sim()
            sim.step()
            scene.update(TIMESTEP)
        return (time.perf_counter() - start) / CHUNK

    built = {}
    for kind in KINDS:
        progress(f"building the robot with the {kind} actuators")
        built[kind] = build(kind)
        for _ in range(3):
            chunk(built[kind])
    times = alternated({kind: (lambda k=kind: chunk(built[k])) for kind in KINDS}, rounds,
                       lambda r, _: progress(f"round {r + 1} of {rounds}"))
    return ActuatorTimes(str(mjcf) if mjcf else "built-in biped", len(joints), worlds,
                         torch.get_num_threads(),
                         {kind: 1e6 * float(np.median(t)) for kind, t in times.items()})
