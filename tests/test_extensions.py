"""docs/model.md §9's electrical extensions: the laws by hand, every solver on them, parameter files,
recovery by identification, and cross-validation by gain."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from frictionsim import layout, schema
from frictionsim.actuator_laws import motor_current, motor_torque
from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.runner.arguments import EXTENSIONS as CLI_EXTENSIONS
from frictionsim.experiments.runner.cli import main
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import Log, load_logs, process, save_log
from frictionsim.params import ParameterFileError, ParameterSet, from_dict, load_params
from frictionsim.solvers.fixed_step import rollout
from frictionsim.solvers.one_joint import simulate_log_events
from frictionsim.solvers.rollouts import simulate

TRUTH = ParameterSet("m1", "xl330", {"q_offset": 0.0, "kt": 0.45, "R": 3.2, "armature": 0.002,
                                     "friction_base": 0.03, "friction_viscous": 0.01})


def test_the_command_line_knows_the_same_extensions():
    assert tuple(schema.EXTENSIONS) == CLI_EXTENSIONS


def test_current_limit_saturates_the_motor_current_smoothly():
    theta = TRUTH.with_extensions(["current_limit"]).with_values(max_current_limit=1.2).theta()
    off = TRUTH.theta()
    kt, r = 0.45, 3.2
    for u, v in [(0.1, 0.0), (5.0, 0.3), (-7.0, -1.0), (2.0, 4.0)]:
        i = (u - kt * v) / r
        assert motor_current(u, v, theta) == pytest.approx(1.2 * math.tanh(i / 1.2), rel=1e-14)
        assert motor_torque(u, 1.0, v, theta) == pytest.approx(kt * 1.2 * math.tanh(i / 1.2),
                                                               rel=1e-14)
        assert motor_torque(u, 0.0, v, theta) == 0.0
        assert motor_torque(u, 1.0, v, off) == kt * u / r - kt**2 * v / r  # off: docs/model.md §3 exactly
    # small currents: the law without a limit, to second order
    assert motor_torque(0.01, 1.0, 0.0, theta) == pytest.approx(kt * 0.01 / r, rel=1e-4)
    assert abs(motor_torque(1e3, 1.0, 0.0, theta)) <= kt * 1.2


def _hand_rollout(goal, supply, q0, theta, bench, lag, vin_of):
    """docs/model.md §5 by hand, with the firmware acting on the state of ``lag`` periods earlier and
    the supply ``vin_of(k)``."""
    from frictionsim.actuator_laws import firmware_law
    from frictionsim.solvers.fixed_step import step

    q, v, smooth = q0, 0.0, q0
    states = []
    out = []
    for k in range(len(goal)):
        out.append(q)
        states.append((q, v))
        qm, vm = states[max(0, k - lag)]
        u, smooth, _, _ = firmware_law(goal[k], qm, vm, smooth, 0.0, math.nan, vin_of(k), theta,
                                       bench)
        q, v = step(q, v, u, 1.0, bench[layout.DT], theta, bench)
    return np.array(out)


@pytest.mark.parametrize("lag", [0, 1, 3])
def test_latency_and_supply_in_the_rollout_match_a_hand_loop(lag):
    params = TRUTH.with_extensions(["latency", "supply"]).with_values(latency_steps=float(lag))
    theta = params.theta()
    bench = layout.bench_vector(mass=0.5, length=0.1, kp=400, vin=7.4, dt=0.005)
    n = 600
    goal = 0.8 * np.sin(np.linspace(0, 6, n))
    supply = 7.4 + 1.5 * np.sin(np.linspace(0, 40, n))
    q, v = np.empty(n), np.empty(n)
    rollout(goal, np.ones(n), supply, 0.1, 0.0, theta, bench, 0.005, q, v)
    expected = _hand_rollout(goal, supply, 0.1, theta, bench, lag, lambda k: supply[k])
    np.testing.assert_allclose(q, expected, rtol=0, atol=1e-12)
    # the same log with the extensions off ignores the supply column and the history
    plain = np.empty(n)
    rollout(goal, np.ones(n), supply, 0.1, 0.0, TRUTH.theta(), bench, 0.005, plain, v)
    assert np.abs(plain - q).max() > 1e-3
    event = simulate_log_events(goal, np.ones(n), 0.1, 0.0, theta, bench, 0.005, supply=supply)
    # the exact solver sees the same extensions: it lands near this rollout, not the plain one
    assert np.abs(event.q - q).mean() < 0.5 * np.abs(event.q - plain).mean()


def test_a_parameter_file_needs_its_extensions_enabled(tmp_path):
    data = {**TRUTH.to_dict(), "max_current_limit": 1.1}
    with pytest.raises(ParameterFileError, match="current_limit.*--with current_limit"):
        from_dict(data, "p.json", extensions=())
    params = from_dict(data, "p.json", extensions=("current_limit",))
    assert params.values["max_current_limit"] == 1.1
    assert from_dict(data, "p.json").extensions == ("current_limit",)  # inferred by a library
    with pytest.raises(ParameterFileError, match="latency_steps"):
        from_dict({**TRUTH.to_dict(), "latency_steps": 1.5}, "p.json", ("latency",))
    defaults = TRUTH.with_extensions(["supply", "current_limit"])
    assert defaults.values["max_current_limit"] == 1.75  # the XL330's declared limit
    assert defaults.values["supply_emf"] == schema.get_actuator("xl330").vin
    assert TRUTH.theta()[layout.SUPPLY:layout.LATENCY + 1].tolist() == [0.0] * 5  # off by default


def test_simulate_refuses_extension_keys_without_with(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**TRUTH.to_dict(), "max_current_limit": 1.1}))
    log = tmp_path / "log.json"
    raw = record(TRUTH, BenchSetup(0.5, 0.1, 400), "sin_sin", SensorModel.ideal(), duration=1.0)
    save_log(log, process(raw))
    assert main(["simulate", "--params", str(path), str(log)]) == 1
    assert "--with current_limit" in capsys.readouterr().err
    assert main(["simulate", "--params", str(path), str(log), "--with", "current_limit"]) == 0


def _logs(truth: ParameterSet, tmp: Path, gains=(200, 800)) -> list[Log]:
    for kp in gains:
        for trajectory in ("sin_sin", "up_and_down", "lift_and_drop"):
            raw = record(truth, BenchSetup(0.5, 0.12, kp), trajectory, SensorModel.ideal(),
                         duration=4.0)
            path = tmp / f"{trajectory}_{kp}.json"
            save_log(path, process(raw))
    return load_logs([tmp])


def test_identify_recovers_a_current_limit_the_plain_model_cannot_fit(tmp_path):
    truth = TRUTH.with_extensions(["current_limit"]).with_values(max_current_limit=0.6)
    logs = _logs(truth, tmp_path / "logs")
    assert simulate(logs[0], truth).mae < 1e-9  # ideal sensors: the logs are the model
    for extra, out in (([], "plain"), (["--with", "current_limit"], "limited")):
        assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                     str(tmp_path / "logs"), "--budget", "3000", "--out", str(tmp_path / out),
                     "--fix", "q_offset=0", "--no-progress", *extra]) == 0
    plain = json.loads((tmp_path / "plain" / "report.json").read_text())["models"]["m1"]
    limited = json.loads((tmp_path / "limited" / "report.json").read_text())["models"]["m1"]
    fitted = load_params(tmp_path / "limited" / "m1.json")
    assert fitted.values["max_current_limit"] == pytest.approx(0.6, rel=0.1)
    assert limited["train_mae"] < 0.5 * plain["train_mae"]


def test_the_virtual_bench_logs_a_sagging_supply_that_identify_uses(tmp_path):
    truth = TRUTH.with_extensions(["supply"]).with_values(supply_emf=7.4, supply_resistance=1.5)
    raw = record(truth, BenchSetup(0.5, 0.12, 800), "up_and_down", SensorModel.ideal(),
                 duration=3.0)
    volts = np.array([e["input_volts"] for e in raw.entries])
    assert volts.min() < 7.0 and volts.max() <= 7.4  # it sags under load, never rises
    log = process(raw)
    log.path = tmp_path / "sag.json"
    with_supply = simulate(log, truth)
    assert with_supply.mae < 1e-3  # the logged supply reproduces the recording
    assert simulate(log, TRUTH).mae > 2 * with_supply.mae


def test_cross_validation_by_gain_reports_every_gain_and_the_mean(tmp_path):
    _logs(TRUTH, tmp_path / "logs", gains=(200, 400, 800))
    out, summary = tmp_path / "out", tmp_path / "cv.json"
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                 str(tmp_path / "logs"), "--budget", "200", "--cross-validate", "kp", "--out",
                 str(out), "--json", str(summary), "--no-progress"]) == 0
    cv = json.loads(summary.read_text())["cross_validation"]
    per_gain = cv["m1"]["per_gain"]
    assert sorted(per_gain, key=float) == ["200", "400", "800"]
    assert cv["m1"]["mean_validation_mae"] == pytest.approx(
        np.mean([g["validation_mae"] for g in per_gain.values()]))
    assert json.loads((out / "report.json").read_text())["cross_validation"] == cv
    assert "Cross-validation by gain" in (out / "report.md").read_text()
    assert (out / "cross_validation.png").stat().st_size > 0
    for g in ("200", "400", "800"):
        fold = load_params(out / "cross_validation" / f"kp_{g}" / "m1.json")
        assert fold.model == "m1"
    # a second run into the same folder is refused, --overwrite replaces folds and all
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                 str(tmp_path / "logs"), "--budget", "50", "--cross-validate", "kp", "--out",
                 str(out), "--no-progress"]) == 1
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                 str(tmp_path / "logs"), "--budget", "50", "--out", str(out), "--overwrite",
                 "--no-progress"]) == 0
    assert not (out / "cross_validation").exists()


def test_one_gain_cannot_be_cross_validated(tmp_path, capsys):
    _logs(TRUTH, tmp_path / "logs", gains=(400,))
    assert main(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                 str(tmp_path / "logs"), "--cross-validate", "kp", "--out",
                 str(tmp_path / "out"), "--no-progress"]) == 1
    assert "at least two firmware gains" in capsys.readouterr().err


def test_a_file_without_an_extensions_parameters_says_it_uses_the_defaults():
    from frictionsim.plausibility import PlausibilityWarning

    data = {"model": "m1", "actuator": "mx64", "friction_base": 0.05}
    with pytest.warns(PlausibilityWarning, match=r"m1\.json: no max_current_limit in the file; "
                                                 r"--with current_limit uses the default "
                                                 r"\(max_current_limit = 2 A\)"):
        params = from_dict(data, "m1.json", ("current_limit",))
    assert params.values["max_current_limit"] == schema.CURRENT_LIMIT_FALLBACK  # mx64: none
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PlausibilityWarning)
        from_dict({**data, "max_current_limit": 1.5}, "m1.json", ("current_limit",))
        from_dict(data, "m1.json")  # no --with: nothing switched on, nothing to say
