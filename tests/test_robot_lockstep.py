"""The lock-step robot evaluator (solvers/robot_lockstep.py) against the scalar one: a block
of candidates through a window together gives each candidate's errors to the last bit, per
window and per joint, whatever the block's size, the candidates' law, their joint scales or
their failure; configurations it does not carry go to the scalar evaluator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frictionsim import layout

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RECORDINGS = DATA / "so101" / "recordings"
NS = 5  # the SO-101's servo joints


@pytest.fixture(scope="module")
def evaluator(so101):
    from frictionsim.experiments.robots import identify as rid
    from frictionsim.robot_recordings import read_recording

    robot, mjcf = so101
    rec = read_recording(RECORDINGS / "friction_gravity", robot.bus_period)
    windows = rid.recording_windows(robot, rec, 2.0, 20)[:3]
    ev = rid._evaluator(robot, mjcf, "sts3215_12v", windows, 2, reuse=True)
    ev.reference_at(candidates("m6", 1, 0.0)[:1])
    return ev


def candidates(model: str, n: int, spread: float, seed: int = 0) -> np.ndarray:
    """``n`` rows [theta | offsets] about the actuator's defaults, each physical value moved
    by a relative ``spread`` and each joint offset by up to 10 mrad."""
    from frictionsim.params import ParameterSet

    theta = ParameterSet.defaults(model, "sts3215_12v").with_scheme("semi_implicit").theta()
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.concatenate([theta, np.zeros(NS)])[None], n, axis=0)
    moved = np.zeros(theta.size, dtype=bool)
    moved[[layout.K_C, layout.K_V, layout.K_CS, layout.K_L, layout.K_M, layout.K_E,
           layout.ARMATURE, layout.KT, layout.RESISTANCE, layout.V_S]] = True
    rows[:, :theta.size] *= np.where(moved, 1 + spread * rng.standard_normal((n, theta.size)),
                                     1.0)
    rows[:, theta.size:] = 0.01 * rng.uniform(-1, 1, (n, NS))
    return rows


def both(ev, rows, scales=None, per_joint=False):
    """The reused errors of ``rows`` in lock-step and by the scalar evaluator."""
    def run(lockstep):
        ev.lockstep = lockstep
        try:
            if per_joint:
                return ev.joint_errors(rows, scales)
            return ev.reused_errors(rows, scales)
        finally:
            ev.lockstep = True
    return run(True), run(False)


@pytest.mark.parametrize("model, n, spread", [("m1", 12, 0.05), ("m6", 12, 0.05),
                                              ("m6", 3, 0.3), ("m6", 17, 0.02)])
def test_a_block_gives_the_scalar_evaluators_errors_bit_for_bit(evaluator, model, n, spread):
    from frictionsim.solvers.robot_lockstep import lockstep_ready

    rows = candidates(model, n, spread, seed=n)
    assert lockstep_ready(evaluator._thetas(rows, None), evaluator.robot.benches)
    fast, scalar = both(evaluator, rows)
    assert fast.shape == (n, 3) and np.all(np.isfinite(fast))
    assert np.array_equal(fast, scalar)


def test_per_joint_errors_and_joint_scales_are_the_scalar_evaluators(evaluator):
    rows = candidates("m6", 6, 0.05, seed=4)
    scales = np.random.default_rng(1).uniform(0.5, 2.0, (6, NS, 2))
    fast, scalar = both(evaluator, rows, scales, per_joint=True)
    assert fast.shape == (6, 3, NS)
    assert np.array_equal(fast, scalar)
    assert not np.array_equal(fast, both(evaluator, rows, per_joint=True)[0])  # scales count


def test_a_failed_candidate_fails_alone_in_its_block(evaluator):
    rows = candidates("m6", 5, 0.05, seed=5)
    rows[2, layout.ARMATURE] = -1.0  # M − I: not positive definite, the solve fails or diverges
    fast, scalar = both(evaluator, rows)
    assert np.array_equal(fast, scalar)
    assert np.all(np.isinf(fast[2])) and np.all(np.isfinite(np.delete(fast, 2, axis=0)))


def test_the_plain_voltage_law_runs_in_lock_step_too(evaluator):
    from frictionsim.solvers.robot_lockstep import lockstep_laws, lockstep_ready

    rows = candidates("m6", 8, 0.05, seed=6)
    rows[:, [layout.DEAD_BAND, layout.DERIVATIVE_TIME]] = 0.0
    benches = evaluator.robot.benches
    kept = benches.copy()
    try:
        benches[:, [layout.TORQUE_LIMIT, layout.ACCELERATION]] = 0.0
        thetas = evaluator._thetas(rows, None)
        assert lockstep_ready(thetas, benches) and lockstep_laws(thetas, benches).all()
        fast, scalar = both(evaluator, rows)
    finally:
        benches[:] = kept
    assert np.array_equal(fast, scalar)
    assert not np.array_equal(fast, both(evaluator, candidates("m6", 8, 0.05, seed=6))[0])


@pytest.mark.parametrize("column, value", [(layout.LATENCY, 1.0),
                                           (layout.OBSERVATION_DELAY, 0.004),
                                           (layout.CURRENT_LIMIT, 1.5)])
def test_what_the_block_does_not_carry_goes_to_the_scalar_evaluator(evaluator, column, value):
    from frictionsim.solvers.robot_lockstep import lockstep_ready

    rows = candidates("m6", 4, 0.05, seed=7)
    rows[1, column] = value
    assert not lockstep_ready(evaluator._thetas(rows, None), evaluator.robot.benches)
    fast, scalar = both(evaluator, rows)
    assert np.array_equal(fast, scalar)


def test_a_servo_whose_law_differs_between_candidates_goes_to_the_scalar_evaluator(evaluator):
    from frictionsim.solvers.robot_lockstep import lockstep_ready

    rows = candidates("m6", 4, 0.05, seed=8)
    benches = evaluator.robot.benches
    kept = benches.copy()
    try:
        benches[:, [layout.TORQUE_LIMIT, layout.ACCELERATION]] = 0.0
        rows[:2, [layout.DEAD_BAND, layout.DERIVATIVE_TIME]] = 0.0  # plain for two of four
        assert not lockstep_ready(evaluator._thetas(rows, None), benches)
    finally:
        benches[:] = kept
