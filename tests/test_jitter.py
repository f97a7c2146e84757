"""The recorder's timing statistics (frictionsim.experiments.analysis.jitter, `run jitter`) on synthetic
raw logs whose timing is known exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from frictionsim.experiments.analysis.jitter import jitter_report
from frictionsim.experiments.runner.cli import main
from frictionsim.logs import Log, save_log

HEADER = {"mass": 0.5, "length": 0.15, "kp": 400, "motor": "xl330"}


def raw_log(timestamps) -> Log:
    entries = [{"position": 0.0, "goal_position": 0.0, "torque_enable": True,
                "timestamp": float(t)} for t in timestamps]
    return Log(dict(HEADER), entries)


def known_timing() -> np.ndarray:
    """Periods alternating 4 and 6 ms (mean 5), with one 20 ms gap starting at entry 100."""
    periods = np.tile([0.004, 0.006], 200)
    periods[100] = 0.020
    return np.concatenate([[0.0], np.cumsum(periods)])


def test_statistics_of_a_known_timing():
    t = known_timing()
    stats = jitter_report([raw_log(t)])["per_log"]["<log>"]
    dt = np.diff(t)
    assert stats["periods"] == 400
    assert stats["mean_ms"] == pytest.approx(1e3 * dt.mean(), rel=1e-12)
    assert stats["mean_ms"] == pytest.approx((199 * 4 + 200 * 6 + 20) / 400)
    assert stats["std_ms"] == pytest.approx(1e3 * dt.std(), rel=1e-12)
    assert stats["min_ms"] == pytest.approx(4.0) and stats["max_ms"] == pytest.approx(20.0)
    assert stats["p50_ms"] == pytest.approx(6.0)  # 199 periods of 4 ms, 200 of 6, one of 20
    assert stats["p1_ms"] == pytest.approx(4.0) and stats["p99_ms"] == pytest.approx(6.0)
    assert stats["late"] == 1 and stats["late_fraction"] == pytest.approx(1 / 400)
    worst = stats["worst_gaps"][0]
    assert worst["gap_ms"] == pytest.approx(20.0) and worst["at_s"] == pytest.approx(t[100])
    assert stats["rate_hz"] == pytest.approx(1.0 / dt.mean())


def test_overall_pools_every_log():
    a = np.arange(0, 201) * 0.005
    b = np.arange(0, 101) * 0.010
    report = jitter_report([raw_log(a), raw_log(b)])
    overall = report["overall"]
    assert overall["periods"] == 300
    assert overall["mean_ms"] == pytest.approx((200 * 5 + 100 * 10) / 300)
    assert overall["max_ms"] == pytest.approx(10.0) and overall["min_ms"] == pytest.approx(5.0)


def test_processed_logs_and_single_entries_are_refused():
    processed = raw_log(np.arange(10) * 0.005)
    processed.header["dt"] = 0.005
    with pytest.raises(ValueError, match="processed"):
        jitter_report([processed])
    with pytest.raises(ValueError, match="fewer than two"):
        jitter_report([raw_log([0.0])])


def test_cli(tmp_path, capsys):
    path = save_log(tmp_path / "raw" / "known.json", raw_log(known_timing()))
    out = tmp_path / "jitter.json"
    assert main(["run", "jitter", str(path.parent), "--json", str(out), "--plot",
                 str(tmp_path / "jitter.png"), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["per_log"]["known.json"]["late"] == 1
    assert data["overall"]["max_ms"] == pytest.approx(20.0)
    assert (tmp_path / "jitter.png").stat().st_size > 0
    assert "known.json" in capsys.readouterr().out
