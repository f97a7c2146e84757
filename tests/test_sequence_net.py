"""The sequence model (:mod:`frictionsim.experiments.identification.sequence_net`): the torque
the bench rollout takes from outside the bank enters where the compiled network's does, the
GRU sees in closed loop the inputs it was trained on, the epochs kept are the ones loaded, the
file gives back the same model, and ``run physics-vs-learned --learned gru --splits`` makes
only what was asked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frictionsim.actuator_net import GAIN_INPUT, HISTORY, N_INPUTS, pack_net  # noqa: E402
from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.experiments.identification import rollout_training as rt  # noqa: E402
from frictionsim.experiments.identification import sequence_net as sn  # noqa: E402
from frictionsim.experiments.identification.learned import (  # noqa: E402
    NetSettings,
    training_sequences,
)
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.logs import Log, load_log  # noqa: E402
from frictionsim.params import ParameterSet, load_params  # noqa: E402
from frictionsim.solvers.batched.rollout import bench_rollout  # noqa: E402
from frictionsim.solvers.learned_rollout import bare_theta, learned_run  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATA = SHARED / "xl330" / "processed"
#: Periods kept of each log.
SHORT = 240


@pytest.fixture(scope="module")
def logs():
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    return [load_log(p) for p in sorted(DATA.glob("*.json"))]


def short(log: Log, n: int = SHORT) -> Log:
    return Log(log.header, log.entries[:n], log.path)


def armature() -> float:
    return float(ParameterSet.defaults("m1", "xl330").values["armature"])


def test_a_torque_from_outside_the_bank_enters_where_the_compiled_networks_does(logs):
    # a one-layer network on e(k), v(k), kp and enable: given to the compiled rollout as a
    # network and to the torch rollout as a function of what the hook receives
    physics = load_params(SHARED / "xl330" / "params" / "m6.json").theta()
    weights = np.zeros((N_INPUTS, 3))
    weights[0] = [8.0, -3.0, 1.0]                  # error (rad)
    weights[HISTORY] = [0.05, 0.2, -0.1]           # velocity (rad/s)
    weights[GAIN_INPUT] = [1e-4, -2e-4, 3e-4]      # kp
    weights[GAIN_INPUT + 1] = [0.1, 0.0, -0.2]     # enable
    bias, w_out, b_out = np.array([0.1, -0.2, 0.05]), np.array([[0.05], [-0.08], [0.03]]), 0.01
    net = pack_net([weights, w_out], [bias, np.array([b_out])], np.zeros(N_INPUTS),
                   np.ones(N_INPUTS), np.full(N_INPUTS, -1e9), np.full(N_INPUTS, 1e9), 0.0, 1.0)
    w = torch.as_tensor(weights[[0, HISTORY, GAIN_INPUT, GAIN_INPUT + 1]])

    def torque(error, velocity, kp, enable):
        x = torch.cat([error, velocity, kp, enable], dim=-1)
        return torch.tanh(x @ w + torch.as_tensor(bias)) @ torch.as_tensor(w_out) + b_out

    picked = [short(lg, 300) for lg in logs[:2]]
    whole = rt.windows(picked, "xl330", 300, 10_000).take()
    theta = torch.as_tensor(physics)
    got = bench_rollout(theta, whole.bench, None, whole.goal, whole.enable, whole.supply,
                        whole.position[:, 0], whole.v0, torque=torque).numpy()
    for j, log in enumerate(picked):
        goal = log.column("goal_position")
        q, v = np.empty_like(goal), np.empty_like(goal)
        learned_run(goal, log.column("torque_enable"), log.supply(), log.entries[0]["position"],
                    float(log.entries[0].get("speed", 0.0)), physics, log.bench("xl330"), net,
                    q, v)
        np.testing.assert_allclose(got[j], q, rtol=0, atol=1e-12)
    # and the torque matters: without it the motion differs
    bare = bench_rollout(theta, whole.bench, None, whole.goal, whole.enable, whole.supply,
                         whole.position[:, 0], whole.v0).numpy()
    assert np.max(np.abs(bare - got)) > 1e-3


def test_the_inputs_trained_on_are_the_error_velocity_gain_and_enable(logs):
    log = short(logs[0])
    (x, _), = training_sequences([log], "xl330", bare_theta("xl330", armature()), 4)
    picked = x[:, list(sn.NET_COLUMNS)]
    position = log.column("position")
    np.testing.assert_array_equal(picked[:, 0], log.column("goal_position") - position)
    np.testing.assert_allclose(picked[1:, 1], np.diff(position) / log.dt, rtol=1e-12)
    assert np.all(picked[:, 2] == log.kp)
    np.testing.assert_array_equal(picked[:, 3], log.column("torque_enable"))


def test_the_closed_loop_feeds_the_gru_as_its_training_does():
    torch.manual_seed(3)
    module = sn.GruActuator(5, [0.0, 0.0, 400.0, 0.5], [0.1, 2.0, 100.0, 0.5],
                            [-3.0] * 4, [3.0] * 4, 0.2, 0.7)
    x = torch.randn(2, 30, 4, dtype=torch.float64) * torch.tensor([0.1, 2.0, 100.0, 0.5]) \
        + torch.tensor([0.0, 0.0, 400.0, 0.5])
    fed = module.fed(x)
    torque = module.driver(2)
    stepped = torch.cat([torque(*(x[:, k, i:i + 1] for i in range(4))) for k in range(30)],
                        dim=1)
    torch.testing.assert_close(stepped, fed, rtol=0, atol=0)
    # inputs beyond the trained range are answered as at its edge
    far = x.clone()
    far[:, :, 0] = 50.0
    edge = x.clone()
    edge[:, :, 0] = 3.0 * 0.1
    torch.testing.assert_close(module.fed(far), module.fed(edge), rtol=0, atol=0)


def test_logs_of_different_lengths_are_scored_as_each_alone(logs):
    model = sn.SequenceActuator("xl330", armature(), sn.GruActuator(
        4, [0.0, 0.0, 400.0, 1.0], [0.1, 2.0, 200.0, 1.0], [-3.0] * 4, [3.0] * 4, 0.0, 0.3), {})
    picked = [short(logs[0], 120), short(logs[1], 90), short(logs[2], 120)]
    together = sn.closed_loop_mae(model, picked)
    assert list(together) == [lg.name for lg in picked]
    for log in picked:
        assert together[log.name] == sn.closed_loop_mae(model, [log])[log.name]


@pytest.fixture(scope="module")
def trained(logs):
    train = [short(lg) for lg in logs[:4]]
    settings = NetSettings(max_epochs=3, rollout_epochs=2, rollout_horizon=40)
    return sn.train_sequence(train, "xl330", armature(), settings), train


def test_the_epochs_kept_are_the_ones_loaded(trained):
    model, train = trained
    supervised, rollout = model.training["supervised"], model.training["rollout"]
    losses = supervised["held_back_label_mse_by_epoch"]
    assert len(losses) == supervised["epochs"] + 1 == 4
    assert supervised["best_epoch"] == int(np.argmin(losses))
    by_epoch = rollout["validation_mae_by_epoch"]
    assert len(by_epoch) == 3 and rollout["best_epoch"] == int(np.argmin(by_epoch))
    assert rollout["validation_mae_after"] == min(by_epoch) <= rollout["validation_mae_before"]
    held = [lg for lg in train if lg.name in model.training["validation_logs"]]
    assert len(held) == 1 and model.training["logs"] == [lg.name for lg in train]
    # the weights in the model are the epoch kept, not the last
    assert np.mean(list(sn.closed_loop_mae(model, held).values())) == by_epoch[rollout["best_epoch"]]
    assert rollout["steps"] > 0 and model.training["seconds"] > 0
    # each stage's time of its own, within the whole; the three are rounded to 10 ms apiece,
    # so the stages' sum may pass the rounded whole by up to 1.5 rounding halves
    assert 0 < supervised["seconds"] + rollout["seconds"] <= model.training["seconds"] + 0.015


def test_the_file_gives_back_the_same_model(trained, tmp_path):
    model, train = trained
    path = sn.save_sequence(tmp_path / "gru.json", model)
    again = sn.load_sequence(path)
    assert again.actuator == "xl330" and again.armature == model.armature
    assert sn.closed_loop_mae(again, train[:1]) == sn.closed_loop_mae(model, train[:1])
    assert again.training["rollout"]["best_epoch"] == model.training["rollout"]["best_epoch"]
    other = tmp_path / "net.json"
    other.write_text(json.dumps({"model": "net"}))
    with pytest.raises(ConfigurationError, match="not a sequence model"):
        sn.load_sequence(other)


def test_a_ctrl_c_keeps_the_best_epoch_so_far(logs, monkeypatch):
    calls = {"n": 0}
    real = torch.optim.Adam.step

    def interrupt_later(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(torch.optim.Adam, "step", interrupt_later)
    model = sn.train_sequence([short(lg) for lg in logs[:4]], "xl330", armature(),
                              NetSettings(max_epochs=50, rollout_epochs=5, rollout_horizon=40))
    assert model.training["interrupted"] is True and "rollout" not in model.training
    supervised = model.training["supervised"]
    assert supervised["epochs"] < 50
    assert supervised["best_epoch"] == int(np.argmin(supervised["held_back_label_mse_by_epoch"]))


def test_physics_vs_learned_makes_the_splits_and_models_asked_for(logs, tmp_path, capsys):
    pytest.importorskip("sklearn")
    paths = [str(p) for p, lg in zip(sorted(DATA.glob("*.json")), logs) if lg.kp in (200, 400)]
    out = tmp_path / "pvl"
    args = ["run", "physics-vs-learned", "--actuator", "xl330", "--logs", *paths, "--out",
            str(out), "--budget", "30", "--max-epochs", "2", "--splits", "higher_gains",
            "--learned", "gru", "--no-progress", "--json", str(tmp_path / "pvl.json")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "lower_gains" not in text and "gru" in text
    section = json.loads((tmp_path / "pvl.json").read_text())
    assert list(section) == ["higher_gains"]
    assert list(section["higher_gains"]) == ["m1", "m6", "gru"]
    gru = section["higher_gains"]["gru"]
    assert 0 < gru["validation_mae"] < 10 and 0 < gru["validation_torque_mae"] < 10
    assert gru["fit_seconds"] > 0
    assert (out / "higher_gains" / "gru.json").is_file()
    assert not (out / "lower_gains").exists()
    # a split these logs do not allow is refused with the reason
    assert main([*args[:-2], "--overwrite", "--splits", "repetitions"]) == 1
    assert "repetitions (no condition" in capsys.readouterr().err
    # the sequence model is the bench's
    assert main(["run", "physics-vs-learned", "--robot", "so101", "--recordings",
                 str(tmp_path), "--learned", "gru", "--out", str(tmp_path / "r")]) == 1
    assert "--learned gru" in capsys.readouterr().err
