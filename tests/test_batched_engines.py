"""The batched engines: MuJoCo Warp (``mjlab``, :class:`~frictionsim.solvers.warp_servos.WarpRobot`)
and MJX (``mjx``), each a physics driver around the one batched servo kernel.

They follow the CPU adapter (MuJoCo's step with the Numba bank): to 1e-12 rad in float64
(MJX), to 1e-5 rad in float32 (MuJoCo Warp, its own precision); a joint the friction budget
holds stays where it is (float64: 1e-9 rad over 2 s; float32: 1e-6 rad); every world has its
own parameters, supply and delay, drawn per world and readable; a reset of some worlds
restarts their servos as a fresh run, bit for bit; what a policy observes lies on the
encoder's grid; bad worlds, ranges and goals are refused by name. The kernel is held to the
Numba kernels themselves in tests/test_batched_bank.py. MuJoCo Warp's kernels compile once
per process (Warp caches them in ~/.cache/warp): its tests share this module.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("warp")

from frictionsim import layout  # noqa: E402
from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.batched.setup import Randomisation  # noqa: E402
from frictionsim.solvers.engines import get_engine  # noqa: E402
from tests.docs_examples import DATA, run_example  # noqa: E402
from tests.pendulum_servo import MJCF, PERIOD, servo, square  # noqa: E402


@pytest.fixture(scope="module")
def mjwarp():
    """MuJoCo Warp, or a skip of the tests that need it (and only those)."""
    return pytest.importorskip("mujoco_warp")


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def cpu(servos, goals, q0=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_engine("mujoco").robot(MJCF, servos, PERIOD).run(goals, q0=q0)


@pytest.fixture(scope="module")
def warp_robot(mjwarp):
    from frictionsim.solvers.warp_servos import WarpRobot

    return WarpRobot(MJCF, [servo(("current_limit", "observation_delay"),
                                  max_current_limit=0.6, observation_delay=0.012)],
                     PERIOD, nworld=3)


def test_the_warp_engine_follows_the_cpu_adapter_in_float32(warp_robot):
    goals = square()
    run = warp_robot.run_batch(goals)
    expected = cpu(warp_robot.servos.servos, goals)
    assert run.worlds == 3 and run.q.shape == (3, len(goals), 1)
    for world in range(3):
        assert np.abs(run.q[world, :, 0] - expected.q[:, 0]).max() < 1e-5
        assert np.abs(run.physical[world, :, 0] - expected.physical[:, 0]).max() < 1e-5
    assert np.ptp(expected.q) > 0.5


#: BAM's measurement: the goal at the start, a gravity load of 0.0049 / 0.0088 N·m below the
#: static budget (its mjlab actuator drifts 6.9e-5 to 2.1e-4 rad in 2 s); a world at each.
HELD_ANGLES = np.array([0.025, 0.045, 0.035])


def test_a_joint_the_budget_holds_stays_in_float32(warp_robot):
    hold = np.repeat(HELD_ANGLES[:, None, None], 400, axis=1)
    physical = warp_robot.run_batch(hold, q0=HELD_ANGLES[:, None]).physical
    assert np.abs(physical - HELD_ANGLES[:, None, None]).max() <= 1e-6
    for q0 in HELD_ANGLES[:2]:
        held = np.full((400, 1), q0)
        assert np.all(cpu(warp_robot.servos.servos, held, np.array([q0])).physical == q0)


def test_a_reset_of_some_worlds_restarts_their_servos_as_a_fresh_run_bit_for_bit(warp_robot):
    """The RL-style reset: world 1's state set back and its servos reset mid-run; it then
    runs as a fresh episode, to the last bit, the others undisturbed."""
    goals = square(60)
    q0 = np.array([0.1])
    robot = warp_robot
    robot.set_state(np.broadcast_to(q0, (3, 1)), np.zeros((3, 1)))
    for k in range(30):
        robot.step(goals[k], robot.servos.substeps)
    before = robot.wp_data.qpos.numpy().copy()
    qpos, qvel = robot.wp_data.qpos.numpy(), robot.wp_data.qvel.numpy()
    qpos[1], qvel[1] = 0.1, 0.0
    robot.wp_data.qpos.assign(qpos)
    robot.wp_data.qvel.assign(qvel)
    robot.servos.reset([1])
    after_reset = []
    for k in range(30):
        after_reset.append(robot.wp_data.qpos.numpy()[1, 0])
        robot.step(goals[k], robot.servos.substeps)
    fresh = robot.run_batch(goals[:30], q0=q0).physical[1, :, 0]
    np.testing.assert_array_equal(after_reset, fresh)
    assert before[0, 0] != np.float32(0.1)


def test_the_warp_engine_steps_a_gear_gap_as_the_cpu_adapter_in_float32(mjwarp):
    """Backlash in MuJoCo Warp (tests/test_batched_bank.py holds the kernel to 1e-12 in
    float64): a 30 mrad gap on the pendulum, its reversals through the gap, within float32's
    1e-5."""
    from frictionsim.solvers.warp_servos import WarpRobot

    gapped = servo(("backlash",), backlash=0.03)
    robot = WarpRobot(MJCF, [gapped], PERIOD, nworld=2)
    goals = square(300)
    reported = robot.run_batch(goals).q[:, :, 0]
    expected = cpu([gapped], goals).q[:, 0]
    assert np.abs(reported - expected).max() < 1e-5
    assert np.abs(expected - cpu([servo()], goals).q[:, 0]).max() > 1e-4


def ranged():
    params = dataclasses.replace(servo().params, ranges={"friction_base": (0.01, 0.08)})
    return dataclasses.replace(servo(), params=params)


def test_every_world_draws_its_own_servo_and_says_what_it_drew(mjwarp):
    from frictionsim.solvers.warp_servos import WarpRobot

    robot = WarpRobot(MJCF, [ranged()], PERIOD, nworld=4,
                      randomisation=Randomisation(parameters=True, vin=(6.5, 8.0),
                                                  drop=(0.1, 0.5), delay=(0, 3), seed=1))
    theta = robot.servos.thetas.numpy()
    drawn = robot.servos.parameters()
    assert [w[0]["friction_base"] for w in drawn] == pytest.approx(theta[:, 0, layout.K_C])
    assert len(set(theta[:, 0, layout.K_C])) == 4
    assert np.all((theta[:, 0, layout.K_C] >= 0.01) & (theta[:, 0, layout.K_C] <= 0.08))
    assert np.all(theta[:, 0, layout.SUPPLY] == 1.0)
    assert all(6.5 <= w[0]["supply_emf"] <= 8.0 and 0.1 <= w[0]["supply_resistance"] <= 0.5
               for w in drawn)
    assert len(set(robot.servos.delay.numpy())) > 1
    reported = robot.run_batch(square(80)).q[:, :, 0]
    assert np.ptp(reported[:, -1]) > 1e-4  # the worlds differ
    assert robot.servos.parameters(2) == drawn[2]


def test_drawing_parameters_without_ranges_is_refused(mjwarp):
    from frictionsim.solvers.warp_servos import WarpRobot

    with pytest.raises(ConfigurationError, match="'servo'.*--uncertainty"):
        WarpRobot(MJCF, [servo()], PERIOD, nworld=2,
                  randomisation=Randomisation(parameters=True))


@pytest.mark.parametrize("bad,match", [
    (dict(drop=(-1, -0.5)), "resistance cannot be negative"),
    (dict(delay=(-3, -1)), "delay cannot be negative"),
    (dict(delay=(0.5, 2)), "whole physics steps"),
    (dict(vin=(12, -5)), "low must not exceed high"),
    (dict(vin=(0, 5)), "must be positive"),
    (dict(drop=(0.1, float("nan"))), "finite"),
    (dict(vin=3.0), "a \\(low, high\\) pair"),
    (dict(seed="a"), "seed='a'.*whole number"),
    (dict(seed=-1), "whole number ≥ 0"),
])
def test_a_randomisation_out_of_its_range_is_refused(bad, match):
    with pytest.raises(ConfigurationError, match=match):
        Randomisation(**bad)


def test_worlds_and_their_ids_are_checked(warp_robot):
    from frictionsim.solvers.batched.setup import ServoSetup
    from frictionsim.solvers.warp_servos import WarpServos

    servos = warp_robot.servos
    for bad, match in (([-1], r"in \[0, 3\)"), ([3], r"in \[0, 3\)"),
                       (np.array([True, False]), "3 entries"), ([0.5], "integers"),
                       ([1, 2, 1], r"each world once, got \[1\] more than once")):
        with pytest.raises(ConfigurationError, match=match):
            servos.reset(bad)
    servos.reset([])  # nothing to reset
    servos.reset(np.array([False, True, False]))
    assert servos.fresh.numpy().tolist() == [0, 1, 0] or servos.fresh.numpy()[1] == 1
    setup = ServoSetup.build(MJCF, [servo()], PERIOD)
    with pytest.raises(ConfigurationError, match="a Randomisation .* got dict"):
        ServoSetup.build(MJCF, [servo()], PERIOD, {"vin": (7, 8)})
    for grid, match in (("x", "encoder grid 'x'"), (-1.0, "encoder grid -1.0")):
        with pytest.raises(ConfigurationError, match=match):
            ServoSetup.build(MJCF, [servo()], PERIOD, encoder=grid)
    for nworld in (0, -2, 2.5, True):
        with pytest.raises(ConfigurationError, match="nworld"):
            WarpServos(setup, nworld)
    with pytest.raises(ConfigurationError, match="goals must be"):
        warp_robot.run(np.zeros((10, 2)))
    goals = square(10)
    goals[4, 0] = np.nan
    with pytest.raises(ConfigurationError, match=r"goals\[0, 4, 0\] = nan: goal positions must "
                                                 "be finite"):
        warp_robot.run(goals)
    with pytest.raises(ConfigurationError, match="worlds × servos"):
        servos.set_enable(np.ones((2, 2)))
    with pytest.raises(ConfigurationError, match="qpos: finite values, got NaN or inf"):
        warp_robot.set_state(np.full(warp_robot.model.nq, np.nan), np.zeros(warp_robot.model.nv))
    for world in (3, -1, 0.5):
        with pytest.raises(ConfigurationError, match=r"world must be a whole number in \[0, 3\)"):
            servos.parameters(world)
    assert len(servos.parameters(2)) == 1


def test_what_a_policy_observes_lies_on_the_encoders_grid(mjwarp):
    """The XL330 reports on its 4096 counts a turn (its declaration's); off with
    ``encoder=False``; a run's reports are the servos' own either way."""
    from frictionsim.solvers.warp_servos import WarpRobot

    on, off = (WarpRobot(MJCF, [servo()], PERIOD, nworld=2, encoder=grid)
               for grid in (True, False))
    goals = square(40)
    counts = []
    for robot in (on, off):
        robot.set_state(np.zeros((2, 1)), np.zeros((2, 1)))
        seen = []
        for k in range(40):
            robot.step(goals[k], robot.servos.substeps)
            seen.append(robot.servos.reported.numpy()[0, 0])
        counts.append(np.array(seen) * 4096 / (2 * np.pi))
    np.testing.assert_allclose(counts[0], np.round(counts[0]), rtol=0, atol=1e-2)
    assert np.abs(counts[1] - np.round(counts[1])).max() > 0.1
    assert np.abs(counts[0] - counts[1]).max() <= 0.5 + 1e-2
    np.testing.assert_array_equal(on.run(goals).q, off.run(goals).q)


def test_the_servo_step_runs_no_torch_operation_and_keeps_torchs_threads(warp_robot):
    """The step is one Warp launch: with torch's default threads on a busy machine nothing of
    the servos can oversubscribe the cores (an actuator of ~400 torch operations a step took
    21 times its one-thread time there)."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    threads = torch.get_num_threads()
    d = warp_robot.wp_data
    with Count():
        for _ in range(5):
            warp_robot.servos.step(d.M, d.qfrc_bias, d.qfrc_passive, d.qpos, d.qvel,
                                   d.qfrc_applied)
    assert Count.calls == 0
    assert torch.get_num_threads() == threads


# ------------------------------------------------------------------------------------ MJX

def test_the_mjx_step_is_the_cpu_adapters_in_float64_under_jit_vmap_and_scan(jax):
    s = servo(("current_limit", "latency"), max_current_limit=0.6, latency_steps=1.0)
    robot = get_engine("mjx").build(MJCF, [s], PERIOD, nworld=2)
    goals = square()
    run = robot.run_batch(goals)
    expected = cpu([s], goals).q[:, 0]
    assert np.abs(run.q[:, :, 0] - expected).max() < 1e-12


def test_a_joint_the_budget_holds_stays_in_mjx_float64(jax):
    angles = HELD_ANGLES[:2]
    robot = get_engine("mjx").build(MJCF, [servo()], PERIOD, nworld=len(angles))
    hold = np.repeat(angles[:, None, None], 400, axis=1)
    physical = robot.run_batch(hold, q0=angles[:, None]).physical
    assert np.abs(physical - angles[:, None, None]).max() <= 1e-9


def test_mjx_steps_a_gap_and_the_ripple_as_the_cpu_adapter(jax):
    ripple = servo(("ripple",), ripple_amplitude=0.01, ripple_frequency=40.0,
                   meshing_amplitude=0.008, meshing_decay=2.0, meshing_frequency=90.0)
    goals = square(300)
    for s in (servo(("backlash",), backlash=0.03), ripple):
        robot = get_engine("mjx").build(MJCF, [s], PERIOD, nworld=2)
        got = robot.run_batch(goals).q[:, :, 0]
        assert np.abs(got - cpu([s], goals).q[:, 0]).max() < 1e-12


def test_mjx_refuses_bad_goals_as_the_cpu_robot_does(jax):
    robot = get_engine("mjx").build(MJCF, [servo()], PERIOD, nworld=2)
    goals = square(10)
    goals[5, 0] = np.nan
    with pytest.raises(ConfigurationError, match="goal positions must be finite"):
        robot.run(goals)
    with pytest.raises(ConfigurationError, match="one column per servo"):
        robot.run(np.zeros((10, 3)))
    with pytest.raises(ConfigurationError, match="worlds must be a whole number"):
        get_engine("mjx").build(MJCF, [servo()], PERIOD, nworld=0)


def test_the_jax_servo_step_in_a_users_own_scan(jax):
    """The documented use: one world's servo step inside the user's own jit/scan."""
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    from frictionsim.solvers import mjx_servos

    model, servos = mjx_servos.build(MJCF, [servo()], PERIOD, encoder=False)
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


def test_the_jax_servo_functions_refuse_arrays_of_another_shape(jax):
    """Shapes are static under jit: a wrong one is refused when traced, with its name."""
    import jax.numpy as jnp

    from frictionsim.solvers import mjx_servos

    model, servos = mjx_servos.build(MJCF, [servo()], PERIOD, encoder=False)
    for dtype in ("int32", jnp.int32, "nonsense"):
        with pytest.raises(ConfigurationError, match="float32 or float64"):
            mjx_servos.build(MJCF, [servo()], PERIOD, dtype=dtype)
    with pytest.raises(ConfigurationError, match="got a JointServo"):
        mjx_servos.build(MJCF, servo(), PERIOD)
    q, v = jnp.zeros(model.nq), jnp.zeros(model.nv)
    state = mjx_servos.reset(q, v, servos)
    with pytest.raises(ConfigurationError, match=r"reset: qpos of one world must have shape"):
        mjx_servos.reset(jnp.zeros(model.nq + 3), v, servos)
    good = dict(goals=jnp.zeros(1), mass=jnp.eye(model.nv), bias=v, passive=v)
    for name, bad in (("goals", jnp.zeros(2)), ("mass", jnp.eye(model.nv + 1)),
                      ("bias", jnp.zeros((4, model.nv)))):
        given = {**good, name: bad}
        with pytest.raises(ConfigurationError, match=f"servo_forces: {name} of one world"):
            mjx_servos.servo_step(state, given["goals"], q, v, servos, given["mass"],
                                  given["bias"], given["passive"])
    with pytest.raises(ConfigurationError, match="vmap the call over worlds"):
        mjx_servos.servo_step(state, jnp.zeros((4, 1)), q, v, servos, *list(good.values())[1:])
    with pytest.raises(ConfigurationError, match="the mask must be booleans"):
        mjx_servos.reset_where(state, 0.5, q, v, servos)
    _, qfrc = mjx_servos.servo_step(state, good["goals"], q, v, servos, good["mass"],
                                    good["bias"], good["passive"])
    assert qfrc.shape == (model.nv,)


def test_the_jax_servos_refuse_what_they_cannot_start_from(jax):
    """Values known at reset are checked there (a NaN state, a key that is not one, a
    randomisation with nothing to draw: at build); under jit they pass to the trace."""
    import jax.numpy as jnp

    from frictionsim.solvers import mjx_servos

    model, servos = mjx_servos.build(MJCF, [servo()], PERIOD, encoder=False)
    q, v = jnp.zeros(model.nq), jnp.zeros(model.nv)
    state = mjx_servos.reset(q, v, servos)
    for call in (lambda: mjx_servos.reset(q.at[0].set(jnp.nan), v, servos),
                 lambda: mjx_servos.reset(q, v.at[0].set(jnp.inf), servos),
                 lambda: mjx_servos.reset_where(state, True, q.at[0].set(jnp.nan), v, servos)):
        with pytest.raises(ConfigurationError, match="must be finite, got NaN or inf"):
            call()
    with pytest.raises(ConfigurationError, match="parameters: a state of mjx_servos.reset, got "
                                                 "int"):
        mjx_servos.parameters(42, servos)
    with pytest.raises(ConfigurationError, match="'servo'.*--uncertainty"):
        mjx_servos.build(MJCF, [servo()], PERIOD, randomisation=Randomisation(parameters=True))
    _, drawn = mjx_servos.build(MJCF, [servo()], PERIOD, randomisation=Randomisation(
        vin=(11.0, 12.0)))
    with pytest.raises(ConfigurationError, match="key must be a JAX PRNG key .* got int"):
        mjx_servos.reset(q, v, drawn, 3)
    traced = jax.jit(lambda qpos: mjx_servos.reset(qpos, v, servos).reported)(q)
    assert np.asarray(traced).tolist() == np.asarray(state.reported).tolist()


def lowered(jax, robot, goals) -> str:
    """The text of the jitted run of ``robot`` (an MjxRobot) on ``goals``, as XLA gets it."""
    jnp = jax.numpy
    worlds = jnp.asarray(np.broadcast_to(goals, (robot.nworld, *goals.shape)))
    q0 = jnp.asarray(np.tile(robot.model.qpos0, (robot.nworld, 1)))
    v0 = jnp.zeros((robot.nworld, robot.model.nv))
    keys = jax.random.split(jax.random.key(0), robot.nworld)
    return robot._run.lower(worlds, jnp.ones_like(worlds), q0, v0, keys).as_text()


def test_mjx_calls_the_kernel_natively_on_the_cpu_bit_for_bit_as_warps_ffi(jax, monkeypatch):
    """On the CPU the jitted step calls frictionsim's compiled FFI handler (its target in the
    lowered computation), and gives what Warp's own FFI gives, bit for bit, gap included."""
    from frictionsim.solvers import mjx_servos

    goals = square(120)
    servos = [servo(("backlash", "current_limit"), backlash=0.03, max_current_limit=0.6)]
    runs = {}
    for native in (True, False):
        monkeypatch.setattr(mjx_servos, "NATIVE_CPU", native)
        robot = get_engine("mjx").build(MJCF, servos, PERIOD, nworld=3)
        runs[native] = robot.run_batch(goals)
        assert ("frictionsim_warp_kernel_" in lowered(jax, robot, goals)) == native
    for field in ("q", "v", "physical"):
        np.testing.assert_array_equal(getattr(runs[True], field), getattr(runs[False], field))


def test_the_native_handler_refuses_buffers_its_plan_does_not_take(jax):
    import jax.numpy as jnp
    import warp as wp

    from frictionsim.solvers import mjx_cpu_call

    @wp.kernel
    def scale(x: wp.array(dtype=float), factor: float, y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = factor * x[i]

    x = jnp.arange(4.0, dtype=jnp.float32)
    (y,) = jax.jit(lambda x: mjx_cpu_call.kernel_call(scale, 4, [x, 2.5], 0,
                                                      [((4,), jnp.float32)]))(x)
    np.testing.assert_array_equal(np.asarray(y), 2.5 * np.arange(4.0))
    name = next(n for n, (_, plan, *_) in mjx_cpu_call._HANDLERS.items()
                if len(plan.inputs) == 1 and len(plan.outputs) == 1)
    wrong = jax.ffi.ffi_call(name, [jax.ShapeDtypeStruct((4,), jnp.float32)] * 2)
    with pytest.raises(Exception, match="passed buffers this plan does not take"):
        jax.block_until_ready(wrong(x))


def test_mjx_worlds_draw_their_own_servos_and_a_subset_reset_restarts_them(jax):
    """Per-world draws with their own keys, read back by name; world 1 reset mid-run (its
    draw kept) runs on as a fresh episode to the last bit, world 0 undisturbed; with
    ``on_reset`` a reset world draws again."""
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    from frictionsim.solvers import mjx_servos

    randomisation = Randomisation(parameters=True, vin=(6.5, 8.0), drop=(0.1, 0.5),
                                  delay=(0, 2))
    model, servos = mjx_servos.build(MJCF, [ranged()], PERIOD, randomisation)
    mx = mjx.put_model(model)
    blank = mjx.put_data(model, mujoco.MjData(model))
    worlds = 3
    keys = jax.random.split(jax.random.key(0), worlds)
    state = jax.vmap(lambda k: mjx_servos.reset(blank.qpos, blank.qvel, servos, k))(keys)
    drawn = mjx_servos.parameters(state, servos)
    assert len({w[0]["friction_base"] for w in drawn}) == worlds
    assert all(0.01 <= w[0]["friction_base"] <= 0.08 and 6.5 <= w[0]["supply_emf"] <= 8.0
               for w in drawn)
    data = jax.vmap(lambda _: blank)(jnp.arange(worlds))
    step = jax.jit(jax.vmap(lambda d, s, g: mjx_servos.mjx_step(mx, d, s, g, servos)))
    goal = jnp.full((worlds, 1), 0.6)

    def advance(data, state, n):
        trace = []
        for _ in range(n):
            data, state = step(data, state, goal)
            trace.append(np.asarray(data.qpos[:, 0]))
        return data, state, np.array(trace)

    data, state, first = advance(data, state, 40)
    mask = jnp.array([False, True, False])
    state = mjx_servos.reset_where(state, mask, blank.qpos[None].repeat(worlds, 0),
                                   blank.qvel[None].repeat(worlds, 0), servos)
    data = data.replace(qpos=jnp.where(mask[:, None], blank.qpos, data.qpos),
                        qvel=jnp.where(mask[:, None], blank.qvel, data.qvel))
    _, after, second = advance(data, state, 40)
    np.testing.assert_array_equal(second[:, 1], first[:, 1])  # world 1: a fresh episode
    assert np.abs(second[:, 0] - first[:, 0]).max() > 0  # world 0 went on
    assert mjx_servos.parameters(after, servos) == drawn  # its draw kept
    redraw = Randomisation(parameters=True, on_reset=True)
    model, servos = mjx_servos.build(MJCF, [ranged()], PERIOD, redraw)
    state = jax.vmap(lambda k: mjx_servos.reset(blank.qpos, blank.qvel, servos, k))(keys)
    again = mjx_servos.reset_where(state, mask, blank.qpos[None].repeat(worlds, 0),
                                   blank.qvel[None].repeat(worlds, 0), servos,
                                   jax.random.key(7))
    before_draw = mjx_servos.parameters(state, servos)
    after_draw = mjx_servos.parameters(again, servos)
    assert after_draw[0] == before_draw[0] and after_draw[1] != before_draw[1]
    with pytest.raises(ConfigurationError, match=r"reset_where: a mask of one entry per "
                                                 r"world.*got mask \(2,\), state of 3 worlds"):
        mjx_servos.reset_where(state, mask[:2], blank.qpos[None].repeat(worlds, 0),
                               blank.qvel[None].repeat(worlds, 0), servos, jax.random.key(7))


def test_the_mjx_example_of_the_robots_page_runs_and_is_the_cpu_adapters(jax, monkeypatch,
                                                                          capsys):
    """docs/robots.md's MJX example prints what the page says, and its worlds land where
    MuJoCo's C step with the Numba bank puts the same servos."""
    namespace, printed, said = run_example("docs/robots.md", "def episode", "arm2r",
                                           monkeypatch, capsys, quiet=True)
    assert printed == said
    qpos, goals = np.asarray(namespace["qpos"]), np.asarray(namespace["goals"])
    for world in (0, 100, 255):
        held = np.repeat(goals[world][None], 201, axis=0)
        cpu_run = get_engine("mujoco").robot(str(DATA / "arm2r" / "mx_arm.xml"),
                                             namespace["servos"], 0.005).run(held)
        np.testing.assert_allclose(qpos[world], cpu_run.physical[200], rtol=0, atol=1e-9)


def test_the_mjx_training_environment_of_the_robots_page_runs(jax, monkeypatch, capsys):
    """docs/robots.md's MJX environment: 128 worlds drawing their servos, half of them reset
    mid-run; it prints what the page says, every world drew its own and held finite."""
    namespace, printed, said = run_example("docs/robots.md", "def reset(key)", "arm2r",
                                           monkeypatch, capsys, quiet=True)
    assert printed == said
    assert np.all(np.isfinite(np.asarray(namespace["observed"])))
    drawn = namespace["drawn"]
    assert all(6.5 <= w[0]["supply_emf"] <= 12.5 for w in drawn)


def test_the_shipped_7v4_sts3215_file_randomises_per_world(mjwarp):
    """The reference project's published 7.4 V M1, shipped with ranges: each world draws
    its own servo within them."""
    from frictionsim.params import load_published
    from frictionsim.solvers.robot import JointServo
    from frictionsim.solvers.warp_servos import WarpRobot

    params = load_published("sts3215_7v4_m1")
    assert params.actuator == "sts3215_7v4" and params.model == "m1" and params.ranges
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identified with the reference scheme: said
        robot = WarpRobot(MJCF, [JointServo("servo", params, kp=32)], PERIOD, nworld=4,
                          randomisation=Randomisation(parameters=True, seed=3))
    drawn = robot.servos.parameters()
    for name, (low, high) in params.ranges.items():
        values = [w[0][name] for w in drawn]
        assert all(low <= x <= high for x in values) and len(set(values)) == 4, name
    with pytest.raises(ConfigurationError, match="shipped: sts3215_7v4_m1"):
        load_published("nope")


# -------------------------------------------------------------------- the command line

def test_engines_refuse_what_they_cannot_do():
    for engine, kwargs, match in (
            ("fixed_step", dict(nworld=4), "runs one world"),
            ("mujoco", dict(device="cuda"), "runs on cpu"),
            ("mjlab", dict(device="tpu"), "expected cpu, cuda"),
            ("mjlab", dict(nworld=0), "worlds must be a whole number")):
        with pytest.raises(ConfigurationError, match=match):
            get_engine(engine).check([servo()], **kwargs)
    gapped = servo(("backlash",), backlash=0.02)
    with pytest.raises(ConfigurationError, match="backlash"):
        get_engine("mujoco_frictionloss").check([gapped])
    assert get_engine("mjx").check([gapped]) is None


def test_a_cuda_device_without_a_gpu_is_a_clear_error():
    import warp as wp

    from frictionsim.solvers.warp_servos import check_device

    wp.init()
    if wp.is_cuda_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigurationError, match="no CUDA GPU"):
        check_device("cuda")
    with pytest.raises(ConfigurationError, match="expected cpu, cuda"):
        check_device("tpu")


def test_robot_simulate_names_a_device_its_engine_cannot_take(tmp_path, capsys, jax):
    from frictionsim.experiments.runner.cli import main
    from frictionsim.params import save_params

    if not (DATA / "so101").is_dir():
        pytest.skip("shared data not found")
    data = DATA
    params = save_params(tmp_path / "m1.json", ParameterSet.defaults("m1", "sts3215_12v"))
    recording = data / "so101" / "recordings" / "center_workspace"
    base = ["robot", "simulate", "--robot", "so101", "--data", str(data), str(recording),
            "--params", str(params), "--no-progress"]
    assert main([*base, "--engine", "mjlab", "--device", "tpu"]) == 1
    assert "device 'tpu': expected cpu, cuda or cuda:N" in capsys.readouterr().err
    assert main([*base, "--engine", "mjx", "--device", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "no CUDA GPU" in err or "MJX runs on JAX's default device" in err


def test_run_engines_reports_every_engine_and_refuses_options_that_do_nothing(
        tmp_path, capsys, mjwarp, jax):
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
    assert rows["mjlab"]["launches"]["servos"] == 1 < rows["mjlab"]["launches"]["engine"]
    printed = capsys.readouterr().out
    assert "µs/env-step" in printed and "1 kernel launch(es) of the servos" in printed
    for extra, match in ((["--engines", "fixed_step", "--device", "cuda"], "batched engines"),
                         (["--engines", "fixed_step", "--params", "x.json"], "add so101")):
        assert main(["run", "engines", "--setups", "bench", *extra, "--no-progress"]) == 1
        assert match in capsys.readouterr().err


def test_a_batched_replay_is_the_one_world_replay(tmp_path, mjwarp, jax):
    """robot simulate --engine mjlab|mjx: a world per recording, the same runs as one at a
    time on MuJoCo (SO-101, two recordings cut to 2 s)."""
    from frictionsim.experiments.robots.recorded import Replay, replay_batched
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_recordings import read_recording
    from frictionsim.solvers.mujoco_dynamics import mujoco
    from frictionsim.solvers.robot_servos import robot_spec

    if not (DATA / "so101").is_dir():
        pytest.skip("shared data not found")
    data = DATA
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
    with pytest.raises(ConfigurationError, match="runs out of memory"):
        replay_batched(robot, touching, params, recordings, "mjx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = [Replay(robot, spec, params, "mujoco").run(r) for r in recordings]
        for engine, tolerance in (("mjx", 1e-9), ("mjlab", 5e-4)):
            batched = replay_batched(robot, spec, params, recordings, engine)
            for a, b in zip(one, batched):
                assert a.name == b.name
                assert np.abs(a.predicted - b.predicted).max() < tolerance, engine
