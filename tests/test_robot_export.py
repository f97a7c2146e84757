"""``robot export-mjcf``: a robot fit as a plain MuJoCo model, checked by replaying it in
plain MuJoCo against frictionsim's own servos."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.dom import minidom

import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim import atomic  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.robot_params import RobotParameters  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"
pytestmark = pytest.mark.skipif(not RECORDINGS.is_dir(), reason="shared data not found")


def fit_file(path: Path, model: str) -> Path:
    values = {"friction_base": 0.12, "friction_viscous": 0.1, "kt": 2.2, "R": 9.0,
              "armature": 0.02}
    if model == "m6":
        values |= {"friction_stribeck": 0.2}
    params = ParameterSet(model, "sts3215_12v", values, scheme="semi_implicit")
    atomic.write_json(path, RobotParameters("so101", {"sts3215_12v": params}).to_dict())
    return path


def export(tmp_path: Path, params: Path, *extra: str) -> dict:
    out = tmp_path / "cost.json"
    assert main(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
                 str(params), "--out", str(tmp_path / "export"), "--json", str(out),
                 "--no-progress", *extra]) == 0
    return json.loads(out.read_text())


def test_an_m1_robot_fit_exports_exactly_and_the_folder_stands_alone(tmp_path, monkeypatch,
                                                                      capsys):
    summary = export(tmp_path, fit_file(tmp_path / "m1.json", "m1"), "--validation",
                     str(RECORDINGS / "slow_precision"))
    # the position loop and M1 are native: plain MuJoCo replays what frictionsim simulates
    held = summary["validation"]
    assert abs(held["export_mae_rad"] - held["frictionsim_mae_rad"]) < 5e-5
    assert set(summary["joints"]) == {"shoulder_pan", "shoulder_lift", "elbow_flex",
                                      "wrist_flex", "wrist_roll"}
    pan = summary["joints"]["shoulder_pan"]
    assert pan["damping"] == pytest.approx(2.2**2 / 9.0 + 0.1)
    assert pan["frictionloss"] == 0.12 and pan["armature"] == 0.02
    # well-formed for strict parsers; loads from another folder with its own meshes
    path = tmp_path / "export" / "so101.xml"
    minidom.parse(str(path))
    monkeypatch.chdir(tmp_path)
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "export", moved)
    model = mujoco.MjModel.from_xml_path(str(moved / "so101.xml"))
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "elbow_flex")
    assert model.dof_frictionloss[model.jnt_dofadr[jid]] == pytest.approx(0.12)
    assert (tmp_path / "export" / "assets").is_dir()
    # a second export into the same folder is refused unless asked
    capsys.readouterr()
    assert main(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
                 str(tmp_path / "m1.json"), "--out", str(tmp_path / "export")]) == 1
    assert "--overwrite" in capsys.readouterr().err


def test_a_fit_mujoco_cannot_express_is_refused_by_name_before_any_refit(tmp_path, capsys):
    data = json.loads(fit_file(tmp_path / "m6.json", "m6").read_text())
    data["servos"]["sts3215_12v"]["kt"] = -1.0  # simulated with a warning, not exportable
    (tmp_path / "m6.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
                 str(tmp_path / "m6.json"), "--out", str(tmp_path / "export"), "--recordings",
                 str(RECORDINGS / "ramp_motion"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "servos.sts3215_12v: kt = -1 has no MuJoCo attribute" in err
    assert not (tmp_path / "export").exists()


def test_a_richer_fit_names_what_it_drops_and_is_refitted_as_an_m1(tmp_path):
    summary = export(tmp_path, fit_file(tmp_path / "m6.json", "m6"), "--recordings",
                     str(RECORDINGS / "ramp_motion"), "--budget", "6")
    assert summary["refitted"]
    assert any("Stribeck" in line for line in summary["dropped"])
    text = (tmp_path / "export" / "so101.xml").read_text()
    assert "Not carried:" in text and "dead band" in text


def test_the_dcmotor_target_carries_the_limiter_and_replays_like_the_servos(tmp_path):
    summary = export(tmp_path, fit_file(tmp_path / "m1.json", "m1"), "--target", "dcmotor",
                     "--validation", str(RECORDINGS / "slow_precision"))
    held = summary["validation"]
    # the dead band and the D term's response to a moving goal are what it lacks
    assert abs(held["export_mae_rad"] - held["frictionsim_mae_rad"]) < 5e-4
    assert not any("limiter" in line for line in summary["dropped"])
    assert summary["joints"]["elbow_flex"]["damping"] == 0.1  # back-EMF in the motor model
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "export" / "so101.xml"))
    assert (model.actuator_dyntype == mujoco.mjtDyn.mjDYN_DCMOTOR).sum() == 5


def test_a_fit_with_backlash_exports_the_gap_as_a_hinge_the_replay_reads(tmp_path, capsys):
    params = ParameterSet("m1", "sts3215_12v", {"friction_base": 0.12, "friction_viscous": 0.1,
                                                "kt": 2.2, "R": 9.0, "armature": 0.02,
                                                "backlash": 0.02},
                          scheme="semi_implicit", extensions=("backlash",))
    path = tmp_path / "m1_backlash.json"
    atomic.write_json(path, RobotParameters("so101", {"sts3215_12v": params}).to_dict())
    plain = export(tmp_path, path)
    assert any("backlash" in line for line in plain["dropped"])
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "export" / "so101.xml"))
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "wrist_roll_backlash") < 0
    hinged = export(tmp_path, path, "--backlash-hinge", "--overwrite", "--validation",
                    str(RECORDINGS / "slow_precision"))
    assert not any(line == "the backlash extension" for line in hinged["dropped"])
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "export" / "so101.xml"))
    hinge = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "wrist_roll_backlash")
    joint = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "wrist_roll")
    assert hinge >= 0 and model.jnt_bodyid[hinge] == model.jnt_bodyid[joint]
    assert list(model.jnt_range[hinge]) == pytest.approx([-0.01, 0.01])
    # the replay reads the output (servo joint + hinge) and lands near frictionsim's own gap
    held = hinged["validation"]
    assert abs(held["export_mae_rad"] - held["frictionsim_mae_rad"]) < 0.01
    fit_without = fit_file(tmp_path / "m1.json", "m1")
    capsys.readouterr()
    assert main(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
                 str(fit_without), "--backlash-hinge", "--out", str(tmp_path / "x")]) == 1
    assert "has no backlash" in capsys.readouterr().err


def test_a_network_alone_is_refused_in_one_line_before_anything_is_said(tmp_path, capsys):
    import numpy as np

    from frictionsim.actuator_net import N_INPUTS, pack_net
    from frictionsim.learned_files import LearnedActuator, save_learned

    widths = (N_INPUTS, 4, 1)
    net = pack_net([np.zeros((a, b)) for a, b in zip(widths[:-1], widths[1:])],
                   [np.zeros(b) for b in widths[1:]], np.zeros(N_INPUTS), np.ones(N_INPUTS),
                   np.full(N_INPUTS, -2.0), np.full(N_INPUTS, 2.0), 0.01, 0.05, None)
    path = save_learned(tmp_path / "net.json",
                        LearnedActuator("net", "sts3215_12v", net, (4,), armature=0.004))
    capsys.readouterr()
    assert main(["robot", "export-mjcf", "--robot", "so101", "--data", str(DATA), "--params",
                 str(path), "--out", str(tmp_path / "export")]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"frictionsim robot export-mjcf: error: {path}: a learned "
                                    "network has no MuJoCo attribute; export a physical model "
                                    "(m1 … m6)")
    assert captured.out == "" and not (tmp_path / "export").exists()
