"""The batched engines: MuJoCo Warp with the servos in torch (``mjlab``), MJX with the servos in
JAX (``mjx``), each a physics driver around the array bank.

They follow the CPU adapter (MuJoCo's step with the Numba bank): to 1e-12 rad in float64
(MJX), to 1e-5 rad in float32 (MuJoCo Warp, its own precision); a joint the friction
budget holds stays where it is (float64: 1e-9 rad over 2 s; float32: 1e-6 rad, round-off
only); every world has its own parameters, and a reset of some worlds restarts their servos
as in a fresh run. The servo step runs under ``jit``, ``vmap`` and ``scan``. MuJoCo Warp's
kernels compile once per process (minutes cold; Warp caches them in ~/.cache/warp), so every
Warp test is in this module.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

pytest.importorskip("mujoco")
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
pytest.importorskip("mujoco_warp")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.engines import get_engine  # noqa: E402
from tests.pendulum_servo import MJCF, PERIOD, servo, square  # noqa: E402


def cpu(servos, goals, q0=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_engine("mujoco").robot(MJCF, servos, PERIOD).run(goals, q0=q0)


@pytest.fixture(scope="module")
def warp_robot():
    from frictionsim.solvers.warp_servos import WarpRobot

    return WarpRobot(MJCF, [servo(("current_limit", "observation_delay"),
                                  max_current_limit=0.6, observation_delay=0.012)],
                     PERIOD, nworld=3)


def test_the_warp_engine_follows_the_cpu_adapter_in_float32(warp_robot):
    goals = square()
    reported, physical, _, _ = warp_robot.run_batch(goals)
    expected = cpu(warp_robot.servos.servos, goals)
    for world in range(3):
        assert np.abs(reported[world, :, 0] - expected.q[:, 0]).max() < 1e-5
        assert np.abs(physical[world, :, 0] - expected.physical[:, 0]).max() < 1e-5
    assert np.ptp(expected.q) > 0.5


#: BAM's measurement: the goal at the start, a gravity load of 0.0049 / 0.0088 N·m below the
#: static budget (its mjlab actuator drifts 6.9e-5 to 2.1e-4 rad in 2 s); a world at each.
HELD_ANGLES = np.array([0.025, 0.045, 0.035])


def test_a_joint_the_budget_holds_stays_in_float32(warp_robot):
    hold = np.repeat(HELD_ANGLES[:, None, None], 400, axis=1)
    _, physical, _, _ = warp_robot.run_batch(hold, q0=HELD_ANGLES[:, None])
    assert np.abs(physical - HELD_ANGLES[:, None, None]).max() <= 1e-6
    for q0 in HELD_ANGLES[:2]:
        held = np.full((400, 1), q0)
        assert np.all(cpu(warp_robot.servos.servos, held, np.array([q0])).physical == q0)


def test_a_reset_of_some_worlds_restarts_their_servos_as_a_fresh_run(warp_robot):
    """The RL-style reset: some worlds' state set back and their servos reset; they then run
    as a fresh episode, the others undisturbed."""
    goals = torch.as_tensor(square(60), dtype=torch.float32)
    q0 = np.array([0.1])
    warp_robot.set_state(np.broadcast_to(q0, (3, 1)), np.zeros((3, 1)))
    for k in range(30):
        warp_robot.step(goals[k].repeat(3, 1), warp_robot.servos.substeps)
    before = warp_robot.qpos.clone()
    warp_robot.qpos[1] = 0.1
    warp_robot.qvel[1] = 0.0
    warp_robot.servos.reset([1])
    after_reset = []
    for k in range(30):
        warp_robot.step(goals[k].repeat(3, 1), warp_robot.servos.substeps)
        after_reset.append(warp_robot.qpos[1, 0].item())
    fresh = warp_robot.run_batch(square(30), q0=q0)[1][1, :, 0]
    np.testing.assert_allclose(after_reset[:-1], fresh[1:], rtol=0, atol=1e-6)
    assert before[0, 0].item() != 0.1


def test_the_warp_engine_steps_a_gear_gap_as_the_cpu_adapter_in_float32():
    """Backlash in MuJoCo Warp (tests/test_array_gear.py holds the step to 1e-12 in float64):
    a 30 mrad gap on the pendulum, its reversals through the gap, within float32's 1e-5."""
    from frictionsim.solvers.warp_servos import WarpRobot

    gapped = servo(("backlash",), backlash=0.03)
    robot = WarpRobot(MJCF, [gapped], PERIOD, nworld=2)
    goals = square(300)
    reported = robot.run_batch(goals)[0]
    expected = cpu([gapped], goals).q[:, 0]
    assert np.abs(reported[:, :, 0] - expected).max() < 1e-5
    assert np.abs(expected - cpu([servo()], goals).q[:, 0]).max() > 1e-4


def test_every_world_draws_its_own_servo():
    from frictionsim.solvers.warp_servos import Randomisation, WarpRobot

    ranged = dataclasses.replace(servo().params, ranges={"friction_base": (0.01, 0.08)})
    robot = WarpRobot(MJCF, [dataclasses.replace(servo(), params=ranged)], PERIOD, nworld=4,
                      randomisation=Randomisation(parameters=True, vin=(6.5, 8.0),
                                                  drop=(0.1, 0.5), delay=(0, 3), seed=1))
    theta = robot.servos.bank.theta.cpu().numpy()
    from frictionsim import layout

    assert len(set(theta[:, 0, layout.K_C])) == 4
    assert np.all((theta[:, 0, layout.K_C] >= 0.01) & (theta[:, 0, layout.K_C] <= 0.08))
    assert np.all(theta[:, 0, layout.SUPPLY] == 1.0)
    assert len(set(robot.servos.delay.cpu().numpy())) > 1
    reported = robot.run_batch(square(80))[0][:, :, 0]
    assert np.ptp(reported[:, -1]) > 1e-4  # the worlds differ


def test_the_mjx_example_of_the_robots_page_runs_and_is_the_cpu_adapters(monkeypatch, capsys):
    """docs/robots.md's MJX example prints what the page says, and its worlds land where
    MuJoCo's C step with the Numba bank puts the same servos."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = root.parent / "shared" / "data"
    if not (data / "arm2r").is_dir():
        pytest.skip("shared data not found")
    page = (root / "docs" / "robots.md").read_text()
    code = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "mjx_servos.build" in b]
    assert len(code) == 1
    monkeypatch.setenv("FRICTIONSIM_DATA", str(data))
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published files' scheme warning
        exec(compile(code[0], "docs/robots.md", "exec"), namespace)
    said = re.search(r"prints `(.*?)`", page[page.index("mjx_servos.build"):]).group(1)
    assert capsys.readouterr().out.strip() == said
    qpos, goals = np.asarray(namespace["qpos"]), np.asarray(namespace["goals"])
    for world in (0, 100, 255):
        held = np.repeat(goals[world][None], 201, axis=0)
        cpu_run = get_engine("mujoco").robot(str(data / "arm2r" / "mx_arm.xml"),
                                             namespace["servos"], 0.005).run(held)
        np.testing.assert_allclose(qpos[world], cpu_run.physical[200], rtol=0, atol=1e-9)


def test_drawing_parameters_without_ranges_is_refused():
    from frictionsim.errors import ConfigurationError
    from frictionsim.solvers.warp_servos import Randomisation, WarpRobot

    with pytest.raises(ConfigurationError, match="'servo'.*--uncertainty"):
        WarpRobot(MJCF, [servo()], PERIOD, nworld=2,
                  randomisation=Randomisation(parameters=True))


def test_the_mjx_step_is_the_cpu_adapters_in_float64_under_jit_vmap_and_scan():
    s = servo(("current_limit", "latency"), max_current_limit=0.6, latency_steps=1.0)
    robot = get_engine("mjx").robot(MJCF, [s], PERIOD, None, nworld=2)
    goals = square()
    reported = robot.run_batch(goals)[0]
    expected = cpu([s], goals).q[:, 0]
    assert np.abs(reported[:, :, 0] - expected).max() < 1e-12


def test_a_joint_the_budget_holds_stays_in_mjx_float64():
    angles = HELD_ANGLES[:2]
    robot = get_engine("mjx").robot(MJCF, [servo()], PERIOD, None, nworld=len(angles))
    hold = np.repeat(angles[:, None, None], 400, axis=1)
    physical = robot.run_batch(hold, q0=angles[:, None])[1]
    assert np.abs(physical - angles[:, None, None]).max() <= 1e-9


def test_the_jax_servo_step_in_a_users_own_scan():
    """The documented use: one world's servo step inside the user's own jit/scan."""
    import mujoco
    from mujoco import mjx

    from frictionsim.solvers import mjx_servos

    model, servos = mjx_servos.build(MJCF, [servo()], PERIOD)
    mx = mjx.put_model(model)
    data = mjx.put_data(model, mujoco.MjData(model))
    state = mjx_servos.reset(data.qpos, data.qvel, servos)

    @jax.jit
    def rollout(data, state, goals):
        def step(carry, goal):
            data, state = mjx_servos.mjx_step(mx, carry[0], carry[1], goal, servos)
            return (data, state), data.qpos[0]

        return jax.lax.scan(step, (data, state), goals)[1]

    goals = jnp.repeat(jnp.asarray(square(100)), servos.substeps, axis=0)
    q = np.asarray(rollout(data, state, goals))
    expected = cpu([servo()], square(100)).physical[:, 0]
    np.testing.assert_allclose(q[servos.substeps - 1::servos.substeps][:-1], expected[1:],
                               rtol=0, atol=1e-12)


def test_a_cuda_device_without_a_gpu_is_a_clear_error():
    from frictionsim.solvers.warp_servos import check_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigurationError, match="no CUDA GPU"):
        check_device("cuda")
    with pytest.raises(ConfigurationError, match="expected cpu, cuda"):
        check_device("tpu")


def test_robot_simulate_names_a_device_its_engine_cannot_take(tmp_path, capsys):
    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.experiments.runner.cli import main
    from frictionsim.params import save_params

    try:
        data = shared_data()
    except Exception:
        pytest.skip("shared data not found")
    params = save_params(tmp_path / "m1.json", ParameterSet.defaults("m1", "sts3215_12v"))
    recording = data / "so101" / "recordings" / "center_workspace"
    base = ["robot", "simulate", "--robot", "so101", "--data", str(data), str(recording),
            "--params", str(params), "--no-progress"]
    assert main([*base, "--engine", "mjx", "--device", "cuda"]) == 1
    assert "MJX runs on JAX's default device" in capsys.readouterr().err
    assert main([*base, "--engine", "mjlab", "--device", "tpu"]) == 1
    assert "device 'tpu': expected cpu, cuda or cuda:N" in capsys.readouterr().err


def test_run_engines_reports_every_engine(tmp_path, capsys):
    from frictionsim.experiments.runner.cli import main

    out = tmp_path / "engines.json"
    assert main(["run", "engines", "--setups", "bench", "--engines", "fixed_step", "mjlab",
                 "mjx", "--envs", "1", "2", "--seconds", "0.2", "--json", str(out),
                 "--no-progress"]) == 0
    rows = {r["engine"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"fixed_step", "mjlab", "mjx"}
    assert rows["mjx"]["deviation_max_rad"] < 1e-6 and rows["mjlab"]["deviation_max_rad"] < 1e-5
    assert all(r["hold_drift_rad"] <= 1e-6 for r in rows.values())
    assert [t["worlds"] for t in rows["mjlab"]["timing"]] == [1, 2]
    assert "µs/env-step" in capsys.readouterr().out


def test_a_batched_replay_is_the_one_world_replay(tmp_path):
    """robot simulate --engine mjlab|mjx: a world per recording, the same runs as one at a
    time on MuJoCo (SO-101, two recordings cut to 2 s)."""
    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.experiments.robots.recorded import Replay, replay_batched
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_recordings import read_recording
    from frictionsim.solvers.mujoco_dynamics import mujoco
    from frictionsim.solvers.robot_servos import robot_spec

    try:
        data = shared_data()
    except Exception:
        pytest.skip("shared data not found")
    robot = get_robot("so101")
    folder = data / "so101" / "recordings"
    recordings = []
    for name in sorted(p.name for p in folder.iterdir())[:2]:
        rec = read_recording(folder / name)
        keep = rec.t < rec.t[0] + 2.0
        recordings.append(dataclasses.replace(rec, t=rec.t[keep], goal=rec.goal[keep],
                                              position=rec.position[keep],
                                              velocity=rec.velocity[keep],
                                              torque=rec.torque[keep]))
    params = {a: ParameterSet.defaults("m6", a).with_scheme("semi_implicit")
              for a in robot.actuators}
    spec = robot_spec(robot, robot.mjcf_path(data))
    # with its contacts on, MJX would size collision memory for the arm's meshes: refused; the
    # robot file turns them off, and then MJX takes the arm without its collision masks
    touching = spec.copy()
    touching.option.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    with pytest.raises(ConfigurationError, match="MJX runs out of memory"):
        replay_batched(robot, touching, params, recordings, "mjx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = [Replay(robot, spec, params, "mujoco").run(r) for r in recordings]
        for engine, tolerance in (("mjx", 1e-9), ("mjlab", 5e-4)):
            batched = replay_batched(robot, spec, params, recordings, engine)
            for a, b in zip(one, batched):
                assert a.name == b.name
                assert np.abs(a.predicted - b.predicted).max() < tolerance, engine
