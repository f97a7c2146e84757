"""What the logs determine: identifiable combinations, and the directions a loss does not see
(found on analytic losses whose flat directions are known), in the identification report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analytic_losses import AnalyticLogs, at

from frictionsim.experiments.identification.identifiability import (
    combinations,
    describe,
    undetermined,
)
from frictionsim.experiments.identification.search_space import SearchSpace
from frictionsim.params import ParameterSet

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330" / "processed"


def test_the_combinations_of_the_voltage_law():
    p = ParameterSet.defaults("m1", "xl330").with_values(kt=0.4, R=4.0, friction_viscous=0.01)
    c = combinations(p)
    assert c["kt/R (N·m/V)"] == pytest.approx(0.1)
    assert c["kt²/R (N·m·s/rad)"] == pytest.approx(0.04)
    assert c["kt²/R + friction_viscous (N·m·s/rad)"] == pytest.approx(0.05)
    assert "kt·error_gain_ratio/R (N·m/V)" in combinations(ParameterSet.defaults("m1", "sts3215"))
    assert combinations(ParameterSet.defaults("m1", "erob80_100")) == {}


def test_a_loss_that_sees_only_kt_over_r_leaves_their_product_undetermined():
    space = SearchSpace("m1", "xl330", {})
    best = ParameterSet("m1", "xl330", {**space.defaults(), "kt": 0.4, "R": 4.0,
                                        "friction_base": 0.05})

    def loss(theta):
        terms = [np.log(at(theta, name) / best.values[name]) ** 2
                 for name in space.free if name not in ("kt", "R")
                 and best.values[name] > 0]
        return (0.01 + np.log(at(theta, "kt") / at(theta, "R") / 0.1) ** 2 + sum(terms)
                + at(theta, "q_offset") ** 2)

    flat = undetermined(space, AnalyticLogs(loss), best)
    assert len(flat) == 1
    signs = flat[0]["parameters"]
    # log kt − log R constant: in the search's log coordinates R's range is the narrower, so
    # R carries most of the direction, and kt, when named, moves the same way
    assert "R" in signs and set(signs) <= {"kt", "R"}
    assert signs.get("kt", signs["R"]) * signs["R"] > 0
    assert flat[0]["rise"] < 1e-3
    assert describe(flat[0]).startswith(("R ", "kt ")) and "(loss +" in describe(flat[0])


def test_a_well_determined_fit_has_no_flat_direction():
    space = SearchSpace("m1", "xl330", {"q_offset": 0.0})
    best = ParameterSet("m1", "xl330", {**space.defaults(), "kt": 0.4, "R": 4.0})

    def loss(theta):
        return 0.01 + sum(np.log(at(theta, n) / best.values[n]) ** 2 for n in space.free
                          if best.values[n] > 0) + sum(at(theta, n) ** 2 for n in space.free
                                                       if best.values[n] == 0)

    assert undetermined(space, AnalyticLogs(loss), best) == []


def test_the_identification_report_says_what_the_logs_determine(tmp_path):
    from frictionsim.experiments.runner.cli import main

    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(DATA),
                 "--budget", "40", "--out", str(tmp_path / "fit"), "--json",
                 str(tmp_path / "fit.json"), "--no-progress"]) == 0
    report = (tmp_path / "fit" / "report.md").read_text()
    assert "## What the logs determine" in report and "kt/R (N·m/V)" in report
    detail = json.loads((tmp_path / "fit" / "report.json").read_text())["models"]["m1"]
    assert detail["identifiable_combinations"]["kt/R (N·m/V)"] > 0
    assert isinstance(detail["undetermined"], list)


def test_identifiable_coordinates_are_a_change_of_variables_of_kt_and_r():
    space = SearchSpace("m1", "xl330", {}, coordinates="identifiable")
    plain = SearchSpace("m1", "xl330", {})
    values = {**space.defaults(), "kt": 0.4, "R": 4.0, "friction_base": 0.03}
    x = space.point(values)
    same = plain.values(plain.point(values)[None, :])[0]
    np.testing.assert_allclose(space.values(x[None, :])[0], same)
    # moving the first coordinate alone moves k_t/R, not k_t²/R
    i = space.free.index("kt")
    moved = x.copy()
    moved[i] += 0.1
    kt, r = (space.values(moved[None, :])[0][space.free.index(n)] for n in ("kt", "R"))
    assert kt**2 / r == pytest.approx(0.4**2 / 4.0, rel=1e-9)
    assert kt / r > 0.1
    with pytest.raises(ValueError, match="coordinates"):
        SearchSpace("m1", "xl330", {}, coordinates="polar")
