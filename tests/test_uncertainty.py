"""Parameter uncertainty: ranges where another fit lands (a bootstrap over logs), in parameter
files, and servos drawn within them for domain randomisation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from frictionsim.experiments.identification.uncertainty import (
    Uncertainty,
    another_fit_range,
    interrupted_bootstrap,
    run_bootstrap,
)
from frictionsim.experiments.runner.cli import main
from frictionsim.limits import MAX_SEED
from frictionsim.params import ParameterFileError, ParameterSet, from_dict, load_params

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
XL330 = DATA / "xl330" / "processed"


def test_a_range_holds_another_draw_about_as_often_as_it_claims():
    """Estimates of a normal quantity: the range built from one set's bootstrap-like samples
    around one estimate holds a second, independent estimate about 90 % of the time."""
    rng = np.random.default_rng(1)
    held = []
    for _ in range(400):
        estimate = rng.normal(5.0, 0.2)
        samples = rng.normal(5.0, 0.2, 20)  # the spread of the estimator
        low, high = another_fit_range(estimate, samples, 0.9, -np.inf, np.inf)
        assert low <= estimate <= high
        held.append(low <= rng.normal(5.0, 0.2) <= high)
    assert 0.83 <= np.mean(held) <= 0.96


def test_an_interrupted_bootstrap_says_whether_it_left_ranges():
    cut = Uncertainty(0.9, replicates={"m1": [{"k_t": 1.0}], "m6": []}, interrupted=True)
    said = interrupted_bootstrap(cut, ["m1", "m6"])
    assert said.startswith("the bootstrap stopped after 1 replicate: ranges need two")
    assert "none were written" in said
    cut.replicates = {"m1": [{"k_t": 1.0}] * 3, "m6": [{"k_t": 1.0}]}
    assert interrupted_bootstrap(cut, ["m1", "m6"]).endswith("replicates done (m1 3, m6 1 replicate: none)")


def test_the_replicates_seeds_wrap_round_past_the_largest_seed():
    fit = ParameterSet("m1", "xl330", {"friction_base": 0.03})
    seeds = []

    def replicate(draw, seed, folder):
        seeds.append(seed)
        return {"m1": fit}

    result = run_bootstrap([1, 2, 3], {"m1": fit}, {}, MAX_SEED - 1, 3, 0.9, False, replicate)
    assert seeds == [MAX_SEED, 0, 1]
    assert len(result.replicates["m1"]) == 3 and not result.interrupted


def test_a_range_stays_inside_the_search_bounds_and_around_the_fit():
    low, high = another_fit_range(0.05, np.array([0.0, 0.01, 0.3, 0.2]), 0.9, 0.0, 0.2)
    assert low == 0.0 and high == 0.2
    assert another_fit_range(1.0, np.array([1.0]), 0.9, 0, 2) == (1.0, 1.0)


def test_ranges_round_trip_in_a_parameter_file_and_bad_ones_are_named(tmp_path):
    params = ParameterSet.defaults("m1", "xl330").with_ranges({"kt": (0.5, 2.0)})
    data = params.to_dict()
    assert data["ranges"] == {"kt": [0.5, 2.0]}
    assert from_dict(data).ranges == {"kt": (0.5, 2.0)}
    for bad, words in (({"kt": [2.0, 0.5]}, "low ≤ high"), ({"colour": [0, 1]}, "not a parameter"),
                       ({"kt": [0, float("nan")]}, "finite"), ({"kt": 1.0}, "[low, high]")):
        with pytest.raises(ParameterFileError, match=re.escape(words)):
            from_dict({**data, "ranges": bad}, "x.json")
    with pytest.raises(ParameterFileError, match="ranges must map"):
        from_dict({**data, "ranges": [1, 2]}, "x.json")
    # the scheme or extensions of a copy keep the ranges
    assert params.with_scheme("semi_implicit").ranges == params.ranges


def test_variants_are_drawn_within_the_ranges_and_reproducible():
    params = ParameterSet.defaults("m1", "xl330").with_ranges(
        {"kt": (0.5, 2.0), "friction_base": (0.01, 0.02)})
    drawn = params.variants(50, seed=3)
    kt = np.array([p.values["kt"] for p in drawn])
    assert np.all((kt >= 0.5) & (kt <= 2.0)) and kt.std() > 0.2
    assert all(p.values["R"] == params.values["R"] for p in drawn)  # no range: unchanged
    assert [p.values["kt"] for p in params.variants(5, seed=3)] == list(kt[:5])
    with pytest.raises(ValueError, match="no ranges"):
        ParameterSet.defaults("m1", "xl330").variants(2)


def test_every_servo_is_drawn_on_its_own():
    from frictionsim.solvers.robot import JointServo, draw_servos

    params = ParameterSet.defaults("m1", "xl330").with_ranges({"kt": (0.5, 2.0)})
    plain = ParameterSet.defaults("m1", "xl330")
    servos = [JointServo("a", params, 400), JointServo("b", params, 400),
              JointServo("c", plain, 400)]
    sets = draw_servos(servos, 3, seed=7)
    assert len(sets) == 3
    for s in sets:
        assert s[0].params.values["kt"] != s[1].params.values["kt"]
        assert s[2].params is plain
    assert [s[0].params.values["kt"] for s in sets] == \
        [s[0].params.values["kt"] for s in draw_servos(servos, 3, seed=7)]
    with pytest.raises(ValueError, match="no servo"):
        draw_servos([servos[2]], 1)


def test_identify_uncertainty_writes_ranges_into_the_report_and_the_files(tmp_path):
    if not XL330.is_dir():
        pytest.skip(f"XL330 logs not found at {XL330}")
    logs = [str(p) for p in sorted(XL330.glob("*.json"))[:6]]
    out = tmp_path / "fit"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs", *logs,
                 "--budget", "60", "--uncertainty", "4", "--fix", "q_offset=0", "--out",
                 str(out), "--json", str(tmp_path / "fit.json"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "fit.json").read_text())["uncertainty"]
    assert summary["replicates"] == 4 and summary["level"] == 0.9
    ranges = summary["ranges"]["m1"]
    assert "q_offset" not in ranges  # held fixed: nothing to spread
    params = load_params(out / "m1.json")
    assert set(params.ranges) == set(ranges)
    for name, (low, high) in params.ranges.items():
        assert low <= params.values[name] <= high
    assert "| parameter | value | range |" in (out / "report.md").read_text()
    low, high = summary["combinations"]["m1"]["kt/R (N·m/V)"]
    assert low <= params.values["kt"] / params.values["R"] <= high
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs", *logs,
                 "--uncertainty", "1", "--out", str(tmp_path / "x")]) == 1


def test_robot_simulate_replays_servos_drawn_within_the_ranges(tmp_path, capsys):
    pytest.importorskip("mujoco")
    recording = DATA / "so101" / "recordings" / "slow_precision"
    if not recording.is_dir():
        pytest.skip(f"{recording} not found")
    params = ParameterSet.defaults("m1", "sts3215_12v").with_scheme("semi_implicit")
    path = tmp_path / "m1.json"
    path.write_text(json.dumps(params.with_ranges({"friction_base": (0.02, 0.3)}).to_dict()))
    args = ["robot", "simulate", "--robot", "so101", "--data", str(DATA), "--params", str(path),
            str(recording), "--variants", "3", "--seed", "5", "--no-progress", "--json",
            str(tmp_path / "sim.json")]
    assert main(args) == 0
    result = json.loads((tmp_path / "sim.json").read_text())
    means = [v["mean_mae_rad"] for v in result["variants"]]
    assert len(means) == 3 and len(set(means)) == 3  # three different servo sets
    assert "3 servo sets drawn within the ranges (seed 5)" in capsys.readouterr().out
    args[-1] = str(tmp_path / "again.json")
    assert main(args) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert [v["mean_mae_rad"] for v in again["variants"]] == means  # seeded
