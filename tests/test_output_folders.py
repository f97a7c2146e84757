"""An output folder is replaced whole or not at all (experiments.common.staging), and a file
the system will not write is one line naming it (frictionsim.atomic): the earlier result
stays intact through a disk that fills half-way, an error or an interrupt, for every command
that writes a folder; an interrupted run's partial result is kept beside it."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path

import pytest

from frictionsim import atomic
from frictionsim.errors import ConfigurationError, OutputError
from frictionsim.experiments.common.staging import StagedFolder
from frictionsim.experiments.runner.cli import main

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
XL330 = DATA / "xl330" / "processed"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) with its content's digest."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(parent: Path) -> list[str]:
    """Staging or backup folders a run left beside its output."""
    return sorted(p.name for p in parent.iterdir() if ".new-" in p.name or ".old-" in p.name)


@pytest.fixture
def disk_fills_after(monkeypatch):
    """``disk_fills_after(n)``: the (n+1)-th atomic write, and every one after it, fails as
    on a full disk (at the fsync, where a full disk shows)."""
    def fill(n: int) -> None:
        calls = {"n": 0}
        real = atomic.os.fsync

        def fsync(fd):
            calls["n"] += 1
            if calls["n"] > n:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(fd)

        monkeypatch.setattr(atomic.os, "fsync", fsync)
    return fill


def test_a_staged_folder_replaces_the_earlier_one_whole(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    (out / "notes.txt").write_text("mine")
    with StagedFolder(out, overwrite=True, keep=lambda p: p.name == "notes.txt") as stage:
        assert stage.parent == tmp_path and stage != out
        assert (out / "old.json").exists()  # untouched while the run writes
        assert atomic.shown(stage / "new.json") == out / "new.json"
        (stage / "new.json").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.json", "notes.txt"]
    assert leftovers(tmp_path) == []


def test_a_failure_keeps_the_earlier_folder_and_leaves_nothing_beside_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    before = snapshot(out)
    with pytest.raises(OutputError, match="new.json: not written"):
        with StagedFolder(out, overwrite=True) as stage:
            atomic.write_text(stage / "half.json", "x")
            raise atomic.unwritable(stage / "new.json", OSError(errno.ENOSPC, "full"))
    assert snapshot(out) == before and leftovers(tmp_path) == []


def test_an_interrupt_keeps_the_earlier_folder_and_the_partial_result_beside_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    staged = StagedFolder(out, overwrite=True)
    with pytest.raises(KeyboardInterrupt):
        with staged as stage:
            (stage / "partial.json").write_text("best so far")
            raise KeyboardInterrupt
    assert snapshot(out) == {"old.json": hashlib.sha256(b"old").hexdigest()}
    assert staged.result == tmp_path / "out.interrupted"
    assert [p.name for p in staged.result.iterdir()] == ["partial.json"]
    # with nothing to lose, the partial result takes the folder's place (its files say so)
    fresh = StagedFolder(tmp_path / "fresh")
    with fresh as stage:
        (stage / "partial.json").write_text("best so far")
        fresh.interrupted = True
    assert fresh.result == tmp_path / "fresh" and (fresh.result / "partial.json").exists()
    # stopped before it saved anything (an interrupt in the first compile): no folder at all
    empty = StagedFolder(tmp_path / "empty")
    with empty:
        empty.interrupted = True
    assert not (tmp_path / "empty").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".empty")]


def test_files_written_after_an_interrupt_are_named_where_the_interrupt_leaves_them(tmp_path):
    from frictionsim.experiments.common.staging import name_interrupted

    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    fresh = tmp_path / "fresh"
    with StagedFolder(out, overwrite=True) as stage, StagedFolder(fresh) as fresh_stage:
        assert atomic.shown(stage / "report.md") == out / "report.md"
        name_interrupted()  # what the runner's signal handler calls
        # the earlier result stays in out: this run's lands beside it
        assert atomic.shown(stage / "report.md") == tmp_path / "out.interrupted" / "report.md"
        # nothing to lose: the partial result takes the folder's own place
        assert atomic.shown(fresh_stage / "report.md") == fresh / "report.md"


def test_a_non_empty_folder_is_refused_without_overwrite(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a").write_text("a")
    with pytest.raises(ConfigurationError, match="--out .* is not empty"):
        StagedFolder(tmp_path / "out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="is a file"):
        StagedFolder(tmp_path / "file", overwrite=True)


def test_a_file_the_disk_will_not_take_is_named(tmp_path, disk_fills_after):
    disk_fills_after(0)
    with pytest.raises(OutputError, match=r"o\.json: not written \(No space left on device\)"):
        atomic.write_json(tmp_path / "o.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []  # no temporary file left


def _run_twice(tmp_path, capsys, disk_fills_after, first, second, writes, out):
    """``first`` writes a result into ``out``; ``second`` (an --overwrite) meets a disk that
    fills after ``writes`` atomic writes: exit 1, one line naming a file, the first result
    intact byte for byte, nothing left beside it."""
    assert main(first) == 0
    before = snapshot(out)
    capsys.readouterr()
    disk_fills_after(writes)
    assert main(second) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not written (No space left on device)" in err, err
    assert ".new-" not in err and str(out) in err
    assert snapshot(out) == before
    assert leftovers(out.parent) == []


def test_identify_keeps_its_earlier_result_through_a_full_disk(tmp_path, capsys,
                                                                 disk_fills_after):
    if not XL330.is_dir():
        pytest.skip("shared XL330 logs not found")
    logs = [str(p) for p in sorted(XL330.glob("*.json"))[:2]]
    out = tmp_path / "fit"
    base = ["identify", "--actuator", "xl330", "--budget", "12", "--logs", *logs,
            "--out", str(out), "--no-progress"]
    _run_twice(tmp_path, capsys, disk_fills_after, base + ["--model", "m1"],
               base + ["--model", "m1", "m2", "--overwrite"], 2, out)


def test_robot_identify_export_and_synthesize_keep_theirs_through_a_full_disk(
        tmp_path, capsys, disk_fills_after, monkeypatch):
    pytest.importorskip("mujoco")
    recordings = tmp_path / "recordings"
    assert main(["robot", "synthesize", "--robot", "so100", "--motions", "1", "--seconds",
                 "2", "--out", str(recordings), "--no-progress"]) == 0
    before = snapshot(recordings)
    disk_fills_after(2)
    assert main(["robot", "synthesize", "--robot", "so100", "--motions", "2", "--seconds",
                 "2", "--out", str(recordings), "--overwrite", "--no-progress"]) == 1
    assert snapshot(recordings) == before and leftovers(tmp_path) == []
    monkeypatch.undo()

    fit = tmp_path / "fit"
    base = ["robot", "identify", "--robot", "so100", "--recordings", str(recordings),
            "--window", "1", "--budget", "6", "--out", str(fit), "--no-progress",
            "--no-joint-scales"]
    _run_twice(tmp_path, capsys, disk_fills_after, base + ["--model", "m1"],
               base + ["--model", "m1", "--overwrite"], 1, fit)
    monkeypatch.undo()

    export = tmp_path / "export"
    argv = ["robot", "export-mjcf", "--robot", "so100", "--params", str(fit / "m1.json"),
            "--out", str(export), "--no-progress"]
    _run_twice(tmp_path, capsys, disk_fills_after, argv, argv + ["--overwrite"], 0, export)


def test_the_demo_keeps_its_earlier_result_through_a_full_disk(tmp_path, capsys,
                                                                disk_fills_after):
    out = tmp_path / "demo"
    argv = ["demo", "--budget", "6", "--models", "m1", "--out", str(out), "--no-progress"]
    _run_twice(tmp_path, capsys, disk_fills_after, argv, argv + ["--overwrite"], 5, out)
    assert json.loads((out / "demo.json").read_text())["validation"]


def test_an_interrupted_overwrite_keeps_the_earlier_fit_and_puts_its_own_beside(
        tmp_path, capsys, monkeypatch):
    pytest.importorskip("mujoco")
    from frictionsim.robot_params import load_robot_params
    from frictionsim.solvers.robot_windows import RobotWindows

    recordings = tmp_path / "recordings"
    assert main(["robot", "synthesize", "--robot", "so100", "--motions", "1", "--seconds",
                 "2", "--out", str(recordings), "--no-progress"]) == 0
    fit = tmp_path / "fit"
    base = ["robot", "identify", "--robot", "so100", "--recordings", str(recordings),
            "--window", "1", "--model", "m1", "--out", str(fit), "--no-progress",
            "--no-joint-scales"]
    assert main(base + ["--budget", "6"]) == 0
    before = snapshot(fit)
    calls = {"n": 0}
    original = RobotWindows.errors

    def interrupted(self, rows, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, rows, *args, **kwargs)

    monkeypatch.setattr(RobotWindows, "errors", interrupted)
    capsys.readouterr()
    assert main(base + ["--budget", "500", "--overwrite"]) == 130
    err = capsys.readouterr().err
    assert snapshot(fit) == before
    partial = tmp_path / "fit.interrupted"
    assert f"this run's partial one is in {partial}" in err
    assert load_robot_params(partial / "m1.json").fit["interrupted"] is True
    assert leftovers(tmp_path) == []


def test_a_report_cut_short_while_its_figures_are_drawn_says_it_was_interrupted(tmp_path):
    # the JSON is written before the figures and the Markdown: an interrupt there must not
    # leave a folder whose report reads as a finished run
    from frictionsim.experiments.common.output import marked_on_interrupt, write_json

    path = tmp_path / "report.json"
    report = {"interrupted": False, "models": {"m1": {}}}
    write_json(path, report)
    with pytest.raises(KeyboardInterrupt), marked_on_interrupt(path, report):
        raise KeyboardInterrupt
    saved = json.loads(path.read_text())
    assert saved["interrupted"] is True and saved["models"] == {"m1": {}}
    assert "figures" in saved["interrupted_while"]
    with marked_on_interrupt(path, {"interrupted": False}):  # finished: left as written
        pass
    assert json.loads(path.read_text())["interrupted"] is True


def test_counts_in_messages_agree_with_their_number():
    from frictionsim.experiments.common.output import counted

    assert counted(1, "training log") == "1 training log"
    assert [counted(n, "window") for n in (0, 2)] == ["0 windows", "2 windows"]
    assert counted(3, "bootstrap identification", "bootstrap identifications") \
        == "3 bootstrap identifications"
