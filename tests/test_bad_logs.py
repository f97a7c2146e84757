"""Bad inputs that pass the type checks: plausibility limits, timelines, bounded resampling,
unreadable JSON, and random corruptions of a valid log (a clear error or a finite result)."""

from __future__ import annotations

import copy
import json
import math
import re
import tracemalloc
import warnings

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from frictionsim.logs import LogError, load_log, process, validate
from frictionsim.params import ParameterFileError, ParameterSet, from_dict, load_params
from frictionsim.plausibility import PlausibilityWarning
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.rollouts import simulate


def raw_log(n: int = 60, period: float = 0.005) -> dict:
    """A small valid raw log: a slow sine goal, timestamps every ``period`` from 3 ms."""
    return {
        "mass": 0.5, "length": 0.1, "kp": 400, "vin": 7.4, "motor": "xl330",
        "trajectory": "sin_sin",
        "entries": [{"position": 0.2 * math.sin(0.05 * k), "speed": 0.01 * math.cos(0.05 * k),
                     "load": 5, "input_volts": 7.4, "temp": 30, "timestamp": 0.003 + period * k,
                     "goal_position": 0.25 * math.sin(0.05 * k), "torque_enable": True}
                    for k in range(n)],
    }


def processed_log(n: int = 60) -> dict:
    log = process(validate(raw_log(n + 2), "raw.json"))
    return {**log.header, "entries": log.entries}


def write(tmp_path, data, name="log.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# ------------------------------------------------------------ header plausibility

@pytest.mark.parametrize("field, value, expected", [
    ("mass", 1e308, "mass = 1e+308"),
    ("mass", -1.0, "mass = -1.0"),
    ("mass", 5000, "mass = 5000"),
    ("length", 0, "length = 0"),
    ("length", 1e6, "length = 1000000"),
    ("arm_mass", 2e3, "arm_mass = 2000"),
    ("kp", -5, "kp = -5"),
    ("kp", 1e12, "kp = 1000000000000"),
    ("vin", 0, "vin = 0"),
    ("vin", 1e9, "vin = 1000000000"),
    ("damping", -1, "damping = -1"),
])
def test_absurd_header_value_is_an_error_naming_file_field_value(tmp_path, field, value, expected):
    data = raw_log()
    data[field] = value
    with pytest.raises(LogError) as info:
        load_log(write(tmp_path, data))
    message = str(info.value)
    assert "log.json" in message and expected in message and "plausible range" in message


@pytest.mark.parametrize("field, value", [("mass", 0), ("kp", 0), ("mass", 200), ("length", 3)])
def test_suspicious_header_value_warns_naming_it(tmp_path, field, value):
    data = raw_log()
    data[field] = value
    with pytest.warns(PlausibilityWarning, match=f"log.json: {field} = {value}"):
        log = load_log(write(tmp_path, data))
    assert log.header[field] == value  # used as given


@pytest.mark.parametrize("field, value", [("position", 1e9), ("goal_position", -5e3),
                                          ("speed", 1e30)])
def test_absurd_entry_value_names_the_entry(tmp_path, field, value):
    data = raw_log()
    data["entries"][17][field] = value
    with pytest.raises(LogError, match=rf"entries\[17\]\.{field}") as info:
        load_log(write(tmp_path, data))
    assert "log.json" in str(info.value)


def test_large_but_possible_positions_warn_once(tmp_path):
    data = raw_log()
    for e in data["entries"][10:20]:
        e["position"] = 20.0
    with pytest.warns(PlausibilityWarning, match=r"entries\[10\]\.position.*10 entries") as seen:
        load_log(write(tmp_path, data))
    assert len([w for w in seen if "position" in str(w.message)]) == 1


def test_non_finite_value_anywhere_in_the_header_is_named(tmp_path):
    text = json.dumps({**raw_log(), "calibration": {"offsets": [0.0, 1.0]}})
    text = text.replace("[0.0, 1.0]", "[0.0, NaN]")
    with pytest.raises(LogError, match=r"log\.json\.calibration\.offsets\[1\]"):
        load_log(write(tmp_path, text))


# ------------------------------------------------------------------- timelines

def test_unix_epoch_timestamps_are_refused(tmp_path):
    data = raw_log()
    for e in data["entries"]:
        e["timestamp"] += 1.7e9
    with pytest.raises(LogError, match=r"entries\[0\]\.timestamp.*Unix-epoch"):
        load_log(write(tmp_path, data))


@pytest.mark.parametrize("last", [1e6, 3600.0])
def test_one_far_timestamp_is_refused_naming_the_entry(tmp_path, last):
    data = raw_log()
    data["entries"][-1]["timestamp"] = last
    with pytest.raises(LogError, match=r"entries\[59\]\.timestamp.*gap"):
        load_log(write(tmp_path, data))


def test_a_short_gap_is_interpolated_with_a_warning(tmp_path):
    data = raw_log()
    for e in data["entries"][30:]:
        e["timestamp"] += 0.3
    with pytest.warns(PlausibilityWarning, match=r"gap of 0\.305 s before entries\[30\]"):
        load_log(write(tmp_path, data))


def test_timestamps_before_zero_warn_that_processing_drops_them(tmp_path):
    data = raw_log()
    for e in data["entries"]:
        e["timestamp"] -= 0.1
    with pytest.warns(PlausibilityWarning, match=r"first 0\.097 s of the recording are dropped"):
        load_log(write(tmp_path, data))


def test_processed_log_whose_dt_disagrees_with_its_timestamps(tmp_path):
    data = processed_log()
    data["dt"] = 0.01
    with pytest.raises(LogError, match=r"entries\[1\]\.timestamp.*step by 0\.005 s, not dt = 0\.01"):
        load_log(write(tmp_path, data), processed=True)


def test_processed_log_with_a_gap_names_the_entry(tmp_path):
    data = processed_log()
    del data["entries"][25:28]
    with pytest.raises(LogError, match=r"entries\[25\]\.timestamp.*a gap of 0\.02 s"):
        load_log(write(tmp_path, data), processed=True)


def test_the_recorded_logs_pass_without_warnings():
    from conftest import require_shared

    data = require_shared()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in sorted((data / "raw").glob("*.json")):
            process(load_log(path))
        for path in sorted((data / "processed").glob("*.json")):
            load_log(path, processed=True)


# ------------------------------------------------------------- bounded work

@pytest.mark.parametrize("dt, why", [(1e-9, "samples per raw entry"), (1e-6, "samples per raw entry")])
def test_resampling_beyond_what_the_log_justifies_is_refused_before_allocating(dt, why):
    raw = validate(raw_log(), "raw.json")
    tracemalloc.start()
    with pytest.raises(LogError, match=why) as info:
        process(raw, dt)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5e6  # refused before any array of the output's size existed
    assert "raw.json" in str(info.value)


def test_a_long_genuine_recording_is_still_processed():
    raw = validate(raw_log(n=20_000, period=0.005), "long.json")  # 100 s
    assert len(process(raw).entries) == 20_000


# ----------------------------------------------------------- unreadable files

@pytest.mark.parametrize("content, expected", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("", "not valid JSON"),
    ("\x00\xff\xfe garbage", "not"),
    ("[1, 2, 3]", "expected a JSON object"),
])
def test_unusable_json_is_a_clear_error(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(LogError, match=expected) as info:
        load_log(path)
    assert "bad.json" in str(info.value)
    with pytest.raises(ParameterFileError) as info:
        load_params(path)
    assert "bad.json" in str(info.value)


def test_a_directory_given_as_a_file(tmp_path):
    with pytest.raises(ParameterFileError, match="is a directory"):
        load_params(tmp_path)


# ------------------------------------------------------------- parameter files

def base_params() -> dict:
    return {"model": "m2", "actuator": "xl330", "kt": 1.6, "R": 2.6, "armature": 0.005,
            "friction_base": 0.05, "friction_stribeck": 0.05, "dtheta_stribeck": 0.2,
            "alpha": 1.35, "friction_viscous": 0.1}


@pytest.mark.parametrize("key, value", [("friction_base", -0.1), ("friction_viscous", -1.0),
                                        ("kt", -1.6), ("kt", 0.0), ("armature", 0.0)])
def test_unphysical_parameter_warns_naming_it(key, value):
    with pytest.warns(PlausibilityWarning, match=f"p.json: {key} = {value}"):
        from_dict({**base_params(), key: value}, "p.json")


@pytest.mark.parametrize("key, value", [("armature", 1e8), ("friction_base", 1e8),
                                        ("kt", 5e4)])
def test_parameter_far_above_its_bounds_warns_naming_it(key, value):
    with pytest.warns(PlausibilityWarning, match=re.escape(f"p.json: {key} = {value}") + ".*bounds"):
        from_dict({**base_params(), key: value}, "p.json")


@pytest.mark.parametrize("key, value", [("alpha", -1.0), ("alpha", 0.0), ("R", 0.0),
                                        ("dtheta_stribeck", -0.2)])
def test_unusable_parameter_is_an_error_naming_it(key, value):
    with pytest.raises(ParameterFileError, match=f"p.json: {key} = {value}"):
        from_dict({**base_params(), key: value}, "p.json")


def test_published_parameter_files_load_without_warnings():
    from conftest import require_shared

    data = require_shared()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in sorted(data.parent.glob("**/params/**/m*.json")):
            load_params(path)


# ---------------------------------------------- random corruptions: error or finite

PARAMS = ParameterSet.defaults("m4", "xl330")
BASE = processed_log(40)
ENTRY_KEYS = list(BASE["entries"][0])
HEADER_KEYS = ["mass", "length", "kp", "vin", "arm_mass", "dt", "damping"]

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10**20, max_value=10**20),
    st.sampled_from([0, 0.0, -0.0, 1e-300, 1e308, -1e308, 5e-324]),
    st.booleans(), st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
corruption = st.one_of(
    st.tuples(st.just("header"), st.sampled_from(HEADER_KEYS), values),
    st.tuples(st.just("entry"), st.tuples(st.integers(0, 39), st.sampled_from(ENTRY_KEYS)), values),
    st.tuples(st.just("drop_header"), st.sampled_from(HEADER_KEYS), st.none()),
    st.tuples(st.just("drop_entry_field"),
              st.tuples(st.integers(0, 39), st.sampled_from(ENTRY_KEYS)), st.none()),
    st.tuples(st.just("truncate"), st.integers(0, 39), st.none()),
    st.tuples(st.just("swap"), st.tuples(st.integers(0, 39), st.integers(0, 39)), st.none()),
    st.tuples(st.just("scale_time"), st.floats(-1e10, 1e10), st.none()),
)


def corrupt(data: dict, changes) -> dict:
    data = copy.deepcopy(data)
    entries = data["entries"]
    for kind, where, value in changes:
        if kind == "header":
            data[where] = value
        elif kind == "entry" and entries:
            entries[where[0] % len(entries)][where[1]] = value
        elif kind == "drop_header":
            data.pop(where, None)
        elif kind == "drop_entry_field" and entries:
            entries[where[0] % len(entries)].pop(where[1], None)
        elif kind == "truncate":
            del entries[where:]
        elif kind == "swap" and entries:
            i, j = (k % len(entries) for k in where)
            entries[i], entries[j] = entries[j], entries[i]
        elif kind == "scale_time":
            for e in entries:
                if isinstance(e.get("timestamp"), (int, float)):
                    e["timestamp"] *= where
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(corruption, min_size=1, max_size=3))
def test_random_corruptions_end_in_a_clear_error_or_a_finite_result(tmp_path_factory, changes):
    data = corrupt(BASE, changes)
    path = tmp_path_factory.mktemp("c") / "corrupt.json"
    path.write_text(json.dumps(data))  # NaN/Infinity tokens included, as Python writes them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlausibilityWarning)
        try:
            log = load_log(path, processed=True)
        except LogError as e:
            assert "corrupt.json" in str(e)
            return
        try:
            mae = simulate(log, PARAMS).mae
        except SimulationError as e:
            assert "corrupt.json" in str(e)
            return
    assert np.isfinite(mae)


def test_a_byte_order_mark_before_a_json_file_is_not_content(tmp_path):
    plain = write(tmp_path, processed_log(), "plain.json")
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())  # as a Windows editor saves it
    assert load_log(marked).entries == load_log(plain).entries
