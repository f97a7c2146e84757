"""The frictionsim command line: outputs, JSON formats, exit codes and error messages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frictionsim.experiments.runner.cli import main

XL330 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330"


def need_shared() -> Path:
    if not XL330.is_dir():
        pytest.skip(f"shared data not found at {XL330} (CI always has it)")
    return XL330


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "COMMAND" in capsys.readouterr().out


def test_run_lists_every_experiment(capsys):
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    for name in ("process", "simulate", "compare", "bench", "demo"):
        assert name in out


@pytest.mark.parametrize("command", ["process", "simulate", "compare", "bench", "demo"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert len(capsys.readouterr().out) > 200
    with pytest.raises(SystemExit) as e:
        main(["run", command, "--help"])
    assert e.value.code == 0


def _every_command_line() -> list[list[str]]:
    from frictionsim.experiments.runner.registry import COMMANDS

    lines = [[c.name] if c.subcommand else ["run", c.name] for c in COMMANDS]
    return lines + [["robot", action] for action in ("simulate", "identify", "export-mjcf",
                                                     "synthesize")]


@pytest.mark.parametrize("argv", _every_command_line(), ids=" ".join)
def test_every_help_text_reads_as_written(argv, capsys):
    """argparse expands ``%`` in an option's help but not in a description: a ``%%`` left
    in one shows, and a lone ``%`` in an option's help is an error."""
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert len(out) > 200 and "%%" not in out and "%(" not in out


def test_process_writes_every_log(tmp_path):
    data = need_shared()
    assert main(["process", str(data / "raw"), str(tmp_path / "out")]) == 0
    written = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert written == sorted(p.name for p in (data / "raw").glob("*.json"))
    ours = json.loads((tmp_path / "out" / written[0]).read_text())
    theirs = json.loads((data / "processed" / written[0]).read_text())
    assert len(ours["entries"]) == len(theirs["entries"])
    assert ours["dt"] == theirs["dt"] == 0.005


def test_process_reports_bad_log_and_fails(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "bad.json").write_text(json.dumps({"mass": 1, "length": 0.1, "entries": []}))
    assert main(["process", str(raw), str(tmp_path / "out")]) == 1
    assert "kp" in capsys.readouterr().err


def test_process_rejects_non_positive_dt(tmp_path, capsys):
    data = need_shared()
    assert main(["process", str(data / "raw"), str(tmp_path), "--dt", "-1"]) == 1
    assert "--dt" in capsys.readouterr().err


def test_compare_json_reproduces_reference(tmp_path, capsys):
    data = need_shared()
    out = tmp_path / "cmp.json"
    plot = tmp_path / "cmp.png"
    rc = main(["compare", "--params", str(data / "params" / "m1.json"), str(data / "params" / "m6.json"),
               "--logs", str(data / "processed"), "--json", str(out), "--plot", str(plot)])
    assert rc == 0
    result = json.loads(out.read_text())
    reference = json.loads((data / "reference.json").read_text())["logs"]
    assert set(result) == {"m1", "m6"}
    for label, r in result.items():
        assert set(r) == {"mean", "std", "per_log"}
        assert set(r["per_log"]) == set(reference)
        for log, mae in r["per_log"].items():
            assert math.isclose(mae, reference[log]["mae_rad"][label], rel_tol=1e-9)
        maes = list(r["per_log"].values())
        assert math.isclose(r["mean"], sum(maes) / len(maes), rel_tol=1e-12)
    assert plot.stat().st_size > 10_000
    assert "mrad" in capsys.readouterr().out


def test_simulate_prints_mae_and_plots(tmp_path, capsys):
    data = need_shared()
    log = data / "processed" / "2026-01-15_10h28m42.json"
    out = tmp_path / "sim.json"
    rc = main(["simulate", "--params", str(data / "params" / "m6.json"), str(log),
               "--plot", str(tmp_path / "sim.png"), "--json", str(out)])
    assert rc == 0
    reference = json.loads((data / "reference.json").read_text())["logs"][log.name]["mae_rad"]["m6"]
    assert math.isclose(json.loads(out.read_text())["per_log"][log.name], reference, rel_tol=1e-9)
    assert f"{1e3 * reference:.2f}" in capsys.readouterr().out
    assert (tmp_path / "sim.png").stat().st_size > 10_000


def test_simulate_refuses_logs_of_another_motor_unless_asked(tmp_path, capsys):
    data = need_shared()
    params = json.loads((data / "params" / "m1.json").read_text())
    params.pop("kt"), params.pop("R"), params.pop("armature")
    params["actuator"] = "mx64"
    (tmp_path / "mx.json").write_text(json.dumps(params))
    log = data / "processed" / "2026-01-15_10h28m42.json"
    # refused unless asked for on purpose, then said
    assert main(["simulate", "--params", str(tmp_path / "mx.json"), str(log)]) == 1
    assert "recorded with motor 'xl330'" in capsys.readouterr().err
    assert main(["simulate", "--params", str(tmp_path / "mx.json"), str(log),
                 "--other-motor"]) == 0
    assert "warning" in capsys.readouterr().err


def test_simulate_unknown_key_names_it(tmp_path, capsys):
    data = need_shared()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": "m1", "actuator": "xl330", "friction_bse": 0.1}))
    rc = main(["simulate", "--params", str(bad), str(data / "processed")])
    assert rc == 1
    err = capsys.readouterr().err
    assert "friction_bse" in err and "bad.json" in err


def test_simulate_raw_log_is_refused(capsys):
    data = need_shared()
    rc = main(["simulate", "--params", str(data / "params" / "m1.json"),
               str(data / "raw" / "2026-01-15_10h28m42.json")])
    assert rc == 1
    assert "dt" in capsys.readouterr().err


def test_missing_log_path_is_an_error(tmp_path, capsys):
    data = need_shared()
    rc = main(["compare", "--params", str(data / "params"), "--logs", str(tmp_path / "nope")])
    assert rc == 1
    assert "nope" in capsys.readouterr().err


def test_bench_json_format(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "--models", "m1", "m6", "--repeats", "1", "--candidates", "2",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) == {"m1", "m6"}
    for r in result.values():
        assert r["ns_per_step"] > 0 and r["batched_ns_per_log_step"] > 0


def test_demo_identifies_and_validates(tmp_path):
    rc = main(["demo", "--out", str(tmp_path), "--budget", "300", "--models", "m1", "m4"])
    assert rc == 0
    assert len(list((tmp_path / "raw").glob("*.json"))) == 24
    assert len(list((tmp_path / "processed").glob("*.json"))) == 24
    result = json.loads((tmp_path / "demo.json").read_text())
    validation = result["validation"]
    assert set(validation) == {"ground_truth_m6", "naive_m1", "identified_m1", "identified_m4"}
    # Held-out gain: 8 logs; the ground truth and the fits beat the naive Coulomb set.
    assert all(len(r["per_log"]) == 8 and "kp64" in next(iter(r["per_log"]))
               for r in validation.values())
    assert validation["ground_truth_m6"]["mean"] < 0.5 * validation["naive_m1"]["mean"]
    assert validation["identified_m4"]["mean"] < validation["naive_m1"]["mean"]
    assert set(result["parameter_error"]["m4"]) >= {"kt", "R", "armature"}
    for name in ("validation.png", "simulate_ground_truth_m6.png", "simulate_naive_m1.png",
                 "identification/report.md", "identification/m4.json"):
        assert (tmp_path / name).stat().st_size > 100


def test_bench_scale_reports_every_size_and_kernel(tmp_path, capsys):
    import numba

    out = tmp_path / "scale.json"
    try:
        assert main(["bench", "--models", "m1", "--repeats", "1", "--candidates", "4",
                     "--scale", "3", "2", "--budget", "40", "--workers", "1", "--no-progress",
                     "--json", str(out)]) == 0
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    rows = json.loads(out.read_text())["scale"]
    assert [r["logs"] for r in rows] == [2, 3]  # increasing sizes
    for r in rows:
        assert r["steps"] == r["logs"] * 1200 and r["load_peak_mb"] > 0
        entry = r["models"]["m1"]
        assert entry["lockstep_ns_per_log_step"] > 0 and entry["scalar_ns_per_log_step"] > 0
        assert entry["rollout_seconds"] <= entry["identify_seconds"]
    assert "identify (s)" in capsys.readouterr().out


def test_workers_outside_the_thread_pool_are_refused(capsys):
    assert main(["bench", "--models", "m1", "--workers", "0"]) != 0
    assert "--workers must be 1" in capsys.readouterr().err


def test_compare_takes_an_identify_output_folder_for_its_fits(tmp_path, capsys):
    data = need_shared()
    folder = tmp_path / "fit"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                 str(data / "processed"), "--budget", "40", "--out", str(folder),
                 "--no-progress"]) == 0
    assert (folder / "report.json").exists()
    capsys.readouterr()
    assert main(["compare", "--params", str(folder), str(data / "params" / "m6.json"),
                 "--logs", str(data / "processed"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 parameter files" in out and "report" not in out


def test_a_warning_about_many_logs_is_one_line(capsys):
    data = need_shared()
    mx64 = data.parent / "params" / "mx64" / "m1.json"
    assert main(["simulate", "--params", str(mx64), str(data / "processed"),
                 "--other-motor"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "recorded with" in line]
    assert len(warnings) == 1 and "12 logs" in warnings[0]
