"""Actuator declaration files (docs/model.md §11): the built-in ones, a user's, and every malformed field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frictionsim import schema
from frictionsim.actuator_files import ActuatorFileError, load_actuator_file
from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.runner.cli import main
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import process, save_log
from frictionsim.params import ParameterSet, load_params, save_params

#: docs/model.md §11's example, verbatim.
SPEC_EXAMPLE = '''\
name = "sts3215_12v"
law = "voltage"                 # or "current"
vin = 12.0                      # voltage law: default supply (V)
error_gain = 0.16489            # duty per (kp · rad)
max_pwm = 0.97
target_speed_limit = true       # the sts3215-style limiter (max_velocity, error_gain_ratio)
recommended = ["supply"]        # section 9 extensions that cross-validation favours
# current law: max_current, max_voltage, damping
[parameters]                    # default and search bounds of the actuator's own parameters
kt = { default = 1.0, min = 0.05, max = 5.0 }
R = { default = 5.0, min = 0.1, max = 20.0 }
armature = { default = 0.005, min = 1e-5, max = 0.1 }
[bounds]                        # overrides of section 2's Fmax, Lmax, Vmax, per-parameter bounds
Fmax = 0.5
'''

#: The same declaration under a name nothing else declares.
USER_EXAMPLE = SPEC_EXAMPLE.replace('name = "sts3215_12v"', 'name = "sts3215_user"')


@pytest.fixture
def declared(tmp_path):
    """Write declarations; every actuator registered during the test is forgotten after it."""
    before = set(schema.ACTUATORS)

    def write(text: str, name: str = "servo.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    yield write
    for name in set(schema.ACTUATORS) - before:
        schema.ACTUATORS.unregister(name)


def test_the_built_in_actuators_are_declaration_files():
    from frictionsim.actuator_files import BUILTIN_DIR

    files = sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))
    assert files == sorted(schema.ACTUATORS) == ["erob80_100", "erob80_50", "mx106", "mx64",
                                                 "sts3215", "sts3215_12v", "sts3215_7v4",
                                                 "xl320", "xl330", "xl430"]
    xl330 = schema.ACTUATORS["xl330"]
    assert xl330.error_gain == (4096 / (2 * math.pi)) / (256 * 885)  # docs/model.md §3, to the bit
    assert xl330.hardware.model_numbers == (1200, 1190) and xl330.hardware.family == "dynamixel"
    sts = schema.ACTUATORS["sts3215"]
    assert sts.hardware.velocity_unit_rpm == 60 / 4096 and sts.target_speed_limit
    assert schema.parameters("m1", "sts3215")["q_offset"].lower == -0.2


def test_spec_example_loads(declared):
    act = load_actuator_file(declared(SPEC_EXAMPLE))
    assert (act.name, act.law, act.vin, act.error_gain, act.max_pwm, act.fmax) == (
        "sts3215_12v", "voltage", 12.0, 0.16489, 0.97, 0.5)
    assert act.recommended == ("supply",)
    motor = {p.name: (p.default, p.lower, p.upper) for p in act.motor}
    assert motor["R"] == (5.0, 0.1, 20.0)
    assert motor["max_velocity"] == tuple(p for p in (3400 * 2 * math.pi / 4096,
                                                      0.1 * 3400 * 2 * math.pi / 4096,
                                                      10.0 * 3400 * 2 * math.pi / 4096))


def _spec(edit: str) -> str:
    """SPEC_EXAMPLE with one line replaced (``old => new``), a top-level key added (``^key =
    value``), or a table appended."""
    if " => " in edit:
        old, new = edit.split(" => ")
        assert old in SPEC_EXAMPLE
        return SPEC_EXAMPLE.replace(old, new)
    if edit.startswith("^"):
        return edit[1:] + "\n" + SPEC_EXAMPLE
    return SPEC_EXAMPLE + edit + "\n"


@pytest.mark.parametrize("edit, key", [
    ('name = "sts3215_12v" => name = "Bad Name"', "name"),
    ('name = "sts3215_12v" => name = "m1"', "name"),
    ('name = "sts3215_12v" => ', "name"),
    ('law = "voltage" => law = "torque"', "law"),
    ('vin = 12.0 => vin = "12"', "vin"),
    ('vin = 12.0 => vin = -1.0', "vin"),
    ('vin = 12.0 => ', "vin"),
    ('max_pwm = 0.97 => max_pwm = 1.5', "max_pwm"),
    ('error_gain = 0.16489 => error_gain = nan', "error_gain"),
    ('target_speed_limit = true => target_speed_limit = "yes"', "target_speed_limit"),
    ('recommended = ["supply"] => recommended = ["turbo"]', "recommended"),
    ("^max_current = 12.0", "max_current"),
    ("^colour = 3", "colour"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => kt = { default = 1.0, min = 5.0, max = 0.05 }",
     "parameters.kt"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => kt = { default = 9.0, min = 0.05, max = 5.0 }",
     "parameters.kt.default"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => kt = { default = 1.0, max = 5.0 }",
     "parameters.kt.min"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => kt = 1.0", "parameters.kt"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => ", "parameters.kt"),
    ("R = { default = 5.0, min = 0.1, max = 20.0 } => R = { default = 5.0, min = 0.0, max = 20.0 }",
     "parameters.R.min"),
    ("kt = { default = 1.0, min = 0.05, max = 5.0 } => kt = { default = 1.0, min = 0.05, max = 5.0, "
     "step = 1 }", "parameters.kt.step"),
    ("armature = { default = 0.005, min = 1e-5, max = 0.1 } => armature = { default = 0.005, "
     "min = 1e-5, max = 0.1 }\ninertia = { default = 1, min = 0, max = 2 }", "parameters.inertia"),
    ("Fmax = 0.5 => Fmax = -0.5", "bounds.Fmax"),
    ("Fmax = 0.5 => Gmax = 0.5", "bounds.Gmax"),
    ("Fmax = 0.5 => q_offset = { min = 0.3, max = -0.3 }", "bounds.q_offset"),
    ("[hardware]\nfamily = \"canbus\"", "hardware.family"),
    ("[hardware]\nmodel_numbers = [\"x\"]", "hardware.model_numbers"),
    ("[hardware]\nprotocols = [3]", "hardware.protocols"),
    ("[hardware]\nids = [10, 1]", "hardware.ids"),
    ("[hardware]\ncounts_per_turn = 0", "hardware.counts_per_turn"),
    ("[hardware]\ncounts_per_turn = 4096.5", "hardware.counts_per_turn"),
    ("[hardware]\ncounts_per_turn = 1228.8\nencoder_span_deg = 200", "hardware.counts_per_turn"),
    ("[hardware]\nprotocols = [true]", "hardware.protocols"),
    ("vin = 12.0 => vin = 12.0\nkp = 0", "kp"),
    ("armature = { default = 0.005, min = 1e-5, max = 0.1 } => armature = { default = 0.005, "
     "min = 1e-5, max = 0.1 }\nerror_gain_ratio = { default = 1.0, min = -0.5, max = 2.0 }",
     "parameters.error_gain_ratio.min"),
    ("[hardware]\nspeed = 1", "hardware.speed"),
    ("[parameters]                    # default and search bounds of the actuator's own parameters"
     " => [ignored]", "ignored"),
])
def test_every_malformed_field_is_an_error_naming_file_and_key(declared, edit, key):
    path = declared(_spec(edit))
    with pytest.raises(ActuatorFileError) as info:
        load_actuator_file(path)
    message = str(info.value)
    assert str(path) in message and f": {key}:" in message, message


@pytest.mark.parametrize("content, expected", [
    ("name = ", "not valid TOML"),
    ("\xff\xfe", "not valid TOML"),
])
def test_unreadable_declaration(declared, content, expected):
    with pytest.raises(ActuatorFileError, match=expected):
        load_actuator_file(declared(content))
    with pytest.raises(ActuatorFileError, match="no such actuator file"):
        load_actuator_file("/nonexistent/servo.toml")


def test_a_name_cannot_be_declared_twice_differently(declared):
    schema.ACTUATORS.load(declared(USER_EXAMPLE))
    schema.ACTUATORS.load(declared(USER_EXAMPLE, "same.toml"))  # the same declaration: fine
    with pytest.raises(ValueError, match="already declared"):
        schema.ACTUATORS.load(declared(USER_EXAMPLE.replace("vin = 12.0", "vin = 11.0"),
                                       "other.toml"))


def test_a_user_declaration_replaces_a_built_in_one_for_the_run(declared):
    built_in = schema.get_actuator("sts3215_12v")
    assert built_in.derivative and built_in.kd == 32
    with pytest.warns(UserWarning, match="replaces the built-in"):
        schema.ACTUATORS.load(declared(SPEC_EXAMPLE))  # docs/model.md §11's example: its name
    assert not schema.get_actuator("sts3215_12v").derivative
    schema.ACTUATORS.unregister("sts3215_12v")
    assert schema.get_actuator("sts3215_12v") == built_in


def test_an_unknown_actuator_points_at_actuator_files():
    with pytest.raises(ValueError, match="--actuator-file"):
        schema.get_actuator("sts3215_12v_unknown")


@pytest.fixture
def user_logs(declared, tmp_path):
    """Four noise-free logs of a servo declared only by a file, and the ground truth."""
    path = declared(USER_EXAMPLE, "sts3215_user.toml")
    schema.ACTUATORS.load(path)
    truth = ParameterSet("m1", "sts3215_user", {"kt": 1.3, "R": 6.0, "armature": 0.004,
                                               "friction_base": 0.03, "friction_viscous": 0.05})
    folder = tmp_path / "logs"
    for kp in (24.0, 48.0):
        for trajectory in ("up_and_down", "sin_sin"):
            log = process(record(truth, BenchSetup(0.4, 0.12, kp), trajectory, SensorModel.ideal(),
                                 duration=3.0))
            save_log(folder / f"{trajectory}_kp{kp:g}.json", log)
    schema.ACTUATORS.unregister("sts3215_user")  # as in a fresh process: only the file knows it
    return path, truth, folder


def test_a_declared_servo_is_compared_and_identified(user_logs, tmp_path, capsys):
    path, truth, folder = user_logs
    params = save_params(tmp_path / "truth.json", truth)
    assert main(["compare", "--params", str(params), "--logs", str(folder)]) == 1
    assert "--actuator-file" in capsys.readouterr().err
    out = tmp_path / "cmp.json"
    assert main(["compare", "--params", str(params), "--logs", str(folder), "--actuator-file",
                 str(path), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["truth"]["mean"] < 1e-9  # the truth reproduces its logs
    # one file per --actuator-file: the positional logs after it are logs, not declarations
    log = sorted(folder.glob("*.json"))[0]
    assert main(["simulate", "--params", str(params), "--actuator-file", str(path),
                 str(log)]) == 0
    assert log.stem in capsys.readouterr().out
    assert main(["identify", "--actuator-file", str(path), "--model", "m1", "--logs", str(folder),
                 "--validation-kp", "48", "--budget", "400", "--out", str(tmp_path / "fit"),
                 "--json", str(tmp_path / "fit.json"), "--no-progress"]) == 0
    fitted = load_params(tmp_path / "fit" / "m1.json")
    assert fitted.actuator == "sts3215_user"
    summary = json.loads((tmp_path / "fit.json").read_text())["models"]["m1"]
    assert summary["validation_mae"] < 2e-3
    # bounds come from the declaration: R searched in [0.1, 20], Fmax = 0.5
    spec = schema.parameters("m1", "sts3215_user")
    assert (spec["R"].lower, spec["R"].upper, spec["friction_base"].upper) == (0.1, 20.0, 0.5)


def test_the_guides_declaration_example_loads(declared):
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    block = guide.split("```toml\n", 1)[1].split("```", 1)[0]
    act = load_actuator_file(declared(block, "readme.toml"))
    assert act.name == "sts3215_12v" and act.hardware.family == "feetech"
    assert act.override("q_offset") == (None, -0.2, 0.2)



def test_the_command_line_says_a_replaced_built_in_in_one_warning_line(declared, capsys):
    """Like every other warning of the command line: ``warning: …``, not Python's
    ``…/frictionsim/schema.py:NNN: UserWarning:`` and a source line."""
    from frictionsim.experiments.runner.cli import main

    data = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330"
    if not data.is_dir():
        pytest.skip("shared data not found")
    path = declared(SPEC_EXAMPLE)
    try:
        assert main(["simulate", "--params", str(data / "params" / "m1.json"),
                     str(data / "processed" / "2026-01-15_10h29m04.json"), "--actuator-file",
                     str(path), "--no-progress"]) == 0
    finally:  # the built-in comes back for the tests that follow in this process
        schema.ACTUATORS.unregister("sts3215_12v")
    assert schema.get_actuator("sts3215_12v").dead_band > 0
    err = capsys.readouterr().err
    assert f"warning: {path} replaces the built-in declaration of 'sts3215_12v'" in err
    assert "UserWarning" not in err and "schema.py" not in err
