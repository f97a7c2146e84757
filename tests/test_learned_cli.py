"""Learned actuators through the everyday commands: identify --model net hybrid (also by
cross-validation), then compare and simulate scoring their files like M1–M6's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frictionsim.experiments.runner.cli import main

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330" / "processed"

pytest.importorskip("sklearn")


def test_identify_trains_net_and_hybrid_and_compare_and_simulate_score_them(tmp_path, capsys):
    out = tmp_path / "fit"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "m6", "net", "hybrid",
                 "--logs", str(DATA), "--validation-kp", "800", "--budget", "60",
                 "--hybrid-budget", "40", "--max-epochs", "20", "--out", str(out), "--json",
                 str(tmp_path / "fit.json"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "fit.json").read_text())["models"]
    assert list(summary) == ["m1", "m6", "net", "hybrid"]
    assert summary["net"]["learned"] and summary["hybrid"]["params_file"].endswith("hybrid.json")
    assert summary["hybrid"]["train_mae"] <= summary["m6"]["train_mae"] * (1 + 1e-12)
    report = (out / "report.md").read_text()
    assert "net (learned)" in report and "`hybrid.json`" in report
    capsys.readouterr()
    # compare takes the folder: the learned files are scored beside the parameter files
    assert main(["compare", "--params", str(out), "--logs", str(DATA), "--json",
                 str(tmp_path / "cmp.json")]) == 0
    cmp = json.loads((tmp_path / "cmp.json").read_text())
    assert set(cmp) == {"m1", "m6", "net", "hybrid"}
    for kind in ("net", "hybrid"):
        assert main(["simulate", "--params", str(out / f"{kind}.json"), str(DATA), "--json",
                     str(tmp_path / f"{kind}.json")]) == 0
        sim = json.loads((tmp_path / f"{kind}.json").read_text())
        assert sim["mean"] == pytest.approx(cmp[kind]["mean"], rel=1e-12)
    assert main(["simulate", "--params", str(out / "net.json"), str(DATA), "--engine",
                 "mujoco"]) == 1
    assert "fixed step only" in capsys.readouterr().err


def test_a_hybrid_needs_m6_in_the_run(tmp_path, capsys):
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "hybrid", "--logs",
                 str(DATA), "--out", str(tmp_path / "x")]) == 1
    assert "add m6 to --model" in capsys.readouterr().err


def two_gains() -> list[str]:
    """The 8 XL330 logs of kp 200 and 400 (the suite's time: fewer samples to train on)."""
    from frictionsim.logs import load_log

    return [str(p) for p in sorted(DATA.glob("*.json")) if load_log(p).kp in (200, 400)]


def test_cross_validation_by_gain_scores_a_net_alone(tmp_path):
    logs = two_gains()
    assert len(logs) == 8
    assert main(["identify", "--actuator", "xl330", "--model", "net", "--logs", *logs,
                 "--cross-validate", "kp", "--max-epochs", "20", "--out", str(tmp_path / "cv"),
                 "--json",
                 str(tmp_path / "cv.json"), "--no-progress"]) == 0
    section = json.loads((tmp_path / "cv.json").read_text())["cross_validation"]
    assert set(section) == {"net"}
    assert set(section["net"]["per_gain"]) == {"200", "400"}
    assert (tmp_path / "cv" / "cross_validation" / "kp_200" / "net.json").is_file()


def test_a_learned_file_of_another_servo_is_not_put_on_a_robots_servos(tmp_path):
    from frictionsim.actuator_net import N_INPUTS, net_size
    from frictionsim.params import ParameterFileError
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_params import load_robot_params

    path = tmp_path / "net.json"
    net = [N_INPUTS, 1, 2, -1.0] + [0.0] * (net_size(N_INPUTS, (2,)) - 4)
    net[4 + N_INPUTS: 4 + 2 * N_INPUTS] = [1.0] * N_INPUTS  # the standard deviations
    net[4 + 4 * N_INPUTS + 1] = 1.0  # the output's scale
    path.write_text(json.dumps({"model": "net", "actuator": "xl330", "hidden": [2], "net": net,
                                "armature": 0.004}))
    params = load_robot_params(path)
    assert params.servos["xl330"].armature == 0.004
    with pytest.raises(ParameterFileError, match="cannot be put on 'sts3215_12v'"):
        params.for_robot(get_robot("so101"))


def test_a_ctrl_c_in_the_hybrids_search_keeps_its_best_and_stops_the_command(tmp_path,
                                                                            monkeypatch, capsys):
    import frictionsim.experiments.identification.learned as learned

    real, calls = learned.packed_errors, []

    def interrupted_at_the_fifth(*args):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(learned, "packed_errors", interrupted_at_the_fifth)
    out = tmp_path / "fit"
    # before: the search caught the interrupt and the command went on to its next step
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "m6", "hybrid", "--logs",
                 *two_gains(), "--validation-kp", "400", "--budget", "30", "--hybrid-budget",
                 "40", "--max-epochs", "5", "--out", str(out), "--no-progress"]) == 130
    assert "interrupted" in capsys.readouterr().err
    saved = json.loads((out / "hybrid.json").read_text())
    assert saved["training"]["interrupted"] is True
    assert len(calls) == 5  # nothing ran after the interrupt
    # the report is written, says the run was interrupted, and scores the hybrid as saved
    # (its best so far: a learned model alone interrupted once left a report of no model)
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"] is True and set(report["models"]) == {"m1", "m6", "hybrid"}
    assert report["models"]["hybrid"]["train_mae"] > 0
    assert (out / "report.md").is_file()


def test_a_ctrl_c_in_the_supervised_epochs_stops_the_command(tmp_path, monkeypatch, capsys,
                                                              mlp_interrupted_at):
    # scikit-learn's MLP swallows the KeyboardInterrupt: the command must still stop there
    import frictionsim.experiments.identification.learned as learned

    epochs, searched = mlp_interrupted_at(2), []
    monkeypatch.setattr(learned, "packed_errors", lambda *a: searched.append(1))
    out = tmp_path / "fit"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "m6", "hybrid", "--logs",
                 *two_gains(), "--validation-kp", "400", "--budget", "30", "--hybrid-budget",
                 "40", "--max-epochs", "5", "--out", str(out), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Training interrupted by user" not in err
    assert json.loads((out / "hybrid.json").read_text())["training"]["interrupted"] is True
    assert len(epochs) == 2 and not searched  # no epoch and no search after the interrupt
