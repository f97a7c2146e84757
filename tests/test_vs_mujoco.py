"""``run vs-mujoco``: MuJoCo's dcmotor fitted by mujoco.sysid against frictionsim's models, on
the same logs (small budgets: the table's shape, the scoring, the refusals)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
sysid = pytest.importorskip("mujoco.sysid")
if not hasattr(sysid, "optimize"):
    pytest.skip("mujoco's sysid extra is not installed", allow_module_level=True)

from frictionsim.experiments.identification.vs_mujoco import native_errors  # noqa: E402
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.logs import load_log  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.native_mujoco import dcmotor_rollout  # noqa: E402

XL330 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330" / "processed"


@pytest.fixture(scope="module")
def logs():
    if not XL330.is_dir():
        pytest.skip(f"XL330 logs not found at {XL330}")
    return sorted(XL330.glob("*.json"))


def test_a_native_candidate_is_scored_as_its_export_rolls_out(logs):
    log = load_log(logs[1])
    values = {"kt": 0.4, "R": 3.0, "armature": 0.002, "q_offset": 0.01,
              "friction_viscous": 0.01, "friction_base": 0.02}
    got = native_errors("xl330", "dcmotor_joint", values, [log])
    params = ParameterSet("m1", "xl330", values, scheme="semi_implicit")
    assert got[log.name] == pytest.approx(dcmotor_rollout(params, log).mae, rel=1e-12)
    lugre = {**values, "lugre_stiffness": 50.0, "lugre_damping": 0.2, "lugre_coulomb": 0.02,
             "lugre_static": 0.03, "dtheta_stribeck": 0.2}
    assert np.isfinite(native_errors("xl330", "dcmotor_lugre", lugre, [log])[log.name])


def test_the_command_fits_every_model_per_fold(logs, tmp_path, capsys):
    by_gain = {}
    for p in logs:
        by_gain.setdefault(load_log(p).kp, []).append(str(p))
    train = [by_gain[200][0], by_gain[400][0], by_gain[800][0]]  # one log of each gain
    args = ["run", "vs-mujoco", "--actuator", "xl330", "--logs", *train,
            "--cross-validate", "kp", "--budget", "30", "--max-iters", "2", "--out",
            str(tmp_path / "vs"), "--json", str(tmp_path / "vs.json"), "--plot",
            str(tmp_path / "vs.png"), "--no-progress"]
    assert main(args) == 0
    result = json.loads((tmp_path / "vs.json").read_text())
    assert list(result["folds"]) == ["kp_200", "kp_400", "kp_800"]
    models = ["dcmotor_joint", "dcmotor_lugre", "m1", "m6", "m6_current_limit"]
    for fold in result["folds"].values():
        assert list(fold) == models
        for entry in fold.values():
            assert 0 < entry["train_mae"] < 1 and 0 < entry["validation_mae"] < 1
            assert entry["fit_seconds"] > 0 and entry["ns_per_step"] > 0
    assert set(result["mean"]) == set(models)
    assert (tmp_path / "vs.png").stat().st_size > 0
    assert (tmp_path / "vs" / "kp_800" / "m6_current_limit" / "m6.json").is_file()
    capsys.readouterr()
    assert main(args) == 1  # an earlier run is not replaced unasked
    assert "--overwrite" in capsys.readouterr().err
    assert main(["run", "vs-mujoco", "--actuator", "erob80_100", "--logs", *train,
                 "--validation", by_gain[200][1]]) == 1
    assert "voltage servos" in capsys.readouterr().err
