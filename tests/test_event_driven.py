"""The event-driven simulator: oscillator, rest, break-away, rejected steps, cross-check."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from frictionsim import layout
from frictionsim.experiments.runner.cli import main
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import servo_state
from frictionsim.solvers.event_driven import (
    STICK,
    EventSolver,
    Tolerances,
    stick_time_and_position,
)
from frictionsim.solvers.fixed_step import rollout_substeps
from frictionsim.solvers.one_joint import (
    BenchJoint,
    bench_rest_torques,
    simulate_log_events,
    simulate_oscillator,
)


def make_bench(mass=0.5, length=0.1, kp=400.0, vin=7.4, dt=0.005) -> np.ndarray:
    bench = np.zeros(layout.BENCH_SIZE)
    bench[[layout.MASS, layout.LENGTH, layout.KP, layout.VIN, layout.DT]] = mass, length, kp, vin, dt
    return bench


M1 = ParameterSet("m1", "xl330", {"kt": 0.4, "R": 3.0, "armature": 0.002, "friction_base": 0.05,
                                  "friction_viscous": 0.01})
M6 = ParameterSet("m6", "xl330", {
    "kt": 0.4, "R": 3.0, "armature": 0.002, "friction_base": 0.02, "friction_stribeck": 0.03,
    "load_friction_motor": 0.1, "load_friction_external": 0.05,
    "load_friction_motor_stribeck": 0.1, "load_friction_external_stribeck": 0.05,
    "load_friction_motor_quad": 0.005, "load_friction_external_quad": 0.003,
    "dtheta_stribeck": 0.3, "alpha": 1.5, "friction_viscous": 0.01,
})


@pytest.mark.parametrize("method", ["DOP853", "RK45", "Radau", "LSODA"])
def test_coulomb_oscillator_sticks_at_pi(method):
    tol = Tolerances(method, 1e-12, 1e-14) if method == "DOP853" else Tolerances(method, 1e-10, 1e-12)
    result = simulate_oscillator(2.75, 0.0, 10.0, tol)
    t_stick, x_stick = stick_time_and_position(result)
    bound_x, bound_t = (1e-10, 1e-9) if method == "DOP853" else (1e-7, 1e-6)
    assert abs(x_stick + 0.75) <= bound_x
    assert abs(t_stick - math.pi) <= bound_t
    kinds = [e.kind for e in result.events]
    assert kinds == ["start", "break_away", "margin", "stick"]
    assert result.q[-1] == x_stick and result.v[-1] == 0.0  # sticks for ever
    t = np.linspace(0.0, math.pi, 50)
    assert np.allclose(result.dense(t)[0], 1 + 1.75 * np.cos(t), atol=1e-9)  # the exact swing


def test_oscillator_command_json(tmp_path):
    out = tmp_path / "osc.json"
    assert main(["run", "oscillator", "--json", str(out), "--plot", str(tmp_path / "o.png")]) == 0
    data = json.loads(out.read_text())
    assert abs(data["x_stick"] + 0.75) <= 1e-10 and abs(data["t_stick"] - math.pi) <= 1e-9
    assert data["nfev"] > 0 and len(data["methods"]) >= 6
    assert (tmp_path / "o.png").stat().st_size > 10_000


def test_margin_must_exceed_tolerance():
    with pytest.raises(ValueError, match="delta"):
        Tolerances("RK45", 1e-6, 1e-8, delta=1e-8)
    with pytest.raises(ValueError, match="method"):
        Tolerances("Euler")


def held(u: float, enable: float) -> np.ndarray:
    """A servo record holding the control u (V) with the enable flag."""
    record = servo_state(0.0, 0.0)
    record[layout.SERVO_U] = u
    record[layout.SERVO_ENABLE] = enable
    return record


@pytest.mark.parametrize("params", [M1, M6], ids=["m1", "m6"])
def test_pendulum_below_break_away_stays_exactly_at_rest(params):
    theta = params.theta()
    bench = make_bench()
    q0 = 0.05  # gravity torque ≈ 0.024 N·m, below the static budget
    torque, budget = bench_rest_torques(q0, held(0.0, 0.0), theta, bench)
    assert 0 < abs(torque) < budget
    n = 200
    result = simulate_log_events(np.zeros(n), np.zeros(n), q0, 0.0, theta, bench, 0.005)
    assert np.all(result.q == q0) and np.all(result.v == 0.0)
    assert [e.kind for e in result.events] == ["start"] and result.events[0].phase == STICK


@pytest.mark.parametrize("params", [M1, M6], ids=["m1", "m6"])
def test_break_away_at_the_budget(params):
    """A slowly rising goal: the joint leaves stick at the first update where |τ| > τ_fm(0)."""
    theta = params.theta()
    bench = make_bench(kp=100.0)
    n = 400
    goal = np.linspace(0.0, 0.4, n)
    result = simulate_log_events(goal, np.ones(n), 0.0, 0.0, theta, bench, 0.005)
    breaks = [e for e in result.events if e.kind == "break_away"]
    assert breaks
    k = int(round(breaks[0].t / 0.005))
    from frictionsim.actuator_laws import firmware_control

    def margin(k):
        u, _ = firmware_control(goal[k], 0.0, 0.0, 0.0, theta, bench)
        torque, budget = bench_rest_torques(0.0, held(u, 1.0), theta, bench)
        return abs(torque) - budget

    assert margin(k) > 0 >= margin(k - 1)
    assert np.all(result.q[: k + 1] == 0.0) and result.q[k + 2] > 0


class CountingJoint(BenchJoint):
    """Records the sign and velocity of every right-hand-side evaluation."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = []

    def slip_acceleration(self, q, v, sign):
        self.calls.append((sign, v))
        return super().slip_acceleration(q, v, sign)


def test_rejected_steps_do_not_flip_the_phase():
    """Loose tolerances: trial steps overshoot v = 0, yet the phase only changes at events."""
    theta = M1.theta()
    bench = make_bench()
    joint = CountingJoint(theta, bench, held(0.0, 0.0))
    solver = EventSolver(Tolerances("RK45", 1e-3, 1e-6, delta=1e-4))
    phase, armed = solver.begin(joint, 0.0, 1.2, 0.0)
    q, v, phase, armed = solver.advance(joint, 0.0, 3.0, 1.2, 0.0, phase, armed)
    crossed = [(s, v) for s, v in joint.calls if s * v < 0]
    assert crossed, "the integrator never evaluated beyond v = 0 (test is not exercising it)"
    changes = [e for e in solver.events if e.kind in ("break_away", "stick", "reversal")]
    assert len(changes) >= 3
    # Within a segment the sign never changes: every evaluation sequence between two events
    # uses the sign of the event that opened it.
    signs = [s for s, _ in joint.calls]
    switches = sum(1 for a, b in zip(signs, signs[1:]) if a != b)
    assert switches <= len([e for e in solver.events if e.kind in ("break_away", "reversal")])
    tight = EventSolver(Tolerances("DOP853", 1e-10, 1e-12))
    p2, a2 = tight.begin(BenchJoint(theta, bench, held(0.0, 0.0)), 0.0, 1.2, 0.0)
    tight.advance(BenchJoint(theta, bench, held(0.0, 0.0)), 0.0, 3.0, 1.2, 0.0, p2, a2)
    assert [e.kind for e in solver.events] == [e.kind for e in tight.events]


def test_fixed_step_converges_to_event_driven_on_a_synthetic_log():
    theta = M6.theta()
    bench = make_bench()
    t = np.arange(600) * 0.005
    goal = 0.8 * np.sin(1.5 * t) + 0.3 * np.sin(5 * t)
    enable = (t < 2.2).astype(float)
    ref = simulate_log_events(goal, enable, 0.0, 0.0, theta, bench, 0.005)
    errors = []
    for n in (1, 2, 4, 8, 16):
        q = np.empty(600)
        v = np.empty(600)
        rollout_substeps(goal, enable, np.zeros(600), 0.0, 0.0, theta, bench, 0.005, n, q, v)
        errors.append(np.max(np.abs(q - ref.q)))
    assert all(b < a for a, b in zip(errors, errors[1:]))
    order = np.polyfit(np.log(0.005 / np.array([1, 2, 4, 8, 16])), np.log(errors), 1)[0]
    assert 0.7 <= order <= 1.6
    assert ref.stick_intervals()


def test_crosscheck_command(tmp_path):
    from frictionsim.bench_setup import BenchSetup
    from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, restrict
    from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
    from frictionsim.logs import process, save_log
    from frictionsim.params import save_params

    for traj in ("lift_and_drop", "up_and_down"):
        raw = record(GROUND_TRUTH, BenchSetup(0.5, 0.1, 32.0), traj, SensorModel(), seed=1)
        save_log(tmp_path / f"{traj}.json", process(raw))
    save_params(tmp_path / "m4.json", restrict(GROUND_TRUTH, "m4"))
    out = tmp_path / "cc.json"
    rc = main(["crosscheck", "--params", str(tmp_path / "m4.json"), "--logs",
               str(tmp_path / "lift_and_drop.json"), str(tmp_path / "up_and_down.json"),
               "--json", str(out), "--plot", str(tmp_path / "cc.png")])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["dts"] == pytest.approx([0.005 / n for n in (1, 2, 4, 8, 16)])
    assert all(b < a for a, b in zip(data["max_error"], data["max_error"][1:]))
    assert 0.7 <= data["order"] <= 1.6
    assert set(data["per_log"]) == {"lift_and_drop.json", "up_and_down.json"}
    assert (tmp_path / "cc.png").stat().st_size > 10_000
    assert main(["crosscheck", "--params", str(tmp_path / "m4.json"), "--logs",
                 str(tmp_path / "up_and_down.json"), "--dts", "0.003"]) == 1
    # one step size has no order of convergence: said, never a bare NaN or null
    one = tmp_path / "one.json"
    assert main(["crosscheck", "--params", str(tmp_path / "m4.json"), "--logs",
                 str(tmp_path / "up_and_down.json"), "--dts", "0.005", "--json", str(one)]) == 0
    text = one.read_text()
    assert "NaN" not in text
    data = json.loads(text)
    assert data["order"] is None and "two or more step sizes" in data["order_unavailable"]
    assert data["per_log"]["up_and_down.json"]["order"] is None
    assert "two or more" in data["per_log"]["up_and_down.json"]["order_unavailable"]


def test_a_torque_exactly_at_the_budget_holds():
    """|τ| = τ_fm at rest sticks (docs/model.md §8's ≤): the spring's pull on the oscillator at
    x = 1 equals its friction. The solver once took the zero margin for a break-away event at
    the segment's own start and looped there for ever."""
    result = simulate_oscillator(1.0, 0.0, 5.0)
    assert [e.kind for e in result.events] == ["start"]
    assert np.all(result.q == 1.0)
