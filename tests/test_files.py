"""Log files (docs/model.md §6) and parameter files (docs/model.md §7): validation, errors, round trips."""

from __future__ import annotations

import json
import math

import pytest
from synthetic_logs import random_values, rng_for, synthetic_log

from frictionsim import schema
from frictionsim.logs import Log, LogError, load_log, save_log
from frictionsim.params import ParameterFileError, ParameterSet, load_params, save_params

# --------------------------------------------------------------------- logs


def good_log(n: int = 4) -> dict:
    return {
        "mass": 0.5,
        "length": 0.2,
        "kp": 32,
        "vin": 7.4,
        "motor": "xl330",
        "trajectory": "sin_sin",
        "entries": [
            {
                "position": 0.01 * k,
                "speed": 0.1,
                "load": 3,
                "input_volts": 7.3,
                "temp": 29,
                "timestamp": 0.005 * (k + 1),
                "goal_position": 0.02 * k,
                "torque_enable": True,
            }
            for k in range(n)
        ],
    }


def write(tmp_path, data, name="log.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_good_log_loads(tmp_path):
    log = load_log(write(tmp_path, good_log()))
    assert len(log.entries) == 4
    assert log.mass == 0.5 and log.length == 0.2 and log.kp == 32
    assert not log.processed


@pytest.mark.parametrize("field", ["mass", "length", "kp"])
def test_missing_header_field(tmp_path, field):
    data = good_log()
    del data[field]
    with pytest.raises(LogError, match=f"missing.*{field}"):
        load_log(write(tmp_path, data))


@pytest.mark.parametrize("field", ["goal_position", "position", "torque_enable", "timestamp"])
def test_missing_entry_field(tmp_path, field):
    data = good_log()
    del data["entries"][2][field]
    with pytest.raises(LogError, match=field) as info:
        load_log(write(tmp_path, data))
    assert "entries[2]" in str(info.value)


def test_nan_value(tmp_path):
    text = json.dumps(good_log()).replace('"position": 0.02,', '"position": NaN,')
    assert "NaN" in text
    with pytest.raises(LogError, match="position") as info:
        load_log(write(tmp_path, text))
    message = str(info.value)
    assert "entries[2]" in message and "NaN" in message.replace("nan", "NaN")


def test_infinite_header_value(tmp_path):
    text = json.dumps(good_log()).replace('"mass": 0.5', '"mass": Infinity')
    with pytest.raises(LogError, match="mass"):
        load_log(write(tmp_path, text))


def test_wrong_type(tmp_path):
    data = good_log()
    data["entries"][1]["position"] = "0.01"
    with pytest.raises(LogError, match="position") as info:
        load_log(write(tmp_path, data))
    assert "0.01" in str(info.value) and "entries[1]" in str(info.value)


def test_wrong_header_type(tmp_path):
    data = good_log()
    data["kp"] = "fast"
    with pytest.raises(LogError, match="kp"):
        load_log(write(tmp_path, data))


@pytest.mark.parametrize("t", [0.01, 0.005])  # equal to, then before, the previous one
def test_non_increasing_timestamps(tmp_path, t):
    data = good_log()
    data["entries"][2]["timestamp"] = t  # entries[1] is at 0.01
    with pytest.raises(LogError, match="timestamp") as info:
        load_log(write(tmp_path, data))
    assert "entries[2]" in str(info.value)


def test_empty_entries(tmp_path):
    data = good_log()
    data["entries"] = []
    with pytest.raises(LogError, match="entries"):
        load_log(write(tmp_path, data))


def test_entries_not_a_list(tmp_path):
    data = good_log()
    data["entries"] = {"position": 0.0}
    with pytest.raises(LogError, match="entries"):
        load_log(write(tmp_path, data))


def test_file_not_found(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(LogError, match="nowhere.json"):
        load_log(path)


def test_invalid_json(tmp_path):
    with pytest.raises(LogError, match="JSON") as info:
        load_log(write(tmp_path, '{"mass": 0.5, "entries": [', "broken.json"))
    assert "broken.json" in str(info.value)


@pytest.mark.parametrize(
    "fields,want",
    [
        ({"arm_mass": 0.3}, 0.3),
        ({"arm-mass": 0.2}, 0.2),
        ({"arm_mass": 0.3, "arm-mass": 0.3}, 0.3),  # both spellings, one value
        ({"arm-mass": 0.2, "arm_mass": 0.2}, 0.2),  # whatever the order in the file
        ({}, 0.0),
    ],
)
def test_arm_mass_spellings(tmp_path, fields, want):
    data = good_log()
    data.update(fields)
    data["dt"] = 0.005
    log = load_log(write(tmp_path, data))
    assert log.arm_mass == want
    assert log.bench("xl330")[2] == want  # layout.ARM_MASS


def test_save_log_load_log_round_trip(tmp_path):
    log = synthetic_log("xl330", rng_for("files", "log"), None, n=50)
    log.header["arm-mass"] = 1 / 3
    path = save_log(tmp_path / "sub" / "saved.json", log)
    back = load_log(path)
    assert back.header == log.header
    assert back.entries == log.entries
    assert [list(e) for e in back.entries] == [list(e) for e in log.entries]
    assert back.processed and back.dt == log.dt


def test_published_raw_log_round_trip(tmp_path, shared):
    raw = load_log(shared / "raw" / "2026-01-15_10h28m42.json")
    back = load_log(save_log(tmp_path / "copy.json", raw))
    assert back.header == raw.header
    assert back.entries == raw.entries


# --------------------------------------------------------------------- parameter files


def params_file(tmp_path, data, name="params.json"):
    return write(tmp_path, data, name)


def test_unknown_model(tmp_path):
    path = params_file(tmp_path, {"model": "m7", "actuator": "xl330", "kt": 1.0})
    with pytest.raises(ParameterFileError, match="m7"):
        load_params(path)


def test_unknown_actuator(tmp_path):
    path = params_file(tmp_path, {"model": "m1", "actuator": "xl440", "kt": 1.0})
    with pytest.raises(ParameterFileError, match="xl440"):
        load_params(path)


def test_unknown_key_is_named(tmp_path):
    path = params_file(tmp_path, {"model": "m1", "actuator": "xl330", "friction_bse": 0.1})
    with pytest.raises(ParameterFileError, match="friction_bse") as info:
        load_params(path)
    assert "params.json" in str(info.value)


def test_key_of_another_model_is_rejected(tmp_path):
    # alpha belongs to m2..m6, not m1; max_velocity to sts3215 only
    path = params_file(tmp_path, {"model": "m1", "actuator": "xl330", "alpha": 2.0})
    with pytest.raises(ParameterFileError, match="alpha"):
        load_params(path)
    path = params_file(tmp_path, {"model": "m2", "actuator": "mx64", "max_velocity": 2.0})
    with pytest.raises(ParameterFileError, match="max_velocity"):
        load_params(path)


@pytest.mark.parametrize("value", ["0.1", None, [0.1], True])
def test_non_numeric_value(tmp_path, value):
    path = params_file(tmp_path, {"model": "m1", "actuator": "xl330", "friction_base": value})
    with pytest.raises(ParameterFileError, match="friction_base"):
        load_params(path)


def test_nan_parameter(tmp_path):
    path = params_file(tmp_path, '{"model": "m1", "actuator": "xl330", "kt": NaN}')
    with pytest.raises(ParameterFileError, match="kt"):
        load_params(path)


@pytest.mark.parametrize("missing", ["model", "actuator"])
def test_missing_model_or_actuator(tmp_path, missing):
    data = {"model": "m1", "actuator": "xl330", "kt": 1.0}
    del data[missing]
    with pytest.raises(ParameterFileError, match=missing):
        load_params(params_file(tmp_path, data))


def test_parameter_file_not_found_or_invalid(tmp_path):
    with pytest.raises(ParameterFileError, match="absent.json"):
        load_params(tmp_path / "absent.json")
    with pytest.raises(ParameterFileError, match="JSON"):
        load_params(params_file(tmp_path, "{model: m1}"))


def test_published_files_load_unclipped(shared):
    for k in range(1, 7):
        path = shared / "params" / f"m{k}.json"
        raw = json.loads(path.read_text(encoding="utf-8"))
        params = load_params(path)
        assert params.model == raw.pop("model") == f"m{k}"
        assert params.actuator == raw.pop("actuator") == "xl330"
        for name, value in raw.items():
            assert params.values[name] == value, (path.name, name)
    m2 = load_params(shared / "params" / "m2.json")
    bound = schema.parameters("m2", "xl330")["dtheta_stribeck"].upper
    assert bound == 3.0
    assert m2.values["dtheta_stribeck"] == 4.166521110955459 > bound
    m4 = load_params(shared / "params" / "m4.json")
    alpha_lower = schema.parameters("m4", "xl330")["alpha"].lower
    assert m4.values["alpha"] == 0.7601158768377835 < alpha_lower


def test_missing_parameters_take_defaults(tmp_path):
    path = params_file(tmp_path, {"model": "m2", "actuator": "sts3215", "kt": 1.25})
    params = load_params(path)
    assert params.values["kt"] == 1.25
    assert params.values["R"] == 2.0
    assert params.values["armature"] == 0.0001
    assert params.values["q_offset"] == 0.0
    assert params.values["friction_base"] == 0.05
    assert params.values["friction_stribeck"] == 0.05
    assert params.values["dtheta_stribeck"] == 0.2
    assert params.values["alpha"] == 1.35
    assert params.values["friction_viscous"] == 0.1
    assert params.values["max_velocity"] == pytest.approx(3400 * 2 * math.pi / 4096, rel=1e-15)
    assert params.values["error_gain_ratio"] == 1.0
    assert set(params.values) == set(schema.parameters("m2", "sts3215"))


@pytest.mark.parametrize("model", ["m1", "m4", "m6"])
@pytest.mark.parametrize("actuator", ["xl330", "sts3215", "erob80_50"])
def test_save_load_params_round_trip(tmp_path, model, actuator):
    values = random_values(model, actuator, rng_for("files", model, actuator))
    values["q_offset"] = 1 / 3
    values["friction_base"] = 7.508873888400355e-17
    original = ParameterSet(model, actuator, values)
    path = save_params(tmp_path / "out" / "p.json", original)
    back = load_params(path)
    assert (back.model, back.actuator) == (model, actuator)
    assert back.values == original.values
    assert list(back.values) == list(original.values)
    assert (back.theta() == original.theta()).all()
    assert json.loads(path.read_text(encoding="utf-8"))["model"] == model


def test_log_built_in_memory_needs_dt_for_bench():
    log = Log({"mass": 0.5, "length": 0.2, "kp": 32}, [])
    with pytest.raises(LogError, match="dt"):
        log.bench("xl330")
