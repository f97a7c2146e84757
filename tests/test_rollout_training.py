"""Training a learned actuator through its closed-loop rollout
(:mod:`frictionsim.experiments.identification.rollout_training`): the torch rollout is the
compiled one, the weights go back into the network vector unchanged, the epoch kept is never
worse on the held-back logs than the network it started from (a hybrid: than its physics
alone), and the commands take it (a robot's: tests/test_robot_rollout_training.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")

from frictionsim.actuator_net import zero_output  # noqa: E402
from frictionsim.experiments.identification import rollout_training as rt  # noqa: E402
from frictionsim.experiments.identification.learned import (  # noqa: E402
    NetSettings,
    train_learned,
)
from frictionsim.experiments.runner.cli import main  # noqa: E402
from frictionsim.logs import load_log  # noqa: E402
from frictionsim.params import ParameterSet, load_params  # noqa: E402
from frictionsim.solvers.batch import PackedLogs  # noqa: E402
from frictionsim.solvers.learned_rollout import (  # noqa: E402
    packed_errors,
    physics_theta,
    simulate_learned,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATA = SHARED / "xl330" / "processed"
QUICK = NetSettings(max_epochs=20, closed_loop_budget=20)


@pytest.fixture(scope="module")
def logs():
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    return [load_log(p) for p in sorted(DATA.glob("*.json"))[:4]]


def armature() -> float:
    return float(ParameterSet.defaults("m1", "xl330").values["armature"])


@pytest.mark.parametrize("kind", ["net", "hybrid"])
def test_the_torch_rollout_is_the_compiled_one(logs, kind):
    physics = load_params(SHARED / "xl330" / "params" / "m6.json") if kind == "hybrid" else None
    model = train_learned(kind, logs[:3], "xl330", physics, QUICK, armature=armature())
    n = 300  # the first 1.5 s of each log
    whole = rt.windows(logs[:3], "xl330", n, 10_000).take()
    nets, leaves = rt.trainable_net(model.net)
    assert all(leaf.requires_grad for leaf in leaves)
    theta = torch.as_tensor(physics_theta(model))
    got = rt.rollout(theta, nets, whole)
    expected = np.array([simulate_learned(lg, model).q[:n] for lg in logs[:3]])
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=0, atol=1e-12)
    assert np.array_equal(rt.packed_net(model.net, nets), model.net)
    # the loss reaches every weight and bias, and nothing else of the network's vector
    torch.mean(torch.abs(got - whole.position)).backward()
    n_in, layers = int(model.net[0]), int(model.net[1])
    first = 3 + layers + 4 * n_in + 2
    grad = leaves[0].grad[0]
    assert torch.all(grad[:first] == 0)
    assert torch.count_nonzero(grad[first:]) > 0.9 * (len(model.net) - first)


def test_the_held_back_logs_are_a_seeded_share_of_the_training_logs(logs):
    train, held = rt.split_for_validation(logs, 4, seed=3)
    assert len(held) == 1 and len(train) == 3
    assert {lg.name for lg in train} | {lg.name for lg in held} == {lg.name for lg in logs}
    assert rt.split_for_validation(logs, 4, seed=3)[1][0].name == held[0].name
    one = rt.split_for_validation(logs[:1], 4)
    assert one[0] == one[1] == logs[:1]


@pytest.mark.parametrize("kind", ["net", "hybrid"])
def test_the_epoch_kept_is_never_worse_on_the_held_back_logs(logs, kind):
    physics = load_params(SHARED / "xl330" / "params" / "m6.json") if kind == "hybrid" else None
    settings = NetSettings(max_epochs=20, closed_loop_budget=20, rollout_epochs=2,
                           rollout_horizon=10)
    model = train_learned(kind, logs, "xl330", physics, settings, armature=armature())
    done = model.training["rollout"]
    # trained through the rollout after, a net keeps the 5 % input noise (ROLLOUT_NET_NOISE)
    assert model.training["noise"] == 0.05
    assert done["validation_mae_after"] <= done["validation_mae_before"]
    assert len(done["validation_mae_by_epoch"]) == 3 and done["best_epoch"] in (-1, 0, 1, 2)
    held = [lg for lg in logs if lg.name in done["validation_logs"]]
    assert held and len(held) < len(logs)
    kept = packed_errors(PackedLogs.from_logs(held, "xl330"), physics_theta(model), model.net)
    assert float(np.mean(kept)) == pytest.approx(done["validation_mae_after"], rel=1e-12)
    if kind == "hybrid":  # never worse than its physics alone there either
        alone = packed_errors(PackedLogs.from_logs(held, "xl330"), physics_theta(model),
                              zero_output(model.net))
        assert done["validation_mae_after"] <= float(np.mean(alone))
        assert model.authority > 0


def test_identify_trains_through_the_rollout_and_refuses_a_negative_count(tmp_path):
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    logs = [str(p) for p in sorted(DATA.glob("*.json"))[:4]]
    out = tmp_path / "fit"
    assert main(["identify", "--actuator", "xl330", "--model", "net", "--logs", *logs,
                 "--max-epochs", "20", "--rollout-epochs", "1", "--rollout-horizon", "10",
                 "--out", str(out), "--no-progress"]) == 0
    saved = json.loads((out / "net.json").read_text())
    assert saved["training"]["rollout"]["horizon"] == 10
    assert main(["identify", "--actuator", "xl330", "--model", "net", "--logs", *logs,
                 "--rollout-epochs", "-1", "--out", str(tmp_path / "bad")]) == 1


def gradients(*vectors):
    """Leaves whose gradients are ``vectors``."""
    leaves = []
    for g in vectors:
        leaf = torch.zeros(len(g), dtype=torch.float64, requires_grad=True)
        leaf.grad = torch.as_tensor(g, dtype=torch.float64)
        leaves.append(leaf)
    return leaves


def test_a_step_far_above_the_running_mean_norm_is_scaled_down_to_its_bound():
    clip = rt.StepClipping(2.0)
    assert clip(gradients([3.0], [4.0]))  # norm 5: the first sets the mean
    assert clip.mean_norm == 5.0 and clip.clipped == 0
    leaves = gradients([30.0], [40.0])  # norm 50 > 2 × 5: scaled to 10, direction kept
    assert clip(leaves) and clip.clipped == 1
    np.testing.assert_allclose([leaves[0].grad.item(), leaves[1].grad.item()], [6.0, 8.0],
                               rtol=1e-15)
    assert clip.mean_norm == pytest.approx(rt.NORM_MEMORY * 5.0 + (1 - rt.NORM_MEMORY) * 10.0)
    mean = clip.mean_norm
    small = gradients([0.0, 1.0])  # below the bound: untouched
    assert clip(small) and small[0].grad.tolist() == [0.0, 1.0] and clip.clipped == 1
    assert clip.mean_norm == pytest.approx(rt.NORM_MEMORY * mean + (1 - rt.NORM_MEMORY))
    # an overflowed gradient: refused, and neither the gradient nor the mean changed
    mean, bad = clip.mean_norm, gradients([float("inf"), 1.0])
    assert not clip(bad) and clip.mean_norm == mean and bad[0].grad[1].item() == 1.0
    assert not clip(gradients([float("nan")]))
    # a leaf without a gradient counts for nothing
    empty = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    assert clip([empty, *gradients([3.0, 4.0])]) and empty.grad is None


def test_clipping_off_never_changes_a_gradient():
    clip = rt.StepClipping(0.0)
    for g in ([1.0], [1e6], [1e-9], [1e12]):
        leaves = gradients(g)
        assert clip(leaves) and leaves[0].grad.item() == g[0]
    assert clip.clipped == 0


def test_the_training_record_says_how_the_steps_were_taken(logs):
    model = train_learned("net", logs, "xl330", None, QUICK, armature=armature())
    settings = rt.RolloutTraining(horizon=10, epochs=2, batch=8, windows_per_epoch=32,
                                  gradient_clip=1.0)
    done = rt.fine_tune(model, logs, settings).training["rollout"]
    assert done["learning_rate"] == settings.learning_rate
    assert done["gradient_clip"] == 1.0 and done["steps"] == 2 * 32 // 8
    # at a factor of 1 every step above the running mean is clipped: some are
    assert 0 < done["steps_clipped"] < done["steps"]


def test_a_ctrl_c_keeps_the_best_epoch_so_far(logs, monkeypatch):
    model = train_learned("net", logs, "xl330", None, QUICK, armature=armature())
    real, calls = rt.rollout, []

    def interrupted(theta, nets, batch):
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real(theta, nets, batch)

    monkeypatch.setattr(rt, "rollout", interrupted)
    tuned = rt.fine_tune(model, logs, rt.RolloutTraining(horizon=10, epochs=3, batch=8,
                                                         windows_per_epoch=64))
    assert tuned.training["interrupted"] and tuned.training["rollout"]["best_epoch"] == 0
    assert np.array_equal(tuned.net, model.net)


def test_a_ctrl_c_in_the_supervised_epochs_stops_before_the_rollout(logs, monkeypatch,
                                                                     mlp_interrupted_at):
    # scikit-learn's MLP catches the KeyboardInterrupt itself and returns: before, the
    # training then went on through the rollout (an hour at 400-period windows), deaf to
    # any later Ctrl-C or SIGTERM
    monkeypatch.setattr(rt, "fine_tune", lambda *a, **k: pytest.fail("trained on"))
    for kind, physics in (("net", None), ("hybrid", ParameterSet.defaults("m6", "xl330"))):
        epochs = mlp_interrupted_at(3)
        model = train_learned(kind, logs, "xl330", physics,
                              NetSettings(max_epochs=20, rollout_epochs=5),
                              armature=armature() if physics is None else 0.0)
        assert model.training["interrupted"] is True and not model.training["converged"]
        assert model.training["epochs"] == 3 and len(epochs) == 3
        if kind == "hybrid":  # no residual was tried: its physics alone
            assert np.array_equal(model.net, zero_output(model.net))


def test_windows_longer_than_every_log_are_refused_with_the_option_to_change(logs):
    from frictionsim.errors import ConfigurationError

    lengths = [len(PackedLogs.from_logs([log], "xl330").goal) for log in logs]
    longest = max(lengths)
    # one window of each log that long: its whole length
    assert len(rt.windows(logs, "xl330", longest, 10)) == lengths.count(longest)
    with pytest.raises(ConfigurationError, match=rf"the longest: {longest}\).*--rollout-horizon"):
        rt.windows(logs, "xl330", longest + 1, 10)


def test_the_windows_gathered_at_batch_time_are_the_logs_own_slices(logs):
    horizon, stride = 50, 17
    data = rt.windows(logs, "xl330", horizon, stride)
    expected = []  # (log, start) of every window, as the logs lie
    for log in logs:
        n = len(PackedLogs.from_logs([log], "xl330").goal)
        expected += [(log, start) for start in range(0, n - horizon + 1, stride)]
    assert len(data) == len(expected)
    rows = torch.tensor([0, 1, len(data) // 2, len(data) - 1])
    batch = data.take(rows)
    assert len(batch) == 4 and batch.goal.shape == (4, horizon)
    for i, row in enumerate(rows.tolist()):
        log, start = expected[row]
        one = PackedLogs.from_logs([log], "xl330")
        span = slice(start, start + horizon)
        for name in ("goal", "enable", "position"):
            assert np.array_equal(getattr(batch, name)[i].numpy(), getattr(one, name)[span])
        assert np.array_equal(np.isnan(batch.supply[i].numpy()), np.isnan(one.supply[span]))
        assert np.array_equal(batch.bench[i].numpy(), one.bench[0])
        v0 = one.v0[0] if start == 0 else \
            (one.position[start] - one.position[start - 1]) / one.bench[0][rt.DT]
        assert batch.v0[i].item() == v0
    # all of them at once: the batch of every window, in order
    assert torch.equal(data.take().goal[rows], batch.goal)


def header_log(name, trajectory="sin", kp=400.0):
    from frictionsim.logs import Log

    header = {"mass": 0.5, "length": 0.1, "kp": kp, "dt": 0.005}
    if trajectory is not None:
        header["trajectory"] = trajectory
    return Log(header, [], Path(name))


def test_training_through_the_rollout_is_on_by_default_where_the_logs_repeat_a_condition(
        monkeypatch):
    from frictionsim.experiments.identification.learned import (
        AUTO_ROLLOUT_EPOCHS,
        auto_rollout_epochs,
    )

    once = [header_log("a"), header_log("b", "step"), header_log("c", kp=800.0)]
    epochs, why = auto_rollout_epochs(once)
    assert epochs == 0 and "no condition" in why
    repeated = [*once, header_log("a2")]
    assert auto_rollout_epochs(repeated) == (AUTO_ROLLOUT_EPOCHS,
                                              "the training logs repeat conditions")
    unnamed = [header_log("u1", trajectory=None), header_log("u2", trajectory=None)]
    assert auto_rollout_epochs([*once, *unnamed])[0] == 0  # no trajectory: not a repetition
    monkeypatch.setitem(__import__("sys").modules, "torch", None)  # as if not installed
    epochs, why = auto_rollout_epochs(repeated)
    assert epochs == 0 and "frictionsim[torch]" in why


def test_the_default_is_decided_from_the_logs_and_an_explicit_zero_is_kept(logs, capsys):
    from frictionsim.experiments.identification.learned import AUTO_ROLLOUT_EPOCHS, ROLLOUT_HORIZON
    from frictionsim.experiments.runner.arguments import net_settings
    from frictionsim.experiments.runner.cli import build_parser

    # the XL330 logs repeat no condition: no rollout, and the file says why
    model = train_learned("net", logs, "xl330", None, QUICK, armature=armature())
    assert QUICK.rollout_epochs is None
    assert model.training["rollout_auto"]["epochs"] == 0 and "rollout" not in model.training
    parser = build_parser()
    base = ["identify", "--actuator", "xl330", "--model", "net", "--logs", "x"]
    assert net_settings(parser.parse_args(base), 600).rollout_epochs is None
    assert net_settings(parser.parse_args([*base, "--rollout-epochs", "0"]), 600
                        ).rollout_epochs == 0
    with pytest.raises(SystemExit):  # the help says the default the code takes
        main(["identify", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"default {AUTO_ROLLOUT_EPOCHS} when torch is installed" in shown
    assert f"control periods per window of that training (default {ROLLOUT_HORIZON};" in shown
    assert net_settings(parser.parse_args(base), 600).rollout_horizon == ROLLOUT_HORIZON
    assert net_settings(parser.parse_args([*base, "--rollout-horizon", "7"]), 600
                        ).rollout_horizon == 7
