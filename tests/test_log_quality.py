"""Data quality: signed load, encoder glitches (found, repaired, dropped), trimming, supply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frictionsim.experiments.runner.cli import main
from frictionsim.log_quality import (
    decode_load,
    drop_glitches,
    find_glitches,
    repair_glitches,
    supply_mismatch,
    trim,
)
from frictionsim.logs import Log, LogError, load_log

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330"


def raw_log(n=400, dt=0.005, vin=7.4, volts=7.4) -> Log:
    t = np.arange(n) * dt + 0.001
    q = 0.5 * np.sin(t)
    entries = [{"position": float(q[k]), "speed": 0.5 * float(np.cos(t[k])), "load": 0,
                "input_volts": volts, "temp": 30, "goal_position": float(q[k]),
                "torque_enable": True, "timestamp": float(t[k])} for k in range(n)]
    return Log({"mass": 0.5, "length": 0.1, "kp": 400, "vin": vin}, entries, Path("x.json"))


def test_load_is_decoded_as_signed_16_bit():
    log = raw_log(4)
    for e, value in zip(log.entries, (65535, 3, 32768, 32767)):
        e["load"] = value
    decoded, wrapped = decode_load(log)
    assert [e["load"] for e in decoded.entries] == [-1, 3, -32768, 32767]
    assert wrapped == 2
    assert log.entries[0]["load"] == 65535  # the input is not changed


def test_a_spike_and_an_offset_are_found_with_their_times():
    log = raw_log()
    log.entries[100]["position"] += 2.0          # one-sample spike
    for k in range(200, 206):                   # a run down to −3 rad for 30 ms
        log.entries[k]["position"] = -3.0
    glitches = find_glitches(log)
    assert [(g.first, g.last) for g in glitches] == [(100, 100), (200, 205)]
    assert glitches[0].t == pytest.approx(log.entries[100]["timestamp"])
    assert glitches[1].jump < -2.5
    assert "t = 1.001 s" in glitches[1].describe("x.json")
    assert find_glitches(raw_log()) == []


def test_repair_interpolates_and_drop_removes():
    log = raw_log()
    clean = [e["position"] for e in log.entries]
    log.entries[100]["position"] += 2.0
    glitches = find_glitches(log)
    repaired = repair_glitches(log, glitches)
    assert repaired.entries[100]["position"] == pytest.approx(clean[100], abs=1e-4)
    assert find_glitches(repaired) == []
    dropped = drop_glitches(log, glitches)
    assert len(dropped.entries) == len(log.entries) - 1
    assert find_glitches(dropped) == []


def test_no_glitch_in_the_recorded_xl330_logs():
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    for path in sorted((DATA / "raw").glob("*.json")):
        assert find_glitches(load_log(path)) == [], path.name


def test_trim_keeps_a_window_from_zero():
    log = trim(raw_log(), 0.5, 1.0)
    t = [e["timestamp"] for e in log.entries]
    assert t[0] >= 0 and t[-1] <= 0.5 and len(t) == 100
    with pytest.raises(LogError, match="keeps 0 entries"):
        trim(raw_log(), 10.0, 11.0)


def test_a_header_vin_the_logged_supply_contradicts_is_named():
    assert supply_mismatch(raw_log(vin=7.4, volts=7.2)) is None
    message = supply_mismatch(raw_log(vin=15.0, volts=12.0))
    assert "x.json" in message and "15 V" in message and "+25 %" in message


def test_process_repairs_glitches_decodes_load_and_warns(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    log = raw_log(vin=15.0, volts=12.0)
    log.entries[50]["position"] = -3.0
    log.entries[60]["load"] = 65530
    (raw / "g.json").write_text(json.dumps(log.to_dict()))
    assert main(["process", str(raw), str(tmp_path / "out"), "--glitches", "repair",
                 "--window", "0.1", "1.9"]) == 0
    err = capsys.readouterr().err
    assert "g.json: encoder glitch at t = 0.251 s" in err and "repaired" in err
    assert "header vin = 15 V" in err
    out = load_log(tmp_path / "out" / "g.json")
    assert min(e["position"] for e in out.entries) > -1.0
    assert min(e["load"] for e in out.entries) < 0  # −6, not 65530 interpolated
    assert out.entries[-1]["timestamp"] < 1.8 + 1e-9
    # loading a processed log with a glitch warns, naming log and time
    bad = tmp_path / "bad"
    assert main(["process", str(raw), str(bad)]) == 0
    capsys.readouterr()
    assert main(["compare", "--params", str(_params(tmp_path)), "--logs", str(bad)]) == 0
    assert "g.json: encoder glitch" in capsys.readouterr().err


def _params(tmp_path: Path) -> Path:
    from frictionsim.params import ParameterSet, save_params

    return save_params(tmp_path / "m1.json", ParameterSet.defaults("m1", "xl330"))


def test_many_contradicted_header_vins_make_one_line_that_can_be_acknowledged(capsys,
                                                                               monkeypatch):
    from frictionsim.experiments.common.loading import check_quality
    from frictionsim.log_quality import ACCEPT_VIN_ENV

    monkeypatch.delenv(ACCEPT_VIN_ENV, raising=False)
    logs = [raw_log(vin=15.0, volts=12.0) for _ in range(40)]
    check_quality(logs)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: 40 logs have a header vin")
    assert "header vin = 15 V" in err[0] and ACCEPT_VIN_ENV in err[0]
    check_quality(logs[:1])
    assert "40 logs" not in capsys.readouterr().err  # one log: its own line, as before
    monkeypatch.setenv(ACCEPT_VIN_ENV, "1")
    check_quality(logs)
    assert capsys.readouterr().err == ""


def test_a_glitch_in_a_10_ms_log_is_found_and_holds_its_sample():
    # third-party raw logs are read every 10 ms: a jump there was missed by a 7.5 ms window,
    # and one the speed allowance covered was reported as "0 sample"
    log = raw_log(dt=0.010)
    log.entries[100]["position"] += 0.544
    for k in range(200, 204):
        log.entries[k]["position"] = -2.0
    glitches = find_glitches(log)
    assert [(g.first, g.last) for g in glitches] == [(100, 100), (200, 203)]
    assert all(g.last >= g.first for g in glitches)
    assert "(1 sample, +0.5" in glitches[0].describe("x.json")
    assert find_glitches(repair_glitches(log, glitches)) == []
    assert find_glitches(raw_log(dt=0.010)) == []


def test_a_jump_across_a_gap_in_the_log_is_no_glitch():
    log = raw_log(dt=0.010)
    del log.entries[150:160]                     # 100 ms without a reading
    log.entries[150]["position"] += 0.8          # the arm moved meanwhile
    for e in log.entries[151:]:
        e["position"] += 0.8
    assert find_glitches(log) == []
