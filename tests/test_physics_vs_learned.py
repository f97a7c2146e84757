"""``run physics-vs-learned``: held-out sets chosen from the logs' headers, and the run on the
recorded XL330 logs (a small budget: the table's shape and files, not its figures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frictionsim.experiments.identification.physics_vs_learned import held_out_splits
from frictionsim.experiments.runner.cli import main
from frictionsim.logs import Log

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330" / "processed"


def log(name, trajectory="sin", kp=400.0, mass=0.5) -> Log:
    return Log({"mass": mass, "length": 0.1, "kp": kp, "trajectory": trajectory, "dt": 0.005},
               [], Path(name))


def names(logs):
    return sorted(lg.name for lg in logs)


def test_the_splits_follow_the_headers():
    logs = [log("a1"), log("a2"), log("a3"), log("b1", "step"), log("c1", kp=800),
            log("c2", kp=800), log("d1", kp=200, mass=1.0)]
    splits, why = held_out_splits(logs)
    assert list(splits) == ["repetitions", "higher_gains", "lower_gains", "heavier_mass"]
    train, held = splits["repetitions"]
    assert names(held) == ["a3", "c2"] and len(train) == 5  # the last of each repeated one
    train, held = splits["higher_gains"]
    assert {lg.kp for lg in train} == {200, 400} and {lg.kp for lg in held} == {800}
    train, held = splits["lower_gains"]
    assert {lg.kp for lg in train} == {400, 800} and names(held) == ["d1"]
    train, held = splits["heavier_mass"]
    assert names(held) == ["d1"] and len(train) == 6
    assert why == {}


def test_a_split_the_logs_do_not_allow_says_why():
    splits, why = held_out_splits([log("a"), log("b", "step")])
    assert splits == {}
    assert set(why) == {"repetitions", "higher_gains", "lower_gains", "heavier_mass"}
    assert "kp 400" in why["higher_gains"] and "0.5 kg" in why["heavier_mass"]


def test_the_run_on_the_xl330_logs_writes_every_model_of_every_split(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from frictionsim.logs import load_log

    # kp 200 and 400 only (the suite's time): each gain split holds out the other gain
    logs = [str(p) for p in sorted(DATA.glob("*.json")) if load_log(p).kp in (200, 400)]
    assert len(logs) == 8
    out = tmp_path / "pvl"
    args = ["run", "physics-vs-learned", "--actuator", "xl330", "--logs", *logs, "--out",
            str(out), "--budget", "40", "--hybrid-budget", "30", "--max-epochs", "20",
            "--no-progress", "--json",
            str(tmp_path / "pvl.json")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "repetitions: not possible" in text and "heavier_mass: not possible" in text
    assert "open-loop torque MAE" in text and "fit time (s)" in text
    section = json.loads((tmp_path / "pvl.json").read_text())
    assert list(section) == ["higher_gains", "lower_gains"]
    for split, models in section.items():
        assert list(models) == ["m1", "m6", "net", "hybrid"]
        for entry in models.values():
            assert 0 < entry["train_mae"] < 1 and 0 < entry["validation_mae"] < 1
            assert entry["fit_seconds"] > 0
        for kind in ("net", "hybrid"):  # the open-loop torque error beside the closed loop
            assert 0 < models[kind]["validation_torque_mae"] < 10
            assert models[kind]["validation_torque_spread"] > 0
        # a hybrid is never worse than its M6 on the logs it was trained on
        assert models["hybrid"]["train_mae"] <= models["m6"]["train_mae"] * (1 + 1e-12)
        files = {p.name for p in (out / split).iterdir()}
        assert {"m1.json", "m6.json", "net.json", "hybrid.json"} <= files
    # an earlier run is not replaced unasked
    assert main(args[:-2]) == 1
    assert "holds an earlier run; pass --overwrite" in capsys.readouterr().err


def test_held_out_motions_are_a_seeded_permutation_of_the_sorted_recordings():
    from types import SimpleNamespace

    from frictionsim.experiments.robots.physics_vs_learned import held_out_motions

    recs = [SimpleNamespace(name=n) for n in ("e", "a", "d", "b", "c", "f")]
    train, held = held_out_motions(recs, 2, 0)
    assert len(held) == 2 and len(train) == 4
    assert {r.name for r in train} | {r.name for r in held} == set("abcdef")
    again = held_out_motions(list(reversed(recs)), 2, 0)[1]
    assert [r.name for r in again] == [r.name for r in held]  # the order given does not matter
    for bad in (0, 6):
        with pytest.raises(ValueError, match="--held-out"):
            held_out_motions(recs, bad, 0)


def test_the_run_on_a_robots_recordings_holds_out_motions(tmp_path, capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("mujoco")
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    recordings = shared / "so101" / "recordings"
    if not recordings.is_dir():
        pytest.skip(f"SO-101 recordings not found at {recordings}")
    out = tmp_path / "pvl"
    args = ["run", "physics-vs-learned", "--robot", "so101", "--data", str(shared),
            "--recordings", str(recordings / "friction_gravity"), str(recordings / "static_holding"),
            str(recordings / "slow_precision"), "--held-out", "1", "--out", str(out),
            "--budget", "16", "--hybrid-budget", "8", "--max-epochs", "8", "--rollout-epochs", "0",
            "--no-progress", "--json", str(tmp_path / "pvl.json")]
    assert main(args) == 0
    section = json.loads((tmp_path / "pvl.json").read_text())
    assert list(section) == ["motions"]
    assert list(section["motions"]) == ["m1", "m6", "net", "hybrid"]
    for entry in section["motions"].values():
        assert 0 < entry["train_mae"] < 1 and 0 < entry["validation_mae"] < 1
        assert entry["fit_seconds"] > 0
    for kind in ("net", "hybrid"):  # the open-loop torque error beside the closed loop
        entry = section["motions"][kind]
        assert 0 < entry["validation_torque_mae"] < 10 and entry["validation_torque_spread"] > 0
    assert "open-loop torque MAE" in capsys.readouterr().out
    assert {"m1.json", "m6.json", "net.json", "hybrid.json", "report.md"} <= \
        {p.name for p in (out / "motions").iterdir()}
    capsys.readouterr()
    assert main(["run", "physics-vs-learned", "--robot", "so101", "--logs", str(DATA)]) == 1
    assert "bench logs (--actuator, --logs) or a robot's recordings" in capsys.readouterr().err
