"""Torque contributions (frictionsim.solvers.torque_trace,
frictionsim.experiments.analysis.torque_contributions,
`run torque-contributions`): the terms sum to the total torque at every step, the trace is
the rollout's, the budget split sums to the budget, and the verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synthetic_logs import random_values, rng_for, synthetic_log

from frictionsim import MODELS
from frictionsim.experiments.analysis.torque_contributions import (
    EQUATION_TERMS,
    FRICTION_TERMS,
    contributions,
    summarise,
)
from frictionsim.experiments.runner.cli import main
from frictionsim.logs import load_logs
from frictionsim.params import ParameterSet, load_params
from frictionsim.solvers.rollouts import simulate
from frictionsim.solvers.torque_trace import COLUMNS, trace_torques


@pytest.fixture(scope="module")
def xl330_logs(shared):
    return load_logs([shared / "processed"])


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("scheme", ["reference", "semi_implicit"])
def test_the_terms_sum_to_the_total_torque_at_every_step(model, scheme):
    rng = rng_for("contributions", model, scheme)
    for actuator in ("xl330", "erob80_100"):
        params = ParameterSet(model, actuator, random_values(model, actuator, rng, 0.25),
                              scheme=scheme)
        log = synthetic_log(actuator, rng, params.values, n=400)
        trace = trace_torques(log, params)
        col = {name: trace[:, i] for i, name in enumerate(COLUMNS)}
        scale = np.max(np.abs(trace[:, 2:7]))
        # I·a = τ_m + τ_e + τ_f at every step
        np.testing.assert_allclose(col["inertia"], col["motor"] + col["external"]
                                   + col["friction"], rtol=0, atol=1e-13 * scale)
        # the applied friction never exceeds its budget; the budget is the sum of its terms
        assert np.all(np.abs(col["friction"]) <= col["budget"] * (1 + 1e-12))
        np.testing.assert_allclose(trace[:, 7:].sum(axis=1), col["budget"], rtol=1e-12,
                                   atol=1e-15)
        # the trajectory is the rollout's, bit for bit
        np.testing.assert_array_equal(col["position"], simulate(log, params).q)
        c = contributions(log, params)
        np.testing.assert_allclose(sum(c.series[k] for k in FRICTION_TERMS), col["friction"],
                                   rtol=0, atol=1e-13 * scale)
        assert c.residual <= 1e-13 * scale
        assert sum(c.shares[k] for k in EQUATION_TERMS) == pytest.approx(1.0)


def test_verdicts_on_the_xl330_logs(shared, xl330_logs):
    m1 = load_params(shared / "params" / "m1.json")
    terms = summarise([contributions(log, m1) for log in xl330_logs], m1)
    absent = {k for k, v in terms.items() if v["verdict"] == "absent"}
    assert absent == {"friction.stribeck", "friction.load", "friction.directional",
                      "friction.quadratic"}
    assert terms["motor"]["verdict"] == "kept" and terms["external"]["verdict"] == "kept"
    for name, term in terms.items():
        shares = [x["share"] for x in term["per_log"].values()]
        assert term["max_share"] == max(shares)
        assert (term["verdict"] == "negligible") == (name not in absent and max(shares) < 0.05)


def test_a_term_that_is_tiny_everywhere_is_negligible_and_a_large_one_is_kept():
    rng = rng_for("contributions", "verdict")
    values = random_values("m1", "xl330", rng, 0.0)
    values.update(friction_base=0.05, friction_viscous=1e-6)
    params = ParameterSet("m1", "xl330", values)
    logs = [synthetic_log("xl330", rng, values, n=300) for _ in range(3)]
    terms = summarise([contributions(log, params) for log in logs], params)
    assert terms["friction.viscous"]["verdict"] == "negligible"
    assert terms["friction.viscous"]["max_share"] < 1e-3
    assert terms["motor"]["verdict"] == "kept"


def test_cli(shared, tmp_path, capsys):
    out = tmp_path / "tc.json"
    assert main(["run", "torque-contributions", "--params", str(shared / "params" / "m6.json"),
                 "--logs", str(shared / "processed"), "--json", str(out), "--plot",
                 str(tmp_path / "tc.png"), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert set(data["terms"]) == set(EQUATION_TERMS + FRICTION_TERMS)
    assert data["absent"] == ["friction.load"]
    assert all(data["terms"][n]["verdict"] == "negligible" for n in data["negligible"])
    assert len(data["terms"]["motor"]["per_log"]) == 12
    assert (tmp_path / "tc.png").stat().st_size > 0
    assert "negligible (under 5 % on every log)" in capsys.readouterr().out
