"""docs/model.md §1–§4 on small round numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from frictionsim import layout, schema
from frictionsim.actuator_laws import firmware_control, motor_torque
from frictionsim.friction import friction_budget, stribeck_factor
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.pendulum import gravity_torque, load_inertia
from frictionsim.solvers.fixed_step import step

E = math.e
STATIC_TERMS = (
    "friction_base", "friction_stribeck", "load_friction_base", "load_friction_stribeck",
    "load_friction_motor", "load_friction_external", "load_friction_motor_stribeck",
    "load_friction_external_stribeck", "load_friction_motor_quad",
    "load_friction_external_quad",
)


def theta(model: str, actuator: str = "xl330", **values: float):
    """θ with the given values; every *other* static friction term of the model set to 0."""
    friction = set(schema.get_model(model).friction)
    zeros = {name: 0.0 for name in STATIC_TERMS if name in friction and name not in values}
    return ParameterSet(model, actuator, {**zeros, **values}).theta()


def bench(actuator: str = "xl330", **header):
    base = {"mass": 0.5, "length": 0.2, "kp": 32, "dt": 0.01}
    return Log({**base, **header}, []).bench(actuator)


def budget(th, v, tau_m, tau_e) -> float:
    F, Kv = friction_budget(v, tau_m, tau_e, th)
    return F + Kv * abs(v)


# --------------------------------------------------------------------- Stribeck


@pytest.mark.parametrize(
    "v,v_s,alpha,want",
    [
        (0.0, 0.2, 1.35, 1.0),  # at rest: exp(-0) = 1
        (0.2, 0.2, 2.0, math.exp(-1.0)),  # |0.2/0.2|^2 = 1
        (-0.4, 0.2, 2.0, math.exp(-4.0)),  # |-2|^2 = 4, symmetric in v
        (0.1, 0.2, 1.0, math.exp(-0.5)),  # |0.5|^1
        (0.1, 0.2, 3.0, math.exp(-0.125)),  # |0.5|^3 = 1/8
        (3.0, 1.0, 2.0, math.exp(-9.0)),  # fast: → 0
    ],
)
def test_stribeck_factor(v, v_s, alpha, want):
    assert stribeck_factor(v, v_s, alpha) == pytest.approx(want, rel=1e-15)


# --------------------------------------------------------------------- M1..M5


def test_m1_budget_is_coulomb_plus_viscous():
    th = theta("m1", friction_base=0.1, friction_viscous=0.5)
    # F = K_c = 0.1 and K_v = 0.5, whatever the torques
    assert friction_budget(2.0, 3.0, -1.0, th) == (0.1, 0.5)
    assert friction_budget(0.0, -1.0, 4.0, th) == (0.1, 0.5)
    # τ_fm = 0.1 + 0.5·|−2| = 1.1
    assert budget(th, -2.0, 0.0, 0.0) == pytest.approx(1.1)


def test_m2_budget_stribeck():
    th = theta("m2", friction_base=0.1, friction_stribeck=0.2, dtheta_stribeck=0.5, alpha=1.0,
               friction_viscous=0.0)
    assert friction_budget(0.0, 1.0, 1.0, th)[0] == pytest.approx(0.3)  # 0.1 + 1·0.2
    assert friction_budget(0.5, 1.0, 1.0, th)[0] == pytest.approx(0.1 + 0.2 / E)  # s = e^-1
    assert friction_budget(-1.0, 0.0, 0.0, th)[0] == pytest.approx(0.1 + 0.2 * E**-2)  # s = e^-2


def test_m3_budget_load_dependent():
    th = theta("m3", friction_base=0.1, load_friction_base=0.5, friction_viscous=0.0)
    # |τ_e − τ_m| = |−1 − 1| = 2  →  0.1 + 0.5·2 = 1.1 (no velocity dependence)
    assert friction_budget(3.0, 1.0, -1.0, th)[0] == pytest.approx(1.1)
    # τ_e = τ_m: the load term vanishes
    assert friction_budget(0.0, 1.0, 1.0, th)[0] == pytest.approx(0.1)


def test_m4_budget_stribeck_load():
    th = theta("m4", friction_base=0.1, load_friction_base=0.5, friction_stribeck=0.2,
               load_friction_stribeck=0.25, dtheta_stribeck=1.0, alpha=1.0)
    # τ_e = 1, τ_m = −1: |τ_e − τ_m| = 2; at rest s = 1:
    # 0.1 + 0.5·2 + 1·(0.2 + 0.25·2) = 1.8
    assert friction_budget(0.0, -1.0, 1.0, th)[0] == pytest.approx(1.8)
    # at v = 1, s = e^-1: 0.1 + 1.0 + (0.7)/e
    assert friction_budget(1.0, -1.0, 1.0, th)[0] == pytest.approx(1.1 + 0.7 / E)


def test_m5_budget_directional():
    th = theta("m5", friction_base=0.1, load_friction_external=0.5, load_friction_motor=0.25,
               friction_stribeck=0.2, load_friction_external_stribeck=0.5,
               load_friction_motor_stribeck=0.25, dtheta_stribeck=1.0, alpha=1.0)
    # τ_e = 2, τ_m = 4: |0.5·2 − 0.25·4| = 0 (twice) → 0.1 + 0 + 1·(0.2 + 0) = 0.3
    assert friction_budget(0.0, 4.0, 2.0, th)[0] == pytest.approx(0.3)
    # τ_e = 2, τ_m = −4: |1 + 1| = 2 → 0.1 + 2 + (0.2 + 2) = 4.3
    assert friction_budget(0.0, -4.0, 2.0, th)[0] == pytest.approx(4.3)
    # same at v = 1 (s = e^-1): 2.1 + 2.2/e
    assert friction_budget(1.0, -4.0, 2.0, th)[0] == pytest.approx(2.1 + 2.2 / E)
    # roles swapped, τ_e = 4, τ_m = 2: |2 − 0.5| = 1.5 → 0.1 + 1.5 + (0.2 + 1.5) = 3.3
    assert friction_budget(0.0, 2.0, 4.0, th)[0] == pytest.approx(3.3)


# --------------------------------------------------------------------- M6


@pytest.fixture
def m6_quadratic_only():
    # K_c = 0.1, K_eq = 0.5, K_mq = 0.25, every other static term 0; v_s = 1, α = 1
    return theta("m6", friction_base=0.1, load_friction_external_quad=0.5,
                 load_friction_motor_quad=0.25, dtheta_stribeck=1.0, alpha=1.0)


@pytest.mark.parametrize(
    "tau_e,tau_m,want",
    [
        (1.0, -2.0, 0.6),  # opposite, |τe| < |τm|: K_eq·τe² = 0.5·1 → 0.1 + 0.5
        (2.0, -3.0, 2.1),  # opposite, |τe| < |τm|: K_eq·τe² = 0.5·4 = 2 (not τm²: 4.5)
        (-3.0, 2.0, 1.1),  # opposite, |τe| > |τm|: K_mq·τm² = 0.25·4 = 1 (not τe²: 2.25)
        (2.0, -2.0, 0.1),  # equal magnitudes: neither bracket holds → 0
        (2.0, 3.0, 0.1),  # same signs → 0 (0.5·4 = 2 if the sign test were missing)
        (-2.0, -3.0, 0.1),  # same signs, both negative → 0
        (-3.0, -2.0, 0.1),  # same signs, |τe| > |τm| → 0 (0.25·4 = 1 otherwise)
        # sign(0) = 0: τ_m = 0, τ_e = 2 have *different* signs, so the term is active, with
        # |τe| > |τm| picking K_mq·τm² = 0 (a swap to K_mq·τe² would give 0.25·4 = 1)
        (2.0, 0.0, 0.1),
        # τ_e = 0, τ_m = 2: active, |τe| < |τm| picks K_eq·τe² = 0 (K_eq·τm² would give 2)
        (0.0, 2.0, 0.1),
        (0.0, 0.0, 0.1),  # sign(0) = sign(0): inactive
    ],
)
def test_m6_quadratic_switching(m6_quadratic_only, tau_e, tau_m, want):
    F, Kv = friction_budget(0.0, tau_m, tau_e, m6_quadratic_only)
    assert F == pytest.approx(want, rel=1e-14)


def test_m6_quadratic_term_is_scaled_by_stribeck(m6_quadratic_only):
    # v = 1 → s = e^-1: 0.1 + 0.5·1/e
    assert friction_budget(1.0, -2.0, 1.0, m6_quadratic_only)[0] == pytest.approx(0.1 + 0.5 / E)
    # v = −2 → s = e^-2, |τe| > |τm|: 0.1 + e^-2·0.25·4
    assert friction_budget(-2.0, 2.0, -3.0, m6_quadratic_only)[0] == pytest.approx(
        0.1 + E**-2
    )


def test_m6_is_m5_plus_quadratic():
    th = theta("m6", friction_base=0.1, load_friction_external=0.5, load_friction_motor=0.25,
               friction_stribeck=0.2, load_friction_external_stribeck=0.5,
               load_friction_motor_stribeck=0.25, load_friction_external_quad=0.5,
               load_friction_motor_quad=0.25, dtheta_stribeck=1.0, alpha=1.0)
    # M5 part at τe = 2, τm = −4, v = 0 is 4.3 (above); Q = K_eq·τe² = 0.5·4 = 2 → 6.3
    assert friction_budget(0.0, -4.0, 2.0, th)[0] == pytest.approx(6.3)


# --------------------------------------------------------------------- θ of each model

MODEL_TERMS = {
    "m1": {"friction_base", "friction_viscous"},
    "m2": {"friction_base", "friction_viscous", "friction_stribeck", "dtheta_stribeck", "alpha"},
    "m3": {"friction_base", "load_friction_base", "friction_viscous"},
    "m4": {"friction_base", "load_friction_base", "friction_viscous", "friction_stribeck",
           "load_friction_stribeck", "dtheta_stribeck", "alpha"},
    "m5": {"friction_base", "friction_stribeck", "load_friction_motor", "load_friction_external",
           "load_friction_motor_stribeck", "load_friction_external_stribeck",
           "dtheta_stribeck", "alpha", "friction_viscous"},
}
MODEL_TERMS["m6"] = MODEL_TERMS["m5"] | {"load_friction_motor_quad", "load_friction_external_quad"}
DEFAULTS = {
    "friction_base": 0.05, "friction_stribeck": 0.05, "load_friction_base": 0.05,
    "load_friction_motor": 0.05, "load_friction_external": 0.05,
    "load_friction_stribeck": 0.05, "load_friction_motor_stribeck": 0.05,
    "load_friction_external_stribeck": 0.05, "load_friction_motor_quad": 0.0,
    "load_friction_external_quad": 0.0, "dtheta_stribeck": 0.2, "alpha": 1.35,
    "friction_viscous": 0.1,
}


@pytest.mark.parametrize("model", sorted(MODEL_TERMS))
def test_terms_outside_the_model_are_exactly_zero_in_theta(model):
    th = ParameterSet.defaults(model, "xl330").theta()
    for name, default in DEFAULTS.items():
        index = layout.THETA_INDEX[name]
        want = default if name in MODEL_TERMS[model] else 0.0
        assert th[index] == want, f"{model}: theta[{name}] = {th[index]!r}, expected {want!r}"


def test_m1_defaults_budget_has_no_stribeck_or_load_leak():
    th = ParameterSet.defaults("m1", "xl330").theta()
    assert th[layout.K_CS] == 0.0  # although friction_stribeck's default is 0.05
    # at rest under heavy opposing loads: only K_c = 0.05
    assert friction_budget(0.0, 3.0, -2.0, th) == (0.05, 0.1)


def test_m3_defaults_budget_uses_only_the_symmetric_load_term():
    th = ParameterSet.defaults("m3", "xl330").theta()
    # 0.05 + 0.05·|−2 − 3| = 0.3; directional or Stribeck defaults would add more
    assert friction_budget(0.0, 3.0, -2.0, th)[0] == pytest.approx(0.3, rel=1e-15)


# --------------------------------------------------------------------- voltage servo


def test_voltage_law_duty_and_clipping():
    th = ParameterSet.defaults("m1", "mx64").theta()
    b = bench("mx64", kp=32, vin=10.0)
    # duty = 32·0.158·0.1 = 0.5056 → V = 10·0.5056 = 5.056
    assert firmware_control(0.1, 0.0, 0.0, 0.0, th, b)[0] == pytest.approx(5.056, rel=1e-14)
    # 32·0.158·1 = 5.056 > max_pwm → 0.9625 → 9.625 V; and symmetric
    assert firmware_control(1.0, 0.0, 0.0, 0.0, th, b)[0] == pytest.approx(9.625, rel=1e-15)
    assert firmware_control(-0.5, 0.5, 0.0, 0.0, th, b)[0] == pytest.approx(-9.625, rel=1e-15)
    # the firmware acts on position only: velocity does not change a voltage command
    assert firmware_control(0.1, 0.0, 7.0, 0.0, th, b)[0] == pytest.approx(5.056, rel=1e-14)


def test_voltage_vin_from_log_else_default():
    th = ParameterSet.defaults("m1", "xl330").theta()
    # xl330, kp = 400: duty = 400·0.0028774·2 ≈ 2.3 → clipped to max_pwm = 1 → V = vin
    assert firmware_control(2.0, 0.0, 0.0, 0.0, th, bench("xl330", kp=400))[0] == 7.5
    assert firmware_control(2.0, 0.0, 0.0, 0.0, th, bench("xl330", kp=400, vin=7.4))[0] == 7.4
    assert bench("xl330")[layout.VIN] == 7.5
    assert bench("mx106")[layout.VIN] == 15.0
    assert bench("sts3215")[layout.VIN] == 7.4
    assert bench("xl320", vin=11.0)[layout.VIN] == 11.0
    # kp always from the log, never the actuator default (400 for xl330)
    assert bench("xl330", kp=200)[layout.KP] == 200


def test_voltage_motor_torque():
    th = ParameterSet("m1", "mx64", {"kt": 2.0, "R": 4.0}).theta()
    # enable: 2·8/4 − 2²·1/4 = 4 − 1 = 3
    assert motor_torque(8.0, 1.0, 1.0, th) == pytest.approx(3.0, rel=1e-15)
    # back-EMF alone: 0 − 4·(−2)/4 = 2
    assert motor_torque(0.0, 1.0, -2.0, th) == pytest.approx(2.0, rel=1e-15)
    # disabled: exactly 0 whatever u and v
    assert motor_torque(8.0, 0.0, 5.0, th) == 0.0
    assert motor_torque(-8.0, 0.0, -50.0, th) == 0.0


def test_sts3215_target_speed_limiter():
    th = ParameterSet("m1", "sts3215", {"max_velocity": 2.0, "error_gain_ratio": 1.0}).theta()
    b = bench("sts3215", kp=32, vin=10.0, dt=0.01)  # ω_max·dt = 0.02 rad per call
    u, qs = firmware_control(1.0, 0.0, 0.0, 0.0, th, b)
    assert qs == pytest.approx(0.02, rel=1e-15)
    # the error uses q_smooth: duty = 32·0.166·0.02 = 0.10624 → 1.0624 V
    assert u == pytest.approx(1.0624, rel=1e-14)
    # towards a far target: at most 0.02 per call, then it stays on the target
    qs = 0.0
    history = [qs]
    for _ in range(60):
        _, qs = firmware_control(1.0, 0.3, 0.0, qs, th, b)  # q does not matter to the limiter
        history.append(qs)
    moves = [after - before for before, after in zip(history, history[1:])]
    assert all(0.0 <= d <= 0.02 + 1e-15 for d in moves)
    assert history[25] == pytest.approx(0.5, rel=1e-12)
    assert history[-1] == 1.0
    # negative direction, and a target within reach is taken as is
    assert firmware_control(-1.0, 0.0, 0.0, 0.0, th, b)[1] == pytest.approx(-0.02, rel=1e-15)
    assert firmware_control(0.015, 0.0, 0.0, 0.0, th, b)[1] == 0.015
    # error_gain_ratio multiplies the gain: 2·1.0624
    th2 = ParameterSet("m1", "sts3215", {"max_velocity": 2.0, "error_gain_ratio": 2.0}).theta()
    assert firmware_control(1.0, 0.0, 0.0, 0.0, th2, b)[0] == pytest.approx(2.1248, rel=1e-14)


def test_sts3215_default_max_velocity():
    th = ParameterSet.defaults("m1", "sts3215").theta()
    # 3400·2π/4096 = 5.2155… rad/s; at dt = 0.005 that is 0.026078 rad per call
    _, qs = firmware_control(1.0, 0.0, 0.0, 0.0, th, bench("sts3215", dt=0.005))
    assert qs == pytest.approx(3400 * 2 * math.pi / 4096 * 0.005, rel=1e-15)


# --------------------------------------------------------------------- eRob


def test_erob_current_law_and_damping_override():
    th = ParameterSet.defaults("m1", "erob80_100").theta()
    # kp = 16 → √kp = 4; e = 1 − 0.5 = 0.5, v = 2: i = 16·0.5 − d·4·2 = 8 − 8d
    b = bench("erob80_100", kp=16)
    assert b[layout.DAMPING] == 2.0
    assert firmware_control(1.0, 0.5, 2.0, 0.0, th, b)[0] == pytest.approx(-8.0)  # d = 2
    b = bench("erob80_100", kp=16, damping=0.5)
    assert b[layout.DAMPING] == 0.5
    assert firmware_control(1.0, 0.5, 2.0, 0.0, th, b)[0] == pytest.approx(4.0)  # d = 0.5
    th50 = ParameterSet.defaults("m1", "erob80_50").theta()
    b = bench("erob80_50", kp=16)
    assert firmware_control(1.0, 0.5, 2.0, 0.0, th50, b)[0] == pytest.approx(0.0, abs=1e-15)
    # current clipped at ±12 A: 16·2 = 32
    assert firmware_control(2.0, 0.0, 0.0, 0.0, th, b)[0] == 12.0
    assert firmware_control(-2.0, 0.0, 0.0, 0.0, th, b)[0] == -12.0


def test_erob_ignores_vin():
    th = ParameterSet.defaults("m1", "erob80_100").theta()
    a = firmware_control(0.3, 0.0, 0.1, 0.0, th, bench("erob80_100", kp=16, vin=48.0))[0]
    b = firmware_control(0.3, 0.0, 0.1, 0.0, th, bench("erob80_100", kp=16, vin=5.0))[0]
    assert a == b == pytest.approx(16 * 0.3 - 2.0 * 4 * 0.1)


def test_erob_motor_torque_back_emf_window():
    th = ParameterSet("m1", "erob80_100", {"kt": 2.0, "R": 4.0}).theta()
    # window k_t·48/R = 24 N·m, back-EMF k_t²·v/R = v
    # enabled: 2·12 = 24 inside [−24, 24] at v = 0
    assert motor_torque(12.0, 1.0, 0.0, th) == pytest.approx(24.0)
    # enabled, v = 4: window [−28, 20] clips 24 → 20; 2·5 = 10 stays
    assert motor_torque(12.0, 1.0, 4.0, th) == pytest.approx(20.0)
    assert motor_torque(5.0, 1.0, 4.0, th) == pytest.approx(10.0)
    # disabled, |v| = 10 < 48/k_t = 24: window [−34, 14] contains 0
    assert motor_torque(12.0, 0.0, 10.0, th) == 0.0
    # disabled, v = 30 > 24: window [−54, −6] excludes 0 → brakes with −6
    assert motor_torque(12.0, 0.0, 30.0, th) == pytest.approx(-6.0)
    assert motor_torque(0.0, 0.0, -30.0, th) == pytest.approx(6.0)


# --------------------------------------------------------------------- pendulum


def test_pendulum_inertia_and_gravity():
    b = bench(mass=0.5, length=0.2, arm_mass=0.3)
    # I_load = 0.5·0.04 + (0.3/3)·0.04 = 0.02 + 0.004 = 0.024
    assert load_inertia(b) == pytest.approx(0.024, rel=1e-15)
    # τ_e = (0.5 + 0.15)·(−9.80665)·0.2·sin q = −1.2748645·sin q
    assert gravity_torque(math.pi / 2, b) == pytest.approx(-1.2748645, rel=1e-15)
    assert gravity_torque(-math.pi / 2, b) == pytest.approx(1.2748645, rel=1e-15)
    assert gravity_torque(math.pi / 6, b) == pytest.approx(-0.63743225, rel=1e-14)
    assert gravity_torque(0.0, b) == 0.0
    # the other spelling of the rod mass gives the same bench
    assert load_inertia(bench(mass=0.5, length=0.2, **{"arm-mass": 0.3})) == pytest.approx(0.024)
    # no rod: I = m·L² = 0.02, τ_e(π/2) = 0.5·(−9.80665)·0.2 = −0.980665
    assert load_inertia(bench(mass=0.5, length=0.2)) == pytest.approx(0.02, rel=1e-15)
    assert gravity_torque(math.pi / 2, bench(mass=0.5, length=0.2)) == pytest.approx(-0.980665)


# --------------------------------------------------------------------- one step


@pytest.fixture
def stepper():
    # k_t = 1, R = 2 (τ_m = u/2 at rest), armature 0.005, K_c = 0.5;
    # bench m = 0.5, L = 0.2: I = 0.02 + 0.005 = 0.025; dt = 0.01 → I/dt = 2.5
    def make(viscous=0.0, base=0.5, q_offset=0.0):
        th = ParameterSet("m1", "xl330", {
            "kt": 1.0, "R": 2.0, "armature": 0.005, "q_offset": q_offset,
            "friction_base": base, "friction_viscous": viscous,
        }).theta()
        return th, bench(mass=0.5, length=0.2, dt=0.01)
    return make


def test_step_stick(stepper):
    th, b = stepper()
    # τ_m = 0.5/2 = 0.25 < K_c = 0.5, at q = 0 (τ_e = 0): v stays exactly 0, q unchanged
    assert step(0.0, 0.0, 0.5, 1.0, 0.01, th, b) == (0.0, 0.0)
    # q = 0.3: τ_e = 0.5·(−9.80665)·0.2·sin 0.3 = −0.2898; τ = −0.04, |τ| < 0.5 → stick
    assert step(0.3, 0.0, 0.5, 1.0, 0.01, th, b) == (0.3, 0.0)
    # torque off, τ = τ_e = −0.2898 < 0.5 → the arm holds
    assert step(0.3, 0.0, 0.0, 0.0, 0.01, th, b) == (0.3, 0.0)


def test_step_slip_from_rest(stepper):
    th, b = stepper()
    # u = 2 → τ_m = 1; τ_stop = 1, τ_f = −min(1, 0.5) = −0.5; a = 0.5/0.025 = 20
    # v = 0 + 20·0.01 = 0.2; q = 0 + 0.2·0.01 + ½·20·0.01² = 0.002 + 0.001 = 0.003
    q, v = step(0.0, 0.0, 2.0, 1.0, 0.01, th, b)
    assert v == pytest.approx(0.2, rel=1e-14)
    assert q == pytest.approx(0.003, rel=1e-14)  # uses the updated v (old v gives 0.001)


def test_step_slip_decelerating(stepper):
    th, b = stepper(viscous=0.5)
    # v = 1, torque off, q = 0: τ = 0, τ_stop = 2.5·1 = 2.5;
    # budget 0.5 + 0.5·1 = 1 → τ_f = −1, a = −40; v = 1 − 0.4 = 0.6;
    # q = 0.6·0.01 + ½·(−40)·1e-4 = 0.006 − 0.002 = 0.004
    q, v = step(0.0, 1.0, 0.0, 0.0, 0.01, th, b)
    assert v == pytest.approx(0.6, rel=1e-14)
    assert q == pytest.approx(0.004, rel=1e-14)


def test_step_friction_stops_within_the_step(stepper):
    th, b = stepper(viscous=0.5)
    # v = 0.1: τ_stop = 0.25 < budget 0.5 + 0.05 → τ_f = −0.25, a = −10 → v = 0
    # q = 0 + 0 + ½·(−10)·1e-4 = −0.0005
    q, v = step(0.0, 0.1, 0.0, 0.0, 0.01, th, b)
    assert v == pytest.approx(0.0, abs=1e-15)
    assert q == pytest.approx(-0.0005, rel=1e-12)


def test_step_q_offset_shifts_gravity(stepper):
    th, b = stepper(base=0.0, q_offset=0.1)
    # q_e = −0.1 + 0.1 = 0: no gravity torque, no friction, no motor → rest
    assert step(-0.1, 0.0, 0.0, 0.0, 0.01, th, b) == (-0.1, 0.0)
    th0, _ = stepper(base=0.0)
    # without the offset the arm at −0.1 is pulled back towards 0 (positive acceleration)
    assert step(-0.1, 0.0, 0.0, 0.0, 0.01, th0, b)[1] > 0.0


def test_step_velocity_clip(stepper):
    th, b = stepper(base=0.0)
    # no torque at all: v = clip(150, −100, 100) = 100 and q moves by 100·0.01 = 1
    assert step(0.0, 150.0, 0.0, 0.0, 0.01, th, b) == (1.0, 100.0)
    assert step(0.0, -150.0, 0.0, 0.0, 0.01, th, b) == (-1.0, -100.0)
