"""frictionsim's mjlab actuator inside mjlab itself (Scene, Simulation, MuJoCo Warp on the CPU).

mjlab 1.6 pins MuJoCo 3.11, which the ``dev`` extra cannot share with MJX and ``mujoco.sysid``,
so the suite's environment skips this module and the README's second command (``.ci/run``)
runs it in an environment of its own, where it must run (``FRICTIONSIM_MJLAB=required``: a
missing mjlab is then an error, not a skip)::

    python3 -m venv .venv-mjlab && .venv-mjlab/bin/pip install -e '.[mjlab,test]'
    FRICTIONSIM_MJLAB=required .venv-mjlab/bin/python -m pytest tests/test_mjlab_actuator.py

It holds the actuator to the CPU adapter (MuJoCo's C step with the Numba bank) on the bench
pendulum in a few worlds, checks that a held joint does not creep (the reference project's
actuator, with friction rows, drifts 6.9e-5 to 2.1e-4 rad in 2 s on this bench), that a reset
of some worlds restarts their servos, that a policy reads what the servos report on their
encoder's grid and what each world drew, that a step is one torch operation, and runs the
training environment of docs/robots.md for a few steps.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

if os.environ.get("FRICTIONSIM_MJLAB") != "required":
    pytest.importorskip("mjlab")
import mujoco  # noqa: E402
import torch  # noqa: E402  (mjlab's own dependency)
from mjlab.entity import EntityArticulationInfoCfg, EntityCfg  # noqa: E402
from mjlab.scene import Scene, SceneCfg  # noqa: E402
from mjlab.sim import MujocoCfg, Simulation, SimulationCfg  # noqa: E402

from frictionsim.params import ParameterSet, save_params  # noqa: E402
from frictionsim.solvers.engines import get_engine  # noqa: E402
from frictionsim.solvers.mjlab import FrictionsimActuatorCfg  # noqa: E402
from frictionsim.solvers.mujoco_adapter import bench_mjcf  # noqa: E402
from frictionsim.solvers.robot import JointServo  # noqa: E402
from tests.docs_examples import run_example  # noqa: E402

WORLDS = 3
PERIOD = 0.005
SUBSTEPS = 5
MJCF = bench_mjcf(0.2, 0.1, 0.0, 0.001)


@pytest.fixture(scope="module")
def params_file(tmp_path_factory):
    params = ParameterSet("m6", "xl330", {"friction_base": 0.03, "friction_stribeck": 0.02,
                                          "load_friction_motor": 0.1,
                                          "load_friction_external": 0.08})
    path = tmp_path_factory.mktemp("mjlab") / "m6.json"
    save_params(path, params.with_scheme("semi_implicit"))
    return path


@pytest.fixture(scope="module")
def bench(params_file):
    """An mjlab scene of WORLDS pendulums, frictionsim's servo on each joint."""
    cfg = FrictionsimActuatorCfg(target_names_expr=("servo",), params=str(params_file),
                                 kp=400.0, vin=7.4, control_period=PERIOD)
    # the entity brings no actuator of its own: the servo's motor is the actuator's
    xml = bench_mjcf(0.2, 0.1, 0.0, 0.001).split("<actuator>")[0] + "</mujoco>"
    entity_cfg = EntityCfg(spec_fn=lambda: mujoco.MjSpec.from_string(xml),
                           articulation=EntityArticulationInfoCfg(actuators=(cfg,)))
    scene = Scene(SceneCfg(num_envs=WORLDS, terrain=None, entities={"bench": entity_cfg}),
                  "cpu")
    sim = Simulation(num_envs=WORLDS, cfg=SimulationCfg(mujoco=MujocoCfg(
        timestep=0.001, integrator="euler", gravity=(0, 0, -9.80665))),
        model=scene.compile(), device="cpu")
    scene.initialize(sim.mj_model, sim.model, sim.data)
    entity = scene["bench"]
    return scene, sim, entity, entity.actuators[0]


def run(bench, goals: np.ndarray, q0: float) -> np.ndarray:
    """Every world from q0 at rest, one goal per control period: the joint angle (periods ×
    worlds) before each period."""
    scene, sim, entity, actuator = bench
    sim.reset()
    entity.write_joint_state_to_sim(torch.full((WORLDS, 1), q0), torch.zeros((WORLDS, 1)))
    actuator.reset()
    sim.forward()
    out = []
    for goal in goals:
        out.append(entity.data.joint_pos[:, 0].clone())
        for _ in range(SUBSTEPS):
            entity.set_joint_position_target(torch.full((WORLDS, 1), float(goal)))
            scene.write_data_to_sim()
            sim.step()
            scene.update(0.001)
    return torch.stack(out).cpu().numpy()


def cpu_adapter(params_file, goals: np.ndarray, q0: float) -> np.ndarray:
    from frictionsim.params import load_params

    servo = JointServo("servo", load_params(params_file), kp=400.0, vin=7.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = get_engine("mujoco").robot(MJCF, [servo], PERIOD)
    return robot.run(goals[:, None], q0=np.array([q0])).physical[:, 0]


def test_the_actuator_follows_the_cpu_adapter(bench, params_file):
    t = np.arange(200) * PERIOD
    goals = 0.8 * np.sign(np.sin(2 * np.pi * t / 0.6))
    q = run(bench, goals, 0.0)
    expected = cpu_adapter(params_file, goals, 0.0)
    assert np.ptp(expected) > 0.5  # it moved
    for world in range(WORLDS):
        # MuJoCo Warp computes in float32; the actuator reads the previous step's M(q)
        assert np.abs(q[:, world] - expected).max() < 1e-4


@pytest.mark.parametrize("q0", [0.025, 0.045])
def test_a_joint_the_budget_holds_does_not_creep(bench, q0):
    held = run(bench, np.full(200, q0), q0)
    assert np.abs(held - held[0]).max() <= 1e-6


def test_a_reset_of_some_worlds_restarts_their_servos_and_a_policy_reads_them(bench):
    scene, sim, entity, actuator = bench
    run(bench, np.full(40, 0.5), 0.0)
    reported = actuator.reported_position
    assert reported.shape == (WORLDS, 1)
    assert np.all(reported.cpu().numpy() > 0.1)  # the servos report where they went
    counts = reported.cpu().numpy() * 4096 / (2 * np.pi)  # on the XL330's encoder grid
    np.testing.assert_allclose(counts, np.round(counts), rtol=0, atol=1e-2)
    assert actuator.current.shape == (WORLDS, 1)
    assert [w[0]["friction_base"] for w in actuator.parameters()] == pytest.approx([0.03] * WORLDS)
    for ids, marked in ((torch.tensor([1]), [0, 1, 0]), (slice(0, 1), [1, 0, 0]),
                        (torch.tensor([False, False, True]), [0, 0, 1])):
        actuator.servos.fresh.zero_()
        actuator.reset(ids)
        assert actuator.servos.fresh.numpy().tolist() == marked
    from frictionsim.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"in \[0, 3\)"):
        actuator.reset(torch.tensor([-1]))


def test_a_physics_step_of_the_servos_is_one_torch_operation(bench):
    """The goals' copy; the rest is one Warp launch: with torch's default threads on a busy
    machine nothing of the servos oversubscribes the cores (an actuator of ~400 torch
    operations a step took 21 times its one-thread time there)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    scene, sim, entity, actuator = bench

    class Count(TorchDispatchMode):
        calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls.append(str(func))
            return func(*args, **(kwargs or {}))

    cmd = actuator.get_command(entity.data)
    with Count():
        for _ in range(3):
            actuator.compute(cmd)
    assert len(Count.calls) == 3 and all("copy_" in c for c in Count.calls), Count.calls


def test_the_training_environment_of_the_robots_page_runs(monkeypatch, capsys):
    """docs/robots.md's mjlab environment (the SO-101 reaching, its servos randomised per
    world) builds, resets and steps, and prints what the page says."""
    namespace, printed, said = run_example("docs/robots.md", "ManagerBasedRlEnv(", "so101",
                                           monkeypatch, capsys)
    assert printed.splitlines()[-1] == said
    env = namespace["env"]
    drawn = env.scene["arm"].actuators[0].parameters()
    assert len({w[0]["supply_emf"] for w in drawn}) == env.num_envs  # a supply per world
    assert torch.all(torch.isfinite(namespace["obs"]["actor"]))


def test_settings_given_beside_a_robot_file_replace_its_own():
    """kp, kd, the torque and acceleration limits and the period: the robot file's where
    the configuration gives none, the configuration's where it does (none silently lost)."""
    from frictionsim.robot_files import get_robot
    from frictionsim.solvers.mjlab import joint_servos

    params = ParameterSet.defaults("m6", "sts3215_12v")
    names = ["shoulder_pan", "elbow_flex"]
    firmware = {j.mjcf: j.firmware for j in get_robot("so101").servo_joints}
    own, period = joint_servos(FrictionsimActuatorCfg(target_names_expr=tuple(names),
                                                      robot="so101", params=params), names)
    assert period == get_robot("so101").control_period
    for servo, name in zip(own, names):
        assert (servo.kp, servo.kd, servo.torque_limit, servo.acceleration) == (
            firmware[name].kp, firmware[name].kd, firmware[name].torque_limit,
            firmware[name].acceleration)
    given, period = joint_servos(FrictionsimActuatorCfg(
        target_names_expr=tuple(names), robot="so101", params=params, kp=20.0, kd=8.0,
        torque_limit=0.5, acceleration=30.0, control_period=0.01), names)
    assert period == 0.01
    assert {(s.kp, s.kd, s.torque_limit, s.acceleration) for s in given} == {
        (20.0, 8.0, 0.5, 30.0)}


def test_a_configuration_of_the_wrong_kind_is_refused_by_name():
    """What the compiled servos would refuse or ignore is refused where the actuator is
    configured: params that are no parameters, a D coefficient on a servo without a D term,
    a period of 0 s beside a robot file (kept, so that the schedule refuses it, not replaced
    by the robot file's)."""
    from frictionsim.errors import ConfigurationError
    from frictionsim.solvers.mjlab import joint_servos

    xl330 = ParameterSet.defaults("m1", "xl330")
    with pytest.raises(ConfigurationError, match="params = 42: a parameter file's path"):
        joint_servos(FrictionsimActuatorCfg(target_names_expr=("servo",), params=42, kp=400.0,
                                            control_period=PERIOD), ["servo"])
    with pytest.raises(ConfigurationError, match="kd = 3.0 would do nothing.*no D term"):
        joint_servos(FrictionsimActuatorCfg(target_names_expr=("servo",), params=xl330,
                                            kp=400.0, kd=3.0, control_period=PERIOD), ["servo"])
    _, period = joint_servos(FrictionsimActuatorCfg(
        target_names_expr=("shoulder_pan",), robot="so101", control_period=0.0,
        params=ParameterSet.defaults("m6", "sts3215_12v")), ["shoulder_pan"])
    assert period == 0.0
