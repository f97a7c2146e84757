"""n-joint friction-budget clipping (docs/model.md §10) and the semi-implicit scheme (docs/model.md §4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numba import njit

from frictionsim import layout
from frictionsim.params import ParameterFileError, ParameterSet, from_dict, load_params
from frictionsim.solvers.fixed_step import clipped_step
from frictionsim.solvers.joint_friction import (
    MAX_JOINTS,
    WORK_SIZE,
    clip_friction,
    clip_friction_into,
    clip_friction_warm_into,
    forget_active_set,
    stepped_velocities,
    stop_friction,
)


def kkt_residual(M, tau, v, b, dt, f) -> float:
    """Largest violation (rad/s, or N·m for the box) of docs/model.md §10's KKT conditions."""
    v_new = v + dt * np.linalg.solve(M, tau + f)
    worst = max(0.0, float(np.max(np.abs(f) - b)))
    for i in range(len(v)):
        inside = abs(f[i]) < b[i] * (1 - 1e-12) - 1e-14
        if inside or v_new[i] * np.sign(f[i]) > 0:  # at rest, or friction opposing v⁺
            worst = max(worst, abs(v_new[i]))
    return worst


def random_problem(rng, n):
    a = rng.normal(size=(n, n))
    M = (a @ a.T + rng.uniform(0.01, 1.0) * np.eye(n)) * 10 ** rng.uniform(-3, 1)
    v = rng.normal(size=n) * rng.choice([0.0, 0.01, 1.0, 10.0], size=n)
    tau = rng.normal(size=n) * 10 ** rng.uniform(-2, 1)
    b = np.abs(rng.normal(size=n)) * 10 ** rng.uniform(-2, 1) * rng.choice([0, 1, 1, 1], size=n)
    return M, tau, v, b, 10 ** rng.uniform(-4, -2)


@pytest.mark.parametrize("n", range(1, 8))
def test_random_problems_meet_the_kkt_conditions(n):
    rng = np.random.default_rng(n)
    for _ in range(1500):
        M, tau, v, b, dt = random_problem(rng, n)
        f = clip_friction(M, tau, v, b, dt)
        scale = max(1.0, float(np.abs(v).max()))
        assert kkt_residual(M, tau, v, b, dt, f) <= 1e-10 * scale


@pytest.mark.parametrize("n", [2, 5, 20])
def test_the_solve_hands_back_the_velocities_after_the_step(n):
    """v⁺ read from the solve is v + dt·M⁻¹(τ + τ_f), and exactly 0 on the joints it leaves at
    rest (strictly inside their budget), where a solve with M leaves round-off."""
    rng = np.random.default_rng(100 + n)
    work, out, v_next = np.empty(WORK_SIZE), np.empty(n), np.empty(n)
    at_rest = 0
    for _ in range(500):
        M, tau, v, b, dt = random_problem(rng, n)
        assert clip_friction_into(M, tau, v, b, dt, out, work) > 0
        stepped_velocities(work, n, dt, v_next)
        expected = v + dt * np.linalg.solve(M, tau + out)
        scale = max(1.0, float(np.abs(v).max()), float(np.abs(expected).max()))
        assert np.abs(v_next - expected).max() <= 1e-9 * scale
        inside = np.abs(out) < b * (1 - 1e-9)
        assert np.all(v_next[inside] == 0.0)
        at_rest += int(inside.sum())
    assert at_rest > 100  # the problems did leave joints at rest


@pytest.mark.parametrize("n", [2, 5, 20])
def test_a_warm_start_from_any_earlier_active_set_reaches_the_same_optimum(n):
    """Started from the last solve's active set, whatever problem it was, the solve meets the
    KKT conditions and agrees with a cold start to round-off, with exact zeros where a joint
    stays at rest; a problem solved again from its own active set takes one iteration."""
    rng = np.random.default_rng(200 + n)
    warm, cold = np.zeros(WORK_SIZE), np.empty(WORK_SIZE)
    f_warm, f_cold, v_warm = np.empty(n), np.empty(n), np.empty(n)
    for _ in range(300):
        M, tau, v, b, dt = random_problem(rng, n)
        assert clip_friction_warm_into(M, tau, v, b, dt, f_warm, warm) > 0
        assert clip_friction_into(M, tau, v, b, dt, f_cold, cold) > 0
        scale = max(1.0, float(np.abs(v).max()))
        assert kkt_residual(M, tau, v, b, dt, f_warm) <= 1e-10 * scale
        # round-off of the torques the friction balances (s = M·v/dt + τ), as for any two
        # orders of the same sums
        stop = max(1.0, float(np.abs(M @ v / dt + tau).max()))
        assert np.abs(f_warm - f_cold).max() <= 1e-12 * stop
        stepped_velocities(warm, n, dt, v_warm)
        assert np.all(v_warm[np.abs(f_warm) < b * (1 - 1e-9)] == 0.0)
        # the same problem again: its own active set is the answer at once
        assert clip_friction_warm_into(M, tau, v, b, dt, f_warm, warm) == 1
        assert np.abs(f_warm - f_cold).max() <= 1e-12 * stop


def test_a_forgotten_or_foreign_active_set_starts_cold():
    rng = np.random.default_rng(7)
    work, cold = np.zeros(WORK_SIZE), np.empty(WORK_SIZE)
    out, expected = np.empty(5), np.empty(5)
    problems = [random_problem(rng, 5) for _ in range(50)]
    for M, tau, v, b, dt in problems:
        clip_friction_warm_into(M, tau, v, b, dt, out, work)  # keeps its active set
        forget_active_set(work)
        M2, tau2, v2, b2, dt2 = random_problem(rng, 5)
        iterations = clip_friction_warm_into(M2, tau2, v2, b2, dt2, out, work)
        assert iterations == clip_friction_into(M2, tau2, v2, b2, dt2, expected, cold)
        assert np.array_equal(out, expected)  # the cold path itself, to the bit
    # a set kept for 5 joints is not read for 4
    M, tau, v, b, dt = random_problem(rng, 4)
    out4, expected4 = np.empty(4), np.empty(4)
    assert clip_friction_warm_into(M, tau, v, b, dt, out4, work) == \
        clip_friction_into(M, tau, v, b, dt, expected4, cold)
    assert np.array_equal(out4, expected4)


def test_twelve_joints_ill_conditioned():
    rng = np.random.default_rng(12)
    work, out = np.empty(WORK_SIZE), np.empty(MAX_JOINTS)
    for _ in range(300):
        M, tau, v, b, dt = random_problem(rng, MAX_JOINTS)
        M += np.diag(10.0 ** rng.uniform(-4, 2, size=MAX_JOINTS))  # spread the eigenvalues
        iterations = clip_friction_into(M, tau, v, b, dt, out, work)
        assert iterations > 0
        assert kkt_residual(M, tau, v, b, dt, out) <= 1e-10 * max(1.0, float(np.abs(v).max()))


def test_one_joint_is_spec_section_4_to_the_bit():
    rng = np.random.default_rng(1)
    for _ in range(20000):
        inertia, tau, v, b = rng.uniform(1e-4, 1), rng.normal() * 3, rng.normal() * 2, abs(rng.normal())
        tau_stop = (inertia / 0.005) * v + tau
        expected = -np.sign(tau_stop) * min(abs(tau_stop), b)
        assert stop_friction(inertia, tau, v, b, 0.005) == expected
        got = clip_friction(np.array([[inertia]]), np.array([tau]), np.array([v]), np.array([b]),
                            0.005)
        assert got[0] == expected


def test_two_joints_held_slipping_and_one_breaking_away():
    M = np.array([[0.02, 0.005], [0.005, 0.01]])
    dt = 0.001
    # both held: budgets far above the torques
    f = clip_friction(M, np.array([0.3, -0.2]), np.zeros(2), np.array([5.0, 5.0]), dt)
    assert f == pytest.approx([-0.3, 0.2])
    # both slip: no budget
    assert clip_friction(M, np.array([0.3, -0.2]), np.zeros(2), np.zeros(2), dt) == pytest.approx(0)
    # joint 0 breaks away, joint 1 stays: friction 0 at its budget, joint 1 at rest after the step
    tau, b = np.array([0.3, -0.05]), np.array([0.1, 5.0])
    f = clip_friction(M, tau, np.zeros(2), b, dt)
    v_new = dt * np.linalg.solve(M, tau + f)
    assert f[0] == pytest.approx(-0.1) and abs(v_new[1]) < 1e-15 and v_new[0] > 0


def test_a_freed_joint_never_accelerates_along_its_own_friction():
    """The case the docs/model.md §8 iteration got wrong: strong coupling, several joints at rest."""
    rng = np.random.default_rng(3)
    for _ in range(3000):
        n = rng.integers(2, 6)
        M, tau, _, b, _ = random_problem(rng, n)
        f = clip_friction(M, tau, np.zeros(n), b, 1.0)  # on accelerations: v = 0, dt = 1
        a = np.linalg.solve(M, tau + f)
        assert np.all(f * a <= 1e-10 * max(1.0, float(np.abs(a).max())))


def test_clip_friction_runs_inside_user_njit_code():
    @njit
    def user(M, tau, v, b):
        return clip_friction(M, tau, v, b, 0.001).sum()

    assert np.isfinite(user(np.eye(3), np.ones(3), np.zeros(3), np.full(3, 0.5)))


# -------------------------------------------------------------------- scheme

def test_semi_implicit_moves_q_by_the_updated_velocity_only():
    q, v = clipped_step(0.1, 0.5, 2.0, 0.01, 0.1, 0.005, True)
    q_ref, v_ref = clipped_step(0.1, 0.5, 2.0, 0.01, 0.1, 0.005)
    a = (2.0 - 0.1) / 0.01
    assert v == v_ref == pytest.approx(0.5 + a * 0.005)
    assert q == pytest.approx(0.1 + v * 0.005) and q_ref == pytest.approx(q + 0.5 * a * 0.005**2)


def test_parameter_files_carry_the_scheme(tmp_path):
    data = {"model": "m1", "actuator": "xl330", "scheme": "semi_implicit"}
    params = from_dict(data, "p.json")
    assert params.scheme == "semi_implicit" and params.theta()[layout.SCHEME] == layout.SEMI_IMPLICIT
    assert params.to_dict()["scheme"] == "semi_implicit"
    assert "scheme" not in params.with_scheme("reference").to_dict()  # reference files unchanged
    with pytest.raises(ParameterFileError, match="scheme = 'rk4'"):
        from_dict({**data, "scheme": "rk4"}, "p.json")


def test_the_two_schemes_differ_by_a_few_mrad_on_the_recorded_logs(shared):
    from frictionsim.logs import load_logs
    from frictionsim.solvers.rollouts import simulate

    params = load_params(shared / "params" / "m6.json")
    logs = load_logs([shared / "processed"])
    gaps = [np.mean(np.abs(simulate(log, params).q - simulate(log, params.with_scheme(
        "semi_implicit")).q)) for log in logs]
    assert 3e-3 < np.mean(gaps) < 15e-3  # docs/model.md §4: about 7 mrad


def test_identify_writes_the_scheme_it_fitted_with(tmp_path, shared):
    from frictionsim.experiments.runner.cli import main

    log = shared / "processed" / "2026-01-15_10h28m42.json"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(log),
                 "--budget", "30", "--scheme", "semi_implicit", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    assert json.loads((tmp_path / "o" / "m1.json").read_text())["scheme"] == "semi_implicit"
    assert ParameterSet.defaults("m1", "xl330").scheme == "reference"
