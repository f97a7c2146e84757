"""What the command line refuses, and how: one test per class of failure a probe found.

Each asserts that the message names the culprit and that inputs and earlier results are
unchanged, whatever the example of the class.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.cli import main
from frictionsim.logs import LogError, load_log, load_logs
from frictionsim.params import ParameterFileError, load_params

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
XL330 = DATA / "xl330"
pytestmark = pytest.mark.skipif(not XL330.is_dir(), reason="shared data not found")
LOG = XL330 / "processed" / "2026-01-15_10h28m42.json"


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()}


@pytest.fixture()
def work(tmp_path):
    shutil.copy(LOG, tmp_path / "l.json")
    shutil.copy(XL330 / "params" / "m6.json", tmp_path / "m6.json")
    shutil.copy(XL330 / "params" / "m1.json", tmp_path / "m1.json")
    return tmp_path


def run_refused(argv: list[str], culprit: str, capsys) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert culprit in err and "Traceback" not in err, err
    return err


# ---------------------------------------------------------------------------- data lost

@pytest.mark.parametrize("argv, culprit", [
    (["simulate", "--params", "{w}/m6.json", "{w}/l.json", "--json", "{w}/l.json"], "--json"),
    (["simulate", "--params", "{w}/m6.json", "{w}/l.json", "--json", "{w}/link.json"], "--json"),
    (["export-mjcf", "--params", "{w}/m1.json", "--out", "{w}/m1.json"], "--out"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json", "--init",
      "{w}/m1.json", "--json", "{w}/m1.json", "--budget", "20", "--out", "{w}/fit"], "--json"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json", "--init",
      "{w}/m1.json", "--out", "{w}", "--budget", "20"], "--out"),
    (["simulate", "--params", "{w}/m6.json", "{w}/l.json", "--json", "{w}/dev"], "symbolic link"),
])
def test_an_output_never_replaces_an_input_or_a_special_file(argv, culprit, work, capsys):
    (work / "link.json").symlink_to(work / "l.json")
    (work / "dev").symlink_to("/dev/null")
    before = digest(work)
    run_refused([a.format(w=work) for a in argv] + ["--overwrite"], culprit, capsys)
    assert digest(work) == before
    assert (work / "dev").is_symlink() and os.readlink(work / "dev") == "/dev/null"


# ------------------------------------------------------------------------ silently wrong

def edited_log(work: Path, **changes) -> Path:
    data = json.loads((work / "l.json").read_text())
    for key, value in changes.items():
        if key.startswith("entry_"):
            data["entries"][3][key[6:]] = value
        else:
            data[key] = value
    path = work / "edited.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("value", [7, 0.5, -1])
def test_a_torque_enable_that_is_not_a_flag_is_refused(value, work):
    with pytest.raises(LogError, match=r"entries\[3\]\.torque_enable"):
        load_log(edited_log(work, entry_torque_enable=value))


@pytest.mark.parametrize("volts", [0.0, -7.4])
def test_the_supply_extension_refuses_a_supply_that_is_not_positive(volts, work, capsys):
    path = edited_log(work, entry_input_volts=volts)
    run_refused(["simulate", "--params", str(work / "m1.json"), str(path), "--with", "supply"],
                "input_volts", capsys)


def test_a_key_written_twice_is_refused(work):
    (work / "twice.json").write_text('{"model": "m1", "actuator": "xl330", "kt": 0.36, '
                                     '"kt": 99}')
    with pytest.raises(ParameterFileError, match="kt is written twice"):
        load_params(work / "twice.json")


def test_two_spellings_of_the_arm_mass_that_disagree_are_refused(work):
    with pytest.raises(LogError, match="arm_mass"):
        load_log(edited_log(work, arm_mass=0.05, **{"arm-mass": 0.2}))
    assert load_log(edited_log(work, arm_mass=0.05, **{"arm-mass": 0.05})).arm_mass == 0.05


@pytest.mark.parametrize("edit, culprit", [
    ("error_gain = 1e308", "error_gain"),
    ("max_pwm = 1e-300", "max_pwm"),
    ("Fmax = 1e308", "Fmax"),
    ("friction_base = { min = -0.1, max = 0.2 }", "friction_base.min"),
    ("Fmax = 1" + "0" * 400, "Fmax"),
])
def test_an_absurd_actuator_declaration_is_refused(edit, culprit, tmp_path):
    from frictionsim.actuator_files import ActuatorFileError, load_actuator_file

    key = edit.split(" =")[0]
    section = "[bounds]\n" if key in ("Fmax", "friction_base") else ""
    text = ('name = "odd"\nlaw = "voltage"\nvin = 12.0\nerror_gain = 0.16\nmax_pwm = 0.97\n'
            '[parameters]\nkt = { default = 1.0, min = 0.05, max = 5.0 }\n'
            'R = { default = 5.0, min = 0.1, max = 20.0 }\n'
            'armature = { default = 0.005, min = 1e-5, max = 0.1 }\n')
    if section:
        text += section + edit + "\n"
    else:
        text = text.replace(f"{key} = " + {"error_gain": "0.16", "max_pwm": "0.97"}[key], edit)
    (tmp_path / "odd.toml").write_text(text)
    with pytest.raises(ActuatorFileError, match=culprit):
        load_actuator_file(tmp_path / "odd.toml")


def test_a_fixed_parameter_outside_its_bounds_is_refused(work, capsys):
    run_refused(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(work / "l.json"),
                 "--fix", "kt=50", "--budget", "20", "--out", str(work / "fit")], "kt=50", capsys)
    assert not (work / "fit").exists()


@pytest.mark.parametrize("flags, culprit", [
    (["--kp", "nan"], "kp"), (["--kp", "-5"], "kp"), (["--vin", "0"], "vin"),
    (["--joint", ""], "joint"), (["--joint", 'a"b'], "joint"), (["--timestep", "0"], "timestep"),
])
def test_export_mjcf_refuses_what_would_make_a_wrong_or_invalid_model(flags, culprit, work,
                                                                      capsys):
    run_refused(["export-mjcf", "--params", str(work / "m1.json"), *flags], culprit, capsys)


def test_a_source_path_with_two_dashes_stays_a_valid_comment(work, capsys):
    mujoco = pytest.importorskip("mujoco")
    shutil.copy(work / "m1.json", work / "a--b.json")
    assert main(["export-mjcf", "--params", str(work / "a--b.json")]) == 0
    snippet = capsys.readouterr().out
    body = snippet.replace("<!--", "").split("-->", 1)[0]
    assert "--" not in body
    mujoco.MjSpec.from_string(f"<mujoco>{snippet.split('-->', 1)[0]}--></mujoco>")


def test_logs_of_the_same_name_in_two_folders_stay_two_entries(work, capsys):
    for name in ("a", "b"):
        (work / name).mkdir()
        shutil.copy(XL330 / "processed" / ("2026-01-15_10h28m42.json" if name == "a" else
                                           "2026-01-15_10h28m49.json"), work / name / "run.json")
    out = work / "sim.json"
    assert main(["simulate", "--params", str(work / "m6.json"), str(work / "a"), str(work / "b"),
                 "--json", str(out)]) == 0
    per_log = json.loads(out.read_text())["per_log"]
    assert len(per_log) == 2 and len(set(per_log.values())) == 2
    assert all(k.endswith("/run.json") for k in per_log)
    with pytest.raises(LogError, match="named twice"):
        load_logs([work / "a", work / "a" / "run.json"])


@pytest.mark.parametrize("how", ["copy", "hard link"])
def test_a_validation_log_that_is_a_training_log_under_another_name_is_refused(how, work,
                                                                               capsys):
    (work / "val").mkdir()
    if how == "copy":
        shutil.copy(work / "l.json", work / "val" / "other.json")
    else:
        os.link(work / "l.json", work / "val" / "other.json")
    run_refused(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(work / "l.json"),
                 "--validation", str(work / "val"), "--budget", "20", "--out",
                 str(work / "fit")], "is the training log", capsys)


@pytest.mark.parametrize("argv, culprit", [
    (["simulate", "--params", "{w}/m6.json", "{w}/l.json", "--friction", "frictionloss"],
     "--friction"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json", "--dask", "",
      "--out", "{w}/fit"], "--dask"),
    (["virtual-servo", "--params", "{w}/m1.json", "--physics-dt", "1e-9"], "physics_dt"),
    (["record", "--motor", "xl330", "--port", "/dev/null", "--mass", "0.3", "--length", "0.1",
      "--kp", "400", "--trajectory", "sin_sin", "--logdir", "{w}/rec", "--baud", "0"], "--baud"),
    (["record", "--motor", "xl330", "--port", "/dev/null", "--mass", "0.3", "--length", "0.1",
      "--kp", "400", "--trajectory", "sin_sin", "--logdir", "{w}/rec", "--rate", "1e-300"],
     "--rate"),
    (["run", "drive-backdrive", "--params", "{w}/m1.json", "--points", "100000000"], "--points"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json", "--fix",
      "backlash=0.01", "--out", "{w}/fit"], "on xl330 without --with backlash"),
    # the learned actuators' options without a learned actuator to train
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json",
      "--rollout-epochs", "2", "--out", "{w}/fit"], "--rollout-epochs trains a learned actuator"),
    (["identify", "--actuator", "xl330", "--model", "m1", "net", "--logs", "{w}/l.json",
      "--hybrid-budget", "50", "--out", "{w}/fit"], "--hybrid-budget trains a learned actuator"),
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--rollout-epochs", "0", "--rollout-horizon", "50", "--out", "{w}/fit"],
     "--rollout-epochs 0 turns off"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json",
      "--max-epochs", "200", "--out", "{w}/fit"], "--max-epochs trains a learned actuator"),
    (["identify", "--actuator", "xl330", "--model", "m6", "hybrid", "--logs", "{w}/l.json",
      "--hybrid-budget", "20", "--rollout-epochs", "1", "--out", "{w}/fit"],
     "which its training through the rollout (--rollout-epochs 1) replaces"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "m1",
      "--max-epochs", "3", "--out", "{w}/fit"], "--max-epochs trains a learned actuator"),
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--budget", "50", "--out", "{w}/fit"], "--budget is the physical models'"),
    (["identify", "--actuator", "xl330", "--model", "m6", "hybrid", "--logs", "{w}/l.json",
      "--with", "backlash", "--out", "{w}/fit"], "give --rollout-epochs 0"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "m6",
      "hybrid", "--with", "backlash", "--out", "{w}/fit"], "give --rollout-epochs 0"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--budget", "50", "--out", "{w}/fit"], "--budget is the physical models'"),
    # the physical models' polish, search windows and joint scales without a physical model
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--no-polish", "--out", "{w}/fit"], "--no-polish acts on the physical models"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--joint-scales", "--out", "{w}/fit"], "--joint-scales acts on the physical models"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--search-stride", "16", "--out", "{w}/fit"], "--search-stride acts on the physical models"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--exact-dynamics", "--out", "{w}/fit"], "--exact-dynamics acts on the physical models"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--uncertainty", "3", "--out", "{w}/fit"], "--uncertainty acts on the physical models"),
    # a figure's span without the figure, the scale runs' budget without them
    (["simulate", "--params", "{w}/mx64_m6.json", "{w}/l.json", "--plot-span", "0", "1"],
     "--plot-span shapes the --plot figure, and no --plot is given"),
    (["bench", "--budget", "10"], "--budget is the --scale identifications' evaluations"),
    # the native refit's budget and fidelity without the logs it runs on
    (["export-mjcf", "--params", "{w}/mx64_m6.json", "--budget", "20"],
     "--budget acts on the fit and fidelity of --logs"),
    (["export-mjcf", "--target", "dcmotor", "--params", "{w}/mx64_m6.json", "--json",
      "{w}/f.json"], "--json acts on the fit and fidelity of --logs"),
    # worlds and the floor's biped without a batched engine to run them
    (["run", "engines", "--engines", "fixed_step", "mujoco", "--setups", "bench", "--envs",
      "4"], "--envs: only the batched engines"),
    (["run", "engines", "--engines", "mujoco", "--setups", "biped"],
     "the biped runs on the batched engines only"),
    # a start, a chain or a bootstrap of physical models --model does not name
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--init", "{w}/mx64_m6.json", "--out", "{w}/fit"], "--init acts on the physical models"),
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--uncertainty", "3", "--out", "{w}/fit"], "--uncertainty acts on the physical models"),
    (["identify", "--actuator", "xl330", "--model", "m6", "--logs", "{w}/l.json",
      "--independent", "--out", "{w}/fit"], "--model names one physical model (m6)"),
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--fix", "q_offset=0", "--out", "{w}/fit"], "--fix acts on the physical models"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--fix", "kt=1", "--out", "{w}/fit"], "--fix acts on the physical models"),
    # k_t and R searched as k_t/R and k_t²/R where there is no such pair
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--coordinates", "identifiable", "--out", "{w}/fit"],
     "--coordinates identifiable acts on the physical models"),
    (["identify", "--actuator", "erob80_100", "--other-motor", "--model", "m1", "--logs",
      "{w}/l.json", "--coordinates", "identifiable", "--out", "{w}/fit"],
     "erob80_100 follows the current law"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json",
      "--coordinates", "identifiable", "--fix", "R=5", "--out", "{w}/fit"],
     "--coordinates identifiable with --fix R"),
    # independent fits of no physical model, or of none at all
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "net",
      "--fits", "2", "--out", "{w}/fit"], "--fits acts on the physical models"),
    (["identify", "--actuator", "xl330", "--model", "net", "--logs", "{w}/l.json",
      "--fits", "3", "--out", "{w}/fit"], "--fits acts on the physical models"),
    (["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json",
      "--fits", "0", "--out", "{w}/fit"], "--fits must be an integer in [1, 64]"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "m6",
      "hybrid", "--joint-scales", "--out", "{w}/fit"], "--joint-scales with --model net/hybrid"),
    # another servo's parameters fitted to, and scored on, these logs
    (["export-mjcf", "--target", "dcmotor", "--params", "{w}/mx64_m6.json", "--logs",
      "{w}/l.json", "--budget", "20", "--out", "{w}/o.xml"],
     "recorded with motor 'xl330', but {w}/mx64_m6.json is for 'mx64'"),
    # --data where the robot ships its MJCF
    (["robot", "simulate", "--robot", "so100", "--data", "{w}", "{w}"], "so100 ships its own"),
    # episodes of no LeRobot dataset
    (["robot", "export-mjcf", "--robot", "so100", "--params", "{w}/m1.json", "--out", "{w}/fit",
      "--episodes", "0"], "--episodes chooses episodes of LeRobot datasets, and no recordings"),
    # a model named a second time fits nothing more
    (["identify", "--actuator", "xl330", "--model", "m1", "m1", "--logs", "{w}/l.json",
      "--out", "{w}/fit"], "frictionsim identify: error: --model names m1 twice"),
    (["identify", "--actuator", "xl330", "--model", "all", "m4", "--logs", "{w}/l.json",
      "--out", "{w}/fit"], "--model all names every physical model already: drop m4"),
    (["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "m6", "net",
      "net", "--out", "{w}/fit"], "frictionsim robot identify: error: --model names net twice"),
])
def test_an_option_that_would_do_nothing_or_never_end_is_refused(argv, culprit, work, capsys):
    shutil.copy(DATA / "params" / "mx64" / "m6.json", work / "mx64_m6.json")
    culprit = culprit.format(w=work)
    run_refused([a.format(w=work) for a in argv], culprit, capsys)
    assert not (work / "rec").exists() and not (work / "fit").exists()


@pytest.mark.parametrize("argv", [
    ["identify", "--actuator", "xl330", "--model", "m1", "--logs", "{w}/l.json", "--out",
     "{w}/fit"],
    ["robot", "identify", "--robot", "so100", "--recordings", "{w}", "--model", "m1", "--out",
     "{w}/fit"],
    ["simulate", "--params", "{w}/m6.json", "{w}/l.json"],
])
def test_ripple_with_backlash_is_refused_before_anything_runs(argv, work, capsys):
    """Not modelled together: said of the run's --with before a header or a fit, as of a
    parameter file holding both."""
    assert main([a.format(w=work) for a in argv] + ["--with", "backlash", "ripple"]) == 1
    said = capsys.readouterr()
    assert "ripple and backlash together are not modelled yet" in said.err, said.err
    assert said.out == "" and not (work / "fit").exists()


@pytest.mark.parametrize("argv, culprit", [
    (["identify", "--actuator", "xl330", "--model", "m1", "--with", "ripple", "supply",
      "ripple", "--logs", "{w}/l.json", "--out", "{w}/fit"], "--with: ripple is named twice"),
    (["run", "engines", "--engines", "fixed_step", "fixed_step", "--setups", "bench"],
     "--engines: fixed_step is named twice"),
    (["bench", "--models", "m1", "m6", "m1"], "--models: m1 is named twice"),
])
def test_a_choice_named_twice_is_refused_by_the_parser(argv, culprit, work, capsys):
    with pytest.raises(SystemExit) as leaving:
        main([a.format(w=work) for a in argv])
    assert leaving.value.code == 2  # argparse's status for a malformed command line
    assert culprit in capsys.readouterr().err
    assert not (work / "fit").exists()


def test_an_init_file_of_another_servo_is_refused_before_anything_is_said_of_it(work, capsys):
    shutil.copy(DATA / "params" / "mx64" / "m6.json", work / "mx64_m6.json")
    err = run_refused(["identify", "--actuator", "xl330", "--model", "m1", "--logs",
                       str(work / "l.json"), "--with", "backlash", "--init",
                       str(work / "mx64_m6.json"), "--out", str(work / "fit")],
                      "actuator mx64, not xl330", capsys)
    assert err.count("\n") == 1, err  # the one line: no warning about the file's defaults


def test_the_mujoco_adapter_refuses_slide_joints_and_shared_joints_and_reports_a_nan_goal(
        work, monkeypatch):
    mujoco = pytest.importorskip("mujoco")
    monkeypatch.chdir(work)  # MuJoCo logs its NaN-control warning to MUJOCO_LOG.TXT here
    from frictionsim.solvers.errors import SimulationError
    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf
    from frictionsim.solvers.robot import JointServo

    servo = JointServo("servo", load_params(work / "m1.json").with_scheme("semi_implicit"), 400)
    slide = bench_mjcf(0.3, 0.1, 0.0, 0.001).replace('type="hinge"', 'type="slide"')
    with pytest.raises(ValueError, match="not a hinge"):
        ServoModel(slide, [servo])
    with pytest.raises(ValueError, match="two servos"):
        ServoModel(bench_mjcf(0.3, 0.1, 0.0, 0.001), [servo, servo])
    sm = ServoModel(bench_mjcf(0.3, 0.1, 0.0, 0.001), [servo])
    data = sm.make_data()
    for k in range(50):
        sm.set_goals(data, [0.2 if k != 20 else np.nan])
        mujoco.mj_step(sm.model, data)
    assert np.isfinite(data.qpos).all()
    with pytest.raises(SimulationError, match="not finite"):
        sm.check(data)


# --------------------------------------------------------------------- vague errors, hangs

@pytest.mark.parametrize("text, culprit", [
    ('{"model": "m1", "actuator": "xl330", "kt": 1' + "0" * 400 + "}", "kt"),
    ('{"model": "m1", "actuator": "xl330", "scheme": ["x"]}', "scheme"),
    ('{"model": ["m1"], "actuator": "xl330"}', "model"),
])
def test_absurd_parameter_files_get_a_clear_error(text, culprit, work, capsys):
    (work / "p.json").write_text(text)
    run_refused(["simulate", "--params", str(work / "p.json"), str(work / "l.json")], culprit,
                capsys)


def test_a_log_with_a_number_of_hundreds_of_digits_is_named(work):
    data = json.loads((work / "l.json").read_text())
    data["mass"] = "HUGE"
    path = work / "huge.json"
    path.write_text(json.dumps(data).replace('"HUGE"', "1" + "0" * 400))
    with pytest.raises(LogError, match="mass"):
        load_log(path)


@pytest.mark.parametrize("flag", ["--params", "--actuator-file"])
def test_special_files_as_inputs_are_refused_at_once(flag, work, capsys):
    fifo = work / "fifo.json"
    os.mkfifo(fifo)
    argv = (["simulate", "--params", str(fifo), str(work / "l.json")] if flag == "--params" else
            ["simulate", "--params", str(work / "m1.json"), "--actuator-file", str(fifo),
             str(work / "l.json")])
    finished = []
    thread = threading.Thread(target=lambda: finished.append(main(argv)), daemon=True)
    thread.start()
    thread.join(timeout=60)  # a blocking open of the FIFO would never return
    assert finished == [1]
    assert "not a regular file" in capsys.readouterr().err
    with pytest.raises(Exception, match="not a regular file"):
        from frictionsim.actuator_files import load_actuator_file

        load_actuator_file("/dev/zero")


def test_a_port_that_is_not_a_serial_device_or_fails_later_is_named(tmp_path):
    pytest.importorskip("serial")
    from frictionsim.hw.serialbus.errors import BusError
    from frictionsim.hw.serialbus.port import Port, open_serial

    (tmp_path / "file").write_text("")
    for device, culprit in ((str(tmp_path / "file"), "not a serial device"),
                            (str(tmp_path / "none"), "no such serial port"),
                            ("/dev/null", "/dev/null")):
        with pytest.raises(BusError, match=culprit):
            open_serial(device, 57600, 0.01)

    class Vanished:
        def read(self, size):
            import serial

            raise serial.SerialException("device reports readiness to read but returned no data")

    with pytest.raises(BusError, match="/dev/ttyVIRTUAL.*reading"):
        Port(Vanished(), "/dev/ttyVIRTUAL").read(4)


@pytest.mark.parametrize("saved_with, resumed_with, culprit", [
    (["--with", "current_limit"], [], "--with current_limit"),
    ([], ["--scheme", "semi_implicit"], "--scheme reference"),
])
def test_a_resumed_identification_with_other_settings_is_refused(saved_with, resumed_with,
                                                                  culprit, work, capsys):
    base = ["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(work / "l.json"),
            "--budget", "30", "--out", str(work / "fit"), "--no-progress"]
    assert main(base + saved_with) == 0
    before = digest(work / "fit")
    run_refused(base + resumed_with + ["--resume"], culprit, capsys)
    assert digest(work / "fit") == before


def test_a_resumed_identification_refuses_a_file_of_another_model(work, capsys):
    (work / "fit").mkdir()
    shutil.copy(work / "m6.json", work / "fit" / "m1.json")
    run_refused(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(work / "l.json"),
                 "--budget", "30", "--out", str(work / "fit"), "--resume"], "holds a m6 fit",
                capsys)


def test_a_resumed_identification_says_which_earlier_fits_it_keeps_without_fitting(work, capsys):
    base = ["identify", "--actuator", "xl330", "--logs", str(work / "l.json"), "--budget", "30",
            "--out", str(work / "fit"), "--no-progress"]
    assert main(base + ["--model", "m1", "m6"]) == 0
    capsys.readouterr()
    assert main(base + ["--model", "m1", "--resume"]) == 0
    assert (f"note: {work / 'fit'} keeps m6.json of the earlier run as it is (not fitted again; "
            "this run's report covers m1)") in capsys.readouterr().out
    assert (work / "fit" / "m6.json").exists()


def test_a_copied_servo_model_steps_with_its_servos(work):
    mujoco = pytest.importorskip("mujoco")
    import copy

    from frictionsim.solvers.errors import SimulationError
    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf
    from frictionsim.solvers.robot import JointServo

    servo = JointServo("servo", load_params(work / "m6.json").with_scheme("semi_implicit"), 400)
    sm = ServoModel(bench_mjcf(0.3, 0.1, 0.0, 0.001), [servo])
    twin = copy.copy(sm.model)
    assert twin._address != sm.model._address
    runs = []
    for model in (sm.model, twin):
        data = mujoco.MjData(model)
        q = []
        for k in range(300):
            data.ctrl[sm.ctrl_index] = 0.4 * np.sin(0.02 * k)
            mujoco.mj_step(model, data)
            q.append(data.qpos[0])
        runs.append(np.array(q))
    assert np.ptp(runs[0]) > 0.1  # the servo moved the arm
    np.testing.assert_array_equal(runs[0], runs[1])
    lossy = ServoModel(bench_mjcf(0.3, 0.1, 0.0, 0.001), [servo], friction="frictionloss")
    copied = copy.copy(lossy.model)
    data = mujoco.MjData(copied)
    mujoco.mj_step(copied, data)
    with pytest.raises(SimulationError, match="copy"):
        lossy.check(data)


# ------------------------------------------------------------- probed: issue of a robot's day

def test_a_parameter_too_large_for_the_kernels_is_refused_not_simulated(work, capsys):
    data = json.loads((work / "m1.json").read_text())
    data["kt"] = 10**30  # an integer: it would not even fit the kernels' 64-bit types
    (work / "big.json").write_text(json.dumps(data))
    run_refused(["simulate", "--params", str(work / "big.json"), str(work / "l.json")],
                "kt = ", capsys)


def test_uncertainty_needs_two_training_logs_to_resample(work, capsys):
    run_refused(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(work / "l.json"),
                 "--uncertainty", "5", "--budget", "20", "--out", str(work / "fit")],
                "--uncertainty", capsys)
    assert not (work / "fit").exists()


def test_a_network_is_not_trained_on_logs_without_torque(work, capsys):
    data = json.loads((work / "l.json").read_text())
    for entry in data["entries"]:
        entry["torque_enable"] = False
    (work / "off.json").write_text(json.dumps(data))
    run_refused(["identify", "--actuator", "xl330", "--model", "net", "--logs",
                 str(work / "off.json"), "--out", str(work / "fit")],
                "torque is off throughout", capsys)


def test_the_robot_comparison_refuses_a_bench_actuator(work, capsys):
    pytest.importorskip("sklearn")
    run_refused(["run", "physics-vs-learned", "--robot", "so101", "--recordings", str(work),
                 "--actuator", "xl330", "--out", str(work / "cmp")], "--actuator", capsys)


def test_vs_mujoco_refuses_its_training_log_as_validation(work, capsys):
    pytest.importorskip("mujoco.sysid")
    run_refused(["run", "vs-mujoco", "--actuator", "xl330", "--logs", str(work / "l.json"),
                 "--validation", str(work / "l.json"), "--out", str(work / "vs")],
                "is the training log", capsys)


@pytest.mark.parametrize("mass, culprit", [
    ([[1.0, 2.0], [2.0, 1.0]], "not positive definite"),
    ([[1.0, 0.0], [0.0, np.nan]], "NaN"),
    ([[1.0, 0.1], [0.0, 1.0]], "not symmetric"),
])
def test_clip_friction_refuses_a_matrix_that_is_not_a_mass_matrix(mass, culprit):
    from frictionsim.solvers.joint_friction import clip_friction

    with pytest.raises(ValueError, match=culprit):
        clip_friction(np.array(mass), np.array([0.1, 0.2]), np.zeros(2), np.ones(2), 0.001)
    with pytest.raises(ValueError, match="budget must be ≥ 0"):
        clip_friction(np.eye(2), np.array([0.1, 0.2]), np.zeros(2), np.array([1.0, -1.0]), 0.001)


def test_every_dcmotor_export_is_well_formed_xml(work, capsys):
    from xml.dom import minidom

    assert main(["export-mjcf", "--target", "dcmotor", "--params", str(work / "m1.json")]) == 0
    minidom.parseString(capsys.readouterr().out)


def test_an_amplitude_of_the_ripple_below_zero_is_refused(work, capsys):
    data = json.loads((work / "m1.json").read_text())
    (work / "r.json").write_text(json.dumps({**data, "ripple_amplitude": -0.05}))
    run_refused(["simulate", "--params", str(work / "r.json"), str(work / "l.json"), "--with",
                 "ripple"], "ripple_amplitude = -0.05 must be ≥ 0", capsys)


@pytest.mark.parametrize("key, value, culprit", [
    ("ripple_frequency", 0.0, "ripple_frequency = 0.0 1/rad must be > 0"),
    ("meshing_frequency", -600.0, "meshing_frequency = -600.0 1/rad must be > 0"),
    ("meshing_decay", -1.0, "meshing_decay = -1.0 s/rad must be ≥ 0"),
])
def test_a_ripple_frequency_or_decay_of_the_wrong_sign_is_refused(work, capsys, key, value,
                                                                   culprit):
    data = json.loads((work / "m1.json").read_text())
    (work / "r.json").write_text(json.dumps({**data, key: value}))
    run_refused(["simulate", "--params", str(work / "r.json"), str(work / "l.json"), "--with",
                 "ripple"], culprit, capsys)


@pytest.mark.parametrize("key, value", [("ripple_frequency", 1e6), ("ripple_amplitude", 5.0),
                                        ("meshing_decay", 1e3)])
def test_a_ripple_term_outside_its_documented_range_is_warned_about(key, value):
    from frictionsim.params import ParameterSet
    from frictionsim.plausibility import PlausibilityWarning

    values = ParameterSet.defaults("m1", "xl330").with_extensions(("ripple",)).values
    with pytest.warns(PlausibilityWarning, match=f"{key} = .* is outside"):
        ParameterSet("m1", "xl330", {**values, key: value}, extensions=("ripple",))


def test_ranges_that_miss_their_own_value_are_named(work):
    from frictionsim.params import load_params
    from frictionsim.plausibility import PlausibilityWarning

    data = json.loads((work / "m1.json").read_text())
    (work / "w.json").write_text(json.dumps({**data, "ranges": {"kt": [100, 200]}}))
    with pytest.warns(PlausibilityWarning, match=r"ranges.kt = \[100, 200\] does not contain "
                                                 r"the set's kt"):
        load_params(work / "w.json")


def test_the_python_api_refuses_logs_of_another_motor_unless_asked(work):
    import warnings

    import frictionsim as fs
    from frictionsim.plausibility import PlausibilityWarning

    log = fs.load_log(work / "l.json")
    shutil.copy(DATA / "params" / "mx64" / "m6.json", work / "mx64_m6.json")
    with pytest.raises(ConfigurationError, match="recorded with motor 'xl330', but "
                       "actuator='mx64' is for 'mx64'.*other_motor=True"):
        fs.identify([log], actuator="mx64", models=["m1"], budget=10)
    with pytest.raises(ConfigurationError, match="recorded with motor 'xl330', but the "
                       "parameters is for 'mx64'.*other_motor=True"):
        fs.simulate(log, work / "mx64_m6.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fs.identify([log], actuator="mx64", models=["m1"], budget=10, other_motor=True)
        fs.simulate(log, work / "mx64_m6.json", other_motor=True)
    said = [str(w.message) for w in caught if issubclass(w.category, PlausibilityWarning)]
    assert sum("recorded with motor 'xl330' are taken as 'mx64'" in m for m in said) == 2


def test_robot_threads_beyond_the_cores_are_warned_about(work, capsys, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    # --uncertainty 1 is refused right after the threads are checked: nothing is fitted
    err = run_refused(["robot", "identify", "--robot", "so100", "--recordings", str(work),
                       "--model", "m1", "--threads", "2", "--uncertainty", "1", "--out",
                       str(work / "fit")], "--uncertainty must be", capsys)
    assert "warning: --threads 2 on 1 core this process may use" in err
