"""The batched servos (:mod:`frictionsim.solvers.batched`, Warp kernels) follow the Numba kernels
in float64, on every combination of extensions.

- The bank: every combination of tests/test_servo_bank.py (``supply``, ``current_limit``,
  ``latency``, ``observation_delay``; the XL330's plain firmware and the STS3215's P/D loop;
  physics alone, a net, a hybrid) run period by period on the Numba bank's inputs, in place
  (the engines' way) and records in → records out (the training's): records and torques to
  1e-12.
- The friction budget (M1, M4, M6, the ripple) and the n-joint friction solve (cold and from
  the last active set) against the Numba ones on random problems, the answer optimal (KKT).
- The engines' step (:func:`~frictionsim.solvers.batched.engine.servo_step_kernel`) driving
  MuJoCo's C step split where the CPU adapter's callback runs (step1, the kernel, step2):
  every combination of a kind as a world with its own servo, a gear gap, the ripple, against
  the CPU adapter to 1e-12 rad; the 2R arm with a gap on each coupled joint, and a reset of
  one world restarting it as a fresh run.
- The training's rollout: the Numba bench rollout to 1e-12 rad on every combination, its
  gradient the finite differences'.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from test_servo_bank import CASES, DT, LENGTH, MASS, Case, goals

from frictionsim import layout
from frictionsim.friction import friction_budget, rippled_static
from frictionsim.servo_bank import WORK_SIZE, held_torque, learned_period, reset_servo, step_servo
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers.fixed_step import bench_step_with
from frictionsim.solvers.joint_friction import WORK_SIZE as CLIP_WORK
from frictionsim.solvers.joint_friction import clip_friction, clip_friction_warm_into

wp = pytest.importorskip("warp")
mujoco = pytest.importorskip("mujoco")

from frictionsim.solvers.batched import bank, memory  # noqa: E402
from frictionsim.solvers.batched import friction as batched_friction  # noqa: E402
from frictionsim.solvers.batched import joint_friction as batched_joint  # noqa: E402
from frictionsim.solvers.batched.memory import clip_work_size, net_work_size  # noqa: E402

#: Every combination of tests/test_servo_bank.py, grouped by kind (one network per batch).
KINDS = {kind: [Case(*p.values) for p in CASES if p.values[2] == kind]
         for kind in ("physics", "net", "hybrid")}


def f64(array):
    return wp.array(np.ascontiguousarray(array, dtype=float), dtype=wp.float64)


def comparable(records: np.ndarray) -> np.ndarray:
    """NaN (no D term yet, no supply yet, a gear not yet settled) compared as NaN."""
    return np.where(np.isnan(records), -12345.0, records)


def numba_run(case: Case, goal, enable):
    """The Numba bank on the bench, period by period: the inputs of each period (q, v), the
    records after it, the held torque and network torque."""
    n = len(goal)
    servo, work = np.empty(layout.SERVO_STATE_SIZE), np.empty(WORK_SIZE)
    q, v = 0.0, 0.0
    reset_servo(servo, q, v)
    states, records, torques = np.empty((n, 2)), np.empty((n, layout.SERVO_STATE_SIZE)), \
        np.empty((n, 2))
    for k in range(n):
        states[k] = q, v
        u = learned_period(servo, case.theta, case.bench, case.net, work, goal[k], q, v,
                           enable[k], NO_LOG, DT, False)
        step_servo(servo, case.theta, v)
        records[k] = servo
        torques[k] = held_torque(servo, case.theta, v), servo[layout.SERVO_EXTRA]
        q, v = bench_step_with(q, v, u, enable[k], servo[layout.SERVO_EXTRA], DT, case.theta,
                               case.bench)
    return states, records, torques


@pytest.mark.parametrize("full", [False, True], ids=["in_place", "records_in_out"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_bank_follows_the_numba_bank_period_by_period(kind, full):
    """Every combination of the kind, a world each, in one launch per period and step."""
    cases = KINDS[kind]
    goal, enable = (a[:200] for a in goals())
    runs = [numba_run(c, goal, enable) for c in cases]
    states = np.array([r[0] for r in runs])
    E = len(cases)
    thetas = f64([c.theta[None] for c in cases])
    firmware = f64([c.bench[None] for c in cases])
    nets_row = cases[0].net[None] if kind != "physics" else np.zeros((1, 1))
    nets = f64(nets_row)
    work = wp.zeros((E, 1, net_work_size(nets_row)), dtype=wp.float64)
    records = wp.zeros((E, 1, layout.SERVO_STATE_SIZE), dtype=wp.float64)
    wp.launch(bank.reset_kernel, dim=(E, 1),
              inputs=[records, f64(states[:, 0, :1]), f64(states[:, 0, 1:])])
    per_servo = np.zeros((E, memory.PER_SERVO, 1))
    logged, period = f64(np.full(E, math.nan)), f64(np.full(E, DT))
    motor, extra = (wp.zeros((E, 1), dtype=wp.float64) for _ in range(2))
    for k in range(len(goal)):
        per_servo[:, memory.GOAL, 0] = goal[k]
        per_servo[:, memory.POSITION, 0] = states[:, k, 0]
        per_servo[:, memory.VELOCITY, 0] = states[:, k, 1]
        per_servo[:, memory.ENABLE, 0] = enable[k]
        mid = wp.zeros_like(records) if full else records
        out = wp.zeros_like(records) if full else records
        wp.launch(bank.period_kernel, dim=E,
                  inputs=[records, mid, thetas, firmware, nets, work, f64(per_servo), logged,
                          period, True, full])
        wp.launch(bank.step_kernel, dim=(E, 1),
                  inputs=[mid, out, thetas, f64(states[:, k, 1:]), full, motor, extra])
        records = out
        got, m, x = records.numpy()[:, 0], motor.numpy()[:, 0], extra.numpy()[:, 0]
        for c, run, g, tau_m, held in zip(cases, runs, got, m, x):
            where = f"{c.physics.actuator} {kind} {c.physics.extensions} period {k}"
            np.testing.assert_allclose(comparable(g), comparable(run[1][k]), rtol=1e-12,
                                       atol=1e-12, err_msg=where)
            np.testing.assert_allclose([tau_m, held], run[2][k], rtol=1e-12, atol=1e-12,
                                       err_msg=where)


# ------------------------------------------------------------------------------- friction

@wp.kernel
def _budget_kernel(thetas: wp.array3d(dtype=wp.float64), v: wp.array(dtype=wp.float64),
                   tau_m: wp.array(dtype=wp.float64), tau_e: wp.array(dtype=wp.float64),
                   angle: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    static, viscous = batched_friction.friction_budget(v[i], tau_m[i], tau_e[i], thetas, 0, 0)
    out[i, 0] = static
    out[i, 1] = viscous
    out[i, 2] = batched_friction.servo_budget(v[i], tau_m[i], tau_e[i], angle[i], thetas, 0, 0)


def test_the_friction_budget_and_its_ripple_are_the_numba_ones():
    from frictionsim.params import ParameterSet

    rng = np.random.default_rng(1)
    sets = [ParameterSet.defaults(m, "xl330") for m in ("m1", "m4", "m6")]
    sets.append(ParameterSet.defaults("m6", "xl330").with_values(
        load_friction_external_quad=0.004, load_friction_motor_quad=0.003))
    sets.append(ParameterSet.defaults("m6", "xl330").with_extensions(["ripple"]).with_values(
        ripple_amplitude=0.01, ripple_frequency=40.0, meshing_amplitude=0.008,
        meshing_decay=2.0, meshing_frequency=90.0))
    for params in sets:
        theta = params.theta()
        v = rng.normal(0, 1, 300)
        v[:30] = 0.0
        tau_m, tau_e, angle = (rng.normal(0, 0.5, 300) for _ in range(3))
        tau_e[30:40] = tau_m[30:40]
        out = wp.zeros((300, 3), dtype=wp.float64)
        wp.launch(_budget_kernel, dim=300,
                  inputs=[f64(theta[None, None]), f64(v), f64(tau_m), f64(tau_e), f64(angle), out])
        got = out.numpy()
        for i in range(300):
            static, viscous = friction_budget(v[i], tau_m[i], tau_e[i], theta)
            expected = rippled_static(static, viscous, angle[i], v[i], theta) \
                + viscous * abs(v[i])
            assert abs(got[i, 0] - static) <= 1e-14 * max(1.0, abs(static))
            assert got[i, 1] == viscous
            assert abs(got[i, 2] - expected) <= 1e-14 * max(1.0, abs(expected))


@wp.kernel
def _clip_kernel(mass: wp.array3d(dtype=wp.float64), tau: wp.array2d(dtype=wp.float64),
                 v: wp.array2d(dtype=wp.float64), budget: wp.array2d(dtype=wp.float64),
                 dt: wp.float64, warm: bool, work: wp.array2d(dtype=wp.float64),
                 out: wp.array2d(dtype=wp.float64), status: wp.array(dtype=wp.int32)):
    e = wp.tid()
    status[e] = batched_joint.clip_friction(mass[e], tau[e], v[e], budget[e], dt, out[e],
                                            work[e], tau.shape[1], warm)


def problems(n: int, E: int, seed: int):
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, (E, n, n))
    mass = a @ np.swapaxes(a, 1, 2) + 0.2 * np.eye(n)
    tau = rng.normal(0, 2, (E, n))
    v = rng.normal(0, 0.05, (E, n))
    v[: E // 4] = 0.0  # at rest: the stick decisions
    budget = rng.uniform(0, 1.5, (E, n))
    budget[E // 3, 0] = 0.0  # a joint without a budget (a floating base's)
    return mass, tau, v, budget


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_the_friction_solver_is_the_numba_one_and_optimal_cold_and_warm(n):
    E, dt = 64, 0.002
    work = wp.zeros((E, clip_work_size(n)), dtype=wp.float64)
    numba_work = np.zeros((E, CLIP_WORK))
    for seed, warm in ((n, False), (n + 100, True)):  # the second from the first's active set
        mass, tau, v, budget = problems(n, E, seed)
        out = wp.zeros((E, n), dtype=wp.float64)
        status = wp.zeros(E, dtype=wp.int32)
        wp.launch(_clip_kernel, dim=E, inputs=[f64(mass), f64(tau), f64(v), f64(budget),
                                               wp.float64(dt), warm, work, out, status])
        got = out.numpy()
        assert np.all(status.numpy() >= 0)
        expected = np.array([clip_friction(mass[e], tau[e], v[e], budget[e], dt)
                             for e in range(E)])
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
        if warm:  # the Numba warm solve from its own first solve's active set: the same path
            for e in range(E):
                warm_out = np.empty(n)
                clip_friction_warm_into(mass[e], tau[e], v[e], budget[e], dt, warm_out,
                                        numba_work[e])
                np.testing.assert_allclose(got[e], warm_out, rtol=1e-12, atol=1e-12)
        else:
            for e in range(E):
                clip_friction_warm_into(mass[e], tau[e], v[e], budget[e], dt, np.empty(n),
                                        numba_work[e])
        # KKT: within the budgets; each joint at rest after the step, or slipping at its budget
        assert np.all(np.abs(got) <= budget + 1e-12)
        v_next = v + dt * np.linalg.solve(mass, (tau + got)[..., None])[..., 0]
        at_rest = np.abs(v_next) < 1e-9
        at_budget = np.abs(np.abs(got) - budget) < 1e-9
        assert np.all(at_rest | at_budget)
        assert np.all(at_rest | (np.sign(got) == -np.sign(v_next)) | (budget == 0))


# ------------------------------------------------------------- the engines' step on MuJoCo

def kernel_on_mujoco(cases_servos: list, mjcf, goal_rows, period: float, enable=None,
                     reset_at: int | None = None):
    """The servos' step kernel driving MuJoCo's C step split as the CPU adapter's callback
    splits it (step1, the kernel in float64, step2), a world per servo list of
    ``cases_servos`` (each its own model: the servos' armature is the model's); at period
    ``reset_at`` world 1 goes back to its start and its servos are reset. The physical and
    reported positions, worlds × periods × nq and × servos."""
    from frictionsim.solvers.batched.setup import ServoSetup
    from frictionsim.solvers.warp_servos import WarpServos

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setups = [ServoSetup.build(mjcf, s, period, encoder=False) for s in cases_servos]
    models = [s.model for s in setups]
    datas = [mujoco.MjData(m) for m in models]
    worlds = len(setups)
    servos = WarpServos(setups[0], worlds, "cpu", dtype=wp.float64)
    servos.thetas.assign(np.array([s.thetas for s in setups]))
    servos.firmware.assign(np.array([s.firmware for s in setups]))
    nq, nv, ns = models[0].nq, models[0].nv, len(setups[0].servos)
    arrays = {name: wp.zeros((worlds, size), dtype=wp.float64)
              for name, size in (("M", models[0].nM), ("qfrc_bias", nv), ("qfrc_passive", nv),
                                 ("qpos", nq), ("qvel", nv), ("qfrc_applied", nv))}
    physical = np.empty((worlds, len(goal_rows), nq))
    reported = np.empty((worlds, len(goal_rows), ns))
    for k, goal in enumerate(goal_rows):
        if k == reset_at:
            mujoco.mj_resetData(models[1], datas[1])
            servos.reset([1])
        servos.set_goals(np.broadcast_to(goal, (worlds, ns)))
        if enable is not None:
            servos.set_enable(np.broadcast_to(enable[k], (worlds, ns)))
        for w, d in enumerate(datas):
            physical[w, k] = d.qpos
        for _ in range(servos.substeps):
            for m, d in zip(models, datas):
                mujoco.mj_step1(m, d)
            for name, array in arrays.items():
                array.assign(np.array([getattr(d, name) for d in datas]))
            a = arrays
            servos.step(a["M"], a["qfrc_bias"], a["qfrc_passive"], a["qpos"], a["qvel"],
                        a["qfrc_applied"])
            qpos, qvel, applied = a["qpos"].numpy(), a["qvel"].numpy(), a["qfrc_applied"].numpy()
            for w, (m, d) in enumerate(zip(models, datas)):
                d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos[w], qvel[w], applied[w]
                mujoco.mj_step2(m, d)
        reported[:, k] = servos.reported.numpy()
    servos.check()
    return physical, reported


def adapter_run(mjcf, servos, goal_rows, period, enable=None):
    from frictionsim.solvers.engines import get_engine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_engine("mujoco").robot(mjcf, servos, period).run(goal_rows, enable)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_engine_step_is_the_cpu_adapters_on_every_combination(kind):
    """The pendulum, every combination of the kind a world of its own (its parameters and
    firmware its rows), the enable switched off for the last fifth: each world the CPU
    adapter's run to 1e-12 rad, reported and physical."""
    from frictionsim.solvers.mujoco_adapter import bench_mjcf
    from frictionsim.solvers.robot import JointServo

    mjcf = bench_mjcf(MASS, LENGTH, 0.0, DT)
    goal, enable = (a[:160] for a in goals())
    enable = enable.copy()
    enable[128:] = 0.0
    cases = KINDS[kind]
    servos = [[JointServo("servo", c.params, **c.settings)] for c in cases]
    physical, reported = kernel_on_mujoco(servos, mjcf, goal[:, None], DT, enable[:, None])
    for w, (c, s) in enumerate(zip(cases, servos)):
        expected = adapter_run(mjcf, s, goal[:, None], DT, enable[:, None])
        where = f"{c.physics.actuator} {kind} {c.physics.extensions}"
        np.testing.assert_allclose(physical[w], expected.physical, rtol=0, atol=1e-12,
                                   err_msg=where)
        np.testing.assert_allclose(reported[w], expected.q, rtol=0, atol=1e-12, err_msg=where)


def test_a_gear_gap_and_the_ripple_step_as_the_cpu_adapter_steps_them():
    """The pendulum with a 30 mrad gap, with the ripple (the two are not modelled together):
    each the adapter's run to 1e-12 rad, and each moves the run (the gap opens and closes)."""
    from tests.pendulum_servo import MJCF, PERIOD, servo, square

    ripple = {"ripple_amplitude": 0.01, "ripple_frequency": 40.0, "meshing_amplitude": 0.008,
              "meshing_decay": 2.0, "meshing_frequency": 90.0}
    variants = [servo(("backlash",), backlash=0.03), servo(("ripple",), **ripple)]
    goal_rows = square(300)
    plain = adapter_run(MJCF, [servo()], goal_rows, PERIOD).physical
    for s in variants:
        physical, reported = kernel_on_mujoco([[s]], MJCF, goal_rows, PERIOD)
        expected = adapter_run(MJCF, [s], goal_rows, PERIOD)
        np.testing.assert_allclose(physical[0], expected.physical, rtol=0, atol=1e-12)
        np.testing.assert_allclose(reported[0], expected.q, rtol=0, atol=1e-12)
        assert np.abs(expected.physical - plain).max() > 1e-4


def test_the_gear_step_on_coupled_joints_and_a_reset_restarts_a_world_as_a_fresh_run():
    """The 2R arm with a 20 mrad gap on each joint, two worlds: both the adapter's run to
    1e-12 rad; world 1 reset at period 60 then runs the goals from there as a fresh run."""
    from tests.test_backlash import DATA, arm_with_gaps, with_gap

    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    arm, servos, _, goal_rows = arm_with_gaps(DATA, 1.0, "semi_implicit")
    servos = [dataclasses.replace(s, params=with_gap(s.params, 0.02).with_scheme("semi_implicit"))
              for s in servos]
    path = str(arm.path(DATA))
    physical, _ = kernel_on_mujoco([servos, servos], path, goal_rows, 0.005, reset_at=60)
    expected = adapter_run(path, servos, goal_rows, 0.005).physical
    assert np.abs(physical[0] - expected).max() < 1e-12
    assert np.abs(physical[1, :60] - expected[:60]).max() < 1e-12
    fresh = adapter_run(path, servos, goal_rows[60:], 0.005).physical
    assert np.abs(physical[1, 60:] - fresh).max() < 1e-12
    assert np.abs(expected - adapter_run(path, [dataclasses.replace(
        s, params=with_gap(s.params, 0.0)) for s in servos], goal_rows, 0.005).physical).max() \
        > 1e-4


# ------------------------------------------------------------------ the training's rollout

torch = pytest.importorskip("torch")


def torch_rows(values):
    return torch.as_tensor(np.asarray(values, dtype=float)[None])


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bench_rollout_is_the_numba_one_to_1e12_rad(kind):
    from frictionsim.solvers.batched.rollout import bench_rollout
    from frictionsim.solvers.learned_rollout import learned_run

    goal, enable = goals()
    nothing = np.full(len(goal), math.nan)
    for c in KINDS[kind]:
        q, v = np.empty(len(goal)), np.empty(len(goal))
        learned_run(goal, enable, nothing, 0.0, 0.0, c.theta, c.bench, c.net, q, v)
        nets = torch.as_tensor(c.net[None]) if kind != "physics" else None
        got = bench_rollout(c.theta, c.bench[None], nets, torch_rows(goal), torch_rows(enable),
                            torch_rows(nothing), torch.zeros(1), torch.zeros(1))
        np.testing.assert_allclose(got.numpy()[0], q, rtol=0, atol=1e-12,
                                   err_msg=f"{kind} {c.physics.extensions}")


def test_the_rollouts_gradient_is_the_finite_differences():
    """A hybrid with every extension, 60 periods: d(Σ reported²)/d(weights) by the kernels'
    adjoint against central differences of the forward rollout."""
    from frictionsim.solvers.batched.rollout import bench_rollout

    case = KINDS["hybrid"][-1]
    n = 60
    goal, enable = (a[:n] for a in goals())
    nothing = torch_rows(np.full(n, math.nan))

    def loss(vector):
        reported = bench_rollout(case.theta, case.bench[None], vector, torch_rows(goal),
                                 torch_rows(enable), nothing, torch.zeros(1), torch.zeros(1))
        return (reported ** 2).sum()

    base = torch.as_tensor(case.net[None].copy())
    leaf = base.clone().requires_grad_(True)
    loss(leaf).backward()
    grad = leaf.grad.numpy()[0]
    h = 1e-6
    for i in range(len(case.net) - 20, len(case.net)):  # the last layers' weights and biases
        up, down = base.clone(), base.clone()
        up[0, i] += h
        down[0, i] -= h
        fd = (loss(up).item() - loss(down).item()) / (2 * h)
        assert abs(grad[i] - fd) < 1e-7 * max(1.0, abs(fd)), i
    assert np.abs(grad[-20:]).max() > 1e-3
