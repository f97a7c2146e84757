"""Learned actuators: the compiled network, its file, the closed-loop rollout and its exact
one-step inversion (the training labels), and training on the recorded XL330 logs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from frictionsim import layout
from frictionsim.actuator_net import (
    MAX_WIDTH,
    N_INPUTS,
    net_features,
    net_size,
    net_torque,
    pack_net,
    with_authority,
)
from frictionsim.layout import ARMATURE, KT
from frictionsim.learned_files import LearnedActuator, learned_from_dict, load_learned, save_learned
from frictionsim.params import ParameterFileError, ParameterSet
from frictionsim.solvers.fixed_step import rollout
from frictionsim.solvers.learned_rollout import (
    bare_theta,
    learned_run,
    physics_theta,
    teacher_forced,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "xl330" / "processed"
N = 600
DT = 0.005


def random_net(rng, hidden=(8, 5), scale=0.3, authority=None) -> np.ndarray:
    widths = (N_INPUTS, *hidden, 1)
    weights = [scale * rng.standard_normal((a, b)) for a, b in zip(widths[:-1], widths[1:])]
    biases = [0.1 * rng.standard_normal(b) for b in widths[1:]]
    mean = rng.standard_normal(N_INPUTS)
    std = 0.5 + rng.random(N_INPUTS)
    return pack_net(weights, biases, mean, std, np.full(N_INPUTS, -2.0), np.full(N_INPUTS, 2.0),
                    0.01, 0.05, authority), (weights, biases, mean, std)


def test_the_compiled_network_is_the_multilayer_perceptron_it_packs():
    rng = np.random.default_rng(1)
    net, (weights, biases, mean, std) = random_net(rng)
    assert len(net) == net_size(N_INPUTS, (8, 5))
    work = np.empty(2 * MAX_WIDTH)
    for _ in range(20):
        x = mean + 3 * std * rng.standard_normal(N_INPUTS)
        h = np.clip((x - mean) / std, -2.0, 2.0)  # held inside the trained range
        for w, b in zip(weights[:-1], biases[:-1]):
            h = np.tanh(h @ w + b)
        expected = 0.01 + 0.05 * float(h @ weights[-1][:, 0] + biases[-1][0])
        assert net_torque(net, x, work) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_a_hybrids_residual_is_held_to_its_authority():
    rng = np.random.default_rng(2)
    net, _ = random_net(rng, scale=5.0, authority=0.004)
    work = np.empty(2 * MAX_WIDTH)
    torques = [net_torque(net, 10 * rng.standard_normal(N_INPUTS), work) for _ in range(200)]
    assert max(abs(t) for t in torques) == pytest.approx(0.004)


def test_pack_net_refuses_shapes_that_disagree():
    with pytest.raises(ValueError):
        pack_net([np.zeros((N_INPUTS, 4)), np.zeros((3, 1))], [np.zeros(4), np.zeros(1)],
                 np.zeros(N_INPUTS), np.ones(N_INPUTS), -np.ones(N_INPUTS), np.ones(N_INPUTS),
                 0.0, 1.0)
    with pytest.raises(ValueError):
        pack_net([np.zeros((N_INPUTS, MAX_WIDTH + 1)), np.zeros((MAX_WIDTH + 1, 1))],
                 [np.zeros(MAX_WIDTH + 1), np.zeros(1)], np.zeros(N_INPUTS), np.ones(N_INPUTS),
                 -np.ones(N_INPUTS), np.ones(N_INPUTS), 0.0, 1.0)


def bench() -> np.ndarray:
    return layout.bench_vector(mass=0.3, length=0.12, kp=400.0, vin=7.4, dt=DT)


def inputs():
    t = np.arange(N) * DT
    goal = 0.8 * np.sign(np.sin(2 * np.pi * t / 1.3)) + 0.2 * np.sin(5 * t)
    enable = (t < 2.4).astype(float)
    return goal, enable, np.full(N, np.nan)


def test_a_residual_of_no_authority_leaves_the_physical_model():
    rng = np.random.default_rng(3)
    net, _ = random_net(rng, authority=0.0)
    theta = ParameterSet.defaults("m6", "xl330").theta()
    goal, enable, supply = inputs()
    q, v = np.empty(N), np.empty(N)
    learned_run(goal, enable, supply, 0.1, 0.0, theta, bench(), net, q, v)
    q_ref, v_ref = np.empty(N), np.empty(N)
    rollout(goal, enable, supply, 0.1, 0.0, theta, bench(), DT, q_ref, v_ref)
    np.testing.assert_array_equal(q, q_ref)
    assert np.ptp(q) > 0.5  # the servo moved


@pytest.mark.parametrize("kind", ["net", "hybrid"])
def test_the_training_labels_invert_the_rollout_step_by_step(kind):
    """A trajectory made by a known network, read back as a log: the labels are the torques
    that network gave, at the inputs it saw; where friction held the joint, the smallest
    torque it holds, which is at most the network's."""
    rng = np.random.default_rng(4)
    net, _ = random_net(rng)
    theta = bare_theta("xl330") if kind == "net" else \
        ParameterSet.defaults("m6", "xl330").with_scheme("semi_implicit").theta()
    goal, enable, supply = inputs()
    q, v = np.empty(N), np.empty(N)
    learned_run(goal, enable, supply, 0.0, 0.0, theta, bench(), net, q, v)
    features = np.empty((N, N_INPUTS))
    residual = np.empty(N)
    teacher_forced(goal, enable, supply, q, 0.0, theta, bench(), 1, features, residual)
    work = np.empty(2 * MAX_WIDTH)
    expected = np.array([net_torque(net, features[k], work) for k in range(N - 1)])
    assert np.isnan(residual[-1])
    held = np.abs(v[1:]) <= 1e-12
    assert (kind == "hybrid") == held.any()  # the bare joint has no friction to hold it
    tol = 1e-6 * np.abs(expected).max()
    np.testing.assert_allclose(residual[:-1][~held], expected[~held], rtol=0, atol=tol)
    assert np.all(np.abs(residual[:-1][held]) <= np.abs(expected[held]) + tol)
    assert np.abs(expected).max() > 1e-3
    # and the inputs are the history the rollout had
    x = np.empty(N_INPUTS)
    net_features(goal - q, v, 50, 400.0, 1.0, x)
    np.testing.assert_allclose(features[50], x, rtol=1e-9, atol=1e-9)


def test_labels_over_a_horizon_recover_a_constant_torque():
    """On the bare joint a network of constant output c: every label over 5 periods is c, to
    what gravity's change along the 5 periods moves (the labels ignore it)."""
    rng = np.random.default_rng(6)
    net, _ = random_net(rng)
    hidden = 2
    head = 3 + hidden + 4 * N_INPUTS
    net[head + 2:] = 0.0  # every weight and bias 0: the output is mean_out
    net[head] = 0.02
    theta = bare_theta("xl330")
    goal, enable, supply = inputs()
    q, v = np.empty(N), np.empty(N)
    learned_run(goal, enable, supply, 0.0, 0.0, theta, bench(), net, q, v)
    features = np.empty((N, N_INPUTS))
    residual = np.empty(N)
    teacher_forced(goal, enable, supply, q, 0.0, theta, bench(), 5, features, residual)
    assert np.isnan(residual[-5:]).all()
    np.testing.assert_allclose(residual[:-5], 0.02, rtol=1e-2)
    teacher_forced(goal, enable, supply, q, 0.0, theta, bench(), 1, features, residual)
    np.testing.assert_allclose(residual[:-1], 0.02, rtol=1e-9)  # one period: exact


def test_a_learned_file_round_trips_and_bad_ones_are_named(tmp_path):
    rng = np.random.default_rng(5)
    net, _ = random_net(rng, authority=0.1)
    physics = ParameterSet.defaults("m6", "xl330")
    model = LearnedActuator("hybrid", "xl330", net, (8, 5), 0.1, physics, {"logs": ["a"]})
    path = save_learned(tmp_path / "hybrid.json", model)
    back = load_learned(path)
    np.testing.assert_array_equal(back.net, net)
    assert back.physics.values == physics.values and back.authority == 0.1
    data = model.to_dict()
    with pytest.raises(ParameterFileError, match="net"):
        learned_from_dict({**data, "net": data["net"][:-1]}, "x.json")
    with pytest.raises(ParameterFileError, match="physics"):
        learned_from_dict({k: v for k, v in data.items() if k != "physics"}, "x.json")
    with pytest.raises(ParameterFileError, match="unknown key"):
        learned_from_dict({**data, "colour": 1}, "x.json")
    with pytest.raises(ParameterFileError, match="inputs"):
        learned_from_dict({**data, "inputs": ["error"]}, "x.json")
    with pytest.raises(ParameterFileError, match="authority"):
        learned_from_dict({**data, "authority": 0.2}, "x.json")  # the vector says 0.1
    with pytest.raises(ParameterFileError, match="unbounded"):
        LearnedActuator("net", "xl330", net, (8, 5), 0.1)
    with pytest.raises(ParameterFileError, match="rotor inertia is its physics"):
        learned_from_dict({**data, "armature": 0.01}, "x.json")
    # a net keeps its joint's rotor inertia
    free = with_authority(net, None)
    plain = LearnedActuator("net", "xl330", free, (8, 5), armature=0.004)
    back = load_learned(save_learned(tmp_path / "net.json", plain))
    assert back.armature == 0.004
    assert physics_theta(back)[ARMATURE] == 0.004 and physics_theta(back)[KT] == 0.0
    with pytest.raises(ParameterFileError, match="armature"):
        learned_from_dict({**plain.to_dict(), "armature": -1.0}, "x.json")


def test_a_large_campaigns_closed_loop_subset_keeps_every_condition():
    from frictionsim.experiments.identification.learned import closed_loop_subset
    from frictionsim.logs import Log

    def log(name, kp, mass, traj):
        return Log({"mass": mass, "length": 0.1, "kp": kp, "trajectory": traj, "dt": 0.005},
                   [], Path(name))

    logs = [log(f"{traj}_{kp}_{mass}_{r}.json", kp, mass, traj) for traj in ("a", "b")
            for kp in (8, 16, 32) for mass in (0.5, 1.0) for r in range(5)]
    subset = closed_loop_subset(logs, 16)
    assert len(subset) == 16
    conditions = {(lg.trajectory, lg.kp, lg.mass) for lg in logs}
    assert {(lg.trajectory, lg.kp, lg.mass) for lg in subset} <= conditions
    assert len({(lg.trajectory, lg.kp, lg.mass) for lg in subset}) == 12  # every one of them
    assert closed_loop_subset(logs[:7], 16) == logs[:7]
    # more conditions than the subset holds: every mass, gain and trajectory, evenly
    logs = [log(f"{traj}_{kp}_{mass}.json", kp, mass, traj) for traj in "abcd"
            for kp in (16, 32, 64) for mass in (0.5, 1.0, 1.5, 2.0)]
    subset = closed_loop_subset(logs, 12)
    assert len({lg.name for lg in subset}) == 12
    for factor, values in (("trajectory", 4), ("kp", 3), ("mass", 4)):
        counts = Counter(getattr(lg, factor) for lg in subset)
        assert len(counts) == values and max(counts.values()) - min(counts.values()) <= 1
    # and every mass with every length, when single factors alone would not give it
    logs = [Log({"mass": mass, "length": length, "kp": kp, "trajectory": traj, "dt": 0.005},
                [], Path(f"{traj}_{kp}_{mass}_{length}.json")) for traj in "abcd"
            for kp in (16, 32, 64) for mass in (0.5, 1.0, 1.5, 2.0) for length in (0.1, 0.15)]
    subset = closed_loop_subset(logs, 48)
    pairs = Counter((lg.mass, lg.length) for lg in subset)
    assert len(pairs) == 8 and max(pairs.values()) - min(pairs.values()) <= 2
    assert len({(lg.kp, lg.trajectory) for lg in subset}) == 12


def test_a_network_trained_on_the_xl330_logs_rolls_out_in_closed_loop():
    pytest.importorskip("sklearn")
    from frictionsim.experiments.identification.learned import (
        NetSettings,
        learned_mae,
        train_learned,
    )
    from frictionsim.logs import load_log

    logs = [load_log(p) for p in sorted(DATA.glob("*.json"))[:4]]
    model = train_learned("net", logs, "xl330", settings=NetSettings(hidden=(16,), max_epochs=20))
    assert model.training["samples"] == sum(len(log.entries) - 4 for log in logs)  # horizon 4
    assert model.training["epochs"] == 20 and model.training["converged"] is False
    assert model.training["noise"] == 0.0  # a net's inputs are not noised (NetSettings.noise)
    errors = learned_mae(model, logs)
    assert set(errors) == {log.name for log in logs}
    assert all(np.isfinite(e) and e < 1.0 for e in errors.values())
    with pytest.raises(ValueError, match="hybrid"):
        train_learned("hybrid", logs, "xl330")


def test_a_hybrid_is_never_worse_than_its_physics_on_its_training_logs():
    pytest.importorskip("sklearn")
    from frictionsim.experiments.identification.learned import (
        NetSettings,
        learned_mae,
        train_learned,
    )
    from frictionsim.experiments.identification.pipeline import evaluate
    from frictionsim.logs import load_log

    logs = [load_log(p) for p in sorted(DATA.glob("*.json"))[:3]]
    physics = ParameterSet.defaults("m6", "xl330")
    hybrid = train_learned("hybrid", logs, "xl330", physics,
                           NetSettings(hybrid_hidden=(6,), max_epochs=10,
                                       closed_loop_budget=40, hybrid_noise=0.2))
    assert hybrid.training["noise"] == 0.2  # its own input noise, not the net's
    plain = float(np.mean(list(evaluate(physics, logs).values())))
    # the search starts at the physics itself (a zero output layer) and keeps its best
    assert hybrid.training["physics_train_mae"] == pytest.approx(plain, rel=1e-12)
    trained = float(np.mean(list(learned_mae(hybrid, logs).values())))
    assert trained == pytest.approx(hybrid.training["train_mae"], rel=1e-12)
    assert trained <= plain
    assert 0 < hybrid.authority < 1
