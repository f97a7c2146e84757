"""The compiled kernels against the naive reference of docs/model.md §1–§5 (tests/reference_model.py).

Every (model, actuator) pair, random parameter values inside the schema bounds,
random inputs, and rollouts of short synthetic logs (some entries with the
torque off). Agreement is to rounding (1e-12 relative).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import reference_model as ref
from synthetic_logs import random_header, random_values, rng_for, synthetic_log

from frictionsim import schema
from frictionsim.actuator_laws import firmware_law, motor_torque
from frictionsim.friction import friction_budget
from frictionsim.layout import VIN
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.pendulum import gravity_torque, load_inertia
from frictionsim.solvers.fixed_step import rollout, rollout_error, step
from frictionsim.solvers.rollouts import simulate

MODELS = ref.MODELS
ACTUATORS = tuple(ref.ACTUATORS)
PAIRS = [(m, a) for m in MODELS for a in ACTUATORS]
RTOL = 1e-12


def close(got: float, want: float, rtol: float = RTOL, atol: float = 1e-14) -> bool:
    return math.isclose(got, want, rel_tol=rtol, abs_tol=atol)


def make_case(model: str, actuator: str, tag: str, friction_fraction: float = 1.0):
    rng = rng_for(tag, model, actuator)
    values = random_values(model, actuator, rng, friction_fraction)
    params = ParameterSet(model, actuator, values)
    return rng, values, params


def test_reference_covers_the_package_schema():
    assert set(schema.MODELS) == set(MODELS)
    assert set(schema.ACTUATORS) == set(ACTUATORS)
    for model in MODELS:
        for actuator in ACTUATORS:
            names = set(schema.parameters(model, actuator))
            want = {"q_offset"} | set(ref.ACTUATOR_PARAMETERS[actuator])
            want |= set(ref.MODEL_PARAMETERS[model])
            assert names == want, (model, actuator)


def torque_scale(actuator: str) -> float:
    return 50.0 if schema.get_actuator(actuator).law == "current" else 3.0


def budget_inputs(rng: np.random.Generator, scale: float, n: int = 300):
    """Random (v, τ_m, τ_e) plus the corner cases of M6's switching and sign(0)."""
    cases = []
    for _ in range(n):
        v = float(rng.uniform(-4.0, 4.0))
        tm = float(rng.uniform(-scale, scale))
        te = float(rng.uniform(-scale, scale))
        cases.append((v, tm, te))
    for v in (0.0, 0.05, -0.3, 2.0):
        for tm, te in (
            (0.0, 0.0), (0.0, 1.3), (1.3, 0.0), (-0.7, 0.0), (0.0, -0.7),
            (1.1, -1.1), (-1.1, 1.1), (1.1, 1.1), (0.4, -1.9), (-1.9, 0.4), (2.0, 0.5),
        ):
            cases.append((v, tm * scale / 3, te * scale / 3))
    return cases


@pytest.mark.parametrize("model,actuator", PAIRS)
def test_friction_budget_matches_reference(model, actuator):
    rng, values, params = make_case(model, actuator, "budget")
    theta = params.theta()
    bad = []
    for v, tm, te in budget_inputs(rng, torque_scale(actuator)):
        F, Kv = friction_budget(v, tm, te, theta)
        F_ref, Kv_ref = ref.budget(model, values, v, tm, te)
        if not (close(F, F_ref) and Kv == Kv_ref):
            bad.append(f"v={v!r} tm={tm!r} te={te!r}: ({F!r}, {Kv!r}) != ({F_ref!r}, {Kv_ref!r})")
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize("model,actuator", PAIRS)
def test_firmware_and_motor_match_reference(model, actuator):
    rng, values, params = make_case(model, actuator, "laws")
    theta = params.theta()
    # the limiter state is only defined (docs/model.md §3) for the servo that has a limiter
    limiter = bool(ref.ACTUATORS[actuator].get("limiter"))
    bad = []
    for trial in range(20):
        log = Log(random_header(actuator, rng), [])
        bench = log.bench(actuator)
        bench_ref = ref.bench_from_header(log.header, actuator)
        for _ in range(20):
            q_target = float(rng.uniform(-2.0, 2.0))
            q = q_target + float(rng.choice([0.0, 1.0, 0.05, 0.5])) * float(rng.normal())
            v = float(rng.uniform(-30.0, 30.0)) if rng.random() < 0.3 else float(rng.normal())
            q_smooth = q_target + float(rng.uniform(-0.3, 0.3))
            enable = float(rng.integers(2))
            e_prev = float(rng.choice([math.nan, q_target - q + 0.01 * float(rng.normal())]))
            u, qs, _, _ = firmware_law(q_target, q, v, q_smooth, 0.0, e_prev, bench[VIN], theta,
                                       bench)
            u_ref, qs_ref, _ = ref.control(actuator, values, bench_ref, q_target, q, v, q_smooth,
                                           e_prev)
            if not close(u, u_ref):
                bad.append(f"trial {trial}: u {u!r} != {u_ref!r}")
            if limiter and not close(qs, qs_ref):
                bad.append(f"trial {trial}: q_smooth {qs!r} != {qs_ref!r}")
            tau = motor_torque(u, enable, v, theta)
            tau_ref = ref.motor(actuator, values, u, enable, v)
            if not close(tau, tau_ref, atol=1e-12):
                bad.append(f"trial {trial}: τ_m(u={u!r}, en={enable}, v={v!r}) "
                           f"{tau!r} != {tau_ref!r}")
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize("model,actuator", PAIRS)
def test_pendulum_and_step_match_reference(model, actuator):
    rng, values, params = make_case(model, actuator, "step")
    theta = params.theta()
    scale = 12.0 if ref.ACTUATORS[actuator]["law"] == "current" else 10.0
    bad = []
    for trial in range(10):
        log = Log(random_header(actuator, rng, dt=float(rng.choice([0.001, 0.005, 0.01]))), [])
        bench = log.bench(actuator)
        bench_ref = ref.bench_from_header(log.header, actuator)
        if not close(load_inertia(bench), ref.load_inertia(bench_ref)):
            bad.append(f"trial {trial}: inertia")
        for _ in range(30):
            q = float(rng.uniform(-3.5, 3.5))
            if not close(gravity_torque(q, bench), ref.gravity_torque(q, bench_ref)):
                bad.append(f"trial {trial}: gravity torque at q={q!r}")
            v = float(rng.choice([0.0, rng.normal(0, 0.05), rng.normal(0, 3.0)]))
            u = float(rng.uniform(-scale, scale))
            enable = float(rng.integers(2))
            dt = log.header["dt"]
            got = step(q, v, u, enable, dt, theta, bench)
            want = ref.step(model, actuator, values, bench_ref, q, v, u, enable, dt)
            if not (close(got[0], want[0], atol=1e-13) and close(got[1], want[1], atol=1e-12)):
                bad.append(f"step(q={q!r}, v={v!r}, u={u!r}, en={enable}): {got} != {want}")
            if v == 0.0 and want[1] == 0.0 and got[1] != 0.0:
                bad.append(f"stick not exact at q={q!r}, u={u!r}: v = {got[1]!r}")
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize("model,actuator", PAIRS)
def test_rollout_on_synthetic_logs_matches_reference(model, actuator):
    # friction magnitudes in the lowest quarter of their bounds, so that the servo moves
    rng, values, params = make_case(model, actuator, "rollout", friction_fraction=0.25)
    theta = params.theta()
    for trial in range(3):
        log = synthetic_log(
            actuator, rng, values, n=int(rng.integers(200, 400)),
            dt=float(rng.choice([0.002, 0.005])), with_speed=trial != 1, disabled=trial != 2,
        )
        assert any(not e["torque_enable"] for e in log.entries) == (trial != 2)
        bench = log.bench(actuator)
        goal = log.column("goal_position")
        enable = log.column("torque_enable")
        position = log.column("position")
        v0 = float(log.entries[0].get("speed", 0.0))
        out_q = np.full(len(goal), np.nan)
        out_v = np.full(len(goal), np.nan)
        rollout(goal, enable, log.supply(), position[0], v0, theta, bench, log.dt, out_q, out_v)

        q_ref, v_ref, mae_ref = ref.rollout(model, actuator, values, log.header, log.entries)
        np.testing.assert_allclose(out_q, q_ref, rtol=RTOL, atol=1e-12, err_msg=f"q, trial {trial}")
        np.testing.assert_allclose(out_v, v_ref, rtol=RTOL, atol=1e-12, err_msg=f"v, trial {trial}")
        assert out_q[0] == log.entries[0]["position"]
        assert out_v[0] == v0
        # the run actually moves, so the comparison is not between two constants
        assert np.ptp(out_q) > 1e-3

        err = rollout_error(goal, enable, log.supply(), position, v0, theta, bench, log.dt)
        assert close(err, mae_ref, atol=0.0), (err, mae_ref)
        assert close(simulate(log, params).mae, mae_ref, atol=0.0)
