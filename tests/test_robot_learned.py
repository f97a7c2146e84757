"""Learned actuators on robots: the network's torque in the n-joint loops, the torque labels by
the robot's inverse dynamics, the features read off a recording, and ``robot identify --model
net hybrid`` then ``robot simulate`` end to end on the SO-101."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.actuator_net import N_INPUTS, net_features, pack_net  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.learned_files import LearnedActuator  # noqa: E402
from frictionsim.params import ParameterSet, load_params  # noqa: E402
from frictionsim.solvers.robot import JointServo, Robot  # noqa: E402
from frictionsim.solvers.robot_labels import recorded_features, residual_labels  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"

ROTOR = """<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody><body>
<joint name="j" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.2"/>
</body></worldbody></mujoco>"""


def constant_net(torque: float) -> np.ndarray:
    """A network whose output is ``torque`` N·m whatever its input."""
    return pack_net([np.zeros((N_INPUTS, 2)), np.zeros((2, 1))], [np.zeros(2), np.zeros(1)],
                    np.zeros(N_INPUTS), np.ones(N_INPUTS), -np.ones(N_INPUTS) * 10,
                    np.ones(N_INPUTS) * 10, torque, 1.0)


def random_net(seed: int, authority: float | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return pack_net([rng.normal(0, 0.5, (N_INPUTS, 6)), rng.normal(0, 0.5, (6, 1))],
                    [rng.normal(0, 0.1, 6), np.zeros(1)], np.zeros(N_INPUTS),
                    np.r_[[0.05] * 3, [1.0] * 3, 10.0, 1.0], -np.ones(N_INPUTS) * 3,
                    np.ones(N_INPUTS) * 3, 0.0, 0.05, authority)


def test_labels_recover_a_constant_torque_on_a_bare_joint_exactly():
    net = LearnedActuator("net", "xl330", constant_net(0.013), (2,))
    robot = Robot(ROTOR, [JointServo("j", net, kp=400)], control_period=0.002)
    goals = np.zeros((400, 1))
    run = robot.fixed_step(goals, v0=np.array([0.3]))
    # rows every 10 control periods, as a 50 Hz bus over a 500 Hz servo
    rows = np.arange(0, 400, 10)
    counts = np.full(len(rows), 10)
    labels = residual_labels(robot, goals[rows], counts, run.q[rows], run.v[rows])
    np.testing.assert_allclose(labels, 0.013, rtol=1e-9)
    # the same through the reference position update (+ N/2 in the spread)
    robot = Robot(ROTOR, [JointServo("j", net, kp=400)], control_period=0.002)
    robot.scheme = "reference"
    run = robot.fixed_step(goals, v0=np.array([0.3]))
    labels = residual_labels(robot, goals[rows], counts, run.q[rows], run.v[rows])
    np.testing.assert_allclose(labels, 0.013, rtol=1e-9)


def test_features_read_off_a_recording_are_the_closed_loops_when_rows_are_periods():
    params = ParameterSet.defaults("m1", "xl330").with_scheme("semi_implicit")
    robot = Robot(ROTOR, [JointServo("j", params, kp=400)], control_period=0.002)
    t = np.arange(300) * 0.002
    goals = (0.4 * np.sin(5 * t))[:, None]
    run = robot.fixed_step(goals)
    got = recorded_features(t, goals, run.q, run.v, 0.002, np.array([400.0]))
    error = goals[:, 0] - run.q[:, 0]
    expected = np.empty(N_INPUTS)
    for k in range(len(t) - 1):
        net_features(error, run.v[:, 0], k, 400.0, 1.0, expected)
        np.testing.assert_allclose(got[k, 0], expected, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def mx_arm():
    path = DATA / "arm2r" / "mx_arm.xml"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


def servos(model: str, net: np.ndarray | None = None, kind: str = "hybrid", authority=0.2):
    out = []
    for joint, actuator in (("R1", "mx106"), ("R2", "mx64")):
        params = load_params(DATA / "params" / actuator / f"{model}.json")
        if net is not None:
            physics = params if kind == "hybrid" else None
            params = LearnedActuator(kind, actuator, net if kind == "net" else
                                     net.copy() if authority is None else
                                     _bounded(net, authority), (6,),
                                     authority if kind == "hybrid" else None, physics)
        out.append(JointServo(joint, params, kp=32))
    return out


def _bounded(net: np.ndarray, authority: float) -> np.ndarray:
    from frictionsim.actuator_net import with_authority

    return with_authority(net, authority)


def goals_2r(n: int = 600) -> np.ndarray:
    t = np.arange(n) * 0.005
    return np.column_stack([0.5 * np.sin(2 * t), -0.7 * np.sin(3 * t)])


def test_a_hybrid_of_zero_authority_is_its_physics_bit_for_bit(mx_arm):
    physics = Robot(mx_arm, servos("m6"), control_period=0.005).fixed_step(goals_2r())
    hybrid = Robot(mx_arm, servos("m6", random_net(1), authority=0.0),
                   control_period=0.005).fixed_step(goals_2r())
    assert np.array_equal(physics.q, hybrid.q)
    moved = Robot(mx_arm, servos("m6", random_net(1), authority=0.5),
                  control_period=0.005).fixed_step(goals_2r())
    assert np.abs(moved.q - physics.q).max() > 1e-3  # the residual acts


def test_fixed_step_and_event_driven_agree_with_a_learned_residual(mx_arm):
    robot = Robot(mx_arm, servos("m6", random_net(2), authority=0.5), control_period=0.005)
    fast = robot.fixed_step(goals_2r(300))
    exact = robot.event_driven(goals_2r(300))
    assert np.abs(fast.q - exact.q).mean() < 2e-3


def semi_implicit(servo_list: list[JointServo]) -> list[JointServo]:
    """The servos with their physics on MuJoCo's position update (Euler: semi_implicit)."""
    out = []
    for s in servo_list:
        p = s.params
        if isinstance(p, LearnedActuator) and p.physics is not None:
            p = dataclasses.replace(p, physics=p.physics.with_scheme("semi_implicit"))
        elif isinstance(p, ParameterSet):
            p = p.with_scheme("semi_implicit")
        out.append(dataclasses.replace(s, params=p))
    return out


def mujoco_run(mjcf, servo_list, rows, enable=None):
    """qpos before each control period of MuJoCo's step with the adapter, run twice from
    ``mj_resetData``: both runs' positions."""
    from frictionsim.solvers.mujoco_adapter import ServoModel

    sm = ServoModel(mjcf, servo_list, control_period=0.005)
    substeps = round(0.005 / sm.model.opt.timestep)
    d = sm.make_data()
    runs = []
    for _ in range(2):
        mujoco.mj_resetData(sm.model, d)
        out = np.empty((len(rows), sm.model.nq))
        for k, g in enumerate(rows):
            out[k] = d.qpos
            sm.set_goals(d, g)
            if enable is not None:
                sm.set_enable(d, enable[k])
            for _ in range(substeps):
                mujoco.mj_step(sm.model, d)
        sm.check(d)
        runs.append(out)
    return runs


@pytest.mark.parametrize("kind", ["hybrid", "net"])
def test_the_mujoco_adapter_runs_a_learned_servo_as_the_fixed_step_does(mx_arm, kind):
    servo_list = semi_implicit(servos("m6", random_net(3), kind=kind, authority=0.5))
    if kind == "net":  # a net's joint keeps a rotor inertia, as a fitted one does
        servo_list = [dataclasses.replace(s, params=dataclasses.replace(s.params, armature=0.01))
                      for s in servo_list]
    rows = goals_2r(400)
    enable = np.ones((400, 2), dtype=bool)
    enable[250:320, 1] = False  # the enable flag is one of the network's inputs
    fixed = Robot(mx_arm, servo_list, control_period=0.005).fixed_step(rows, enable=enable)
    first, again = mujoco_run(mx_arm, servo_list, rows, enable)
    assert np.array_equal(first, again)  # a reset starts the network's history afresh
    np.testing.assert_allclose(first, fixed.q, rtol=0, atol=1e-12)
    # and the network acts inside MuJoCo: without it the arm goes elsewhere
    physics = semi_implicit(servos("m6"))
    bare, _ = mujoco_run(mx_arm, physics, rows, enable)
    assert np.abs(bare - first).max() > 1e-3


@pytest.fixture(scope="module")
def so101_runs(tmp_path_factory):
    pytest.importorskip("sklearn")
    if not RECORDINGS.is_dir():
        pytest.skip(f"SO-101 recordings not found at {RECORDINGS}")
    tmp = tmp_path_factory.mktemp("so101_learned")
    out = tmp / "fit"
    args = ["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
            str(RECORDINGS / "friction_gravity"), str(RECORDINGS / "static_holding"),
            "--validation", str(RECORDINGS / "slow_precision"), "--model", "m1", "m6", "net",
            "hybrid", "--budget", "24", "--hybrid-budget", "12", "--max-epochs", "8",
            "--rollout-epochs", "0", "--window",
            "4", "--stride", "12", "--out", str(out), "--json", str(tmp / "fit.json"), "--no-progress"]
    assert main(args) == 0
    return tmp, out, json.loads((tmp / "fit.json").read_text())


def test_robot_identify_trains_net_and_hybrid_and_robot_simulate_replays_them(so101_runs):
    tmp, out, summary = so101_runs
    models = summary["models"]
    assert list(models) == ["m1", "m6", "net", "hybrid"]
    assert models["net"]["learned"] and models["hybrid"]["learned"]
    # the hybrid's closed-loop search starts at its M6 and keeps the best it finds
    assert models["hybrid"]["window_loss_rad"] <= models["m6"]["window_loss_rad"] * (1 + 1e-9)
    report = (out / "report.md").read_text()
    assert "hybrid (learned)" in report and "net (learned)" in report
    for kind in ("net", "hybrid"):
        saved = json.loads((out / f"{kind}.json").read_text())
        assert saved["robot"] == "so101" and saved["servos"]["sts3215_12v"]["model"] == kind
        # a robot's network keeps the 5 % input noise the bench's does without
        assert saved["servos"]["sts3215_12v"]["training"]["noise"] == 0.05
        assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                     str(out / f"{kind}.json"), str(RECORDINGS / "slow_precision"), "--json",
                     str(tmp / f"sim_{kind}.json")]) == 0
        sim = json.loads((tmp / f"sim_{kind}.json").read_text())
        assert sim["mean_mae_rad"] == pytest.approx(models[kind]["validation_mae_rad"],
                                                    rel=1e-12)


def test_robot_simulate_replays_a_learned_file_inside_mujoco_as_its_fixed_step(so101_runs):
    tmp, out, _ = so101_runs
    maes = {}
    for engine in ("fixed_step", "mujoco"):
        assert main(["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params",
                     str(out / "hybrid.json"), str(RECORDINGS / "slow_precision"), "--engine",
                     engine, "--json", str(tmp / f"mj_{engine}.json")]) == 0
        maes[engine] = json.loads((tmp / f"mj_{engine}.json").read_text())["mean_mae_rad"]
    assert maes["mujoco"] == pytest.approx(maes["fixed_step"], rel=1e-6)


def test_a_plain_learned_file_goes_on_every_servo_of_its_actuator(so101_runs, tmp_path):
    from frictionsim.robot_params import load_robot_params

    _, out, _ = so101_runs
    saved = json.loads((out / "net.json").read_text())
    plain = tmp_path / "net_plain.json"
    plain.write_text(json.dumps(saved["servos"]["sts3215_12v"]))
    params = load_robot_params(plain)
    assert params.robot == "" and params.servos["sts3215_12v"].model == "net"
