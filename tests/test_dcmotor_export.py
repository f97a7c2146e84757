"""A servo exported as MuJoCo's own ``<dcmotor>`` and run in plain MuJoCo: the firmware and motor
exactly (no friction: frictionsim's semi-implicit rollout to 1e-8 rad), M1 to what was
measured, the current law, and ``export-mjcf --target dcmotor`` with the closest native M1 of
an M6 file and its fidelity on the logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.logs import load_log  # noqa: E402
from frictionsim.params import ParameterSet, load_params  # noqa: E402
from frictionsim.solvers.mjcf_export import (  # noqa: E402
    NotExportable,
    dcmotor_attributes,
    export_dcmotor,
    export_m1,
)
from frictionsim.solvers.native_mujoco import dcmotor_rollout  # noqa: E402
from frictionsim.solvers.rollouts import simulate  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
XL330 = DATA / "xl330"


@pytest.fixture(scope="module")
def logs():
    if not XL330.is_dir():
        pytest.skip(f"XL330 logs not found at {XL330}")
    return [load_log(p) for p in sorted((XL330 / "processed").glob("*.json"))]


def test_the_export_is_a_model_mujoco_loads_as_it_is():
    params = ParameterSet.defaults("m1", "xl330").with_scheme("semi_implicit")
    model = mujoco.MjModel.from_xml_string(export_dcmotor(params, "elbow", kp=400))
    assert model.nu == 1 and model.actuator_dyntype[0] == mujoco.mjtDyn.mjDYN_DCMOTOR
    assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, 0) == "elbow"
    assert model.dof_armature[0] == pytest.approx(params.values["armature"])


def test_without_friction_the_export_is_the_firmware_and_motor_exactly(logs):
    """Every XL330 log, torque-off stretches included (the actuator group disabled)."""
    params = ParameterSet("m1", "xl330", {"friction_base": 0.0, "friction_viscous": 0.0,
                                          "q_offset": 0.02}).with_scheme("semi_implicit")
    assert any(np.any(log.column("torque_enable") < 0.5) for log in logs)
    for log in logs:
        native = dcmotor_rollout(params, log)
        ours = simulate(log, params)
        assert np.abs(native.q - ours.q).max() < 1e-8, log.name


def test_m1_in_plain_mujoco_lands_within_what_was_measured(logs):
    """The published M1 on the 12 logs: the friction row is MuJoCo's soft constraint, so not
    exact; measured 0.019 mrad mean (0.076 on the worst log)."""
    params = load_params(XL330 / "params" / "m1.json").with_scheme("semi_implicit")
    gaps = [np.abs(dcmotor_rollout(params, log).q - simulate(log, params).q).mean()
            for log in logs]
    assert np.mean(gaps) < 5e-5 and max(gaps) < 2e-4
    assert np.mean(gaps) > 0  # the soft friction row is not frictionsim's clip


def test_the_current_law_maps_onto_the_controller_and_its_saturation():
    params = ParameterSet.defaults("m1", "erob80_100")
    attrs = dcmotor_attributes(params, kp=50.0, damping=2.0)
    kt = params.values["kt"]
    kp, ki, kd, slew, imax, vmax = map(float, attrs["controller"].split())
    assert kp == pytest.approx(kt * 50) and kd == pytest.approx(kt * 2.0 * np.sqrt(50))
    assert vmax == 48 and float(attrs["saturation"].split()[1]) == 12


def test_the_sts3215_limiter_is_the_controllers_slew_rate():
    params = ParameterSet.defaults("m1", "sts3215")
    attrs = dcmotor_attributes(params)
    assert float(attrs["controller"].split()[3]) == pytest.approx(
        params.values["max_velocity"])
    with_limit = ParameterSet("m1", "xl330", {}, extensions=("current_limit",))
    assert float(dcmotor_attributes(with_limit)["saturation"].split()[1]) == 1.75


@pytest.mark.parametrize("name, value", [("kt", -1.0), ("armature", -0.01),
                                         ("friction_base", -0.1), ("friction_viscous", -0.2),
                                         ("error_gain_ratio", -1.0), ("max_velocity", -1.0)])
def test_a_value_no_mujoco_attribute_takes_is_refused_by_name(name, value):
    # frictionsim simulates it (with a warning); MuJoCo would refuse a reversed force range or
    # negate the gain, so both targets name the parameter instead of writing such a file
    params = ParameterSet.defaults("m1", "sts3215_12v").with_values(**{name: value})
    for export in (export_m1, export_dcmotor):
        with pytest.raises(NotExportable, match=f"{name} = {value:g} has no MuJoCo attribute"):
            export(params, kp=400)


@pytest.mark.parametrize("argument, message", [({"kp": 1e30}, r"kp = 1e\+30"),
                                               ({"vin": 1e30}, r"vin = 1e\+30 V"),
                                               ({"timestep": 1e-300}, "timestep 1e-300 s")])
def test_arguments_beyond_what_a_log_may_hold_are_refused(argument, message):
    params = ParameterSet.defaults("m1", "xl330")
    for export in (export_m1, export_dcmotor):
        with pytest.raises(ConfigurationError, match=message):
            export(params, **{"kp": 400, **argument})


@pytest.mark.parametrize("extension, values, said", [
    ("backlash", {"backlash": 0.002, "armature": 0.001}, "backlash (2 mrad gap) is dropped"),
    ("ripple", {"ripple_amplitude": 0.002}, "position ripple of the friction is dropped"),
    ("latency", {"latency_steps": 2.0}, "latency (2 control periods) is dropped"),
    ("current_limit", {"max_current_limit": 1.5}, "current limit (1.5 A) is dropped"),
    ("supply", {}, "the supply follows no log"),
])
def test_both_targets_say_what_of_an_extension_they_do_not_carry(extension, values, said):
    params = ParameterSet("m1", "xl330", values, extensions=(extension,))
    snippet = export_m1(params, kp=400)
    header = snippet[:snippet.index("-->")]
    assert "Not carried: " in header and said in header
    assert "Not carried:" in export_dcmotor(params, kp=400)
    assert "Not carried" not in export_m1(ParameterSet.defaults("m1", "xl330"), kp=400)


def test_m2_to_m6_need_logs_to_be_exported(tmp_path, capsys):
    with pytest.raises(NotExportable, match="closest M1"):
        export_dcmotor(ParameterSet.defaults("m6", "xl330"))
    path = tmp_path / "m6.json"
    path.write_text(json.dumps(ParameterSet.defaults("m6", "xl330").to_dict()))
    assert main(["export-mjcf", "--params", str(path), "--target", "dcmotor"]) == 1
    assert "name --logs" in capsys.readouterr().err


def test_the_command_exports_the_closest_native_model_and_its_fidelity(logs, tmp_path, capsys):
    few = [str(XL330 / "processed" / log.name) for log in logs[:4]]
    out, fid = tmp_path / "servo.xml", tmp_path / "fidelity.json"
    params = ParameterSet.defaults("m6", "xl330").with_extensions(("current_limit",))
    path = tmp_path / "m6.json"
    path.write_text(json.dumps(params.to_dict()))
    assert main(["export-mjcf", "--params", str(path), "--target", "dcmotor", "--logs", *few,
                 "--budget", "60", "--timestep", "0.005", "--out", str(out), "--json", str(fid),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    reported = json.loads(fid.read_text())
    assert set(reported["frictionsim"]["per_log"]) == {log.name for log in logs[:4]}
    # with the current limit: an M1 with MuJoCo's saturation and one without, both measured
    candidates = reported["native"]
    assert len(candidates) == 2 and sum("(exported)" in name for name in candidates) == 1
    exported = next(c for name, c in candidates.items() if "(exported)" in name)
    assert exported["mean_mae"] == min(c["mean_mae"] for c in candidates.values())
    shown = float(re.search(r"\(exported\): ([\d.]+) mrad", text).group(1))
    assert shown == pytest.approx(1e3 * exported["mean_mae"], abs=0.006)
    xml = out.read_text()
    model = mujoco.MjModel.from_xml_string(xml)  # the document loads as written
    assert model.nu == 1 and "Fidelity on 4 logs" in xml
    # the document is the exported candidate: its rollout gives the MAE reported
    with_limit = bool(np.any(model.actuator_forcerange[0] != 0))
    assert with_limit == ("m1 refitted with saturation (exported)" in candidates)
