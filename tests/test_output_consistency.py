"""Consistent output: progress only on a terminal, reports as tables, labels that tell files apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.analysis.comparison import labels
from frictionsim.experiments.common import progress as progress_module
from frictionsim.experiments.common.progress import Quiet, progress
from frictionsim.experiments.runner.cli import main
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, restrict
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import Log, process, save_log
from frictionsim.params import save_params

ROOT = Path(__file__).resolve().parents[1]
TRUTH = restrict(GROUND_TRUTH, "m1")


@pytest.fixture(scope="module")
def raw_logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("raw")
    for kp in (16.0, 32.0, 48.0):
        log = record(TRUTH, BenchSetup(0.5, 0.1, kp), "sin_sin", SensorModel(), duration=1.0)
        save_log(folder / f"sin_sin_kp{kp:g}.json", log)
    return folder


def test_progress_is_drawn_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress_module, "interactive", lambda: False)
    assert isinstance(progress(range(5), enabled=True), Quiet)
    monkeypatch.setattr(progress_module, "interactive", lambda: True)
    assert not isinstance(progress(range(5), enabled=True), Quiet)
    assert isinstance(progress(range(5), enabled=False), Quiet)  # --no-progress
    assert isinstance(progress(range(5), enabled=True, minimum=10), Quiet)
    assert list(Quiet(range(3))) == [0, 1, 2]


def test_off_a_terminal_a_long_job_says_where_it_is_now_and_then(monkeypatch, capsys):
    clock = iter(float(t) for t in range(0, 1000, 10))  # each reading 10 s after the last
    monkeypatch.setattr(progress_module, "clock", lambda: next(clock))
    monkeypatch.setattr(progress_module, "interactive", lambda: False)
    bar = progress(total=9, desc="m6", unit="eval", enabled=True)
    for n in range(9):
        bar.set_postfix_str(f"best {9 - n} mrad")
        bar.update(1)
    err = capsys.readouterr().err.splitlines()
    # started at 0 s; the readings at 10, 20, … s: a line at 30, 60 and 90 s
    assert err == ["m6: 3/9 evals (best 7 mrad), 30 s", "m6: 6/9 evals (best 4 mrad), 60 s",
                   "m6: 9/9 evals (best 1 mrad), 90 s"]
    quiet = progress(total=9, desc="m6", unit="eval", enabled=False)  # --no-progress
    for _ in range(9):
        quiet.update(1)
    assert capsys.readouterr().err == ""


def test_process_into_a_file_has_no_redraws(raw_logs, tmp_path):
    bad = raw_logs.parent / "with_bad"
    bad.mkdir(exist_ok=True)
    for p in raw_logs.glob("*.json"):
        (bad / p.name).write_text(p.read_text())
    (bad / "broken.json").write_text('{"mass": 1}')
    result = subprocess.run([sys.executable, "-m", "frictionsim.experiments.runner.cli", "process", str(bad),
                             str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert "\r" not in result.stdout + result.stderr
    assert result.stdout.strip().splitlines() == [
        f"processed 3 of 4 logs at dt = 0.005 s into {tmp_path / 'out'}"]
    assert "broken.json" in result.stderr and result.stderr.count("\n") == 1


def test_compare_labels_files_of_the_same_name_by_their_folder(raw_logs, tmp_path, capsys):
    a = save_params(tmp_path / "xl330" / "m1.json", TRUTH)
    b = save_params(tmp_path / "mx64" / "m1.json", TRUTH.with_values(friction_base=0.2))
    assert labels([a, b]) == ["xl330/m1", "mx64/m1"]
    assert labels([a, tmp_path / "c" / "other.json"]) == ["m1", "other"]
    deep = [tmp_path / "x" / "p" / "m1.json", tmp_path / "y" / "p" / "m1.json"]
    assert labels(deep) == ["x/p/m1", "y/p/m1"]
    processed = tmp_path / "processed"
    for p in raw_logs.glob("*.json"):
        from frictionsim.logs import load_log

        save_log(processed / p.name, process(load_log(p)))
    out = tmp_path / "cmp.json"
    assert main(["compare", "--params", str(a), str(b), "--logs", str(processed), "--json",
                 str(out)]) == 0
    assert set(json.loads(out.read_text())) == {"xl330/m1", "mx64/m1"}


def test_the_identification_report_lists_per_log_figures_as_tables(raw_logs, tmp_path):
    from frictionsim.logs import load_log

    processed = tmp_path / "processed"
    for p in raw_logs.glob("*.json"):
        save_log(processed / p.name, process(load_log(p)))
    out = tmp_path / "ident"
    assert main(["identify", "--actuator", "mx64", "--model", "m1", "m3", "--logs",
                 str(processed), "--validation-kp", "48", "--budget", "60", "--out", str(out),
                 "--no-progress"]) == 0
    md = (out / "report.md").read_text()
    assert "## Validation MAE per log (mrad)" in md and "## Training MAE per log (mrad)" in md
    assert "| log | trajectory | kp | m1 | m3 |" in md
    assert "| sin_sin_kp48.json | sin_sin | 48 |" in md
    assert "MAE per log (mrad): " not in md  # no paragraph of figures


def test_loading_many_logs_goes_through_the_progress_display(monkeypatch, tmp_path):
    from frictionsim.experiments.common import loading

    seen = {}

    def spy(iterable=None, **kwargs):
        seen.update(kwargs)
        return Quiet(iterable)

    monkeypatch.setattr(loading, "progress", spy)
    log = Log({"mass": 0.5, "length": 0.1, "kp": 32, "dt": 0.005},
              [{"position": 0.0, "goal_position": 0.0, "torque_enable": True,
                "timestamp": 0.005 * k} for k in range(3)])
    for i in range(25):
        save_log(tmp_path / f"{i:02d}.json", log)
    assert len(loading.load_logs([tmp_path])) == 25
    assert seen["desc"] == "loading logs" and seen["minimum"] == 20
