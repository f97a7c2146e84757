"""Backlash (docs/model.md §14): the gear's gap in the bench's fixed step, its event-driven
reference and the robot's fixed step; identified as a parameter like any other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frictionsim.errors import ConfigurationError
from frictionsim.gear_gap import impact_velocity, rest_on_gear
from frictionsim.layout import SERVO_CONTACT, SERVO_GAP, SERVO_MOTOR_SPEED, SERVO_STATE_SIZE
from frictionsim.logs import load_log
from frictionsim.params import ParameterFileError, load_params
from frictionsim.servo_bank import period_servo, reset_servo, step_servo
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers.event_driven import EventKind
from frictionsim.solvers.fixed_step import plant_step, rollout_substeps, step
from frictionsim.solvers.one_joint import simulate_log_events
from frictionsim.solvers.rollouts import rollout_inputs, simulate
from tests.pendulum_robot import pendulum_robot_run

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: A log whose pendulum swings through reversals of its gravity torque (gap crossings).
SWINGING = "2026-01-15_10h28m49.json"


@pytest.fixture(scope="module")
def data():
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


def with_gap(params, gap: float):
    return params.with_extensions(["backlash"]).with_values(backlash=gap)


def test_a_closed_gap_is_the_servo_without_backlash_bit_for_bit(data):
    params = load_params(data / "xl330" / "params" / "m6.json")
    log = load_log(data / "xl330" / "processed" / SWINGING)
    plain, closed = simulate(log, params), simulate(log, with_gap(params, 0.0))
    assert np.array_equal(plain.q, closed.q)
    assert not np.array_equal(plain.q, simulate(log, with_gap(params, 0.02)).q)


def fixed_and_exact(data, gap: float, substeps: tuple[int, ...]):
    params = with_gap(load_params(data / "xl330" / "params" / "m6.json"), gap)
    log = load_log(data / "xl330" / "processed" / SWINGING)
    x = rollout_inputs(log, params)
    exact = simulate_log_events(x.goal, x.enable, x.position[0], x.v0, x.theta, x.bench, log.dt,
                                supply=x.supply)
    errors = []
    for n in substeps:
        q, v = np.empty_like(x.goal), np.empty_like(x.goal)
        rollout_substeps(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench,
                         log.dt, n, q, v)
        errors.append(float(np.mean(np.abs(q - exact.q))))
    return errors, exact


def test_the_fixed_step_converges_to_the_exact_gap_at_first_order(data):
    errors, exact = fixed_and_exact(data, 0.02, (1, 4, 16))
    kinds = {e.kind for e in exact.events}
    assert {EventKind.IMPACT, EventKind.SEPARATION} <= kinds  # the gap is crossed
    assert errors[2] < 1e-3  # the bound: 1 mrad mean against the event-driven
    assert errors[0] > 2.5 * errors[1] > 6.0 * errors[2]  # first order: ×4 per ×4 substeps


def test_the_motor_side_stays_in_the_gap_and_the_impact_conserves_momentum(data):
    params = with_gap(load_params(data / "xl330" / "params" / "m1.json"), 0.03)
    log = load_log(data / "xl330" / "processed" / SWINGING)
    x = rollout_inputs(log, params)
    record = np.empty(SERVO_STATE_SIZE)
    q, v = float(x.position[0]), x.v0
    reset_servo(record, q, v)
    assert np.isnan(record[SERVO_CONTACT])  # settled by the first physics step
    contacts, gaps = set(), []
    for k in range(x.goal.shape[0]):
        u = period_servo(record, x.theta, x.bench, x.goal[k], q, v, x.enable[k], NO_LOG, log.dt,
                         False)
        step_servo(record, x.theta, v)
        q, v = plant_step(record, q, v, u, x.enable[k], 0.0, log.dt, x.theta, x.bench)
        contacts.add(float(record[SERVO_CONTACT]))
        gaps.append(record[SERVO_GAP])
        if record[SERVO_CONTACT] != 0.0:
            assert record[SERVO_GAP] == record[SERVO_CONTACT] * 0.015
            assert record[SERVO_MOTOR_SPEED] == v
    assert contacts == {-1.0, 0.0, 1.0}
    assert np.max(np.abs(gaps)) <= 0.015
    assert impact_velocity(1.0, 2.0, 3.0, -1.0) == pytest.approx((1.0 * 2.0 - 3.0) / 4.0)
    assert (rest_on_gear(0.5), rest_on_gear(-0.5), rest_on_gear(0.0)) == (-1.0, 1.0, 0.0)


def test_backlash_is_refused_where_it_cannot_be_carried(data):
    params = load_params(data / "xl330" / "params" / "m1.json")
    gap = with_gap(params, 0.01)
    log = load_log(data / "xl330" / "processed" / SWINGING)
    x = rollout_inputs(log, gap)
    with pytest.raises(ConfigurationError, match="servo record"):
        step(0.0, 0.0, 1.0, 1.0, 0.005, x.theta, x.bench)
    with pytest.raises(ParameterFileError, match="armature > 0"), \
            pytest.warns(UserWarning, match="armature"):
        gap.with_values(armature=0.0)
    with pytest.raises(ParameterFileError, match="backlash = 0.5"):
        gap.with_values(backlash=0.5)


def test_the_robot_fixed_step_on_the_pendulum_is_the_bench_gap_step(data):
    """One hinge: the robot's geared step (the open joint bare, the impact through M) = the
    bench's, on a log whose gravity torque reverses."""
    mujoco = pytest.importorskip("mujoco")
    del mujoco
    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf, simulate_bench

    params = with_gap(load_params(data / "xl330" / "params" / "m6.json"), 0.02) \
        .with_scheme("semi_implicit")
    log = load_log(data / "xl330" / "processed" / SWINGING)
    robot, q = pendulum_robot_run(log, params)
    ref = simulate(log, params)
    assert np.max(np.abs(q - ref.q)) < 1e-8
    # inside MuJoCo's step, the same gap; an impact is written into the state before the next
    # step, whose terms MuJoCo computed before it (1.1e-4 rad mean on this log, measured)
    inside = simulate_bench(log, params)
    assert np.mean(np.abs(inside.q - ref.q)) < 5e-4
    with pytest.raises(ConfigurationError, match="do not model backlash"):
        ServoModel(bench_mjcf(log.mass, log.length, log.arm_mass, log.dt), robot.servos,
                   friction="frictionloss", control_period=log.dt)


def test_the_commands_take_backlash_and_plot_the_motor_side(data, tmp_path, capsys):
    import json

    from frictionsim.experiments.runner.cli import main

    gap = with_gap(load_params(data / "xl330" / "params" / "m6.json"), 0.02)
    params = tmp_path / "m6_backlash.json"
    params.write_text(json.dumps(gap.to_dict()))
    log = str(data / "xl330" / "processed" / SWINGING)
    figure = tmp_path / "reversal.png"
    assert main(["simulate", "--params", str(params), log, "--with", "backlash", "--plot",
                 str(figure), "--plot-span", "0.5", "1.5"]) == 0
    assert figure.stat().st_size > 10_000
    assert main(["simulate", "--params", str(params), log, "--with", "backlash", "--plot",
                 str(tmp_path / "other.png"), "--plot-span", "1.5", "0.5"]) == 1
    assert "--plot-span 1.5 0.5" in capsys.readouterr().err
    report = tmp_path / "cc.json"
    assert main(["crosscheck", "--params", str(params), "--logs", log, "--with", "backlash",
                 "--dts", "0.005", "0.00125", "--json", str(report), "--no-progress"]) == 0
    checked = json.loads(report.read_text())
    assert checked["mean_error"][1] < checked["mean_error"][0] / 3  # first order
    assert simulate(load_log(log), gap).motor_side is not None


def arm_with_gaps(data, seconds: float, scheme: str | None = None) -> tuple:
    """The MX 2R arm, its M6 servos at low gain with a 20 mrad gap each, and goals along the
    square path: (arm, servos, Robot, goals)."""
    import dataclasses

    from frictionsim.experiments.robots import arm2r
    from frictionsim.solvers.robot import Robot

    arm = arm2r.ARMS["mx"]
    servos = [dataclasses.replace(s, params=with_gap(s.params, 0.02).with_scheme(scheme))
              for s in arm2r.servos_of(arm, "m6", "low", data)]
    robot = Robot(arm.path(data), servos, control_period=arm2r.PERIOD)
    geometry = arm2r.measure_geometry(robot.model)
    t = np.arange(0.0, seconds, arm2r.PERIOD)
    return arm, servos, robot, geometry.inverse(arm2r.path_points("square", geometry.reach, t))


def test_the_robot_fixed_step_holds_to_the_exact_gap_on_the_2r_arm(data):
    """Two coupled joints with a gap each: the event-driven robot (impacts and separations as
    events) against the fixed step at the arm's 1 ms and at 0.25 ms."""

    mujoco = pytest.importorskip("mujoco")
    from frictionsim.experiments.robots import arm2r
    from frictionsim.solvers.robot import Robot

    arm, servos, robot, goals = arm_with_gaps(data, 2.0)
    exact = robot.event_driven(goals)
    kinds = [e.kind for e in exact.events]
    assert kinds.count(EventKind.IMPACT) >= 3 and kinds.count(EventKind.SEPARATION) >= 3
    errors = []
    for dt in (robot.dt, robot.dt / 4):
        spec = mujoco.MjSpec.from_file(str(arm.path(data)))
        spec.option.timestep = dt
        run = Robot(spec, servos, control_period=arm2r.PERIOD).fixed_step(goals)
        errors.append(float(np.mean(np.abs(run.q - exact.q))))
    assert errors[0] < 1e-3  # the bound on the 2R arm
    assert errors[1] < errors[0] / 2.5  # and it converges


def test_the_mujoco_adapter_steps_the_gap_as_the_fixed_step_does(data):
    """Inside MuJoCo's step (semi-implicit Euler): the 2R arm with a gap on each joint lands
    where frictionsim's own fixed step does, and an mj_forward between steps (a callback
    repeated at one time) does not advance the gears twice: it only lets MuJoCo recompute
    its terms after an impact wrote the state."""

    mujoco = pytest.importorskip("mujoco")
    from frictionsim.experiments.robots import arm2r
    from frictionsim.solvers.mujoco_adapter import ServoModel

    arm, servos, robot, goals = arm_with_gaps(data, 1.5, "semi_implicit")
    own = robot.fixed_step(goals)
    contacts = {e.kind for e in robot.event_driven(goals).events}
    assert EventKind.IMPACT in contacts
    model = ServoModel(arm.path(data), servos, control_period=arm2r.PERIOD)
    runs = []
    for repeat in (False, True):
        d = model.make_data()
        q = np.empty((len(goals), 2))
        for k, goal in enumerate(goals):
            q[k] = d.qpos[model.qpos_adr]
            model.set_goals(d, goal)
            for _ in range(robot.substeps):
                if repeat:
                    mujoco.mj_forward(model.model, d)
                mujoco.mj_step(model.model, d)
        model.check(d)
        runs.append(q)
    assert np.max(np.abs(runs[0] - runs[1])) < 1e-6
    assert np.mean(np.abs(runs[0] - own.q)) < 1e-5
    assert np.max(np.abs(runs[0] - own.q)) < 1e-3
