"""Backlash and ripple in the batched engines (:mod:`frictionsim.solvers.array_gear`, the array
bank's ``ripple``), held to the MuJoCo adapter's friction budget, the Numba step they port:

- MJX (JAX, float64) on the pendulum with a 30 mrad gap, under ``jit``, ``vmap`` and
  ``scan``: the CPU adapter's run to 1e-12 rad, the gap changing the run;
- the torch servos of MuJoCo Warp and mjlab in float64 on the 2R arm with a 20 mrad gap on
  each joint, driving MuJoCo's C step split as MuJoCo Warp splits it (step1, the servos,
  step2): the adapter's run to 1e-12 rad, and a reset of one world restarts its gears as a
  fresh run does;
- the ripple in MJX on the pendulum: the adapter's run to 1e-12 rad, and it moves the run.

MuJoCo Warp's own float32 run with a gap is in tests/test_batched_engines.py (its kernels
compile once per module).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.solvers.engines import get_engine  # noqa: E402
from tests.pendulum_servo import MJCF, PERIOD, servo, square  # noqa: E402
from tests.test_backlash import DATA, arm_with_gaps, with_gap  # noqa: E402

PERIOD_ARM = 0.005


@pytest.fixture(scope="module")
def data():
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


def adapter_run(mjcf, servos, goals, period):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_engine("mujoco").robot(mjcf, servos, period).run(goals)


def arm(data, gap: float = 0.02):
    """(MJCF path, servos with a gap of ``gap`` on each joint, goals) of the 2R arm."""
    arm_, servos, _, goals = arm_with_gaps(data, 1.0, "semi_implicit")
    servos = [dataclasses.replace(s, params=with_gap(s.params, gap).with_scheme("semi_implicit"))
              for s in servos]
    return str(arm_.path(data)), servos, goals


def test_mjx_steps_the_gap_as_the_cpu_adapter_does():
    """The pendulum with a 30 mrad gap, its reversals through it, two worlds under jit, vmap
    and scan (the arm's coupled joints: the torch test below, the same array code)."""
    gapped = servo(("backlash",), backlash=0.03)
    goals = square(300)
    robot = get_engine("mjx").robot(MJCF, [gapped], PERIOD, None, nworld=2)
    reported = robot.run_batch(goals)[0][:, :, 0]
    expected = adapter_run(MJCF, [gapped], goals, PERIOD).q[:, 0]
    assert np.abs(reported - expected).max() < 1e-12
    closed = adapter_run(MJCF, [servo()], goals, PERIOD).q[:, 0]
    assert np.abs(expected - closed).max() > 1e-4  # the gap opened and closed


def test_the_plain_mjx_servo_step_refuses_a_gap_and_names_servo_forces():
    import mujoco as mj
    from mujoco import mjx

    from frictionsim.solvers import mjx_servos

    model, servos = mjx_servos.build(MJCF, [servo(("backlash",), backlash=0.03)], PERIOD)
    assert servos.gear is not None
    d = mjx.put_data(model, mj.MjData(model))
    state = mjx_servos.reset(d.qpos, d.qvel, servos)
    mass = np.eye(model.nv)
    with pytest.raises(ConfigurationError, match="servo_forces"):
        mjx_servos.servo_step(state, d.qpos[:1], d.qpos, d.qvel, servos, mass, d.qvel, d.qvel)
    out = mjx_servos.servo_forces(state, d.qpos[:1], d.qpos, d.qvel, servos, mass, d.qvel,
                                  d.qvel)
    assert len(out) == 4


def torch_servos_on_mujoco(mjcf, servos, goals, worlds: int = 1, reset_at: int | None = None):
    """The positions (worlds × periods × nq) of ``worlds`` copies of the model, MuJoCo's C
    step split as MuJoCo Warp's (step1, :meth:`WarpServos.torques` in float64, step2); at
    period ``reset_at`` world 1 goes back to the start and its servos are reset."""
    from frictionsim.solvers.mujoco_adapter import servo_spec
    from frictionsim.solvers.warp_servos import WarpServos

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec, _ = servo_spec(mjcf, servos)
    model = spec.compile()
    datas = [mujoco.MjData(model) for _ in range(worlds)]
    bank = WarpServos(model, servos, PERIOD_ARM, worlds, dtype=torch.float64)
    substeps = bank.substeps

    def stack(name):
        return torch.as_tensor(np.array([getattr(d, name) for d in datas]))

    out = np.empty((worlds, len(goals), model.nq))
    for k, goal in enumerate(goals):
        if k == reset_at:
            mujoco.mj_resetData(model, datas[1])
            bank.reset([1])
        for w, d in enumerate(datas):
            out[w, k] = d.qpos
        for _ in range(substeps):
            for d in datas:
                mujoco.mj_step1(model, d)
            qpos, qvel = stack("qpos"), stack("qvel")
            applied = bank.torques(torch.as_tensor(np.tile(goal, (worlds, 1))), qpos, qvel,
                                   stack("M"), stack("qfrc_bias"), stack("qfrc_passive"))
            for w, d in enumerate(datas):
                d.qpos[:], d.qvel[:] = qpos[w].numpy(), qvel[w].numpy()
                d.qfrc_applied[:] = applied[w].numpy()
                mujoco.mj_step2(model, d)
    return out


def test_the_torch_gear_step_is_the_cpu_adapters_and_a_reset_restarts_it(data):
    path, servos, goals = arm(data)
    expected = adapter_run(path, servos, goals, PERIOD_ARM).physical
    got = torch_servos_on_mujoco(path, servos, goals, worlds=2, reset_at=60)
    assert np.abs(got[0] - expected).max() < 1e-12
    assert np.abs(got[1, :60] - expected[:60]).max() < 1e-12
    # after its reset, world 1 runs the goals from period 60 on as a fresh run would
    fresh = adapter_run(path, servos, goals[60:], PERIOD_ARM).physical
    assert np.abs(got[1, 60:] - fresh).max() < 1e-12


def test_mjx_takes_the_ripple_at_the_joint_angle():
    rippled = servo(("ripple",), ripple_amplitude=0.01, ripple_frequency=40.0,
                    meshing_amplitude=0.008, meshing_decay=2.0, meshing_frequency=90.0)
    goals = square(300)
    robot = get_engine("mjx").robot(MJCF, [rippled], PERIOD, None)
    got = robot.run(goals).q[:, 0]
    expected = adapter_run(MJCF, [rippled], goals, PERIOD).q[:, 0]
    assert np.abs(got - expected).max() < 1e-12
    plain = adapter_run(MJCF, [servo()], goals, PERIOD).q[:, 0]
    assert np.abs(expected - plain).max() > 1e-4
