"""Robots: the standalone n-joint simulator, its event-driven reference, the MuJoCo adapter,
the M1 export and the 2R arms (docs/model.md §10). Needs the mujoco extra (CI installs it)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.experiments.robots import arm2r  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.layout import SERVO_U  # noqa: E402
from frictionsim.logs import load_log, load_logs  # noqa: E402
from frictionsim.params import load_params  # noqa: E402
from frictionsim.solvers.errors import SimulationError  # noqa: E402
from frictionsim.solvers.event_driven import (  # noqa: E402
    SLIP_POSITIVE,
    STICK,
    EventKind,
    EventSolver,
    Tolerances,
)
from frictionsim.solvers.mjcf_export import NotExportable, export_m1  # noqa: E402
from frictionsim.solvers.mujoco_adapter import (  # noqa: E402
    SchemeWarning,
    ServoModel,
    bench_mjcf,
    simulate_bench,
)
from frictionsim.solvers.robot import JointServo, Robot, RobotMechanism  # noqa: E402
from frictionsim.solvers.rollouts import simulate  # noqa: E402
from tests.pendulum_robot import pendulum_robot_run  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def data():
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


def arm_servos(data, model="m6", kp=32.0):
    return [JointServo("R1", load_params(data / "params" / "mx106" / f"{model}.json"), kp),
            JointServo("R2", load_params(data / "params" / "mx64" / f"{model}.json"), kp)]


# ----------------------------------------------------------------- one joint in MuJoCo

@pytest.mark.parametrize("model", ["m1", "m6"])
def test_mujoco_budget_mode_reproduces_the_semi_implicit_rollout(data, model):
    params = load_params(data / "xl330" / "params" / f"{model}.json")
    for log in load_logs([data / "xl330" / "processed"])[:6]:
        with pytest.warns(SchemeWarning, match="reference scheme"):
            mj = simulate_bench(log, params)
        ref = simulate(log, params.with_scheme("semi_implicit"))
        assert mj.mae == pytest.approx(ref.mae, rel=1e-6)  # the issue asks 1e-3
        assert np.max(np.abs(mj.q - ref.q)) < 1e-8


def test_the_adapter_runs_the_electrical_extensions_like_the_rollout(data):
    """docs/model.md §9's current limit and latency inside MuJoCo's step: the same kernels."""
    params = load_params(data / "xl330" / "params" / "m6.json").with_extensions(
        ["current_limit", "latency"]).with_values(latency_steps=2.0).with_scheme("semi_implicit")
    for log in load_logs([data / "xl330" / "processed"])[:3]:
        mj, ref = simulate_bench(log, params), simulate(log, params)
        assert np.max(np.abs(mj.q - ref.q)) < 1e-8
        assert abs(ref.mae - simulate(log, params.with_extensions(())).mae) > 1e-3


def test_the_standalone_simulator_on_the_bench_is_the_bench_kernel(data):
    """One joint: frictionsim's n-joint fixed step on the pendulum MJCF = docs/model.md §4's kernel."""
    params = load_params(data / "xl330" / "params" / "m6.json").with_scheme("semi_implicit")
    log = load_log(data / "xl330" / "processed" / "2026-01-15_10h29m04.json")
    _, q = pendulum_robot_run(log, params)
    assert np.max(np.abs(q - simulate(log, params).q)) < 1e-8


def test_exported_m1_in_plain_mujoco_matches_the_semi_implicit_rollout(data):
    params = load_params(data / "xl330" / "params" / "m1.json")
    log = next(log for log in load_logs([data / "xl330" / "processed"])
               if log.trajectory == "sin_sin")  # no torque-off: a position actuator has none
    # the file was identified with the reference scheme: the export says what MuJoCo's Euler
    # step makes of it, as the adapter does
    with pytest.warns(SchemeWarning, match="reference scheme"):
        snippet = export_m1(params, "servo", kp=log.kp, vin=float(log.header["vin"]),
                            timestep=log.dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SchemeWarning)  # a semi_implicit file: nothing to say
        export_m1(params.with_scheme("semi_implicit"), "servo", kp=log.kp, timestep=log.dt)
    joint = re.search(r'<joint name="servo" ([^/]*)/>', snippet).group(1)
    actuator = re.search(r"(<position [^>]*/>)", snippet).group(1)
    xml = bench_mjcf(log.mass, log.length, log.arm_mass, log.dt)
    xml = xml.replace('<joint name="servo" type="hinge" axis="0 1 0"/>',
                      f'<joint name="servo" type="hinge" axis="0 1 0" {joint}/>')
    xml = xml.replace('<motor name="servo" joint="servo"/>', actuator)
    xml = xml.replace('integrator="Euler"/>', 'integrator="Euler"><flag eulerdamp="disable"/>'
                                              "</option>")
    model = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(model)
    offset = params.values["q_offset"]
    d.qpos[0] = log.entries[0]["position"] + offset
    d.qvel[0] = log.entries[0]["speed"]
    goal = log.column("goal_position")
    q = np.empty(len(goal))
    for k in range(len(goal)):
        q[k] = d.qpos[0] - offset
        d.ctrl[0] = goal[k] + offset
        mujoco.mj_step(model, d)
    ref = simulate(log, params.with_scheme("semi_implicit"))
    assert np.mean(np.abs(q - ref.q)) < 1e-4


def test_m2_to_m6_are_not_exported(data):
    with pytest.raises(NotExportable, match="adapter"):
        export_m1(load_params(data / "xl330" / "params" / "m4.json"))


# ----------------------------------------------------------------------- several joints

def test_fixed_step_and_mujoco_stay_within_a_mrad_of_the_event_driven_arm(data):
    runs = arm2r.simulate_arm(arm2r.ARMS["mx"], "square", "low", "m6", seconds=4.0,
                              data=data)
    model = mujoco.MjModel.from_xml_path(str(arm2r.ARMS["mx"].path(data)))
    geometry = arm2r.measure_geometry(model)
    by = {r.engine: r for r in runs}
    for engine in ("fixed_step", "mujoco_budget"):
        joint, tip = arm2r.errors_against(by["event_driven"], by[engine], geometry)
        assert joint < 1e-3 and tip < 1e-3
    assert np.abs(np.diff(by["event_driven"].q, axis=0)).max() > 1e-3  # it did move


def test_the_compiled_loops_read_a_geometry_free_copy_that_changes_no_bit(data):
    """Robot's dynamics model drops the meshes but keeps M and the bias to the last bit: the
    fixed step on it equals the fixed step on the full model, and a joint that sticks has a
    velocity of exactly 0 (the friction solve's own v⁺, no second solve with M)."""
    from frictionsim.solvers.reused_dynamics import NO_PATH
    from frictionsim.solvers.robot import fixed_step_run

    path = arm2r.ARMS["mx"].path(data)
    robot = Robot(path, arm_servos(data), control_period=0.005)
    full = robot.model
    assert robot.dynamics.ngeom == 0 < full.ngeom
    assert robot.dynamics.nv == full.nv
    t = np.arange(400) * 0.005
    goals = np.stack([0.4 * np.sin(2 * t), 0.3 * np.cos(3 * t)], axis=1)
    run = robot.fixed_step(goals, q0=[0.1, -0.2])
    d = mujoco.MjData(full)
    out_q, out_v = np.empty((400, full.nq)), np.empty((400, full.nv))
    failed = fixed_step_run(full._address, d._address, d.qpos, d.qvel, robot.qadr, robot.dofs,
                            robot.bank(), goals, np.ones_like(goals), np.array([0.1, -0.2]),
                            np.zeros(2), robot.substeps, robot.dt, robot.scheme == "semi_implicit",
                            out_q, out_v, np.empty_like(out_q), np.empty((0, 2)), NO_PATH, False)
    assert failed == -1
    assert np.array_equal(out_v, run.v) and np.array_equal(out_q, run.q)
    # goals where it starts: it sags under gravity, then sticks; a second solve with M left
    # about 1e-18 rad/s there for ever
    held = robot.fixed_step(np.tile([0.5, 0.7], (200, 1)), q0=[0.5, 0.7])
    assert np.abs(held.v[1:]).max() > 0.1 and np.all(held.v[100:] == 0.0)
    # a model handed over compiled has no spec to edit: it is used as it is
    assert Robot(full, arm_servos(data), control_period=0.005).dynamics is full


def test_a_break_away_that_falls_back_within_the_first_step_is_located_after_it(data):
    """MX arm, M6, kp 8, t = 0.94 s of the triangle: the shoulder breaks away with v̇ = 6.5e-4
    rad/s² while the elbow decelerates, and falls back to rest 117 µs later, inside the
    integrator's first step. A root finder started on s·v = 0 would place the touch at the
    break-away itself, again and again (chattering); the solver must find it later."""
    robot = Robot(data / "arm2r" / "mx_arm.xml", arm_servos(data, "m6", kp=8.0),
                  control_period=0.005)
    mech = RobotMechanism(robot)
    mech.bank.records[:, SERVO_U] = [0.7972644276267773, 3.2963041856580366]
    q = np.array([-0.2131926095061474, 0.7326656890646909])
    v = np.array([0.0, 0.46621342549241307])
    solver = EventSolver(Tolerances(max_events=20))
    solver.advance(mech, 0.94, 0.945, q, v, np.array([STICK, SLIP_POSITIVE]),
                   np.array([False, True]))
    shoulder = [e for e in solver.events if e.joint == 0]
    assert [e.kind for e in shoulder] == [EventKind.BREAK_AWAY, EventKind.STICK]
    assert 50e-6 < shoulder[1].t - shoulder[0].t < 500e-6


def test_rollout_threads_equal_a_sequential_loop_and_other_models_are_untouched(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        sm = ServoModel(data / "arm2r" / "mx_arm.xml", arm_servos(data))
    from mujoco import rollout

    nstep, nbatch = 600, 4
    t = np.arange(nstep) * sm.model.opt.timestep
    control = np.zeros((nbatch, nstep, sm.model.nu))
    for b in range(nbatch):
        control[b, :, sm.ctrl_index] = np.column_stack([(0.3 + 0.1 * b) * np.sin(2 * t),
                                                        0.5 * np.sin(3 * t)]).T
    state = np.zeros((nbatch, mujoco.mj_stateSize(sm.model, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
    states, _ = rollout.rollout(sm.model, [sm.make_data() for _ in range(2)], state, control)
    for b in range(nbatch):
        d = sm.make_data()
        for k in range(nstep):
            d.ctrl[:] = control[b, k]
            mujoco.mj_step(sm.model, d)
        assert np.array_equal(d.qpos, states[b, -1, 1:3])
    plain = mujoco.MjModel.from_xml_path(str(data / "arm2r" / "mx_arm.xml"))
    dp = mujoco.MjData(plain)
    dp.qpos[:] = [0.4, 0.2]
    mujoco.mj_step(plain, dp, nstep=50)
    assert not dp.qfrc_applied.any()  # the callback left the other model alone


def test_torque_enable_and_frictionloss_mode(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        sm = ServoModel(data / "arm2r" / "mx_arm.xml", arm_servos(data), friction="frictionloss")
    d = sm.make_data()
    sm.set_goals(d, [0.6, -0.4])
    mujoco.mj_step(sm.model, d, nstep=500)
    assert np.all(np.abs(sm.motor_torques(d)) > 0)
    assert np.all(sm.model.dof_frictionloss > 0)  # the budget written each step
    sm.set_enable(d, False)
    mujoco.mj_step(sm.model, d, nstep=10)
    assert np.all(sm.motor_torques(d) == 0)


def test_a_foreign_control_callback_is_not_replaced(data):
    import ctypes

    foreign = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(lambda m, d: None)
    previous = mujoco.get_mjcb_control()
    # a C callback, or a Python one (which compiling the model would call): refused by name
    for callback in (foreign, lambda m, d: None):
        mujoco.set_mjcb_control(callback)
        try:
            with pytest.raises(ConfigurationError, match="another mjcb_control.*set_mjcb_control"
                                                         r"\(None\) removes it"), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore", SchemeWarning)
                ServoModel(data / "arm2r" / "mx_arm.xml", arm_servos(data))
        finally:
            mujoco.set_mjcb_control(previous)


def test_a_missing_joint_is_named(data):
    with pytest.raises(ValueError, match="no joint 'elbow'"), warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        ServoModel(data / "arm2r" / "mx_arm.xml",
                   [JointServo("elbow", load_params(data / "params" / "mx64" / "m1.json"), 32)])


def test_the_standalone_simulator_names_inputs_it_cannot_run(data):
    path = data / "arm2r" / "mx_arm.xml"
    with pytest.raises(ValueError, match="servos: a non-empty list of JointServo"):
        Robot(path, [], control_period=0.005)
    with pytest.raises(ValueError, match=r"got \['str'\]"):
        Robot(path, ["R1"], control_period=0.005)
    one = arm_servos(data)[0]
    with pytest.raises(ValueError, match="got a JointServo .put one servo in a list"):
        Robot(path, one, control_period=0.005)
    # each engine takes the same list, and a servo is checked when it is made
    with pytest.raises(ValueError, match=r"got \['dict'\]"), warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        ServoModel(path, [{"joint": "R1"}])
    with pytest.raises(ValueError, match="params = 'm1.json': a ParameterSet or LearnedActuator"):
        JointServo("R1", "m1.json", 32)
    with pytest.raises(ValueError, match="joint = 3: the joint's name"):
        JointServo(3, one.params, 32)
    with pytest.raises(ValueError, match="MJCF 42: a path.*type int"):
        Robot(42, [one], control_period=0.005)
    robot = Robot(path, arm_servos(data), control_period=0.005)
    goals = np.zeros((20, 2))
    goals[7, 1] = np.nan  # not a "hold": a goal the firmware never sees
    with pytest.raises(ValueError, match=r"goals\[7, 1\] = nan"):
        robot.fixed_step(goals)
    with pytest.raises(ValueError, match=r"enable\[0, 0\] = 2.0"):
        robot.fixed_step(np.zeros((20, 2)), enable=np.full((20, 2), 2.0))
    with pytest.raises(ValueError, match="arrays of numbers"):
        robot.fixed_step([["a", "b"]])
    # a state no step survives is named, not returned as NaN positions
    with pytest.raises(SimulationError, match="diverged .* in control period 1 "):
        robot.fixed_step(np.zeros((20, 2)), v0=np.full(2, 1e300))


# ------------------------------------------------------------------------- 2R arm paths

@pytest.mark.parametrize("arm", ["mx", "erob"])
def test_paths_are_reached_by_the_inverse_kinematics(data, arm):
    model = mujoco.MjModel.from_xml_path(str(arm2r.ARMS[arm].path(data)))
    geometry = arm2r.measure_geometry(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "end")
    d = mujoco.MjData(model)
    for path in arm2r.PATHS:
        t = np.arange(0.0, arm2r.duration(path), 0.05)
        xz = arm2r.path_points(path, geometry.reach, t)
        q = geometry.inverse(xz)
        assert np.abs(geometry.forward(q) - xz).max() < 1e-12
        d.qpos[:] = q[len(q) // 2]
        mujoco.mj_kinematics(model, d)
        shoulder = d.xanchor[0]
        assert np.allclose((d.site_xpos[site] - shoulder)[[0, 2]], xz[len(q) // 2], atol=1e-9)
    assert np.allclose(arm2r.path_points("circle", 1.0, np.array([0.0, 2.5, 3.0])),
                       [[0, -1], [0, -0.84], [0, -0.84]])


def test_arm2r_command_writes_the_json_of_the_issue(data, tmp_path):
    out = tmp_path / "arm.json"
    assert main(["run", "arm2r", "--arm", "erob", "--paths", "triangle_wave", "--gains", "low",
                 "--seconds", "3.5", "--json", str(out), "--plot", str(tmp_path / "arm.png"),
                 "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert {r["engine"] for r in result["runs"]} == set(arm2r.ENGINES)
    for r in result["runs"]:
        assert set(r) == {"arm", "path", "gain", "model", "engine", "joint_mae_rad",
                          "end_effector_mae_m", "seconds"}
        if r["engine"] == "event_driven":
            assert r["joint_mae_rad"] == 0.0
    assert len(result["m1_vs_m6"]) == 1 and result["m1_vs_m6"][0]["joint_mae_rad"] > 0
    assert (tmp_path / "arm.png").stat().st_size > 10_000


def test_simulate_engine_mujoco_from_the_command_line(data, tmp_path, capsys):
    log = data / "xl330" / "processed" / "2026-01-15_10h28m42.json"
    out = tmp_path / "mj.json"
    assert main(["simulate", "--engine", "mujoco", "--params",
                 str(data / "xl330" / "params" / "m1.json"), str(log), "--json", str(out)]) == 0
    assert "reference scheme" in capsys.readouterr().err
    semi = tmp_path / "semi.json"
    assert main(["simulate", "--scheme", "semi_implicit", "--params",
                 str(data / "xl330" / "params" / "m1.json"), str(log), "--json", str(semi)]) == 0
    assert json.loads(out.read_text())["mean"] == pytest.approx(
        json.loads(semi.read_text())["mean"], rel=1e-6)
