"""Batched errors (frictionsim.solvers.batch) against one-log rollouts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from synthetic_logs import random_values, rng_for, synthetic_log

from frictionsim import layout, load_logs, load_params
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.fixed_step import rollout_error
from frictionsim.solvers.rollouts import simulate


def one_by_one(log, theta, actuator) -> float:
    return rollout_error(
        log.column("goal_position"),
        log.column("torque_enable"),
        log.supply(),
        log.column("position"),
        float(log.entries[0].get("speed", 0.0)),
        theta,
        log.bench(actuator),
        log.dt,
    )


def check(packed: PackedLogs, logs, param_sets, actuator):
    thetas = np.array([p.theta() for p in param_sets])
    errors = packed.errors(thetas, "scalar")
    # the lock-step fast path: within 1e-12 relative (frictionsim.solvers.lockstep, where bits differ)
    np.testing.assert_allclose(packed.errors(thetas), errors, rtol=1e-12, atol=0.0)
    assert errors.shape == (len(param_sets), len(logs))
    assert np.all(np.isfinite(errors))
    for i, params in enumerate(param_sets):
        for j, log in enumerate(logs):
            assert errors[i, j] == one_by_one(log, thetas[i], actuator), (i, j)
            mae = simulate(log, params).mae
            assert math.isclose(errors[i, j], mae, rel_tol=1e-12), (i, j, errors[i, j], mae)
    # candidates differ, so the rows must too (guards against evaluating one θ only)
    assert len({tuple(row) for row in errors}) == len(param_sets)
    return errors


@pytest.fixture(scope="module")
def xl330_logs(shared):
    logs = load_logs([shared / "processed"])
    assert len(logs) == 12
    return logs


def test_batch_on_published_xl330_logs(shared, xl330_logs):
    published = [load_params(shared / "params" / f"m{k}.json") for k in range(1, 7)]
    rng = rng_for("batch", "xl330")
    perturbed = [
        ParameterSet("m4", "xl330", random_values("m4", "xl330", rng, 0.2)),
        published[5].with_values(kt=published[5].values["kt"] * 1.1),
    ]
    packed = PackedLogs.from_logs(xl330_logs, "xl330")
    assert packed.n_logs == 12
    assert packed.n_steps == sum(len(log.entries) for log in xl330_logs)
    check(packed, xl330_logs, published + perturbed, "xl330")


@pytest.mark.parametrize("actuator", ["sts3215", "erob80_100"])
def test_batch_on_synthetic_logs(actuator):
    rng = rng_for("batch", actuator)
    models = ("m1", "m3", "m6")
    candidates = [
        ParameterSet(m, actuator, random_values(m, actuator, rng, 0.25)) for m in models
    ]
    # one bench heavy enough for every candidate; logs of different lengths, with and
    # without speed, with a torque-off window or not
    biggest = max(candidates, key=lambda p: p.values["kt"] ** 2 / p.values["R"]).values
    logs = [
        synthetic_log(actuator, rng, biggest, n=n, with_speed=n % 2 == 0, disabled=n > 200)
        for n in (150, 233, 300, 411)
    ]
    packed = PackedLogs.from_logs(logs, actuator)
    check(packed, logs, candidates, actuator)


def test_single_theta_gives_one_row():
    rng = rng_for("batch", "single")
    log = synthetic_log("erob80_50", rng, None, n=120)
    params = ParameterSet.defaults("m2", "erob80_50")
    out = PackedLogs.from_logs([log], "erob80_50").errors(params.theta())
    assert out.shape == (1, 1)
    assert out[0, 0] == one_by_one(log, params.theta(), "erob80_50")


@pytest.mark.parametrize("width", [layout.THETA_SIZE - 1, layout.THETA_SIZE + 1])
def test_wrong_theta_length_raises(width):
    rng = rng_for("batch", "bad")
    packed = PackedLogs.from_logs([synthetic_log("xl330", rng, None, n=50)], "xl330")
    with pytest.raises(ValueError, match=str(layout.THETA_SIZE)):
        packed.errors(np.zeros((2, width)))
    with pytest.raises(ValueError):
        packed.errors(np.zeros(width))
