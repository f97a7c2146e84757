"""Bad robot inputs, each refused in one line naming the file or option: recordings whose
timestamps are in the wrong unit, a joint list that is not UTF-8, a control file that is a
symlink loop, an MJCF that is not XML, a robot file whose control period would exhaust memory,
an ``--out`` holding a training recording, ``--variants`` that could never work."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from frictionsim.experiments.runner.cli import main
from frictionsim.params import ParameterSet, save_params

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"
pytestmark = pytest.mark.skipif(not RECORDINGS.is_dir(), reason="shared data not found")
MOTION = "slow_precision"


@pytest.fixture()
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(RECORDINGS / MOTION, tmp_path / "rec")
    save_params(tmp_path / "p.json", ParameterSet("m1", "sts3215_12v", {}, scheme="reference"))
    return tmp_path


def simulate(work: Path, *extra: str) -> list[str]:
    # --data finds the MJCF, unless --mjcf gives it (then --data would do nothing: refused)
    data = [] if "--mjcf" in extra else ["--data", str(DATA)]
    return ["robot", "simulate", "--robot", "so101", *data, "--params",
            str(work / "p.json"), "--no-progress", *extra]


def refused(argv: list[str], culprit: str, capsys) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert culprit in err and "Traceback" not in err and "this is a bug" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("scale, unit", [(1e-3, "milliseconds"), (1e-6, "seconds")])
def test_timestamps_in_another_unit_than_microseconds_are_refused(work, capsys, scale, unit):
    # written in ms or s after the first row, the rows would replay 10³ or 10⁶ times too fast
    for name in ("control.csv", "state_motor.csv"):
        path = work / "rec" / name
        rows = list(csv.reader(path.open()))
        for row in rows[2:]:
            row[1] = repr(float(row[1]) * scale)
        with path.open("w", newline="") as f:
            csv.writer(f).writerows(rows)
    err = refused(simulate(work, "rec"), "state_motor.csv", capsys)
    assert "bus period is 20 ms" in err and unit in err


def test_a_joint_list_that_is_not_utf8_is_named(work, capsys):
    (work / "rec" / "joint_list.txt").write_bytes(b"\xff\xfeRotation\n")
    refused(simulate(work, "rec"), "joint_list.txt: not UTF-8", capsys)


def test_a_joint_the_robot_file_needs_and_the_recording_lacks_is_named(work, capsys):
    path = work / "rec" / "joint_list.txt"
    path.write_text(path.read_text().replace("Elbow", "Elbow_Flex"))
    err = refused(simulate(work, "rec"), "joint_list.txt: no joint 'Elbow' recorded", capsys)
    assert "Elbow_Flex" in err


def test_a_spreadsheets_byte_order_mark_is_not_part_of_the_header(work, capsys):
    for name in ("control.csv", "state_motor.csv", "joint_list.txt"):
        path = work / "rec" / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(simulate(work, "rec")) == 0


def test_a_control_file_that_is_a_symlink_loop_is_named(work, capsys):
    (work / "rec" / "control.csv").unlink()
    (work / "rec" / "control.csv").symlink_to("control.csv")
    refused(simulate(work, "rec"), "control.csv", capsys)


def test_an_mjcf_that_is_not_xml_is_named_on_one_line(work, capsys):
    (work / "bad.xml").write_text("not xml at all\n")
    refused(simulate(work, "--mjcf", str(work / "bad.xml"), "rec"), "bad.xml: not a usable MJCF",
            capsys)


@pytest.mark.parametrize("edit, culprit", [
    (("control_period = 0.002", "control_period = 1e-9"), "control_period"),
    (("bus_period = 0.02", "bus_period = 0.99"), "bus_period"),
])
def test_robot_file_periods_are_bounded_before_anything_is_allocated(work, capsys, edit,
                                                                      culprit):
    from frictionsim.robot_files import builtin_robots

    text = builtin_robots()["so101"].read_text()
    text = text.replace(edit[0], edit[1], 1).replace(
        "control_period = 0.002", "control_period = 0.0001", 1 if culprit == "bus_period" else 0)
    (work / "r.toml").write_text(text)
    argv = simulate(work, "rec")
    argv[argv.index("so101")] = str(work / "r.toml")
    refused(argv, culprit, capsys)


def test_robot_identify_refuses_an_out_holding_its_own_recording(work, capsys):
    (work / "data").mkdir()
    shutil.move(work / "rec", work / "data" / "rec")
    before = sorted(p.name for p in (work / "data" / "rec").iterdir())
    refused(["robot", "identify", "--robot", "so101", "--data", str(DATA), "--recordings",
             str(work / "data"), "--model", "m1", "--budget", "4", "--out", str(work / "data"),
             "--overwrite", "--no-progress"], "holds the recording rec", capsys)
    assert sorted(p.name for p in (work / "data" / "rec").iterdir()) == before


@pytest.mark.parametrize("count, culprit", [("0", "--variants must be"),
                                             ("3", "has no ranges")])
def test_variants_are_checked_before_any_replay(work, capsys, count, culprit):
    err = refused(simulate(work, "--variants", count, "rec"), culprit, capsys)
    assert "simulating" not in err
    assert "mean" not in capsys.readouterr().out


@pytest.mark.parametrize("extra, culprit", [
    (["--mjcf", "{w}"], "no MJCF file at"),
    (["--mjcf", "{w}/bad.xml", "--data", "{w}"], "--mjcf gives it"),
    (["--engine", "mjcf", "--scheme", "reference"], "--scheme"),
    (["--with", "backlash", "--engine", "mjcf"], "--with backlash switches on terms"),
    (["--with", "ripple", "supply", "--engine", "mjcf"], "--with ripple supply switches on"),
    (["--seed", "3"], "without --variants it does nothing"),
    (["--engine", "event_driven", "--scheme", "reference"],
     "engine event_driven has no fixed step's position update"),
])
def test_simulate_options_that_cannot_apply_are_named(work, capsys, extra, culprit):
    argv = [a.format(w=work) for a in extra]
    base = simulate(work, *argv, "rec")
    if "mjcf" in extra:  # the shipped model takes no parameter file
        i = base.index("--params")
        del base[i:i + 2]
    refused(base, culprit, capsys)


def test_an_export_into_a_file_is_refused(work, capsys):
    (work / "file").write_text("x")
    refused(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
             str(work / "p.json"), "--out", str(work / "file"), "--overwrite"], "is a file", capsys)
    assert (work / "file").read_text() == "x"


@pytest.mark.parametrize("model, extra, culprit", [
    ("m6", ["--budget", "20"], "--budget acts on the native refit on --recordings"),
    ("m6", ["--seed", "2"], "--seed acts on the native refit on --recordings"),
    ("m1", ["--recordings", "{w}/rec"], "is an M1 fit, which MuJoCo carries as it is"),
])
def test_an_export_refuses_refit_options_that_would_do_nothing(work, capsys, model, extra,
                                                               culprit):
    save_params(work / "f.json", ParameterSet(model, "sts3215_12v", {}, scheme="semi_implicit"))
    refused(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
             str(work / "f.json"), "--out", str(work / "x"), "--no-progress",
             *[a.format(w=work) for a in extra]], culprit, capsys)
    assert not (work / "x").exists()


def test_servos_need_a_hinge_joint():
    pytest.importorskip("mujoco")
    from frictionsim.solvers.mujoco_adapter import ServoModel

    free = ('<mujoco><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody>'
            "</mujoco>")
    with pytest.raises(ValueError, match="no named hinge joint"):
        ServoModel.from_robot(free, ParameterSet.defaults("m1", "sts3215_7v4"))
