"""Identification: recovery on noise-free logs, batched loss, interrupts, options, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.identification.fitter import FitSettings, fit, loss_of
from frictionsim.experiments.identification.search_space import SearchSpace, embed
from frictionsim.experiments.runner.cli import main
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, restrict
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import process, save_log
from frictionsim.params import load_params
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.rollouts import simulate

SETUPS = (BenchSetup(0.5, 0.10, 16.0, 0.05), BenchSetup(1.0, 0.15, 32.0, 0.08))


def ideal_logs(truth, trajectories=("lift_and_drop", "sin_time_square", "up_and_down", "sin_sin")):
    return [process(record(truth, s, t, SensorModel.ideal())) for s in SETUPS for t in trajectories]


@pytest.fixture(scope="module")
def m1_logs():
    return ideal_logs(restrict(GROUND_TRUTH, "m1"))


def write_logs(logs, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, log in enumerate(logs):
        save_log(folder / f"log{i:02d}_kp{log.kp:g}.json", log)
    return folder


def test_batched_loss_equals_single_rollouts(m1_logs):
    packed = PackedLogs.from_logs(m1_logs, "mx64")
    space = SearchSpace("m4", "mx64", {})
    x = np.random.default_rng(0).normal(size=(5, space.dimension))
    losses = loss_of(packed, space.thetas(x))
    for xi, loss in zip(x, losses):
        params = space.parameter_set(xi[None, :])
        single = np.mean([simulate(log, params).mae for log in m1_logs])
        assert loss == pytest.approx(single, rel=1e-12)


def test_search_space_round_trip_and_bounds():
    space = SearchSpace("m6", "sts3215", {"q_offset": 0.0})
    assert "q_offset" not in space.free
    values = space.values(np.random.default_rng(1).normal(scale=5, size=(200, space.dimension)))
    spec = space.spec
    for j, name in enumerate(space.free):
        assert values[:, j].min() >= spec[name].lower and values[:, j].max() <= spec[name].upper
    named = dict(zip(space.free, values[7]))
    back = space.values(space.point(named)[None, :])[0]
    assert np.allclose(back, values[7], rtol=1e-9, atol=1e-15)


def test_embedding_reproduces_the_simpler_model_exactly(m1_logs):
    m3 = restrict(GROUND_TRUTH, "m3")
    for richer in ("m4", "m5", "m6"):
        from frictionsim.params import ParameterSet

        embedded = ParameterSet(richer, "mx64", embed(m3, richer))
        for log in m1_logs[:3]:
            assert simulate(log, embedded).mae == pytest.approx(simulate(log, m3).mae, rel=1e-9)


def test_m1_recovered_from_noise_free_logs(m1_logs):
    truth = restrict(GROUND_TRUTH, "m1")
    packed = PackedLogs.from_logs(m1_logs, "mx64")
    result = fit(SearchSpace("m1", "mx64", {}), packed, FitSettings(budget=2500, seed=0),
                 progress=False)
    assert result.loss < 2e-4
    for name in ("kt", "R", "armature", "friction_base", "friction_viscous"):
        assert result.params.values[name] == pytest.approx(truth.values[name], rel=0.05), name
    assert result.params.values["q_offset"] == pytest.approx(truth.values["q_offset"], abs=2e-3)


def test_m4_recovered_from_noise_free_logs():
    truth = restrict(GROUND_TRUTH, "m4").with_values(load_friction_base=0.08,
                                                      load_friction_stribeck=0.05)
    logs = ideal_logs(truth)
    packed = PackedLogs.from_logs(logs, "mx64")
    result = fit(SearchSpace("m4", "mx64", {}), packed, FitSettings(budget=4000, seed=0),
                 progress=False)
    assert result.loss < 1e-3
    for name in ("kt", "R", "armature", "friction_viscous", "load_friction_base"):
        assert result.params.values[name] == pytest.approx(truth.values[name], rel=0.15), name


def test_same_seed_same_result(m1_logs):
    packed = PackedLogs.from_logs(m1_logs[:3], "mx64")
    space = SearchSpace("m2", "mx64", {})
    a = fit(space, packed, FitSettings(budget=300, seed=4), progress=False)
    b = fit(space, packed, FitSettings(budget=300, seed=4), progress=False)
    c = fit(space, packed, FitSettings(budget=300, seed=5), progress=False)
    assert a.params.values == b.params.values and a.evaluations == b.evaluations == 300
    assert c.params.values != a.params.values


def test_interrupt_leaves_best_so_far_file(m1_logs, tmp_path, monkeypatch):
    folder = write_logs(m1_logs, tmp_path / "logs")
    calls = {"n": 0}
    original = PackedLogs.errors

    def interrupted_errors(self, thetas):
        calls["n"] += 1
        if calls["n"] == 20:
            raise KeyboardInterrupt
        return original(self, thetas)

    monkeypatch.setattr(PackedLogs, "errors", interrupted_errors)
    out = tmp_path / "out"
    rc = main(["identify", "--actuator", "mx64", "--model", "m1", "m2", "--logs", str(folder),
               "--budget", "3000", "--out", str(out), "--no-progress", "--json",
               str(tmp_path / "s.json")])
    monkeypatch.setattr(PackedLogs, "errors", original)
    assert rc == 130
    assert not (out / "m2.json").exists()  # the run stopped in m1
    params = load_params(out / "m1.json")
    summary = json.loads((tmp_path / "s.json").read_text())["models"]["m1"]
    assert summary["evaluations"] < 3000
    packed = PackedLogs.from_logs(m1_logs, "mx64")
    assert loss_of(packed, params.theta()[None, :])[0] == pytest.approx(summary["train_mae"])
    # the report is written, its figures are not (they would hold the exit back a second)
    assert "Not drawn: the run was interrupted" in (out / "report.md").read_text()
    assert not list(out.glob("*.png"))


def test_an_interrupted_resume_keeps_no_figure_of_the_earlier_run(m1_logs, tmp_path,
                                                                  monkeypatch):
    folder = write_logs(m1_logs[:4], tmp_path / "logs")
    out = tmp_path / "out"
    argv = ["identify", "--actuator", "mx64", "--logs", str(folder), "--out", str(out),
            "--no-progress"]
    assert main(argv + ["--model", "m1", "--budget", "100"]) == 0
    assert (out / "convergence.png").exists()
    original = PackedLogs.errors
    calls = {"n": 0}

    def interrupted_errors(self, thetas):  # in m1's search, its saved fit evaluated
        calls["n"] += 1
        if calls["n"] == 20:
            raise KeyboardInterrupt
        return original(self, thetas)

    monkeypatch.setattr(PackedLogs, "errors", interrupted_errors)
    assert main(argv + ["--model", "m1", "m2", "--budget", "3000", "--resume"]) == 130
    monkeypatch.setattr(PackedLogs, "errors", original)
    partial = tmp_path / "out.interrupted"
    assert "Not drawn: the run was interrupted" in (partial / "report.md").read_text()
    assert not list(partial.glob("*.png"))  # the earlier run's would pass for this one's
    assert (out / "convergence.png").exists()  # the earlier result, untouched


def test_identify_cli_outputs_fix_and_validation_kp(m1_logs, tmp_path):
    folder = write_logs(m1_logs, tmp_path / "logs")
    out = tmp_path / "out"
    rc = main(["identify", "--actuator", "mx64", "--model", "m1", "m3", "--logs", str(folder),
               "--validation-kp", "32", "--budget", "200", "--fix", "kt=1.9", "--out", str(out),
               "--json", str(tmp_path / "s.json"), "--no-progress"])
    assert rc == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert set(summary["models"]) == {"m1", "m3"}
    for s in summary["models"].values():
        assert set(s) == {"train_mae", "validation_mae", "seconds", "evaluations", "params_file",
                          "restarts_confirmed", "at_start", "undetermined", "fit_losses"}
        assert s["fit_losses"] is None  # one fit of each model
        assert s["evaluations"] == 200
        assert isinstance(s["restarts_confirmed"], bool)
        assert load_params(s["params_file"]).values["kt"] == 1.9
    report = json.loads((out / "report.json").read_text())
    assert all("kp32" in name for name in report["validation_logs"])
    exploration = report["models"]["m1"]["exploration"]
    assert exploration["run_losses"] and exploration["start_loss"] is None
    assert not any("kp32" in name for name in report["train_logs"])
    # M3 contains M1 and starts from it: never worse on the training logs.
    assert summary["models"]["m3"]["train_mae"] <= summary["models"]["m1"]["train_mae"]
    for fig in ("mae_per_model.png", "convergence.png", "best_worst.png"):
        assert (out / fig).stat().st_size > 5000


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "m9"], "m9"),
        (["--model", "m1", "--fix", "kt"], "NAME=VALUE"),
        (["--model", "m1", "--fix", "friction_stribeck=0.1"], "friction_stribeck"),
        (["--model", "m1", "--fix", "kt=abc"], "abc"),
        (["--model", "m1", "--validation-kp", "999"], "999"),
        (["--model", "m1", "--split", "1.5"], "--split"),
        (["--model", "m1", "--budget", "0"], "--budget"),
    ],
)
def test_bad_arguments_are_named(extra, message, m1_logs, tmp_path, capsys):
    folder = write_logs(m1_logs[:2], tmp_path / "logs")
    rc = main(["identify", "--actuator", "mx64", "--logs", str(folder), "--out",
               str(tmp_path / "o"), "--no-progress", *extra])
    assert rc == 1
    assert message in capsys.readouterr().err


def test_dask_local_cluster(m1_logs, tmp_path):
    distributed = pytest.importorskip("distributed")
    folder = write_logs(m1_logs[:4], tmp_path / "logs")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        rc = main(["identify", "--actuator", "mx64", "--model", "m1", "m2", "m3", "--logs",
                   str(folder), "--budget", "150", "--out", str(tmp_path / "out"), "--dask",
                   cluster.scheduler_address, "--json", str(tmp_path / "s.json")])
    assert rc == 0
    summary = json.loads((tmp_path / "s.json").read_text())["models"]
    assert set(summary) == {"m1", "m2", "m3"}
    assert summary["m2"]["train_mae"] <= summary["m1"]["train_mae"]
    assert all(load_params(s["params_file"]).model == m for m, s in summary.items())


def test_init_file_is_the_starting_point(m1_logs, tmp_path):
    folder = write_logs(m1_logs, tmp_path / "logs")
    truth = restrict(GROUND_TRUTH, "m1")
    from frictionsim.params import save_params

    save_params(tmp_path / "init.json", truth)
    rc = main(["identify", "--actuator", "mx64", "--model", "m1", "--logs", str(folder),
               "--init", str(tmp_path / "init.json"), "--budget", "40", "--out",
               str(tmp_path / "out"), "--json", str(tmp_path / "s.json"), "--no-progress"])
    assert rc == 0
    # Started at the truth on noise-free logs: nothing can do better, so it stays there.
    assert load_params(tmp_path / "out" / "m1.json").values == truth.values
    assert json.loads((tmp_path / "s.json").read_text())["models"]["m1"]["train_mae"] < 1e-9
