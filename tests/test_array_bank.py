"""The servo bank as array code (torch and JAX) follows the Numba bank.

For every combination of tests/test_servo_bank.py (``supply``, ``current_limit``,
``latency``, ``observation_delay``; the XL330's plain firmware and the STS3215's P/D loop;
physics alone, a net, a hybrid) the Numba bank is run on a bench, period by period, and the
array bank is fed the same inputs: its records (laid out as the Numba records), held controls
and torques must agree to 1e-12 in float64; a bench rollout driven by it (``bench_rollout``, the
bench's step in array code) to 1e-12 rad; in float32 to the stated tolerance. The friction budget
and the n-joint friction solver agree with the Numba ones on random problems, and the
solver's answer satisfies the KKT conditions of docs/model.md §10.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_servo_bank import CASES, DT, LENGTH, MASS, Case, N, goals

from frictionsim import layout
from frictionsim.friction import friction_budget
from frictionsim.servo_bank import WORK_SIZE, held_torque, learned_period, reset_servo, step_servo
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers import array_bank as ab
from frictionsim.solvers.fixed_step import bench_step_with
from frictionsim.solvers.joint_friction import clip_friction

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

#: float32 against the float64 Numba bank: the reported positions of a 2-s bench rollout
#: (measured: 4.6e-7 rad at most with physics or a hybrid, 4.5e-6 with a net).
FLOAT32_TOLERANCE = 1e-5  # rad


def backends():
    import array_api_compat

    return {"torch": array_api_compat.array_namespace(torch.zeros(1)), "jax": jnp}


def numba_run(case: Case, goal, enable):
    """The Numba bank on the bench, period by period: the inputs of each period (q, v) and the
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


def to_host(a):
    return np.asarray(a.cpu() if hasattr(a, "cpu") else a, dtype=float)


def batch(cases: list[Case], xp, dtype):
    """The cases as one array bank, an environment per case (one network for all)."""
    thetas = np.array([c.theta[None] for c in cases])
    benches = np.array([c.bench[None] for c in cases])
    nets = cases[0].net[None] if cases[0].kind != "physics" else None
    return ab.servos(thetas, benches, nets, xp=xp, dtype=dtype)


def array_replay(xp, cases: list[Case], goal, enable, states, dtype):
    """The array bank fed each case's Numba inputs (states: cases × periods × 2): records and
    torques per case and period."""
    servos_ = batch(cases, xp, dtype)

    def col(x):
        return xp.asarray(np.asarray(x, dtype=float)[:, None], dtype=dtype)

    state = ab.reset(col(states[:, 0, 0]), col(states[:, 0, 1]), xp)
    records, torques = [], []
    ones = np.ones(len(cases))
    for k in range(len(goal)):
        q, v = col(states[:, k, 0]), col(states[:, k, 1])
        state = ab.period(state, servos_, col(goal[k] * ones), q, v, col(enable[k] * ones),
                          math.nan, DT, shared_supply=True)
        state, tau_m, extra = ab.step(state, servos_, v)
        records.append(ab.to_records(state, xp)[:, 0])
        torques.append(np.stack([to_host(tau_m)[:, 0], to_host(extra)[:, 0]], axis=-1))
    return np.array(records).swapaxes(0, 1), np.array(torques).swapaxes(0, 1)


def comparable(records: np.ndarray) -> np.ndarray:
    """NaN (no D term yet, no supply yet, a gear not yet settled) compared as NaN."""
    return np.where(np.isnan(records), -12345.0, records)


#: Every combination of tests/test_servo_bank.py, grouped by kind (one network per bank).
KINDS = {kind: [Case(*p.values) for p in CASES if p.values[2] == kind]
         for kind in ("physics", "net", "hybrid")}


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_array_bank_follows_the_numba_bank_period_by_period(kind, backend):
    """Every combination of the kind, an environment each, in one batch."""
    cases = KINDS[kind]
    goal, enable = (a[:200] for a in goals())
    runs = [numba_run(c, goal, enable) for c in cases]
    states = np.array([r[0] for r in runs])
    xp = backends()[backend]
    got, got_torques = array_replay(xp, cases, goal, enable, states, xp.float64)
    for c, (_, records, torques), g, t in zip(cases, runs, got, got_torques):
        np.testing.assert_allclose(comparable(g), comparable(records), rtol=1e-12, atol=1e-12,
                                   err_msg=f"{c.physics.actuator} {kind} {c.physics.extensions}")
        np.testing.assert_allclose(t, torques, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------- a rollout, 1e-12 rad

def array_bench_rollout(xp, servos_, goal, enable, dtype):
    """The bench driven by the array bank (:func:`~frictionsim.solvers.array_bank.bench_rollout`),
    E environments at once from rest at 0, no logged supply: the reported positions (E, n)."""
    E = max(servos_.theta.shape[0], 1)

    def rows(x):
        return xp.asarray(np.tile(np.asarray(x, dtype=float), (E, 1)), dtype=dtype)

    zero = xp.zeros(E, dtype=dtype)
    return to_host(ab.bench_rollout(servos_, rows(goal), rows(enable),
                                    rows(np.full(len(goal), math.nan)), zero, zero))


def numba_rollout(case: Case, goal, enable) -> np.ndarray:
    from frictionsim.solvers.learned_rollout import learned_run

    q, v = np.empty(len(goal)), np.empty(len(goal))
    learned_run(goal, enable, np.full(len(goal), NO_LOG), 0.0, 0.0, case.theta, case.bench,
                case.net, q, v)
    return q


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bench_rollout_on_the_array_bank_is_the_numba_one_to_1e12_rad(kind, backend):
    """Every combination of the kind, an environment each, in one batched rollout."""
    cases = KINDS[kind]
    goal, enable = goals()
    xp = backends()[backend]
    got = array_bench_rollout(xp, batch(cases, xp, xp.float64), goal, enable, xp.float64)
    expected = [numba_rollout(c, goal, enable) for c in cases]
    for c, g, e in zip(cases, got, expected):
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-12,
                                   err_msg=f"{c.physics.actuator} {kind} {c.physics.extensions}")
    if backend == "jax" and kind != "hybrid":
        return  # JAX runs the rollout op by op (half a minute a dtype): float32 on the hybrid,
        # which has the physics and the network, and in the next test on the physics
    got32 = array_bench_rollout(xp, batch(cases, xp, xp.float32), goal, enable, xp.float32)
    assert np.abs(got32 - np.array(expected)).max() < FLOAT32_TOLERANCE


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_environments_with_their_own_parameters_in_one_batch_and_float32(backend):
    """Eight environments with randomised friction, gain and supply, in one call: each is its
    own Numba rollout, to 1e-12 rad in float64 and FLOAT32_TOLERANCE in float32."""
    rng = np.random.default_rng(4)
    base = Case(("supply", "current_limit"), "xl330", "physics")
    thetas, benches, cases = [], [], []
    for _ in range(8):
        c = Case(("supply", "current_limit"), "xl330", "physics")
        c.theta = c.theta.copy()
        c.bench = c.bench.copy()
        c.theta[layout.K_C] *= rng.uniform(0.5, 1.5)
        c.theta[layout.SUPPLY_EMF] = rng.uniform(6.5, 8.0)
        c.bench[layout.KP] = rng.uniform(200, 600)
        thetas.append(c.theta[None])
        benches.append(c.bench[None])
        cases.append(c)
    goal, enable = goals()
    xp = backends()[backend]
    expected = np.array([numba_rollout(c, goal, enable) for c in cases])
    servos64 = ab.servos(np.array(thetas), np.array(benches), xp=xp)
    got = array_bench_rollout(xp, servos64, goal, enable, xp.float64)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert np.ptp(expected[:, -1]) > 1e-3  # the environments differ
    servos32 = ab.servos(np.array(thetas), np.array(benches), xp=xp, dtype=xp.float32)
    got32 = array_bench_rollout(xp, servos32, goal, enable, xp.float32)
    assert np.abs(got32 - expected).max() < FLOAT32_TOLERANCE
    assert base.kind == "physics"


# ------------------------------------------------------------------------------- friction

@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_friction_budget_is_the_numba_one(backend):
    rng = np.random.default_rng(1)
    xp = backends()[backend]
    from frictionsim.params import ParameterSet

    for model in ("m1", "m4", "m6"):
        theta = ParameterSet.defaults(model, "xl330").theta()
        if model == "m6":
            theta = ParameterSet.defaults(model, "xl330").with_values(
                load_friction_external_quad=0.004, load_friction_motor_quad=0.003).theta()
        v = rng.normal(0, 1, 300)
        v[:30] = 0.0
        tau_m, tau_e = rng.normal(0, 0.5, 300), rng.normal(0, 0.5, 300)
        tau_e[30:40] = tau_m[30:40]
        servos_ = ab.servos(theta[None], np.zeros((1, layout.BENCH_SIZE)), xp=xp)
        static, viscous = ab.friction_budget(*(xp.asarray(a[:, None]) for a in (v, tau_m, tau_e)),
                                             servos_)
        expected = np.array([friction_budget(a, b, c, theta) for a, b, c in zip(v, tau_m, tau_e)])
        np.testing.assert_allclose(to_host(static)[:, 0], expected[:, 0], rtol=1e-14, atol=0)
        assert np.all(to_host(viscous) == theta[layout.K_V])


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_the_friction_solver_is_the_numba_one_and_optimal(backend, n):
    rng = np.random.default_rng(n)
    xp = backends()[backend]
    E = 64
    a = rng.normal(0, 1, (E, n, n))
    mass = a @ np.swapaxes(a, 1, 2) + 0.2 * np.eye(n)
    tau = rng.normal(0, 2, (E, n))
    v = rng.normal(0, 0.05, (E, n))
    v[: E // 4] = 0.0  # at rest: the stick decisions
    budget = rng.uniform(0, 1.5, (E, n))
    dt = 0.002
    got = to_host(ab.clip_friction(*(xp.asarray(x) for x in (mass, tau, v, budget)), dt))
    expected = np.array([clip_friction(mass[e], tau[e], v[e], budget[e], dt) for e in range(E)])
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    # KKT: within the budgets; each joint at rest after the step, or slipping at its budget
    assert np.all(np.abs(got) <= budget + 1e-12)
    v_next = v + dt * np.linalg.solve(mass, (tau + got)[..., None])[..., 0]
    at_rest = np.abs(v_next) < 1e-9
    at_budget = np.abs(np.abs(got) - budget) < 1e-9
    assert np.all(at_rest | at_budget)
    assert np.all(at_rest | (np.sign(got) == -np.sign(v_next)) | (budget == 0))


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_a_network_row_must_share_the_banks_structure(backend):
    from frictionsim.actuator_net import N_INPUTS, pack_net
    from frictionsim.errors import ConfigurationError

    rng = np.random.default_rng(0)

    def net(hidden):
        return pack_net([rng.normal(size=(N_INPUTS, hidden)), rng.normal(size=(hidden, 1))],
                        [np.zeros(hidden), np.zeros(1)], np.zeros(N_INPUTS), np.ones(N_INPUTS),
                        -np.ones(N_INPUTS), np.ones(N_INPUTS), 0.0, 1.0)

    a, b = net(4), net(6)
    rows = np.zeros((2, max(len(a), len(b))))
    rows[0, :len(a)], rows[1, :len(b)] = a, b
    theta = Case((), "xl330", "physics").theta
    with pytest.raises(ConfigurationError, match="one structure"):
        ab.servos(np.array([theta, theta]), np.zeros((2, layout.BENCH_SIZE)), rows,
                  xp=backends()[backend])
    assert MASS > 0 and LENGTH > 0 and N > 0
