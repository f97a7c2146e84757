"""A robot's learned actuator trained through its rollouts one joint at a time
(:mod:`frictionsim.experiments.robots.joint_loads`,
:mod:`frictionsim.experiments.robots.rollout_training`): on a one-hinge robot the joint's load
rolls out exactly as the robot does, its stiffness carries the gravity torque's change away
from the recorded angle, the windows start at recorded rows inside their recording, and
``robot identify --rollout-epochs`` keeps the epoch its held-back recordings score best."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
torch = pytest.importorskip("torch")

from frictionsim.experiments.robots.joint_loads import JointLoad, loads_along  # noqa: E402
from frictionsim.experiments.robots.rollout_training import (  # noqa: E402
    joint_rollout,
    joint_windows,
    window_error,
)
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.robot import JointServo, Robot  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"

#: A rod on a hinge under gravity, its angle 0 horizontal: the gravity torque m·g·r·cos q.
ROD = """<mujoco><option timestep="0.002"/><worldbody><body>
<joint name="j" type="hinge" axis="0 -1 0"/>
<geom type="capsule" fromto="0 0 0 0.12 0 0" size="0.01" mass="0.15"/>
</body></worldbody></mujoco>"""
PERIOD = 0.002


#: seed 002's position ripple, which reads the joint's angle (tests/test_ripple.py's values)
RIPPLE = {"ripple_amplitude": 0.01, "ripple_frequency": 300.0, "ripple_phase": 0.4,
          "meshing_amplitude": 0.005, "meshing_decay": 2.0, "meshing_frequency": 600.0,
          "meshing_phase": 1.0}


def rod_run(q0: float = 0.1, periods: int = 300, rippled: bool = False):
    """(the robot, its run, the goals): M6 of the XL330 on the rod, a sine of goals; with
    ``rippled``, a ripple and an encoder offset (which a robot's joint angle never sees)."""
    params = ParameterSet.defaults("m6", "xl330").with_scheme("semi_implicit")
    if rippled:
        params = params.with_extensions(["ripple"]).with_values(q_offset=0.4, **RIPPLE)
    robot = Robot(ROD, [JointServo("j", params, kp=400)], control_period=PERIOD)
    t = np.arange(periods) * PERIOD
    goals = (0.3 + 0.4 * np.sin(6 * t))[:, None]
    return robot, robot.fixed_step(goals, q0=[q0], v0=[0.0]), goals


def every_period_load(robot, run, goals) -> JointLoad:
    """The run recorded at every control period, as the joint's load."""
    n = len(goals)
    counts = np.append(np.ones(n - 1, dtype=np.int64), 0)
    return loads_along(robot, "run", np.arange(n) * PERIOD, goals, run.q, run.v, counts)


def rolled(robot, load: JointLoad, q0=None):
    horizon = load.goal.shape[0]
    data = joint_windows([load], robot.benches, horizon, stride=horizon)
    batch = data.take(torch.arange(len(data)))
    if q0 is not None:
        batch["angle"] = batch["angle"].clone()
        batch["angle"][:, 0] = q0
    theta = torch.as_tensor(robot.thetas[0], dtype=torch.float64)
    return joint_rollout(theta, None, batch)[0].numpy()


@pytest.mark.parametrize("rippled", [False, True])
def test_a_one_hinge_robot_rolls_out_on_its_joint_load_as_the_robot_does(rippled):
    robot, run, goals = rod_run(rippled=rippled)
    load = every_period_load(robot, run, goals)
    assert np.all(load.stiffness != 0)  # gravity's change with the angle is in the load
    reported = rolled(robot, load)
    np.testing.assert_allclose(reported, run.q[:, 0], rtol=0, atol=1e-10)
    # the rod moved: the comparison is not of a joint at rest
    assert np.ptp(run.q[:, 0]) > 0.1


def test_the_stiffness_carries_gravity_away_from_the_recorded_angle():
    robot, run, goals = rod_run()
    load = every_period_load(robot, run, goals)
    # the robot from another start, against its load recorded from the first one
    _, moved, _ = rod_run(q0=0.1 + 0.05)
    with_stiffness = np.abs(rolled(robot, load, q0=0.15) - moved.q[:, 0]).max()
    flat = JointLoad(**{**load.__dict__, "stiffness": np.zeros_like(load.stiffness)})
    without = np.abs(rolled(robot, flat, q0=0.15) - moved.q[:, 0]).max()
    assert with_stiffness < 0.2 * without


def synthetic_load(name: str, periods: int, rows: np.ndarray, servos: int = 2) -> JointLoad:
    base = np.arange(periods * servos, dtype=float).reshape(periods, servos)
    position = np.full((periods, servos), np.nan)
    position[rows] = base[rows]
    return JointLoad(name, base, position, base + 0.5, base + 1, base + 2, base + 3, base + 4,
                     rows)


def test_windows_start_at_recorded_rows_stride_apart_and_end_inside_their_recording():
    first = synthetic_load("a", 40, np.arange(0, 40, 4))
    second = synthetic_load("b", 25, np.array([0, 3, 5, 9, 14, 20, 24]))
    benches = np.arange(2 * 3, dtype=float).reshape(2, 3)
    data = joint_windows([first, second], benches, horizon=8, stride=6)
    starts = sorted(set(data.starts.tolist()))
    # "a": rows 0, 8, 16, 24, 32 (32 + 8 = 40 ends inside); "b" (from period 40): 0, 9, 20 is
    # past 25 − 8, so 0 and 9
    assert starts == [0, 8, 16, 24, 32, 40, 49]
    assert len(data) == 2 * len(starts)
    batch = data.take(torch.arange(len(data)))
    columns = np.concatenate([first.goal, second.goal])
    for w in range(len(data)):
        s, j = int(data.starts[w]), int(data.servos[w])
        np.testing.assert_array_equal(batch["goal"][w].numpy(), columns[s:s + 8, j])
        np.testing.assert_array_equal(batch["bench"][w].numpy(), benches[j])
    with pytest.raises(Exception, match="--rollout-horizon"):
        joint_windows([second], benches, horizon=26, stride=1)


def test_the_window_error_reads_the_recorded_rows_after_the_first():
    recorded = torch.tensor([[0.0, np.nan, 1.0, np.nan, 3.0]], dtype=torch.float64)
    reported = torch.tensor([[5.0, 9.0, 1.5, 9.0, 2.0]], dtype=torch.float64)
    assert float(window_error(reported, recorded)) == pytest.approx((0.5 + 1.0) / 2)


def test_robot_identify_trains_a_net_through_the_joint_rollouts(tmp_path):
    pytest.importorskip("sklearn")
    if not RECORDINGS.is_dir():
        pytest.skip(f"SO-101 recordings not found at {RECORDINGS}")
    from frictionsim.experiments.robots.recorded import mean_mae, replay
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_params import load_robot_params
    from frictionsim.robot_recordings import read_recording

    out = tmp_path / "fit"
    names = ("friction_gravity", "static_holding", "slow_precision")
    assert main(["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
                 *(str(RECORDINGS / n) for n in names), "--model", "m6", "net",
                 "--budget", "16", "--max-epochs", "8", "--rollout-epochs", "2",
                 "--rollout-horizon", "20", "--window", "4", "--stride", "12", "--out",
                 str(out), "--no-progress"]) == 0
    saved = json.loads((out / "net.json").read_text())
    rollout = saved["servos"]["sts3215_12v"]["training"]["rollout"]
    assert rollout["horizon"] == 20 and rollout["load"] == "one joint at a time"
    held = rollout["validation_recordings"]
    assert len(held) == 1 and held[0] in names
    by_epoch = rollout["validation_mae_by_epoch"]
    assert len(by_epoch) == 3 and rollout["steps"] > 0
    best = rollout["best_epoch"]
    assert by_epoch[best] == min(by_epoch) == rollout["validation_mae_after"]
    # the file holds the kept epoch: its held-back recording replayed scores exactly that
    robot = get_robot("so101")
    mjcf = robot.mjcf_path(DATA, None)
    recording = read_recording(RECORDINGS / held[0], robot.bus_period)
    again = mean_mae(replay(robot, mjcf, load_robot_params(out / "net.json"), [recording]))
    assert again == pytest.approx(by_epoch[best], rel=1e-12)


def test_rollout_epochs_without_torch_are_refused_before_any_fit(monkeypatch):
    from frictionsim.errors import ConfigurationError
    from frictionsim.experiments.identification import learned
    from frictionsim.experiments.runner.arguments import net_settings
    from frictionsim.experiments.runner.cli import build_parser

    args = build_parser().parse_args(["robot", "identify", "--robot", "so101", "--recordings",
                                      "x", "--model", "m6", "net", "--rollout-epochs", "2"])
    assert net_settings(args, 600).rollout_epochs == 2
    monkeypatch.setattr(learned, "torch_installed", lambda: False)
    with pytest.raises(ConfigurationError, match="frictionsim\\[torch\\]"):
        net_settings(args, 600)
    args.rollout_epochs = 0  # none asked: nothing to refuse
    assert net_settings(args, 600).rollout_epochs == 0


def test_by_default_a_robots_network_goes_through_the_rollout_and_its_hybrid_is_searched(
        monkeypatch, capsys):
    from frictionsim.experiments.identification import learned
    from frictionsim.experiments.robots import learned as robot_learned

    epochs, why = robot_learned.robot_rollout_epochs("net")
    assert epochs == robot_learned.ROLLOUT_EPOCHS > 0 and "drifts" in why
    assert robot_learned.robot_rollout_epochs("hybrid")[0] == 0
    monkeypatch.setattr(learned, "torch_installed", lambda: False)
    monkeypatch.setattr(robot_learned, "torch_installed", lambda: False)
    assert robot_learned.robot_rollout_epochs("net") == (0, "torch or Warp is not installed "
                                                            "(pip install 'frictionsim[torch]')")
    with pytest.raises(SystemExit):  # the help says the default the code takes
        main(["robot", "identify", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"default {robot_learned.ROLLOUT_EPOCHS} for a net when torch is installed" in shown
